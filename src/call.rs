//! One call in progress, as the wrapper holds it: every operation (`relay`, `reviewRelay`,
//! `relayAll`, streamed or not, dry run or not) that runs on the runtime hands back a
//! `NativeCall`, whose `next()` gives the call's steps in order (its warnings, its JS backends to
//! run and its streamed text as they come, then its end) and whose `cancel()` gives it up (the
//! caller's signal, a stream left early). The one relay that does not, one to a JS backend
//! prepared on the JS thread, is `RelayScope::relay_here`'s `DirectRelay`. docs/ARCHITECTURE.md
//! §2 draws both roads.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use napi_derive::napi;
use tokio::sync::{mpsc, oneshot, Mutex};
use tokio_util::sync::CancellationToken;

use crate::dry_run::{NativeCoverage, NativeDryRun};
use crate::failure::{NativeFailure, RelayErrorReason};
use crate::js_backend::{BackendCall, Invoker};
use crate::relay_all::NativeBackendOutcome;
use crate::usage::NativeUsage;
use relay_core::activity::{Activity, Phase, Status, Watcher};
use relay_core::backend::CallLink;
use relay_core::errors::RelayFailure;
use relay_core::registry::Registry;
use relay_core::relay::{Answered, CallContext, Warn};
use relay_core::stream::{chunk_channel, ChunkSink, ChunkSource};

/// How a call ended well.
pub enum Ending {
    Answer(Answered),
    DryRun(Box<NativeDryRun>),
    Outcomes(Vec<NativeBackendOutcome>),
}

type Ended = Result<Ending, RelayFailure>;

/// What a step is.
#[napi(string_enum = "lowercase")]
pub enum StepKind {
    /// Streamed text of the answer (`text`).
    Text,
    /// A warning about the call (`text`): the caller's `onWarning`, else `console.error`.
    Warning,
    /// A JS backend to run for the call (`invoke`): the caller runs its trampoline and settles
    /// the invocation.
    Invoke,
    /// The call's answer (`text`), the backend that gave it (`backend`) and, for a fitted
    /// diff, its coverage (`coverage`): the last step.
    Answer,
    /// What would be run (`dryRun`): the last step.
    DryRun,
    /// Each backend's outcome of a `relayAll()` (`outcomes`): the last step.
    Outcomes,
    /// Why the call failed (`failure`): the last step.
    Failure,
    /// What the backend is doing (`progress`), for `onProgress`.
    Progress,
}

/// One step of a call.
#[napi(object, object_from_js = false)]
pub struct CallStep {
    pub kind: StepKind,
    pub text: Option<String>,
    pub invoke: Option<BackendCall>,
    pub dry_run: Option<NativeDryRun>,
    pub outcomes: Option<Vec<NativeBackendOutcome>>,
    pub failure: Option<NativeFailure>,
    /// The backend that answered (an answer).
    pub backend: Option<String>,
    /// How a fitted diff was fitted, file by file (an answer with `fit`).
    pub coverage: Option<Vec<NativeCoverage>>,
    /// The backends asked before the one that answered (an answer with `fallback`).
    pub attempts: Option<Vec<NativeAttempt>>,
    /// The model that answered, when known (an answer).
    pub model: Option<String>,
    /// What the answer cost, as far as the backend said (an answer).
    pub usage: Option<NativeUsage>,
    /// What the backend is doing (a progress step).
    pub progress: Option<NativeProgress>,
}

/// What a call is doing (docs/CONTRACT.md §10a): the core's one list (`relay_core::activity::Phase`),
/// which napi renders in binding.d.ts (the wrapper's `RelayProgress.phase`).
#[napi(string_enum = "lowercase")]
pub enum ProgressPhase {
    Preparing,
    Starting,
    Thinking,
    Tool,
    Writing,
}

impl From<Phase> for ProgressPhase {
    fn from(phase: Phase) -> Self {
        match phase {
            Phase::Preparing => ProgressPhase::Preparing,
            Phase::Starting => ProgressPhase::Starting,
            Phase::Thinking => ProgressPhase::Thinking,
            Phase::Tool => ProgressPhase::Tool,
            Phase::Writing => ProgressPhase::Writing,
        }
    }
}

/// A call's status, for `onProgress`.
#[napi(object, object_from_js = false)]
pub struct NativeProgress {
    /// The backend at work; absent while the call is prepared.
    pub backend: Option<String>,
    pub phase: ProgressPhase,
    /// The tool it runs, in the `tool` phase.
    pub tool: Option<String>,
    pub answer_bytes: f64,
    pub elapsed_ms: f64,
    /// The status for people: `codex: running Read (12s, 340 bytes of the answer so far)`.
    pub message: String,
}

/// A backend that could not answer now, before the next was asked (`fallback`).
#[napi(object, object_from_js = false)]
pub struct NativeAttempt {
    pub backend: String,
    pub reason: RelayErrorReason,
    pub code: String,
    pub message: String,
}

impl CallStep {
    /// A step of `kind` that carries nothing yet.
    fn empty(kind: StepKind) -> CallStep {
        CallStep {
            kind,
            text: None,
            invoke: None,
            dry_run: None,
            outcomes: None,
            failure: None,
            backend: None,
            coverage: None,
            attempts: None,
            model: None,
            usage: None,
            progress: None,
        }
    }

    #[allow(clippy::cast_precision_loss)]
    fn progress(status: Status) -> CallStep {
        let progress = NativeProgress {
            message: status.describe(),
            backend: status.backend,
            phase: status.phase.into(),
            tool: status.tool,
            answer_bytes: status.answer_bytes as f64,
            elapsed_ms: status.elapsed.as_millis() as f64,
        };
        CallStep {
            progress: Some(progress),
            ..CallStep::empty(StepKind::Progress)
        }
    }

    fn of(kind: StepKind, text: String) -> CallStep {
        CallStep {
            text: Some(text),
            ..CallStep::empty(kind)
        }
    }

    fn ended(ended: Ended) -> CallStep {
        match ended {
            Ok(Ending::Answer(answered)) => CallStep {
                backend: Some(answered.backend),
                model: answered.model,
                usage: answered.usage.map(NativeUsage::from),
                coverage: answered
                    .coverage
                    .map(|files| files.into_iter().map(NativeCoverage::from).collect()),
                attempts: Some(
                    answered
                        .attempts
                        .into_iter()
                        .map(|attempt| NativeAttempt {
                            backend: attempt.backend,
                            reason: attempt.reason.into(),
                            code: attempt.code.to_string(),
                            message: attempt.message,
                        })
                        .collect(),
                ),
                ..CallStep::of(StepKind::Answer, answered.answer)
            },
            Ok(Ending::DryRun(dry_run)) => CallStep {
                dry_run: Some(*dry_run),
                ..CallStep::empty(StepKind::DryRun)
            },
            Ok(Ending::Outcomes(outcomes)) => CallStep {
                outcomes: Some(outcomes),
                ..CallStep::empty(StepKind::Outcomes)
            },
            Err(failure) => CallStep::failed(&failure),
        }
    }

    fn invoke(call: Box<BackendCall>) -> CallStep {
        CallStep {
            invoke: Some(*call),
            ..CallStep::empty(StepKind::Invoke)
        }
    }

    pub fn failed(failure: &RelayFailure) -> CallStep {
        CallStep {
            failure: Some(NativeFailure::from(failure)),
            ..CallStep::empty(StepKind::Failure)
        }
    }
}

/// How often `onProgress` hears the same status again without a change.
const PROGRESS_PACE: std::time::Duration = std::time::Duration::from_secs(1);

/// The next status of a watched call; never when nobody watches.
async fn next_status(watcher: &mut Option<Watcher>) -> Option<Status> {
    match watcher {
        Some(watcher) => watcher.next().await,
        None => std::future::pending().await,
    }
}

/// The call's warnings, in order, for its `next()`.
struct CallWarnings(mpsc::UnboundedSender<String>);

impl Warn for CallWarnings {
    fn warn(&self, message: String) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        // Nobody reading any more (the call was given up) is fine.
        let _ = self.0.send(message);
        Box::pin(std::future::ready(()))
    }
}

struct Steps {
    warnings: mpsc::UnboundedReceiver<String>,
    /// Its JS backends' invocations, for the caller's JS to run.
    invocations: mpsc::UnboundedReceiver<Box<BackendCall>>,
    /// `None` when the call does not stream, or once its text has all been read.
    text: Option<ChunkSource>,
    /// `None` when nobody watches the call's progress, or once it is over.
    watcher: Option<Watcher>,
    ended: Option<oneshot::Receiver<Ended>>,
    /// The end, held back while a last change of phase is told.
    finished: Option<Ended>,
}

#[napi]
pub struct NativeCall {
    cancel: CancellationToken,
    steps: Arc<Mutex<Steps>>,
}

/// What starting a call needs besides its work, snapshotted on the JS thread.
pub struct Start {
    pub registry: Registry,
    pub env: relay_core::env::Env,
    pub cwd: String,
    pub cancel: CancellationToken,
    pub stream: bool,
    /// Whether `next()` says what the backend is doing (`onProgress`).
    pub progress: bool,
}

impl NativeCall {
    /// Starts `work` on the runtime with the call's warnings (and, when `stream`, its text)
    /// going to `next()`.
    pub fn start<Work>(
        Start {
            registry,
            env,
            cwd,
            cancel,
            stream,
            progress,
        }: Start,
        work: impl FnOnce(Registry, CallContext) -> Work,
    ) -> NativeCall
    where
        Work: Future<Output = Ended> + Send + 'static,
    {
        let (warn, warnings) = mpsc::unbounded_channel();
        let (invoker, invocations) = mpsc::unbounded_channel();
        let (chunks, text) = if stream {
            let (sink, source) = chunk_channel();
            (sink, Some(source))
        } else {
            (ChunkSink::discard(), None)
        };
        let (activity, watcher) = match progress {
            true => {
                let (activity, watcher) = Activity::watched(PROGRESS_PACE);
                (activity, Some(watcher))
            }
            false => (Activity::unwatched(), None),
        };
        let context = CallContext {
            env,
            cwd,
            cancel: cancel.clone(),
            warn: Arc::new(CallWarnings(warn)),
            link: CallLink::new(Invoker(invoker)),
            chunks,
            activity,
        };
        let (end, ended) = oneshot::channel();
        let work = work(registry, context);
        napi::bindgen_prelude::spawn(async move {
            // Nobody listening any more is fine: the call was given up.
            let _ = end.send(work.await);
        });
        NativeCall {
            cancel,
            steps: Arc::new(Mutex::new(Steps {
                warnings,
                invocations,
                text,
                watcher,
                ended: Some(ended),
                finished: None,
            })),
        }
    }
}

#[napi]
impl NativeCall {
    /// The next step: a warning, a JS backend to run or streamed text as they come, then the end
    /// (answer, dry run, outcomes or failure). The wrapper asks for one at a time, without
    /// waiting for an invocation it was handed to settle, and stops after the end.
    #[napi]
    pub async fn next(&self) -> CallStep {
        let mut steps = self.steps.lock().await;
        let Steps {
            warnings,
            invocations,
            text,
            watcher,
            ended,
            finished,
        } = &mut *steps;
        loop {
            // A change of phase before anything else: the answer's text or the end that came
            // with it must not hide it (`writing` for an answer that came all at once).
            if let Some(status) = watcher.as_mut().and_then(Watcher::changed) {
                return CallStep::progress(status);
            }
            if let Some(result) = finished.take() {
                return CallStep::ended(result);
            }
            // Warnings first: one made before a fallback started is read before its text.
            if let Ok(warning) = warnings.try_recv() {
                return CallStep::of(StepKind::Warning, warning);
            }
            if let Ok(call) = invocations.try_recv() {
                return CallStep::invoke(call);
            }
            if let Some(source) = text {
                tokio::select! {
                    biased;
                    Some(warning) = warnings.recv() => return CallStep::of(StepKind::Warning, warning),
                    Some(call) = invocations.recv() => return CallStep::invoke(call),
                    chunk = source.next() => match chunk {
                        Some(chunk) => return CallStep::of(StepKind::Text, chunk.text),
                        // Every sink is gone: the run is over.
                        None => *text = None,
                    },
                    status = next_status(watcher) => match status {
                        Some(status) => return CallStep::progress(status),
                        None => *watcher = None,
                    },
                }
                continue;
            }
            let Some(receiver) = ended.as_mut() else {
                return CallStep::failed(&RelayFailure::Aborted);
            };
            tokio::select! {
                biased;
                Some(warning) = warnings.recv() => return CallStep::of(StepKind::Warning, warning),
                Some(call) = invocations.recv() => return CallStep::invoke(call),
                result = receiver => {
                    *ended = None;
                    // The work was dropped (the runtime is shutting down): given up.
                    *finished = Some(result.unwrap_or(Err(RelayFailure::Aborted)));
                }
                status = next_status(watcher) => match status {
                    Some(status) => return CallStep::progress(status),
                    None => *watcher = None,
                },
            }
        }
    }

    /// Gives the call up: the relay is aborted, its backend stopped, and what it still sends is
    /// dropped.
    #[napi]
    pub fn cancel(&self) {
        self.cancel.cancel();
    }
}
