//! Checks 1 to 4 (docs/CONTRACT.md §3), in the contract's order, written once: every call makes
//! them here as its preparation begins, and [`refused_at_once`] makes the same ones where a call
//! is made, so that a call they refuse costs no thread hop.

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::request::{Operation, RelayRequest};
use crate::backend::Backend;
use crate::deadline::{Deadline, Timeout};
use crate::errors::{RelayError, RelayFailure};
use crate::limits::{DEFAULT_BACKEND, DEFAULT_SANDBOX, DEFAULT_TIMEOUT_SECONDS};
use crate::paths::resolve;
use crate::registry::{check_sandbox, Registry};
use crate::text::js_trim;

/// What checks 2 to 4 give a call: its backends (one; for `relayAll()` none yet, each backend
/// making its own check 4), its repository, timeout and sandbox.
pub(crate) struct Target<B> {
    pub backends: B,
    pub repo: String,
    pub timeout: Timeout,
    /// The idle time-out (`idleTimeoutSeconds`), when the call has one.
    pub idle: Option<Timeout>,
    pub sandbox: String,
}

/// Checks 1 to 4, and for a relay the size of an inline context when no step between check 4
/// and it waits (see [`RelayRequest::inline_context_is_next`]): the checks that wait on nothing
/// (a `stat` of the repository at most).
pub fn refused_at_once(
    registry: &Registry,
    operation: Operation,
    request: &RelayRequest,
    cwd: &str,
) -> Option<RelayFailure> {
    let checks = || -> Result<(), RelayFailure> {
        call_deadline(operation, request, &CancellationToken::new())?;
        match operation {
            // Each of relayAll()'s backends makes its own check 4 as the call runs.
            Operation::RelayAll => check_target(registry, cwd, request, |_, _| Ok(())).map(drop),
            Operation::Relay | Operation::Review => {
                check_target(registry, cwd, request, one_backend(request)).map(drop)
            }
        }?;
        if operation == Operation::Relay && request.inline_context_is_next() {
            crate::context::inline_context(request.context_text.as_ref())?;
        }
        Ok(())
    };
    checks().err()
}

/// Checks 1 (when the call requires a prompt) and 2, then the call's one deadline, started now.
pub(crate) fn call_deadline(
    operation: Operation,
    request: &RelayRequest,
    cancel: &CancellationToken,
) -> Result<Deadline, RelayError> {
    if operation.requires_prompt() && js_trim(request.prompt_text()).is_empty() {
        return Err(RelayError::PromptRequired);
    }
    let timeout = call_timeout(request.timeout_seconds)?;
    idle_timeout(request.idle_timeout_seconds)?;
    Ok(Deadline::starting_now(timeout, cancel.clone()))
}

/// Checks 2 to 4; `pick` makes check 4 for the sandbox asked.
pub(crate) fn check_target<B>(
    registry: &Registry,
    cwd: &str,
    request: &RelayRequest,
    pick: impl FnOnce(&Registry, &str) -> Result<B, RelayError>,
) -> Result<Target<B>, RelayError> {
    let timeout = call_timeout(request.timeout_seconds)?;
    let idle = idle_timeout(request.idle_timeout_seconds)?;
    let repo = check_repo(cwd, &request.repo_path)?;
    let sandbox = request
        .sandbox
        .as_deref()
        .unwrap_or(DEFAULT_SANDBOX)
        .to_string();
    let backends = pick(registry, &sandbox)?;
    Ok(Target {
        backends,
        repo,
        timeout,
        idle,
        sandbox,
    })
}

/// Check 4 for a call to one backend: the one named, else the default; then each of its
/// `fallback` (docs/CONTRACT.md §8a).
pub(crate) fn one_backend(
    request: &RelayRequest,
) -> impl FnOnce(&Registry, &str) -> Result<Arc<dyn Backend>, RelayError> + '_ {
    move |registry, sandbox| {
        let name = request.backend.as_deref().unwrap_or(DEFAULT_BACKEND);
        let fallback = request.fallback.as_deref().unwrap_or_default();
        check_with_fallback(registry, (name, fallback), sandbox)
    }
}

/// Check 4 for `name`, then for each of its `fallback`: the backend named.
pub(crate) fn check_with_fallback(
    registry: &Registry,
    (name, fallback): (&str, &[String]),
    sandbox: &str,
) -> Result<Arc<dyn Backend>, RelayError> {
    let backend = check_backend(registry, name, sandbox)?;
    for name in fallback {
        check_backend(registry, name, sandbox)?;
    }
    Ok(backend)
}

/// Check 4: the backend exists and accepts the sandbox mode.
pub(crate) fn check_backend(
    registry: &Registry,
    name: &str,
    sandbox: &str,
) -> Result<Arc<dyn Backend>, RelayError> {
    let backend = registry.get(name)?;
    check_sandbox(backend.as_ref(), sandbox)?;
    Ok(backend)
}

/// Check 2: the call's timeout.
fn call_timeout(timeout_seconds: Option<f64>) -> Result<Timeout, RelayError> {
    Timeout::from_seconds(timeout_seconds.unwrap_or(f64::from(DEFAULT_TIMEOUT_SECONDS)))
        .ok_or(RelayError::InvalidTimeout)
}

/// Check 2, the idle time-out's part (docs/CONTRACT.md §14).
fn idle_timeout(idle_timeout_seconds: Option<f64>) -> Result<Option<Timeout>, RelayError> {
    idle_timeout_seconds
        .map(|seconds| Timeout::from_seconds(seconds).ok_or(RelayError::InvalidIdleTimeout))
        .transpose()
}

/// Check 3: the repository, resolved against the caller's cwd.
fn check_repo(cwd: &str, repo_path: &str) -> Result<String, RelayError> {
    let repo = resolve(cwd, repo_path);
    if !Path::new(&repo).is_dir() {
        return Err(RelayError::InvalidRepo(repo));
    }
    Ok(repo)
}
