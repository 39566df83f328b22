//! What the CLI backends (codex, gemini, claude, opencode) share: finding the CLI on PATH, running it while
//! its stdout's JSON events feed the stream, and turning a finished or failed process into an
//! answer or a failure with the contract's texts.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use super::builtin::Builtin;
use super::{last_words, version};
use crate::activity::{Activity, Doing};
use crate::backend::{BackendFailure, BackendResult, CommandPlan, Plan};
use crate::bounded_text::Measured;
use crate::deadline::Timeout;
use crate::env::Env;
use crate::errors::{BackendFailureKind, RelayError, Subject};
use crate::limits::MAX_OUTPUT_BYTES;
use crate::lines::StdoutLine;
use crate::stream::ChunkSink;
use crate::subprocess::{
    find_program, run_process_streaming, stdout_lines, ProcessError, ProcessOutput, ProcessSpec,
};

/// The longest stdout line read whole: an event carrying a whole answer of `MAX_OUTPUT_BYTES`
/// fits even with JSON's escapes doubling part of it. A longer line arrives cut.
pub const MAX_EVENT_LINE: usize = 2 * MAX_OUTPUT_BYTES + 64 * 1024;

/// Reads a CLI's stdout events, one line at a time, as they arrive.
pub trait EventParser {
    /// Takes one line; returns the text it adds to the stream, if any.
    fn line(&mut self, line: StdoutLine) -> Option<String>;

    /// What the last line said the backend is doing, when it said (taken once).
    fn take_doing(&mut self) -> Option<Doing> {
        None
    }
}

/// Runs `spec`, handing each stdout line to `parser` as it arrives and sending what it makes of
/// it to `chunks` (while `chunks` waits for its consumer, stdout is not read: backpressure) and
/// what it says the backend does to `activity`.
/// Once the process has exited, the lines it wrote are all parsed before this returns.
/// `pipe_capacity`: see [`crate::subprocess::LineSender::with_pipe_capacity`].
pub async fn run_with_events(
    spec: ProcessSpec,
    parser: &mut impl EventParser,
    chunks: &ChunkSink,
    activity: &Activity,
    pipe_capacity: Option<usize>,
    cancel: &CancellationToken,
) -> Result<ProcessOutput, ProcessError> {
    let (mut lines, mut receiver) = stdout_lines(MAX_EVENT_LINE);
    if let Some(bytes) = pipe_capacity {
        lines = lines.with_pipe_capacity(bytes);
    }
    let run = run_process_streaming(spec, lines, cancel);
    let consume = async {
        while let Some(line) = receiver.recv().await {
            let text = parser.line(line);
            if let Some(doing) = parser.take_doing() {
                activity.doing(doing);
            }
            if let Some(text) = text {
                activity.wrote(text.len());
                chunks.send(text).await;
            }
        }
    };
    tokio::pin!(run, consume);
    let mut consumed = false;
    let output = tokio::select! {
        output = &mut run => output?,
        () = &mut consume => {
            // The lines ended: the run is ending too.
            consumed = true;
            run.await?
        }
    };
    if !consumed {
        // The last lines, which the run's end left in the channel.
        tokio::select! {
            () = &mut consume => {}
            () = cancel.cancelled() => return Err(ProcessError::Cancelled),
        }
    }
    Ok(output)
}

/// A CLI as the messages name it.
pub struct CliLabel<'a> {
    /// The executable, e.g. `codex`.
    pub program: &'a str,
    /// How messages name the command, e.g. `codex exec review`.
    pub command: &'a str,
    /// Its row in the built-ins' table: how to install it, sign it in, its verified version.
    pub backend: &'a Builtin,
}

impl CliLabel<'_> {
    /// The original's message, then (Windows) what was on the PATH under the name but is not a
    /// program Windows starts by name.
    fn not_found(&self, others: &[PathBuf]) -> BackendFailure {
        let mut message = format!(
            "{} CLI not found in PATH. Install it: {}",
            self.program, self.backend.install
        );
        if !others.is_empty() {
            let others: Vec<String> = others
                .iter()
                .map(|file| file.display().to_string())
                .collect();
            message.push_str(&format!(
                " (found {}, which Windows does not start as a program: only an .exe, a .com or \
                 an npm .cmd shim)",
                others.join(", ")
            ));
        }
        BackendFailure::reported(BackendFailureKind::Unavailable, message)
    }

    /// The CLI in the PATH of the relay's environment.
    pub fn locate(&self, env: &Env) -> Result<PathBuf, BackendFailure> {
        find_program(self.program, env).map_err(|others| self.not_found(&others))
    }

    /// A process that did not finish on its own. `last_words`: what its events said last (an
    /// error, a retry), which a time-out's message carries, else the end of its stderr.
    pub fn process_failure(
        &self,
        error: ProcessError,
        timeout: Timeout,
        last_words: Option<&str>,
    ) -> BackendFailure {
        match error {
            ProcessError::TimedOut { stderr } => {
                let message = format!("{} timed out after {}s", self.command, timeout.display());
                stopped(
                    BackendFailureKind::Timeout,
                    message,
                    last_words,
                    &stderr.text,
                )
            }
            ProcessError::Stalled { stderr, after } => {
                let message = format!(
                    "{} made no progress for {}s (idleTimeoutSeconds)",
                    self.command,
                    after.display()
                );
                stopped(
                    BackendFailureKind::Stalled,
                    message,
                    last_words,
                    &stderr.text,
                )
            }
            ProcessError::Cancelled => BackendFailure::Cancelled,
            // It was found on the PATH, so "not found" would mislead: most often its `#!`
            // interpreter is missing. The OS's words say what failed.
            ProcessError::Spawn(e) if e.kind() == std::io::ErrorKind::NotFound => {
                BackendFailure::reported(
                    BackendFailureKind::Unavailable,
                    format!("{} CLI could not be started: {e}", self.program),
                )
            }
            ProcessError::Spawn(e) | ProcessError::Io(e) | ProcessError::Supervisor(e) => {
                BackendFailure::reported(
                    BackendFailureKind::Failed,
                    format!("{} could not be run: {e}", self.command),
                )
            }
        }
    }

    /// What a dry run says this CLI would do: `args` in `cwd` with `env`, the envelope on stdin
    /// or stdin empty.
    pub fn plan(&self, args: Vec<OsString>, cwd: &str, env: Env, envelope_on_stdin: bool) -> Plan {
        Plan::Command(CommandPlan {
            name: self.program.into(),
            program: self.locate(&env).ok(),
            install_hint: self.backend.install.into(),
            args,
            cwd: cwd.into(),
            env,
            envelope_on_stdin,
        })
    }

    /// The answer of a run that succeeded: empty is `<command> completed without producing
    /// output`, too large is `ERR_TOO_LARGE`.
    pub fn answer(&self, answer: Measured) -> BackendResult {
        if answer.trimmed_len == 0 {
            return Err(BackendFailure::reported(
                BackendFailureKind::NoOutput,
                format!("{} completed without producing output", self.command),
            ));
        }
        within_output_limit(answer)
    }

    /// A process that exited unsuccessfully: the first of its own `words` that is not empty
    /// (e.g. stderr, else stdout), else its exit code.
    pub fn exit_failure(&self, output: &ProcessOutput, words: &[&str]) -> BackendFailure {
        let detail = words.iter().copied().find(|text| !text.is_empty());
        let message = match (detail, output.code, output.signal) {
            (Some(detail), _, _) => detail.to_string(),
            (None, Some(code), _) => format!("{} exited with code {code}", self.command),
            (None, None, Some(signal)) => format!("{} was killed by signal {signal}", self.command),
            (None, None, None) => format!("{} exited without a status", self.command),
        };
        BackendFailure::with_words(
            BackendFailureKind::Failed,
            message,
            detail.unwrap_or_default(),
        )
    }

    /// `failure` of the CLI at `program`, with what to do about it: how to sign in when its
    /// words ask for it, and its version when that is outside the verified range (the flags may
    /// have changed: docs/BACKENDS.md, "Versions").
    pub fn explained(&self, failure: BackendFailure, program: &Path) -> BackendFailure {
        let BackendFailure::Reported {
            kind,
            mut message,
            cause,
            output,
            partial,
        } = failure
        else {
            return failure;
        };
        if kind != BackendFailureKind::Unavailable {
            let words = output.as_deref().unwrap_or(&message);
            if !self.backend.sign_in.is_empty() && last_words::ask_to_sign_in(words) {
                message = format!(
                    "{}. {} is not signed in: {}",
                    message.trim_end_matches('.'),
                    self.program,
                    self.backend.sign_in
                );
            }
            if let Some(drift) = version::drift_of_install(self.backend, program) {
                message = format!("{}. {drift}", message.trim_end_matches('.'));
            }
        }
        BackendFailure::Reported {
            kind,
            message,
            cause,
            output,
            partial,
        }
    }
}

/// A CLI the relay stopped (its time was up, or it stalled): `message`, then what its events
/// said last (an error, a retry), else the end of its `stderr`.
fn stopped(
    kind: BackendFailureKind,
    mut message: String,
    last_words: Option<&str>,
    stderr: &str,
) -> BackendFailure {
    let words = last_words
        .filter(|words| !words.trim().is_empty())
        .unwrap_or(stderr);
    let output = last_words::tail(words);
    if let Some(said) = &output {
        message.push_str(&format!(". Its last words: {said}"));
    }
    BackendFailure::Reported {
        kind,
        message,
        cause: None,
        output,
        partial: None,
    }
}

/// `answer`, unless `unread` bytes of the events that held it were too long to read: then it is
/// past any limit, and their length (JSON included) bounds its text.
pub fn counting_unread(answer: Measured, unread: u64) -> Measured {
    if unread == 0 {
        return answer;
    }
    Measured {
        text: String::new(),
        trimmed_len: answer.trimmed_len + unread,
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

#[cfg(test)]
pub(crate) mod test_support {
    //! Feeding event parsers whole lines, for the backends' parser tests.
    use super::EventParser;
    use crate::lines::StdoutLine;

    /// A line as the splitter gives it when it was not cut.
    pub fn line(text: &str) -> StdoutLine {
        StdoutLine {
            text: text.into(),
            len: text.len() as u64,
            cut: false,
        }
    }

    /// The stream text `parser` makes of `lines`.
    pub fn feed(parser: &mut impl EventParser, lines: &[&str]) -> Vec<String> {
        lines
            .iter()
            .filter_map(|text| parser.line(line(text)))
            .collect()
    }
}
