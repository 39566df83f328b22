//! Asking the next friend (`fallback`, docs/CONTRACT.md §8a): when the backend fails for a reason
//! that means it cannot answer now (`auth`, `quota`, `rate-limit`, `network`, `stalled`,
//! `not-installed`), the next backend named is asked, with the same envelope, sandbox rules,
//! deadline and signal; never after an answer (a streamed start of one included), a schema
//! mismatch or an abort.

use std::sync::Arc;

use super::answered::{Attempt, Ran};
use super::call::Warn;
use super::settle::run_backend;
use crate::backend::{Backend, RunRequest};
use crate::errors::{RelayError, RelayFailure};
use crate::failure_reason::reason_of_error;
use crate::registry::Registry;

/// What answered: its answer and name, and the backends that failed before it.
pub(super) struct Settled {
    pub ran: Ran,
    pub backend: String,
    pub attempts: Vec<Attempt>,
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
        let result = run_backend(backend, this, &deadline).await;
        let failed = match (&result, following) {
            (Err(RelayFailure::Relay(err)), Some(following)) => Some((err, following)),
            _ => None,
        };
        let Some((err, following)) = failed else {
            return result.map(|ran| Settled {
                ran,
                backend: name,
                attempts,
            });
        };
        let reason = reason_of_error(err).filter(|reason| reason.is_unavailable_now());
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
    }
}
