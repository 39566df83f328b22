//! Asking the next friend (`fallback`, docs/CONTRACT.md §8a): when the backend fails for a reason
//! that means it cannot answer now (`auth`, `quota`, `rate-limit`, `network`, `stalled`,
//! `not-installed`), or refused an envelope too large for it before running, the next backend
//! named is asked, with the same envelope, sandbox rules, deadline and signal; never after an
//! answer (a streamed start of one included), a schema mismatch or an abort.

use std::sync::Arc;

use super::answered::{Attempt, Ran};
use super::call::Warn;
use super::settle::run_backend;
use crate::backend::{Backend, RunRequest};
use crate::errors::{RelayError, RelayFailure};
use crate::failure_reason::reason_to_ask_another;
use crate::registry::Registry;
use crate::sessions::{Pending, ResumeStrategy, SessionTurn};

/// What answered: its answer and name, and the backends that failed before it.
pub(super) struct Settled {
    pub ran: Ran,
    pub backend: String,
    pub attempts: Vec<Attempt>,
    /// The session turn of the backend that answered, when the call has a session and a
    /// backend after the first answered: a conversation of its own, begun by this turn.
    pub moved: Option<SessionTurn>,
}

/// With a session, every backend of the fallback must be able to keep one: the label moves to
/// the one that answers.
pub(super) fn check_sessions(registry: &Registry, fallback: &[String]) -> Result<(), RelayError> {
    for name in fallback {
        if registry.get(name)?.resume_strategy() == ResumeStrategy::Unsupported {
            return Err(RelayError::Session(format!(
                "Backend {name} cannot resume a session (fallback with session)"
            )));
        }
    }
    Ok(())
}

/// The call's session once `name` answered: the label goes with a fallback that answered.
pub(super) fn session_of(
    registry: &Registry,
    session: Option<Pending>,
    moved: Option<SessionTurn>,
    name: &str,
) -> Result<Option<Pending>, RelayError> {
    Ok(match (session, moved) {
        (Some(session), Some(turn)) => {
            let strategy = registry.get(name)?.resume_strategy();
            Some(session.moved_to(name, strategy, turn))
        }
        (session, _) => session,
    })
}

/// Runs `request` on `backend`, then on each of `fallback` in turn while the one before could
/// not answer now (each was checked with the call: it exists and takes the sandbox).
pub(super) async fn run_with_fallback(
    registry: &Registry,
    (backend, fallback): (Arc<dyn Backend>, Vec<String>),
    request: RunRequest,
    warn: &dyn Warn,
) -> Result<Settled, RelayFailure> {
    let deadline = request.terms.deadline.clone();
    let chunks = request.terms.chunks.clone();
    let mut next = fallback.into_iter();
    let (mut backend, mut request) = (backend, Some(request));
    let mut attempts = Vec::new();
    loop {
        let name = backend.name().to_string();
        let following = next.next();
        // The request is copied only while another backend may need it.
        let this = match following {
            Some(_) => request.clone(),
            None => request.take(),
        }
        .ok_or_else(|| RelayError::Internal("a fallback without its request".into()))?;
        let turn = this.session.clone();
        let result = run_backend(backend, this, &deadline).await;
        let failed = match (&result, following) {
            (Err(RelayFailure::Relay(err)), Some(following)) => Some((err, following)),
            _ => None,
        };
        let Some((err, following)) = failed else {
            let moved = turn.filter(|_| !attempts.is_empty());
            return result.map(|ran| Settled {
                ran,
                backend: name,
                attempts,
                moved,
            });
        };
        let reason = reason_to_ask_another(err);
        let (Some(reason), false, Ok(())) = (reason, chunks.has_sent(), deadline.check()) else {
            return Err(result.err().unwrap_or(RelayFailure::Aborted));
        };
        let attempt = Attempt {
            backend: name,
            reason,
            code: err.code().as_str(),
            message: err.shown_message(),
        };
        warn.warn(format!(
            "[phone-a-friend] fallback: {} cannot answer now ({}): {}; asking {following}",
            attempt.backend,
            attempt.reason.as_str(),
            attempt.message
        ))
        .await;
        attempts.push(attempt);
        backend = registry.get(&following)?;
        // The next backend cannot continue this one's conversation: it starts its own.
        if let Some(request) = request.as_mut() {
            request.session = request.session.as_ref().map(|_| SessionTurn::default());
        }
    }
}
