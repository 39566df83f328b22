//! Streaming calls (docs/CONTRACT.md §10) for the JS wrapper's `relayStream()` and `onChunk`:
//! `start` runs the relay on the runtime with a chunk channel and returns an id; each
//! `streamNext(id)` waits for the next chunk, then, once the run ended, for its answer or failure;
//! `streamCancel(id)` aborts it. The wrapper owns the order (one `streamNext` at a time) and always
//! ends a stream with its last step or a cancel.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};

use napi::{Error, Result, Status};
use napi_derive::napi;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::errors::to_napi_error;
use super::{call_context, NativeCaller, NativeRelayOptions, NativeReviewOptions};
use crate::errors::RelayFailure;
use crate::relay;
use crate::stream::{chunk_channel, ChunkSource};

type Outcome = std::result::Result<String, RelayFailure>;

struct Running {
    /// Taken by the `streamNext` in progress, put back when it returns a chunk.
    source: Option<ChunkSource>,
    outcome: oneshot::Receiver<Outcome>,
    cancel: CancellationToken,
}

static NEXT_ID: AtomicU32 = AtomicU32::new(1);
static STREAMS: LazyLock<Mutex<HashMap<u32, Running>>> = LazyLock::new(Mutex::default);

fn streams() -> MutexGuard<'static, HashMap<u32, Running>> {
    STREAMS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn unknown_stream(id: u32) -> Error {
    Error::new(Status::InvalidArg, format!("unknown or busy stream {id}"))
}

/// One step of a stream: a chunk of text, or (once the run ended) the final answer.
#[napi(object)]
pub struct StreamStep {
    pub text: Option<String>,
    pub answer: Option<String>,
}

fn start<F>(
    caller: NativeCaller,
    run: impl FnOnce(crate::registry::Registry, relay::CallContext) -> F,
) -> Result<u32>
where
    F: Future<Output = Outcome> + Send + 'static,
{
    let (registry, mut context) = call_context(caller)?;
    let (sink, source) = chunk_channel();
    context.chunks = sink;
    let cancel = context.cancel.clone();
    let (done, outcome) = oneshot::channel();
    let work = run(registry, context);
    napi::bindgen_prelude::spawn(async move {
        // Nobody listening any more is fine: the stream was cancelled.
        let _ = done.send(work.await);
    });
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    streams().insert(
        id,
        Running {
            source: Some(source),
            outcome,
            cancel,
        },
    );
    Ok(id)
}

/// Starts `relay()` with its text streamed; the wrapper calls it on the first `next()`.
#[napi]
pub fn relay_stream(options: NativeRelayOptions, caller: NativeCaller) -> Result<u32> {
    start(caller, |registry, context| {
        relay::relay(registry, options.into(), context)
    })
}

/// Starts `reviewRelay()` with its text streamed (for `onChunk`).
#[napi]
pub fn review_stream(options: NativeReviewOptions, caller: NativeCaller) -> Result<u32> {
    start(caller, |registry, context| {
        relay::review_relay(registry, options.into(), context)
    })
}

/// The next chunk, else the answer; rejects as the relay failed. After the answer or a
/// rejection the stream is gone.
#[napi]
pub async fn stream_next(id: u32) -> Result<StreamStep> {
    let mut source = streams()
        .get_mut(&id)
        .and_then(|running| running.source.take())
        .ok_or_else(|| unknown_stream(id))?;
    if let Some(chunk) = source.next().await {
        // Cancelled meanwhile: the chunk still goes out, the next step says so.
        if let Some(running) = streams().get_mut(&id) {
            running.source = Some(source);
        }
        return Ok(StreamStep {
            text: Some(chunk.text),
            answer: None,
        });
    }
    let outcome = streams().remove(&id).map(|running| running.outcome);
    let result = match outcome {
        Some(outcome) => outcome.await.unwrap_or(Err(RelayFailure::Aborted)),
        None => Err(RelayFailure::Aborted),
    };
    match result {
        Ok(answer) => Ok(StreamStep {
            text: None,
            answer: Some(answer),
        }),
        Err(failure) => Err(to_napi_error(&failure)),
    }
}

/// Gives up on a stream (`break`, `return()`, a throwing `onChunk`): the run is aborted, its
/// backend stopped, and what it still sends is dropped.
#[napi]
pub fn stream_cancel(id: u32) {
    if let Some(running) = streams().remove(&id) {
        running.cancel.cancel();
    }
}
