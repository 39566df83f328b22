//! `reviewRelay()`: a relay with a review part (docs/CONTRACT.md §4). The backend's own review
//! when it has one and the request allows it; else, or when that fails, the generic path: the
//! diff against the base in the envelope, run as a relay's is.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::answered::{Answered, Ran};
use super::call::CallContext;
use super::checks::{call_deadline, check_target, one_backend};
use super::prepare::{
    envelope, envelope_limit, git_failure, parse_schema, terms, Prepared, RUNNING_GIT_DIFF,
};
use super::request::{Operation, RelayRequest};
use super::settle::{
    checked, not_aborted, reported, run_backend, settle, streamed, watched, within_stream_limit,
};
use crate::backend::{
    named_model, Backend, BackendFailure, BackendFuture, ReviewRequest, RunRequest,
};
use crate::depth::next_relay_env;
use crate::dry_run::DryRun;
use crate::env::Env;
use crate::envelope::{check_prompt_size, Attached};
use crate::errors::{BackendFailureKind, RelayError, RelayFailure};
use crate::fit::{coverage_limit, coverage_section, diff_budget, Fitted};
use crate::git::{self, GitEnv, GitError};
use crate::registry::Registry;
use crate::verdict;

const DEFAULT_REVIEW_REQUEST: &str = "Review the following changes.";

pub async fn review_relay(
    registry: Registry,
    request: RelayRequest,
    call: CallContext,
) -> Result<Answered, RelayFailure> {
    let (verdict, fit) = (request.wants_verdict(), request.fits());
    let Prepared {
        backend,
        mut request,
        ..
    } = prepare_review(&registry, request, &call).await?;
    request.terms.chunks = call.chunks.clone();
    request.terms.activity = call.activity.clone();
    request.terms.activity.started(backend.name());
    let stop = call.cancel.child_token();
    if let Some(native_review) = native_review(&backend, &request, &stop) {
        let result = within_stream_limit(&call.chunks, stop, native_review).await;
        if let Some(settled) = settled_natively(backend.name(), result, &call).await {
            let asked = named_model(&request.terms.model).map(str::to_string);
            let reported = reported(&request.terms.report, asked);
            let answered =
                |answer| Answered::new(Ran { answer, reported }, backend.name().into(), None);
            return settled.map(answered);
        }
    }
    let (request, fitted) = generic_review(request, &call.env, fit).await?;
    call.warn_about_fit(fitted.as_ref()).await;
    let deadline = request.terms.deadline.clone();
    let schema = request.terms.schema.clone();
    let name = backend.name().to_string();
    let Ran { answer, reported } = run_backend(backend, request, &deadline).await?;
    let answer = checked(answer, schema.as_ref(), verdict, &name, &deadline).await?;
    Ok(Answered::new(Ran { answer, reported }, name, fitted))
}

/// A native review's result as the call's, or `None` when the generic path is to be tried: the
/// native review failed, but not for lack of time, by an abort, or by a `RelayError` a JS
/// backend threw (the fallback is said as a warning).
async fn settled_natively(
    name: &str,
    result: crate::backend::BackendResult,
    call: &CallContext,
) -> Option<Result<String, RelayFailure>> {
    match result {
        Err(BackendFailure::Thrown(thrown)) if thrown.is_relay_error => {
            Some(Err(RelayFailure::Thrown(thrown)))
        }
        // The call's time is over, or the backend stalled: the generic path would wait on it
        // again.
        timed_out @ Err(BackendFailure::Reported {
            kind: BackendFailureKind::Timeout | BackendFailureKind::Stalled,
            ..
        }) => Some(streamed(settle(name, timed_out, &call.cancel), &call.chunks).await),
        Err(BackendFailure::Reported { message, .. })
        | Err(BackendFailure::Thrown(crate::errors::ThrownValue { message, .. }))
            if !call.cancel.is_cancelled() =>
        {
            let warning = format!(
                "[phone-a-friend] review() failed, falling back to generic relay: {message}"
            );
            call.warn.warn(warning).await;
            None
        }
        other => Some(streamed(settle(name, other, &call.cancel), &call.chunks).await),
    }
}

/// `reviewRelay({ dryRun: true })`: the native review the backend would run, else the generic
/// path's envelope.
pub async fn dry_run_review(
    registry: Registry,
    request: RelayRequest,
    call: CallContext,
) -> Result<DryRun, RelayFailure> {
    let fit = request.fits();
    let Prepared {
        backend, request, ..
    } = prepare_review(&registry, request, &call).await?;
    let deadline = request.terms.deadline.clone();
    if let Some(plan) = may_review_natively(&request)
        .then(|| backend.plan_review(&request))
        .flatten()
    {
        check_base_exists(&request, &call.env).await?;
        not_aborted(&deadline)?;
        return Ok(DryRun::of_review(backend.name(), plan, &request, &call.env));
    }
    let base = request.base.clone();
    let (request, fitted) = generic_review(request, &call.env, fit).await?;
    call.warn_about_fit(fitted.as_ref()).await;
    not_aborted(&deadline)?;
    let plan = backend.plan(&request);
    let dry_run =
        DryRun::of_run(backend.name(), plan, &request, &call.env, Some(base)).with_coverage(fitted);
    call.warn_about_refusals(&dry_run).await;
    Ok(dry_run)
}

/// Everything a review does before calling the backend: checks 2 to 4, the schema (a verdict's
/// own), the base, the depth, within the call's deadline (started here; the request carries it).
async fn prepare_review(
    registry: &Registry,
    request: RelayRequest,
    call: &CallContext,
) -> Result<Prepared<Arc<dyn Backend>, ReviewRequest>, RelayFailure> {
    let deadline = &call_deadline(Operation::Review, &request, &call.cancel)?;
    let target = check_target(registry, &call.cwd, &request, one_backend(&request))?;
    let (limit, window) = envelope_limit(&request, &[&target.backends], &call.env, deadline).await;
    let (schema, prompt) = match (request.wants_verdict(), request.schema) {
        (true, Some(_)) => {
            return Err(RelayError::Schema(
                "Use either verdict or schema, not both: a verdict has its own schema".into(),
            )
            .into())
        }
        (true, None) => (
            parse_schema(Some(verdict::SCHEMA))?,
            Some(verdict::prompt(request.prompt.as_deref())),
        ),
        (false, schema) => (parse_schema(schema.as_deref())?, request.prompt),
    };
    let base = match request.base {
        Some(base) => base,
        None => git::detect_default_branch(&target.repo, GitEnv::Exactly(&call.env), deadline)
            .await
            .map_err(|e| git_failure(e, deadline, "running git rev-parse"))?,
    };
    git::check_base(&base)?;
    let child_env = next_relay_env(&call.env)?;
    let (backend, mut terms) = terms(
        target,
        deadline,
        request.model,
        child_env,
        schema,
        &call.link,
    );
    (terms.prompt_limit, terms.window) = (limit.bytes, window);
    Ok(Prepared {
        backend,
        session: None,
        diff: None,
        fitted: None,
        request: ReviewRequest {
            terms,
            base,
            prompt,
        },
    })
}

/// Whether the backend may review natively: a schema (or a verdict) goes in the prompt, which
/// no native review takes. The real call and the dry run ask the same question here.
fn may_review_natively(request: &ReviewRequest) -> bool {
    request.terms.schema.is_none()
}

/// The backend's own review, stopped by `stop` (and its stall watchdog), unless the request
/// needs the generic path.
fn native_review(
    backend: &Arc<dyn Backend>,
    request: &ReviewRequest,
    stop: &CancellationToken,
) -> Option<BackendFuture> {
    let progress = request.terms.progress.clone();
    may_review_natively(request)
        .then(|| backend.clone().review(request, stop.clone()))
        .flatten()
        .map(|review| watched(backend.name(), progress, stop, review))
}

/// A review without a native path: the diff against the base, in the envelope; fitted to its
/// budget when `fit` and it does not fit whole (then also how).
async fn generic_review(
    request: ReviewRequest,
    env: &Env,
    fit: bool,
) -> Result<(RunRequest, Option<Fitted>), RelayFailure> {
    let ReviewRequest {
        terms,
        base,
        prompt,
    } = request;
    let deadline = &terms.deadline;
    let (repo, schema) = (terms.repo_path.as_str(), terms.schema.as_deref());
    let instructions = prompt.as_deref().unwrap_or(DEFAULT_REVIEW_REQUEST);
    let others = envelope(repo, instructions, Attached::default(), schema).len();
    let limit = terms.prompt_limit;
    let budget = fit.then(|| diff_budget(others, limit));
    let diff = git::diff_against_base(repo, &base, GitEnv::Exactly(env), budget, deadline)
        .await
        .map_err(|e| git_failure(e, deadline, RUNNING_GIT_DIFF))?;
    let coverage = diff
        .fitted
        .as_ref()
        .map(|fitted| coverage_section(fitted, coverage_limit(limit)))
        .unwrap_or_default();
    let attached = Attached {
        context: "",
        diff: &diff.text,
        coverage: &coverage,
    };
    let envelope = envelope(repo, instructions, attached, schema);
    check_prompt_size(&envelope, limit)?;
    let request = RunRequest {
        terms,
        prompt: envelope,
        // Reviews have no sessions.
        session: None,
    };
    Ok((request, diff.fitted))
}

/// A native review against a base git does not know fails, and so does the generic path it
/// falls back to (`ERR_GIT_DIFF`, git's words): a dry run fails as that would. A diff too large
/// for the generic path is no failure of the native review.
async fn check_base_exists(request: &ReviewRequest, env: &Env) -> Result<(), RelayFailure> {
    let deadline = &request.terms.deadline;
    let repo = &request.terms.repo_path;
    match git::diff_against_base(repo, &request.base, GitEnv::Exactly(env), None, deadline).await {
        Ok(_) | Err(GitError::Relay(RelayError::TooLarge { .. })) => Ok(()),
        Err(e) => Err(git_failure(e, deadline, RUNNING_GIT_DIFF)),
    }
}
