//! `relayAll()` (docs/CONTRACT.md §15): one preparation, several backends at once.
//!
//! The checks that do not depend on the backend (prompt, timeout, repository, context, diff,
//! sizes, depth) run once and reject the whole call, as `relay()` would, whatever the backends.
//! The one check that does (check 4: a name nobody registered, a sandbox mode the backend
//! refuses) fails that backend alone: its neighbours still run. The context file is read once,
//! git diff runs once, and every backend gets the same envelope, the call's one deadline and
//! its one cancellation token, so an abort stops them all and rejects the call.

use std::sync::Arc;

use futures_util::future::join_all;

use crate::backend::Backend;
use crate::errors::{RelayError, RelayFailure};
use crate::registry::Registry;
use crate::relay::{
    check_backend, checked, prepare_run, run_backend, CallBackends, CallContext, Prepared, Ran,
    RelayRequest,
};
use crate::usage::Reported;

/// Each backend that passed its check 4.
impl CallBackends for Vec<(String, Result<Arc<dyn Backend>, RelayError>)> {
    fn each(&self) -> Vec<&Arc<dyn Backend>> {
        self.iter()
            .filter_map(|(_, backend)| backend.as_ref().ok())
            .collect()
    }
}

/// How one backend of the call settled.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendOutcome {
    pub backend: String,
    pub outcome: Result<String, RelayFailure>,
    /// What its run said about itself (usage, model), answer or not.
    pub reported: Reported,
}

/// Runs `request` on every backend of `backends` (in that order in the result; a name given
/// twice runs twice). `request.backend` is ignored.
pub async fn relay_all(
    registry: Registry,
    request: RelayRequest,
    backends: Vec<String>,
    call: CallContext,
) -> Result<Vec<BackendOutcome>, RelayFailure> {
    let Prepared {
        backend: targets,
        request,
        diff,
        fitted,
        ..
    } = prepare_run(
        &registry,
        request,
        call.caller(),
        |registry, sandbox| {
            Ok(backends
                .into_iter()
                .map(|name| {
                    let backend = check_backend(registry, &name, sandbox);
                    (name, backend)
                })
                .collect::<Vec<_>>())
        },
        // A session belongs to one backend.
        |_| None,
    )
    .await?;
    call.warn_about_diff(diff).await;
    call.warn_about_fit(fitted.as_ref()).await;
    let (deadline, schema) = (request.terms.deadline.clone(), request.terms.schema.clone());
    let runs = targets.into_iter().map(|(name, backend)| {
        let request = request.clone();
        let (deadline, schema) = (&deadline, &schema);
        async move {
            let (outcome, reported) = match backend {
                Ok(backend) => match run_backend(backend, request, deadline).await {
                    Ok(Ran { answer, reported }) => (
                        checked(answer, schema.as_ref(), false, &name, deadline).await,
                        reported,
                    ),
                    Err(failure) => (Err(failure), Reported::default()),
                },
                Err(refused) => (Err(refused.into()), Reported::default()),
            };
            BackendOutcome {
                backend: name,
                outcome,
                reported,
            }
        }
    });
    let outcomes = join_all(runs).await;
    if call.cancel.is_cancelled() {
        return Err(RelayFailure::Aborted);
    }
    Ok(outcomes)
}

#[cfg(test)]
#[path = "relay_all_tests.rs"]
mod tests;
