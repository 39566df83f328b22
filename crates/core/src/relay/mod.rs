//! `relay()` and `reviewRelay()`, read top to bottom: one [`RelayRequest`] type (request.rs), the
//! checks (checks.rs), a run's preparation (prepare.rs: session, context, diff, envelope) or a
//! review's (review.rs), then the backend and what its result becomes (settle.rs).
//! One deadline per call, started when the call is made, bounds everything: the context file's
//! reads and every git run of preparation (on the call's task, never a thread of their own),
//! then the backend, which is handed what is left of it.

mod answered;
mod call;
mod checks;
mod fallback;
mod prepare;
mod request;
mod review;
mod settle;

pub use answered::{Answered, Attempt, Ran};
pub use call::{CallContext, Caller, Warn};
pub(crate) use checks::check_backend;
pub use checks::refused_at_once;
pub use prepare::{prepare_relay_at_once, Prepared};
pub(crate) use prepare::{prepare_run, CallBackends};
pub use request::{Operation, RelayRequest};
pub use review::{dry_run_review, review_relay};
pub use settle::settle;
pub(crate) use settle::{checked, run_backend};

use crate::dry_run::DryRun;
use crate::env::Env;
use crate::errors::RelayFailure;
use crate::registry::Registry;
use crate::sessions;

pub async fn relay(
    registry: Registry,
    request: RelayRequest,
    mut call: CallContext,
) -> Result<Answered, RelayFailure> {
    // The steps before and after the backend are boxed: their state is not part of what a relay
    // keeps while its backend runs, the longest wait by far (hundreds at once: BENCHMARKS.md).
    let fallback = request.fallback.clone().unwrap_or_default();
    let Prepared {
        backend,
        mut request,
        session,
        diff,
        fitted,
    } = Box::pin(prepare::prepare_relay(&registry, request, call.caller())).await?;
    // The request holds the child's own copy of the environment; the caller's is not kept for
    // as long as the backend runs.
    call.env = Env::new();
    call.warn_about_diff(diff).await;
    call.warn_about_fit(fitted.as_ref()).await;
    if let Some(notice) = session.as_ref().and_then(|session| session.notice.clone()) {
        call.warn.warn(notice).await;
    }
    let deadline = request.terms.deadline.clone();
    request.terms.chunks = call.chunks;
    request.terms.activity = call.activity;
    let schema = request.terms.schema.clone();
    // Kept for the session's history only when there is a session.
    let prompt = session.as_ref().map(|_| request.prompt.clone());
    if session.is_some() {
        fallback::check_sessions(&registry, &fallback)?;
    }
    let settled = match fallback.is_empty() {
        true => fallback::Settled {
            backend: backend.name().to_string(),
            ran: run_backend(backend, request, &deadline).await?,
            attempts: Vec::new(),
            moved: None,
        },
        false => {
            let (backends, warn) = ((backend, fallback), call.warn.as_ref());
            Box::pin(fallback::run_with_fallback(
                &registry, backends, request, warn,
            ))
            .await?
        }
    };
    let fallback::Settled {
        ran: Ran { answer, reported },
        backend: name,
        attempts,
        moved,
    } = settled;
    let session = fallback::session_of(&registry, session, moved, &name)?;
    if let Some(session) = &session {
        sessions::check_resumed(&session.label, &session.turn)?;
    }
    let answer = Box::pin(checked(answer, schema.as_ref(), false, &name, &deadline)).await?;
    if let (Some(session), Some(prompt)) = (session, prompt) {
        // The answer is the caller's now: a save the call's deadline or abort stops (the store's
        // lock held elsewhere) is a warning.
        for warning in Box::pin(session.save(&prompt, &answer, &deadline)).await {
            call.warn.warn(warning).await;
        }
    }
    Ok(Answered {
        attempts,
        ..Answered::new(Ran { answer, reported }, name, fitted)
    })
}

/// `relay({ dryRun: true })`: everything [`relay`] does before the backend, then what the
/// backend would do.
pub async fn dry_run_relay(
    registry: Registry,
    request: RelayRequest,
    call: CallContext,
) -> Result<DryRun, RelayFailure> {
    let Prepared {
        backend,
        request,
        diff,
        fitted,
        ..
    } = prepare::prepare_relay(&registry, request, call.caller()).await?;
    call.warn_about_diff(diff).await;
    call.warn_about_fit(fitted.as_ref()).await;
    settle::not_aborted(&request.terms.deadline)?;
    let plan = backend.plan(&request);
    let dry_run = DryRun::of_run(backend.name(), plan, &request, &call.env, None)
        .with_diff(diff)
        .with_coverage(fitted);
    call.warn_about_refusals(&dry_run).await;
    Ok(dry_run)
}

#[cfg(test)]
mod tests;
