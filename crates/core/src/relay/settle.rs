//! What a backend's result becomes: the call's answer or failure. A stream past the output limit
//! stops the backend; an aborted call is aborted whatever the backend said; a schema's answer is
//! checked (a verdict's against its findings too).

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::answered::Ran;
use crate::backend::{named_model, Backend, BackendFailure, BackendResult, RunRequest};
use crate::deadline::Deadline;
use crate::errors::{BackendFailureKind, RelayError, RelayFailure, Subject};
use crate::limits::MAX_OUTPUT_BYTES;
use crate::progress::Progress;
use crate::schema::Schema;
use crate::stream::ChunkSink;
use crate::usage::{Reported, RunReport};
use crate::verdict;

/// Runs the backend, unless the call was aborted. A deadline that passed during preparation is
/// the backend's to report (the request carries it): its own timeout error, as before.
pub(crate) async fn run_backend(
    backend: Arc<dyn Backend>,
    mut request: RunRequest,
    deadline: &Deadline,
) -> Result<Ran, RelayFailure> {
    not_aborted(deadline)?;
    let cancel = deadline.cancel_token();
    let name = backend.name().to_string();
    let chunks = request.terms.chunks.clone();
    let stop = cancel.child_token();
    // Each run its own clock and report: relayAll()'s backends share the call's terms.
    let progress = request.terms.progress.restarted();
    request.terms.progress = progress.clone();
    let report = RunReport::default();
    request.terms.report = report.clone();
    request.terms.activity.started(&name);
    let asked = named_model(&request.terms.model).map(str::to_string);
    let run = watched(&name, progress, &stop, backend.run(request, stop.clone()));
    let result = within_stream_limit(&chunks, stop, run).await;
    let answer = streamed(settle(&name, result, cancel), &chunks).await?;
    Ok(Ran {
        answer,
        reported: reported(&report, asked),
    })
}

/// What a run said about itself; the model it was asked for when it named none.
pub(super) fn reported(report: &RunReport, asked: Option<String>) -> Reported {
    let mut reported = report.reported();
    reported.model = reported.model.or(asked);
    reported
}

/// How long a backend marked stalled has to stop on its own (a CLI, with its last words) before
/// it is cancelled.
const STALL_GRACE: Duration = Duration::from_secs(5);

/// `run` under the stall watchdog (docs/CONTRACT.md §14), when its progress is watched: once
/// nothing touched the progress for the idle time-out, the run is marked stalled and the
/// backend stops as on a time-out; one that does not within [`STALL_GRACE`] is cancelled. It
/// then fails `Stalled`, with the backend's own words where it had any.
pub(super) fn watched(
    name: &str,
    progress: Progress,
    stop: &CancellationToken,
    mut run: crate::backend::BackendFuture,
) -> crate::backend::BackendFuture {
    let Some(limit) = progress.limit() else {
        return run;
    };
    let (name, stop) = (name.to_string(), stop.clone());
    Box::pin(async move {
        tokio::select! {
            result = &mut run => return result,
            () = progress.idle() => {}
        }
        progress.stall();
        let result = tokio::select! {
            result = &mut run => result,
            () = tokio::time::sleep(STALL_GRACE) => {
                stop.cancel();
                run.await
            }
        };
        match result {
            Err(BackendFailure::Cancelled) => Err(BackendFailure::reported(
                BackendFailureKind::Stalled,
                format!(
                    "{name} made no progress for {}s (idleTimeoutSeconds)",
                    limit.display()
                ),
            )),
            // Its own stall (words included), or what it settled with meanwhile.
            other => other,
        }
    })
}

/// The backend's `run` (or review), begun with `stop` (a child of the call's token). A stream
/// that went past the output limit (stream.rs) stops the backend, as a cancel does, waits for it
/// to stop, and fails: the consumer has had all the text it will get.
pub(super) async fn within_stream_limit(
    chunks: &ChunkSink,
    stop: CancellationToken,
    mut run: crate::backend::BackendFuture,
) -> BackendResult {
    tokio::select! {
        result = &mut run => result,
        offered = chunks.past_limit() => {
            stop.cancel();
            let _ = run.await;
            Err(BackendFailure::reported(
                BackendFailureKind::OutputTooLarge,
                RelayError::TooLarge {
                    subject: Subject::BackendOutput,
                    size: offered,
                    max: MAX_OUTPUT_BYTES,
                }
                .to_string(),
            ))
        }
    }
}

/// A backend that did not stream its answer (a JS backend's `run()`, say) streams it as one
/// chunk, so a streaming caller always sees the whole answer.
pub(super) async fn streamed(
    settled: Result<String, RelayFailure>,
    chunks: &ChunkSink,
) -> Result<String, RelayFailure> {
    if let Ok(answer) = &settled {
        // Only a streaming call pays for the copy.
        if chunks.is_streaming() && !chunks.has_sent() {
            chunks.send(answer.clone()).await;
        }
    }
    settled
}

/// A backend's result as the caller sees it; once the signal fired, the call is aborted.
pub fn settle(
    name: &str,
    result: BackendResult,
    cancel: &CancellationToken,
) -> Result<String, RelayFailure> {
    if cancel.is_cancelled() {
        return Err(RelayFailure::Aborted);
    }
    match result {
        Ok(answer) => Ok(answer),
        Err(BackendFailure::Cancelled) => Err(RelayFailure::Aborted),
        Err(BackendFailure::Thrown(thrown)) => Err(RelayFailure::Thrown(thrown)),
        Err(BackendFailure::Reported {
            kind,
            message,
            cause,
            output,
            partial,
        }) => Err(RelayError::Backend {
            kind,
            backend: name.to_string(),
            message,
            cause: cause.map(Box::new),
            output,
            partial: partial.map(String::into_boxed_str),
        }
        .into()),
    }
}

/// A schema-checked answer is its JSON text; a verdict is also checked against its findings (and
/// written back compact, as upstream, the phone-a-friend v4.1.1 CLI, does: docs/CONTRACT.md §13).
/// One that does not match is `ERR_SCHEMA` carrying the answer and the `backend` that gave it.
/// The check runs where the call's deadline and abort stop waiting for it: a schema's patterns
/// over a large answer can take long.
pub(crate) async fn checked(
    answer: String,
    schema: Option<&Arc<Schema>>,
    verdict: bool,
    backend: &str,
    deadline: &Deadline,
) -> Result<String, RelayFailure> {
    let Some(schema) = schema else {
        return Ok(answer);
    };
    let schema = Arc::clone(schema);
    match deadline
        .bound_on_thread("paf-schema-check", move || {
            checked_now(answer, &schema, verdict)
        })
        .await
    {
        Ok(Ok(Ok(checked))) => Ok(checked),
        Ok(Ok(Err((message, answer)))) => Err(RelayError::AnswerMismatch {
            backend: backend.to_string(),
            message,
            answer,
        }
        .into()),
        Ok(Err(e)) => Err(RelayError::Schema(format!(
            "Could not check the answer against the schema: {e}"
        ))
        .into()),
        Err(stop) => Err(deadline.failure(stop, "checking the answer against the schema")),
    }
}

/// The checked answer, or why it does not match, with the answer given back.
fn checked_now(answer: String, schema: &Schema, verdict: bool) -> Result<String, (String, String)> {
    let json = match schema.check(&answer) {
        Ok(json) => json,
        Err(mismatch) => return Err((mismatch.to_string(), answer)),
    };
    if !verdict {
        return Ok(json);
    }
    match verdict::parse(&json) {
        Ok(verdict) => Ok(verdict.to_json()),
        Err(mismatch) => Err((RelayError::from(mismatch).to_string(), answer)),
    }
}

/// An aborted call settles as aborted, as [`run_backend`] would.
pub(super) fn not_aborted(deadline: &Deadline) -> Result<(), RelayFailure> {
    if deadline.cancel_token().is_cancelled() {
        return Err(RelayFailure::Aborted);
    }
    Ok(())
}
