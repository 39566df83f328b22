//! One call of a JS backend's `run()`/`review()` made from the runtime, as the trampoline holds
//! it: where `runStream`'s chunks go, how the relay tells the backend to stop, and where its
//! outcome goes. The relay keeps the other half ([`Control`]); nothing is looked up by id.

use relay_core::activity::Activity;
use relay_core::progress::Progress;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use napi_derive::napi;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use relay_core::stream::ChunkSink;

/// How long a cancelled call waits for its backend to have been told; a closing environment
/// may never run the trampoline.
const TELL_LIMIT: Duration = Duration::from_millis(500);

/// How a JS backend's call failed, as the trampoline reports it.
#[napi(string_enum = "lowercase")]
pub enum OutcomeFailure {
    /// It threw a `BackendError`.
    Backend,
    /// It threw a `RelayError`.
    Relay,
    /// It threw anything else.
    Thrown,
    /// It resolved with something other than a string.
    Invalid,
    /// It did not settle within its time and grace.
    Timeout,
    /// The caller's signal fired.
    Aborted,
}

/// What the trampoline resolves with: an `output`, or a `failure` kind.
#[napi(object)]
pub struct BackendOutcome {
    pub output: Option<String>,
    pub failure: Option<OutcomeFailure>,
    pub message: Option<String>,
    /// Where the trampoline keeps the thrown value.
    pub handle: Option<u32>,
    /// The id the backend gave `onSessionCreated`.
    pub session_id: Option<String>,
}

/// Why the relay stopped an invocation.
#[napi(string_enum = "lowercase")]
pub enum StopReason {
    /// The call's timeout passed (`message` is the `ERR_BACKEND_TIMEOUT` text).
    Timeout,
    /// The caller aborted, or the call was given up for it.
    Cancelled,
}

/// What `Invocation.stopped()` resolves with once the relay stops the invocation.
#[napi(object, object_from_js = false)]
pub struct InvocationStop {
    pub reason: StopReason,
    pub message: Option<String>,
}

/// The relay's half of an invocation.
#[derive(Default)]
pub struct Control {
    /// Where streamed text goes until the invocation is over: the stream ends only once every
    /// sink is gone, and the JS object holding the invocation lives until it is collected.
    chunks: Mutex<Option<ChunkSink>>,
    /// The run's progress (`idleTimeoutSeconds`): each chunk touches it.
    progress: Progress,
    /// Where the caller who watches hears of each chunk (`onProgress`).
    activity: Activity,
    stop: CancellationToken,
    /// The timeout message when it stopped for a timeout; `None` for a cancellation.
    why: OnceLock<Option<String>>,
    /// The trampoline is done with the invocation: it settled, or it has told the backend.
    closed: CancellationToken,
    /// Where the trampoline's outcome goes (taken by the first `settle`).
    outcome: Mutex<Option<oneshot::Sender<BackendOutcome>>>,
}

impl Control {
    /// Stops the invocation (the first reason given wins).
    pub fn stop(&self, timeout_message: Option<String>) {
        let _ = self.why.set(timeout_message);
        self.stop.cancel();
    }

    /// The invocation is over for the relay: its stream ends, whatever the trampoline still holds.
    pub fn finish(&self) {
        self.chunks().take();
    }

    fn chunks(&self) -> std::sync::MutexGuard<'_, Option<ChunkSink>> {
        self.chunks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Stops it and waits (briefly) until the trampoline has told the backend, so a caller that
    /// exits as soon as its relay rejects still leaves the backend aborted.
    pub async fn stop_and_tell(&self, timeout_message: Option<String>) {
        self.stop(timeout_message);
        let _ = tokio::time::timeout(TELL_LIMIT, self.closed.cancelled()).await;
    }
}

#[napi]
pub struct Invocation {
    control: Arc<Control>,
}

impl Invocation {
    /// An invocation whose streamed text goes to `chunks`, the relay's half of it, and where its
    /// outcome arrives.
    pub fn open(
        chunks: ChunkSink,
        progress: Progress,
        activity: Activity,
    ) -> (Invocation, Arc<Control>, oneshot::Receiver<BackendOutcome>) {
        let (settle, outcome) = oneshot::channel();
        let control = Arc::new(Control {
            chunks: Mutex::new(Some(chunks)),
            progress,
            activity,
            outcome: Mutex::new(Some(settle)),
            ..Control::default()
        });
        let invocation = Invocation {
            control: control.clone(),
        };
        (invocation, control, outcome)
    }
}

#[napi]
impl Invocation {
    /// A chunk from the backend's `runStream`; resolves once the consumer has room for it (at
    /// most 1 MiB unread), which is what pauses the backend. Once nobody reads, it is dropped.
    #[napi]
    pub async fn push(&self, text: String) {
        let sink = self.control.chunks().clone();
        let progress = &self.control.progress;
        progress.touch();
        self.control.activity.wrote(text.len());
        if let Some(sink) = sink {
            // The consumer's pace is not the backend's.
            let _paused = progress.pause();
            sink.send(text).await;
        }
    }

    /// Resolves when the relay stops the invocation, with why; with `null` once it is closed.
    #[napi]
    pub async fn stopped(&self) -> Option<InvocationStop> {
        let control = &self.control;
        tokio::select! {
            biased;
            () = control.stop.cancelled() => Some(match control.why.get().cloned().flatten() {
                Some(message) => InvocationStop { reason: StopReason::Timeout, message: Some(message) },
                None => InvocationStop { reason: StopReason::Cancelled, message: None },
            }),
            () = control.closed.cancelled() => None,
        }
    }

    /// The trampoline's outcome (the first one counts; the relay may have given up already).
    #[napi]
    pub fn settle(&self, outcome: BackendOutcome) {
        let sender = self
            .control
            .outcome
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(sender) = sender {
            let _ = sender.send(outcome);
        }
        self.close();
    }

    /// The trampoline is done with it: it settled, or it told the backend to stop.
    #[napi]
    pub fn close(&self) {
        self.control.finish();
        self.control.closed.cancel();
    }
}
