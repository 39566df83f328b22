//! What the two CLI backends (codex, gemini) share: finding the CLI on PATH, and turning a
//! finished or failed process into an answer or a failure with the contract's texts.

use std::path::PathBuf;

use crate::backend::{BackendFailure, Env, Timeout};
use crate::bounded_text::Measured;
use crate::errors::{BackendFailureKind, RelayError, Subject};
use crate::limits::MAX_OUTPUT_BYTES;
use crate::subprocess::{find_executable, ProcessError, ProcessOutput};

/// A CLI as the messages name it.
pub struct CliLabel<'a> {
    /// The executable, e.g. `codex`.
    pub program: &'a str,
    /// How messages name the command, e.g. `codex exec review`.
    pub command: &'a str,
    /// How to install it, e.g. `npm install -g @openai/codex`.
    pub install_hint: &'a str,
}

impl CliLabel<'_> {
    fn not_found(&self) -> BackendFailure {
        BackendFailure::reported(
            BackendFailureKind::Unavailable,
            format!(
                "{} CLI not found in PATH. Install it: {}",
                self.program, self.install_hint
            ),
        )
    }

    /// The CLI in the PATH of the relay's environment.
    pub fn locate(&self, env: &Env) -> Result<PathBuf, BackendFailure> {
        find_executable(self.program, env).ok_or_else(|| self.not_found())
    }

    /// A process that did not finish on its own.
    pub fn process_failure(&self, error: ProcessError, timeout: Timeout) -> BackendFailure {
        match error {
            ProcessError::TimedOut => BackendFailure::reported(
                BackendFailureKind::Timeout,
                format!("{} timed out after {}s", self.command, timeout.display()),
            ),
            ProcessError::Cancelled => BackendFailure::Cancelled,
            ProcessError::Spawn(e) if e.kind() == std::io::ErrorKind::NotFound => self.not_found(),
            ProcessError::Spawn(e) | ProcessError::Io(e) | ProcessError::Supervisor(e) => {
                BackendFailure::reported(
                    BackendFailureKind::Failed,
                    format!("{} could not be run: {e}", self.command),
                )
            }
        }
    }

    /// A process that exited unsuccessfully: its own words (stderr, else stdout, else `extra`),
    /// else its exit code.
    pub fn exit_failure(&self, output: &ProcessOutput, extra: Option<&Measured>) -> BackendFailure {
        let detail = [Some(&output.stderr), Some(&output.stdout), extra]
            .into_iter()
            .flatten()
            .map(|text| text.text.as_str())
            .find(|text| !text.is_empty());
        let message = match (detail, output.code, output.signal) {
            (Some(detail), _, _) => detail.to_string(),
            (None, Some(code), _) => format!("{} exited with code {code}", self.command),
            (None, None, Some(signal)) => format!("{} was killed by signal {signal}", self.command),
            (None, None, None) => format!("{} exited without a status", self.command),
        };
        BackendFailure::reported(BackendFailureKind::Failed, message)
    }
}

/// The answer, or `ERR_TOO_LARGE` past `MAX_OUTPUT_BYTES`.
pub fn within_output_limit(answer: Measured) -> Result<String, BackendFailure> {
    answer
        .within(Subject::BackendOutput, MAX_OUTPUT_BYTES)
        .map_err(|err: RelayError| {
            BackendFailure::reported(BackendFailureKind::OutputTooLarge, err.to_string())
        })
}
