//! One run of a CLI backend that answers through its stdout events (gemini, claude, opencode,
//! antigravity, docs/BACKENDS.md): find the CLI, run it with the envelope on stdin (antigravity:
//! in its argv, which it alone needs) and the repository as its working directory, read its events as they come, then make an answer or a failure of how it
//! ended. Each CLI supplies only what differs: a [`Cli`] and its [`CliEvents`].

use std::ffi::OsString;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::builtin::Builtin;
use super::cli::{run_with_events, CliLabel, EventParser};
use crate::backend::{Backend, BackendFailure, BackendFuture, BackendResult, Plan, RunRequest};
use crate::bounded_text::Measured;
use crate::env::Env;
use crate::errors::BackendFailureKind;
use crate::limits::MAX_OUTPUT_BYTES;
use crate::sessions::ResumeStrategy;
use crate::subprocess::{ProcessOutput, ProcessSpec, StdinSource};
use crate::usage::Reported;

/// What one of these CLIs is, beyond the run they share.
pub(crate) trait Cli: 'static {
    /// Its row in the built-ins' table: its name, its executable (how messages name it), how
    /// to install it, its sandbox modes.
    const BUILTIN: &'static Builtin;
    /// How it continues a conversation (docs/CONTRACT.md §12).
    const RESUME: ResumeStrategy;
    /// Its stdout pipe's size; `None` leaves the OS's (see [`run_with_events`]).
    const STDOUT_PIPE_BYTES: Option<usize> = None;

    /// Reads its stdout.
    type Events: CliEvents;

    /// Whether the envelope goes on its stdin; `false`: [`Cli::args`] carries it, stdin is
    /// empty (docs/CONTRACT.md §8: only for a CLI that reads no prompt from stdin).
    const ENVELOPE_ON_STDIN: bool = true;

    /// Its arguments.
    fn args(request: &RunRequest) -> Vec<OsString>;

    /// Why it cannot take `request`, said before it is looked for or started.
    fn refusal(_request: &RunRequest) -> Option<BackendFailure> {
        None
    }

    /// `failure` with what this CLI's known pitfalls say about it.
    fn explained(failure: BackendFailure) -> BackendFailure {
        failure
    }

    /// Its environment, made from the relay's; `remaining` is what the call has left.
    fn child_env(env: Env, _sandbox: &str, _remaining: Duration) -> Env {
        env
    }
}

/// A CLI's stdout events, read line by line, then told as an [`Ending`].
pub(crate) trait CliEvents: EventParser + Default + Send {
    /// What the events said, once the process has exited.
    fn end(self) -> Ending;
}

/// What a CLI's events said of its run.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Ending {
    /// The session the CLI used, as its events named it: on a resumed turn, the one it really
    /// continued.
    pub session_id: Option<String>,
    /// Its usage and the model that answered, as far as its events said.
    pub reported: Reported,
    /// The CLI reported a failure itself: these words, whatever its exit code.
    pub failed: Option<String>,
    /// The answer the events carried; `None` when there were none, stdout then being plain
    /// text (as the CLI's text format prints it).
    pub answer: Option<Measured>,
    /// Its words for an exit code other than 0, after stderr and the answer.
    pub exit_words: Option<String>,
    /// Why an exit code of 0 is still a failure: the events stopped before their last.
    pub cut_short: Option<&'static str>,
}

/// A built-in backend that runs the CLI `C`.
pub struct CliBackend<C> {
    allowed_sandboxes: Vec<String>,
    cli: PhantomData<fn() -> C>,
}

impl<C: Cli> Default for CliBackend<C> {
    fn default() -> Self {
        CliBackend {
            allowed_sandboxes: C::BUILTIN.sandboxes(),
            cli: PhantomData,
        }
    }
}

impl<C: Cli> Backend for CliBackend<C> {
    fn name(&self) -> &str {
        C::BUILTIN.name
    }

    fn allowed_sandboxes(&self) -> &[String] {
        &self.allowed_sandboxes
    }

    fn run(self: Arc<Self>, request: RunRequest, cancel: CancellationToken) -> BackendFuture {
        Box::pin(run::<C>(request, cancel))
    }

    fn resume_strategy(&self) -> ResumeStrategy {
        C::RESUME
    }

    fn plan(&self, request: &RunRequest) -> Plan {
        let env = C::child_env(
            request.terms.env.clone(),
            &request.terms.sandbox,
            request.terms.deadline.remaining(),
        );
        label::<C>().plan(
            C::args(request),
            &request.terms.repo_path,
            env,
            C::ENVELOPE_ON_STDIN,
        )
    }
}

/// These CLIs' messages name them by their executable.
fn label<C: Cli>() -> CliLabel<'static> {
    CliLabel {
        program: C::BUILTIN.executable,
        command: C::BUILTIN.executable,
        backend: C::BUILTIN,
    }
}

async fn run<C: Cli>(request: RunRequest, cancel: CancellationToken) -> BackendResult {
    if let Some(refusal) = C::refusal(&request) {
        return Err(refusal);
    }
    let label = label::<C>();
    let program = label.locate(&request.terms.env)?;
    run_found::<C>(request, program.clone(), &cancel)
        .await
        .map_err(|failure| label.explained(C::explained(failure), &program))
}

/// [`run`], once the CLI is found at `program`.
async fn run_found<C: Cli>(
    request: RunRequest,
    program: std::path::PathBuf,
    cancel: &CancellationToken,
) -> BackendResult {
    let label = label::<C>();
    // One reading serves the child's environment and its timeout alike.
    let remaining = request.terms.deadline.remaining();
    let args = C::args(&request);
    let stdin = match C::ENVELOPE_ON_STDIN {
        true => StdinSource::Bytes(request.prompt.into_bytes()),
        false => StdinSource::Null,
    };
    let spec = ProcessSpec {
        program,
        args,
        cwd: request.terms.repo_path.into(),
        env: C::child_env(request.terms.env, &request.terms.sandbox, remaining),
        stdin,
        timeout: remaining,
        output_limit: MAX_OUTPUT_BYTES,
        remove_on_stop: Vec::new(),
        progress: request.terms.progress.clone(),
    };
    let mut events = C::Events::default();
    let run = run_with_events(
        spec,
        &mut events,
        &request.terms.chunks,
        &request.terms.activity,
        C::STDOUT_PIPE_BYTES,
        cancel,
    )
    .await;
    let mut ending = events.end();
    request
        .terms
        .report
        .record(std::mem::take(&mut ending.reported));
    // Stopped: what its events said last (a failure they reported) goes with the time-out, and
    // what it had answered so far.
    let output = match run {
        Ok(output) => output,
        Err(e) => {
            let failure = label.process_failure(e, request.terms.timeout, ending.failed.as_deref());
            return Err(failure.with_partial(ending.answer.map(|answer| answer.text)));
        }
    };
    if let (Some(session), Some(id)) = (&request.session, ending.session_id.take()) {
        session.reported.set(id);
    }
    answer_of(&label, ending, output)
}

/// What a CLI that ran to its end answered, or why that is a failure: a failure its events
/// reported, an exit code other than 0, events cut short.
fn answer_of(label: &CliLabel<'_>, ending: Ending, mut output: ProcessOutput) -> BackendResult {
    if let Some(message) = ending.failed {
        return Err(BackendFailure::with_words(
            BackendFailureKind::Failed,
            message.clone(),
            &message,
        ));
    }
    // Moved, not copied: stdout may hold 8 MiB.
    let answer = ending
        .answer
        .unwrap_or_else(|| std::mem::take(&mut output.stdout));
    if output.code != Some(0) {
        let words = [
            output.stderr.text.as_str(),
            answer.text.as_str(),
            ending.exit_words.as_deref().unwrap_or_default(),
        ];
        return Err(label.exit_failure(&output, &words));
    }
    if let Some(message) = ending.cut_short {
        return Err(BackendFailure::reported(
            BackendFailureKind::Failed,
            message,
        ));
    }
    label.answer(answer)
}
