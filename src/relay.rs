//! `relay()` and `reviewRelay()`: the order of checks (SPEC 3 and 4), then the backend.
//! Preparation (file and git I/O) runs on a blocking thread; the wait on the backend is async.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::backend::{
    Backend, BackendFailure, BackendResult, Env, ReviewRequest, RunRequest, Timeout,
};
use crate::context::resolve_context;
use crate::depth::next_relay_env;
use crate::envelope::{build_envelope, check_prompt_size};
use crate::errors::{RelayError, RelayFailure};
use crate::git::{self, GitEnv};
use crate::limits::{DEFAULT_BACKEND, DEFAULT_SANDBOX, DEFAULT_TIMEOUT_SECONDS};
use crate::paths::resolve;
use crate::registry::{check_sandbox, Registry};
use crate::text::js_trim;

const DEFAULT_REVIEW_REQUEST: &str = "Review the following changes.";

#[derive(Debug, Clone, Default, PartialEq)]
pub struct RelayOptions {
    pub prompt: String,
    pub repo_path: String,
    pub backend: Option<String>,
    pub context_file: Option<String>,
    pub context_text: Option<String>,
    pub include_diff: bool,
    pub timeout_seconds: Option<f64>,
    pub model: Option<String>,
    pub sandbox: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReviewOptions {
    pub repo_path: String,
    pub backend: Option<String>,
    pub base: Option<String>,
    pub prompt: Option<String>,
    pub timeout_seconds: Option<f64>,
    pub model: Option<String>,
    pub sandbox: Option<String>,
}

/// Where review fallback warnings go (the bindings send them to `console.error`).
pub trait Warn: Send + Sync {
    fn warn(&self, message: String) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// What a call brings besides its options.
#[derive(Clone)]
pub struct CallContext {
    /// The caller's environment, snapshotted when the call was made.
    pub env: Env,
    /// The caller's working directory, for relative paths.
    pub cwd: String,
    pub cancel: CancellationToken,
    pub warn: Arc<dyn Warn>,
    /// Handed to backends as `call_tag`.
    pub tag: u32,
}

pub struct Prepared<R> {
    pub backend: Arc<dyn Backend>,
    pub request: R,
}

struct Target {
    backend: Arc<dyn Backend>,
    repo: String,
    timeout: Timeout,
    sandbox: String,
}

/// Checks 2 to 4, shared by both entry points.
fn check_target(
    registry: &Registry,
    cwd: &str,
    repo_path: &str,
    timeout_seconds: Option<f64>,
    backend: Option<&str>,
    sandbox: Option<&str>,
) -> Result<Target, RelayError> {
    let timeout =
        Timeout::from_seconds(timeout_seconds.unwrap_or(f64::from(DEFAULT_TIMEOUT_SECONDS)))
            .ok_or(RelayError::InvalidTimeout)?;
    let repo = resolve(cwd, repo_path);
    if !Path::new(&repo).is_dir() {
        return Err(RelayError::InvalidRepo(repo));
    }
    let backend = registry.get(backend.unwrap_or(DEFAULT_BACKEND))?;
    let sandbox = sandbox.unwrap_or(DEFAULT_SANDBOX).to_string();
    check_sandbox(backend.as_ref(), &sandbox)?;
    Ok(Target {
        backend,
        repo,
        timeout,
        sandbox,
    })
}

fn non_empty(model: Option<String>) -> Option<String> {
    model.filter(|m| !m.is_empty())
}

/// Steps 1 to 8 of `relay()`: everything before the backend runs.
pub fn prepare_relay(
    registry: &Registry,
    options: RelayOptions,
    env: &Env,
    cwd: &str,
    call_tag: u32,
) -> Result<Prepared<RunRequest>, RelayError> {
    if js_trim(&options.prompt).is_empty() {
        return Err(RelayError::PromptRequired);
    }
    let target = check_target(
        registry,
        cwd,
        &options.repo_path,
        options.timeout_seconds,
        options.backend.as_deref(),
        options.sandbox.as_deref(),
    )?;
    let context = resolve_context(
        options.context_file.as_deref(),
        options.context_text.as_deref(),
        cwd,
    )?;
    let diff = if options.include_diff {
        git::diff_for_relay(&target.repo, GitEnv::Exactly(env))?
    } else {
        String::new()
    };
    let envelope = build_envelope(&target.repo, &options.prompt, &context, &diff);
    check_prompt_size(&envelope)?;
    let child_env = next_relay_env(env)?;
    Ok(Prepared {
        backend: target.backend,
        request: RunRequest {
            prompt: envelope,
            repo_path: target.repo,
            timeout: target.timeout,
            sandbox: target.sandbox,
            model: non_empty(options.model),
            env: child_env,
            call_tag,
        },
    })
}

/// Everything `reviewRelay()` does before calling the backend: checks 2 to 4, the base, the depth.
pub fn prepare_review(
    registry: &Registry,
    options: ReviewOptions,
    env: &Env,
    cwd: &str,
    call_tag: u32,
) -> Result<Prepared<ReviewRequest>, RelayError> {
    let target = check_target(
        registry,
        cwd,
        &options.repo_path,
        options.timeout_seconds,
        options.backend.as_deref(),
        options.sandbox.as_deref(),
    )?;
    let base = match options.base {
        Some(base) => base,
        None => git::detect_default_branch(&target.repo, GitEnv::Exactly(env)),
    };
    git::check_base(&base)?;
    let child_env = next_relay_env(env)?;
    Ok(Prepared {
        backend: target.backend,
        request: ReviewRequest {
            repo_path: target.repo,
            timeout: target.timeout,
            sandbox: target.sandbox,
            model: non_empty(options.model),
            env: child_env,
            base,
            prompt: options.prompt,
            call_tag,
        },
    })
}

pub async fn relay(
    registry: Registry,
    options: RelayOptions,
    call: CallContext,
) -> Result<String, RelayFailure> {
    let (env, cwd, tag) = (call.env.clone(), call.cwd.clone(), call.tag);
    let prepared = off_thread(&call.cancel, move || {
        prepare_relay(&registry, options, &env, &cwd, tag)
    })
    .await?;
    run_backend(prepared.backend, prepared.request, &call.cancel).await
}

pub async fn review_relay(
    registry: Registry,
    options: ReviewOptions,
    call: CallContext,
) -> Result<String, RelayFailure> {
    let (env, cwd, tag) = (call.env.clone(), call.cwd.clone(), call.tag);
    let Prepared { backend, request } = off_thread(&call.cancel, move || {
        prepare_review(&registry, options, &env, &cwd, tag)
    })
    .await?;
    if let Some(native_review) = backend.clone().review(&request, call.cancel.clone()) {
        let result = native_review.await;
        match result {
            Err(BackendFailure::Thrown(thrown)) if thrown.is_relay_error => {
                return Err(RelayFailure::Thrown(thrown));
            }
            Err(BackendFailure::Reported { message, .. })
            | Err(BackendFailure::Thrown(crate::errors::ThrownValue { message, .. }))
                if !call.cancel.is_cancelled() =>
            {
                let warning = format!(
                    "[phone-a-friend] review() failed, falling back to generic relay: {message}"
                );
                call.warn.warn(warning).await;
            }
            other => return settle(backend.name(), other, &call.cancel),
        }
    }
    let ReviewRequest {
        repo_path,
        timeout,
        sandbox,
        model,
        env: child_env,
        base,
        prompt,
        call_tag,
    } = request;
    let (caller_env, repo) = (call.env.clone(), repo_path.clone());
    let diff = off_thread(&call.cancel, move || {
        git::diff_against_base(&repo, &base, GitEnv::Exactly(&caller_env))
    })
    .await?;
    let envelope = build_envelope(
        &repo_path,
        prompt.as_deref().unwrap_or(DEFAULT_REVIEW_REQUEST),
        "",
        &diff,
    );
    check_prompt_size(&envelope)?;
    let request = RunRequest {
        prompt: envelope,
        repo_path,
        timeout,
        sandbox,
        model,
        env: child_env,
        call_tag,
    };
    run_backend(backend, request, &call.cancel).await
}

/// Runs blocking preparation off the async threads; an abort does not wait for it.
async fn off_thread<T, F>(cancel: &CancellationToken, work: F) -> Result<T, RelayFailure>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, RelayError> + Send + 'static,
{
    let task = tokio::task::spawn_blocking(work);
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(RelayFailure::Aborted),
        joined = task => match joined {
            Ok(result) => result.map_err(RelayFailure::from),
            Err(e) => Err(RelayError::Internal(e.to_string()).into()),
        },
    }
}

async fn run_backend(
    backend: Arc<dyn Backend>,
    request: RunRequest,
    cancel: &CancellationToken,
) -> Result<String, RelayFailure> {
    if cancel.is_cancelled() {
        return Err(RelayFailure::Aborted);
    }
    let name = backend.name().to_string();
    let result = backend.run(request, cancel.clone()).await;
    settle(&name, result, cancel)
}

/// A backend's result as the caller sees it; once the signal fired, the call is aborted.
fn settle(
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
        }) => Err(RelayError::Backend {
            kind,
            backend: name.to_string(),
            message,
            cause,
        }
        .into()),
    }
}

#[cfg(test)]
#[path = "relay_tests.rs"]
mod tests;
