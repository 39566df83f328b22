//! What every backend is: a name, the sandbox modes it accepts, `run`, and maybe a native
//! `review`. Built-in backends and the bindings' JavaScript backends both implement it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::activity::Activity;
use crate::deadline::{Deadline, Timeout};
use crate::env::Env;
use crate::errors::{BackendFailureKind, ThrownValue};
use crate::model_window::ModelWindow;
use crate::progress::Progress;
use crate::schema::Schema;
use crate::sessions::{ResumeStrategy, SessionTurn};
use crate::stream::ChunkSink;
use crate::usage::RunReport;

/// What every backend request carries, a run's or a native review's: where the backend works,
/// for how long, what it may change, with which model and environment, where its text goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Terms {
    pub repo_path: String,
    /// The caller's `timeoutSeconds`, for messages (`… timed out after <n>s`).
    pub timeout: Timeout,
    /// The call's deadline, started when the call was made: what preparation left of `timeout`.
    pub deadline: Deadline,
    pub sandbox: String,
    /// As the caller gave it: `''` stays `''` (a JS backend receives it; the built-in
    /// backends name no model then, see [`named_model`]).
    pub model: Option<String>,
    pub env: Env,
    /// The JSON Schema the answer must match (docs/CONTRACT.md §13): already in a run's prompt; a
    /// backend with a native mechanism passes it on too. The relay checks the answer either way.
    /// A review with a schema takes the generic path (a run).
    pub schema: Option<Arc<Schema>>,
    /// Where the answer's text goes as it is produced (docs/CONTRACT.md §10); discards when nobody
    /// streams.
    pub chunks: ChunkSink,
    /// Opaque to the core: what the bindings need to reach the call that made this one.
    pub link: CallLink,
    /// The envelope's limit the call was held to: 500,000 bytes, `maxPromptBytes`, or what the
    /// model's context window holds (docs/CONTRACT.md §6a).
    pub prompt_limit: usize,
    /// The model's context window, when its backend reported one to a fitted call: a backend
    /// that sizes its context per request asks for one the prompt fits (Ollama's `num_ctx`).
    pub window: Option<ModelWindow>,
    /// What the backend produces touches it; a backend stops once it is marked stalled
    /// (`idleTimeoutSeconds`). Each run gets its own ([`Progress::restarted`]).
    pub progress: Progress,
    /// Where the backend records its usage and the model that answered, as it learns them.
    /// Each run gets its own (`relay::run_backend`).
    pub report: RunReport,
    /// Where the backend says what it is doing, for a caller who watches (`onProgress`).
    pub activity: Activity,
}

impl Terms {
    /// Whether the backend should give its answer as it goes, where it can choose: somebody
    /// streams it, the stall watchdog counts it as progress, or a caller watches what it does
    /// (claude's `--output-format json` and Ollama's `"stream": false` say nothing until they
    /// are done).
    pub fn wants_stream(&self) -> bool {
        self.chunks.is_streaming() || self.progress.is_watched() || self.activity.is_watched()
    }
}

#[cfg(test)]
impl Terms {
    /// A run's terms for the backends' unit tests: read-only in `repo_path`, nothing watched.
    pub(crate) fn for_tests(
        repo_path: &str,
        timeout_seconds: f64,
        env: Env,
        model: Option<&str>,
    ) -> Terms {
        let timeout = Timeout::from_seconds(timeout_seconds).expect("valid timeout");
        Terms {
            repo_path: repo_path.into(),
            timeout,
            deadline: Deadline::starting_now(timeout, CancellationToken::new()),
            sandbox: "read-only".into(),
            model: model.map(String::from),
            env,
            schema: None,
            prompt_limit: crate::limits::MAX_PROMPT_BYTES,
            window: None,
            progress: Progress::unwatched(),
            report: RunReport::default(),
            activity: Activity::unwatched(),
            chunks: ChunkSink::discard(),
            link: CallLink::default(),
        }
    }
}

/// What a backend is asked its model's context window with ([`Backend::model_window`]).
pub struct WindowQuery {
    /// The model the call names, as the caller gave it.
    pub model: Option<String>,
    /// The caller's environment (where a backend finds its server and default model).
    pub env: Env,
    pub deadline: Deadline,
}

pub type WindowFuture = Pin<Box<dyn Future<Output = Option<ModelWindow>> + Send>>;

/// What `run()` receives.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    pub terms: Terms,
    /// The envelope.
    pub prompt: String,
    /// The run belongs to a session (docs/CONTRACT.md §12): what to replay or resume, and where to
    /// report the backend's own session id.
    pub session: Option<SessionTurn>,
}

/// Whatever the bindings attach to a call for its backends to reach it (the addon: where a JS
/// backend's invocation goes to be run by the caller's own JS); the core only carries it.
#[derive(Clone, Default)]
pub struct CallLink(Option<Arc<dyn std::any::Any + Send + Sync>>);

impl CallLink {
    pub fn new(value: impl std::any::Any + Send + Sync) -> CallLink {
        CallLink(Some(Arc::new(value)))
    }

    /// What was attached, if it is a `T`.
    pub fn get<T: std::any::Any>(&self) -> Option<&T> {
        self.0.as_deref().and_then(|value| value.downcast_ref())
    }
}

impl std::fmt::Debug for CallLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "CallLink(..)"
        } else {
            "CallLink(none)"
        })
    }
}

/// Equal when both are the same link (or both empty), so requests stay comparable.
impl PartialEq for CallLink {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// The model to name to a built-in backend: none for `''`, as the original's `if (model)`.
pub fn named_model(model: &Option<String>) -> Option<&str> {
    model.as_deref().filter(|model| !model.is_empty())
}

/// What a native `review()` receives.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewRequest {
    pub terms: Terms,
    /// The branch or commit to review against (`<base>...HEAD`).
    pub base: String,
    /// The review's instructions, when the caller gave any.
    pub prompt: Option<String>,
}

/// How a backend call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendFailure {
    /// A failure the backend reports itself; becomes a `RelayError` carrying the backend's name.
    Reported {
        kind: BackendFailureKind,
        message: String,
        /// The `BackendError` a JavaScript backend threw, if any.
        cause: Option<ThrownValue>,
        /// The end of what a CLI said last (at most 2 KiB, `backends::last_words`), when it said
        /// something.
        output: Option<String>,
        /// What it had answered when it was stopped (a stall), when it had begun.
        partial: Option<String>,
    },
    /// A value a JavaScript backend threw that is not a `BackendError`: passed through unchanged.
    Thrown(ThrownValue),
    /// The call was cancelled; the backend has stopped.
    Cancelled,
}

impl BackendFailure {
    pub fn reported(kind: BackendFailureKind, message: impl Into<String>) -> Self {
        BackendFailure::Reported {
            kind,
            message: message.into(),
            cause: None,
            output: None,
            partial: None,
        }
    }

    /// The failure of a backend the relay stopped (a time-out, a stall), with what it had
    /// answered by then, when it had begun.
    pub fn with_partial(self, answer: Option<String>) -> Self {
        match self {
            BackendFailure::Reported {
                kind: kind @ (BackendFailureKind::Timeout | BackendFailureKind::Stalled),
                message,
                cause,
                output,
                partial: None,
            } => BackendFailure::Reported {
                kind,
                message,
                cause,
                output,
                partial: answer.filter(|answer| !answer.trim().is_empty()),
            },
            other => other,
        }
    }

    /// A reported failure that carries the CLI's last `words` (cut to their end).
    pub fn with_words(kind: BackendFailureKind, message: impl Into<String>, words: &str) -> Self {
        BackendFailure::Reported {
            kind,
            message: message.into(),
            cause: None,
            output: crate::backends::last_words::tail(words),
            partial: None,
        }
    }
}

/// What a backend would do with a request, said without doing it (a dry run): built by the
/// same code that builds the real invocation, so the two cannot drift apart.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    Command(CommandPlan),
    /// One HTTP request; `body` is its JSON text.
    Http {
        method: &'static str,
        url: String,
        body: String,
    },
    /// A JavaScript backend's `run()`, given the request.
    JsRun,
    /// A JavaScript backend's own `review()`, given the request.
    JsReview,
}

/// A program the relay would start: never through a shell.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandPlan {
    /// The command's name, e.g. `codex`.
    pub name: String,
    /// Where it was found on the relay environment's `PATH`; `None`: not installed.
    pub program: Option<std::path::PathBuf>,
    /// How to install it.
    pub install_hint: String,
    pub args: Vec<std::ffi::OsString>,
    pub cwd: String,
    /// Its whole environment.
    pub env: Env,
    /// Whether the envelope goes on its stdin (else stdin is empty).
    pub envelope_on_stdin: bool,
}

pub type BackendResult = Result<String, BackendFailure>;
pub type BackendFuture = Pin<Box<dyn Future<Output = BackendResult> + Send>>;

pub trait Backend: Send + Sync {
    fn name(&self) -> &str;

    /// Sandbox modes this backend accepts.
    fn allowed_sandboxes(&self) -> &[String];

    /// Runs the prompt. Must stop its work and resolve `Cancelled` soon after `cancel` fires.
    fn run(self: Arc<Self>, request: RunRequest, cancel: CancellationToken) -> BackendFuture;

    /// A native review, or `None` when this request takes the generic path (diff in the prompt):
    /// by default every review does. A backend that overrides it overrides `plan_review` too.
    fn review(
        self: Arc<Self>,
        _request: &ReviewRequest,
        _cancel: CancellationToken,
    ) -> Option<BackendFuture> {
        None
    }

    /// Whether it runs on the caller's own thread (a JS backend): then a relay that waits on
    /// nothing before it ([`crate::relay::prepare_relay_at_once`]) may call it from that thread.
    fn runs_on_caller_thread(&self) -> bool {
        false
    }

    /// How this backend continues a conversation (docs/CONTRACT.md §12).
    fn resume_strategy(&self) -> ResumeStrategy {
        ResumeStrategy::Unsupported
    }

    /// What `run` would do with `request`, starting nothing (a dry run).
    fn plan(&self, request: &RunRequest) -> Plan;

    /// Asks the model's context window, when this backend can (Ollama: `/api/show`), for a call
    /// that fits its envelope (`fit`); the future ends by the query's deadline, `None` when the
    /// window is not known. `None` for a backend that cannot ask.
    fn model_window(&self, _query: WindowQuery) -> Option<WindowFuture> {
        None
    }

    /// What `review` would do, when it would review natively; `None` exactly when `review`
    /// returns `None` (the generic path), as the default `review` always does.
    fn plan_review(&self, _request: &ReviewRequest) -> Option<Plan> {
        None
    }
}
