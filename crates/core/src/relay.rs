//! `relay()` and `reviewRelay()`: the order of checks (docs/CONTRACT.md §3 and §4), then the
//! backend.
//! One deadline per call, started when the call is made, bounds everything: the context file's
//! reads and every git run of preparation (on the call's task, never a thread of their own),
//! then the backend, which is handed what is left of it.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::FutureExt;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, BackendFailure, BackendResult, CallLink, ReviewRequest, RunRequest};
use crate::context::{resolve_context, ContextText};
use crate::deadline::{Deadline, Timeout};
use crate::depth::next_relay_env;
use crate::dry_run::DryRun;
use crate::env::Env;
use crate::envelope::{build_envelope, check_prompt_size};
use crate::errors::{BackendFailureKind, RelayError, RelayFailure, Subject};
use crate::git::{self, DiffSource, GitEnv, GitError};
use crate::limits::{DEFAULT_BACKEND, DEFAULT_SANDBOX, DEFAULT_TIMEOUT_SECONDS, MAX_OUTPUT_BYTES};
use crate::paths::resolve;
use crate::registry::{check_sandbox, Registry};
use crate::schema::{Schema, SchemaArgument};
use crate::sessions::{self, store::Store, Pending, SessionTurn};
use crate::stream::ChunkSink;
use crate::text::js_trim;
use crate::verdict;

const DEFAULT_REVIEW_REQUEST: &str = "Review the following changes.";
const RUNNING_GIT_DIFF: &str = "running git diff";

/// `relay()`'s options. Their JSON form (camelCase, as the JS API names them) and its JSON
/// Schema are what the MCP server's `relay` tool takes.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RelayOptions {
    /// What to ask the other agent. Must not be blank.
    pub prompt: String,
    /// The repository the other agent works in; a relative path resolves against the caller's
    /// working directory, an empty or absent one is that directory.
    #[serde(default)]
    pub repo_path: String,
    /// The backend to ask: a built-in (`backends::builtin`) or a registered one. Default: codex.
    #[schemars(description = crate::backends::builtin::backend_option_description())]
    pub backend: Option<String>,
    /// A file whose text goes into the prompt as additional context (at most 200,000 bytes).
    pub context_file: Option<String>,
    /// Inline additional context (at most 200,000 bytes); not together with contextFile.
    #[schemars(with = "Option<String>")]
    pub context_text: Option<ContextText>,
    /// Add `git diff HEAD` (or, when that is empty, the last commit's diff) to the prompt.
    #[serde(default)]
    pub include_diff: bool,
    /// Seconds the whole call may take, preparation (context file, git) included: the
    /// backend gets what is left. A number greater than zero. Default: 600.
    pub timeout_seconds: Option<f64>,
    /// The model the backend should use; its own default when absent.
    pub model: Option<String>,
    /// What the backend may change in the repository. Default: read-only.
    // null too: the type (an Option) allows it, and it means the default.
    #[schemars(extend("enum" = ["read-only", "workspace-write", "danger-full-access", null]))]
    pub sandbox: Option<String>,
    /// A JSON Schema the answer must match (the schema, or its JSON text); the answer is then
    /// its JSON text.
    #[serde(default, deserialize_with = "SchemaArgument::deserialize_text")]
    #[schemars(with = "Option<SchemaArgument>")]
    pub schema: Option<String>,
    /// A label of yours for a conversation with this backend in this repository: the first
    /// call starts it, later ones continue it.
    pub session: Option<String>,
    /// The backend's own session id to attach to.
    pub backend_session: Option<String>,
}

/// `reviewRelay()`'s options; the MCP server's `review` tool takes their JSON form.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewOptions {
    /// The repository to review; a relative path resolves against the caller's working
    /// directory, an empty or absent one is that directory.
    #[serde(default)]
    pub repo_path: String,
    /// The backend to ask: a built-in (`backends::builtin`) or a registered one. Default: codex.
    #[schemars(description = crate::backends::builtin::backend_option_description())]
    pub backend: Option<String>,
    /// The branch or commit to diff against (`git diff <base>...HEAD`). Default: the first of
    /// main, master that exists, else HEAD~1.
    pub base: Option<String>,
    /// Review instructions. Default: "Review the following changes."
    pub prompt: Option<String>,
    /// Seconds the whole call may take, preparation (context file, git) included: the
    /// backend gets what is left. A number greater than zero. Default: 600.
    pub timeout_seconds: Option<f64>,
    /// The model the backend should use; its own default when absent.
    pub model: Option<String>,
    /// What the backend may change in the repository. Default: read-only.
    // null too: the type (an Option) allows it, and it means the default.
    #[schemars(extend("enum" = ["read-only", "workspace-write", "danger-full-access", null]))]
    pub sandbox: Option<String>,
    /// A JSON Schema the answer must match (the schema, or its JSON text); not together with
    /// verdict.
    #[serde(default, deserialize_with = "SchemaArgument::deserialize_text")]
    #[schemars(with = "Option<SchemaArgument>")]
    pub schema: Option<String>,
    /// Answer with a verdict envelope (schema_version 1: ship, iterate or abstain, with
    /// findings), checked against its findings.
    #[serde(default)]
    pub verdict: bool,
}

/// Where a call's warnings go (a review's fallback, a session save): the addon hands them to
/// the call's `onWarning`, else `console.error`; the MCP server writes them to stderr.
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
    /// Handed to backends as [`RunRequest::link`].
    pub link: CallLink,
    /// Where the backend's text goes as it is produced; `ChunkSink::discard()` for `relay()`.
    pub chunks: ChunkSink,
}

pub struct Prepared<R> {
    pub backend: Arc<dyn Backend>,
    pub request: R,
    /// The session the run belongs to, saved after an answer.
    pub session: Option<Pending>,
    /// Which diff the envelope holds, when the call asked for one (`includeDiff`).
    pub diff: Option<DiffSource>,
}

/// What a call runs on: one backend, or (`relayAll()`) each backend's own check 4.
struct Target<B> {
    backends: B,
    repo: String,
    timeout: Timeout,
    sandbox: String,
}

/// Checks 2 to 4, shared by every entry point; `pick` makes check 4 for the sandbox asked.
fn check_target<B>(
    registry: &Registry,
    cwd: &str,
    repo_path: &str,
    timeout_seconds: Option<f64>,
    sandbox: Option<&str>,
    pick: impl FnOnce(&Registry, &str) -> Result<B, RelayError>,
) -> Result<Target<B>, RelayError> {
    let timeout = call_timeout(timeout_seconds)?;
    let repo = check_repo(cwd, repo_path)?;
    let sandbox = sandbox.unwrap_or(DEFAULT_SANDBOX).to_string();
    let backends = pick(registry, &sandbox)?;
    Ok(Target {
        backends,
        repo,
        timeout,
        sandbox,
    })
}

/// Checks 1 to 4 (docs/CONTRACT.md §3), which wait on nothing (a `stat` of the repository at
/// most), in the order the preparation makes them: a call they refuse can be refused where it is
/// made, without a thread hop. The preparation makes them again. So is the size of an inline
/// context, when no step between check 4 and it (a session, a schema) is asked for and it is
/// the only context.
pub fn relay_refused_at_once(
    registry: &Registry,
    options: &RelayOptions,
    cwd: &str,
) -> Option<RelayFailure> {
    refused_at_once(
        registry,
        cwd,
        Some(&options.prompt),
        &options.common(),
        |registry, sandbox| one_backend(options.backend.as_deref())(registry, sandbox).map(drop),
    )
    .or_else(|| {
        let context_is_next = options.session.is_none()
            && options.backend_session.is_none()
            && options.schema.is_none()
            && options.context_file.is_none();
        if !context_is_next {
            return None;
        }
        crate::context::inline_context(options.context_text.as_ref())
            .err()
            .map(RelayFailure::from)
    })
}

/// [`relay_refused_at_once`] for `relayAll()`, whose check 4 fails each backend on its own.
pub fn relay_all_refused_at_once(
    registry: &Registry,
    options: &RelayOptions,
    cwd: &str,
) -> Option<RelayFailure> {
    refused_at_once(
        registry,
        cwd,
        Some(&options.prompt),
        &options.common(),
        |_, _| Ok(()),
    )
}

/// [`relay_refused_at_once`] for `reviewRelay()` (checks 2 to 4: it has no required prompt).
pub fn review_refused_at_once(
    registry: &Registry,
    options: &ReviewOptions,
    cwd: &str,
) -> Option<RelayFailure> {
    let common = Common {
        repo_path: &options.repo_path,
        timeout_seconds: options.timeout_seconds,
        sandbox: options.sandbox.as_deref(),
    };
    refused_at_once(registry, cwd, None, &common, |registry, sandbox| {
        one_backend(options.backend.as_deref())(registry, sandbox).map(drop)
    })
}

/// What checks 2 and 3 read of a call's options.
struct Common<'a> {
    repo_path: &'a str,
    timeout_seconds: Option<f64>,
    sandbox: Option<&'a str>,
}

impl RelayOptions {
    fn common(&self) -> Common<'_> {
        Common {
            repo_path: &self.repo_path,
            timeout_seconds: self.timeout_seconds,
            sandbox: self.sandbox.as_deref(),
        }
    }
}

fn refused_at_once(
    registry: &Registry,
    cwd: &str,
    prompt: Option<&str>,
    common: &Common<'_>,
    check_4: impl FnOnce(&Registry, &str) -> Result<(), RelayError>,
) -> Option<RelayFailure> {
    let checks = || -> Result<(), RelayError> {
        call_deadline(prompt, common.timeout_seconds, &CancellationToken::new())?;
        check_target(
            registry,
            cwd,
            common.repo_path,
            common.timeout_seconds,
            common.sandbox,
            check_4,
        )
        .map(drop)
    };
    checks().err().map(RelayFailure::from)
}

/// Check 4 for one backend: the one named, else the default.
fn one_backend(
    name: Option<&str>,
) -> impl FnOnce(&Registry, &str) -> Result<Arc<dyn Backend>, RelayError> + '_ {
    move |registry, sandbox| check_backend(registry, name.unwrap_or(DEFAULT_BACKEND), sandbox)
}

/// Check 3: the repository, resolved against the caller's cwd.
fn check_repo(cwd: &str, repo_path: &str) -> Result<String, RelayError> {
    let repo = resolve(cwd, repo_path);
    if !Path::new(&repo).is_dir() {
        return Err(RelayError::InvalidRepo(repo));
    }
    Ok(repo)
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

/// The call's one deadline, from its validated timeout; checks 1 (when there is a prompt) and 2
/// come first, in the contract's order.
fn call_deadline(
    prompt: Option<&str>,
    timeout_seconds: Option<f64>,
    cancel: &CancellationToken,
) -> Result<Deadline, RelayError> {
    if prompt.is_some_and(|p| js_trim(p).is_empty()) {
        return Err(RelayError::PromptRequired);
    }
    let timeout = call_timeout(timeout_seconds)?;
    Ok(Deadline::starting_now(timeout, cancel.clone()))
}

/// A git helper's error as the call's failure: a stop names the step it interrupted.
fn git_failure(err: GitError, deadline: &Deadline, during: &'static str) -> RelayFailure {
    match err {
        GitError::Relay(err) => err.into(),
        GitError::Stopped(stop) => deadline.failure(stop, during),
    }
}

/// Steps 1 to 8 of `relay()`: everything before the backend runs, within the call's deadline
/// (started here, after checks 1 and 2; the request carries it), which `cancel` also ends.
pub async fn prepare_relay(
    registry: &Registry,
    options: RelayOptions,
    env: &Env,
    cwd: &str,
    link: &CallLink,
    cancel: &CancellationToken,
) -> Result<Prepared<RunRequest>, RelayFailure> {
    let name = options.backend.clone();
    let (backend, request, session, diff) = prepare_run(
        registry,
        options,
        env,
        cwd,
        link,
        cancel,
        one_backend(name.as_deref()),
        |backend| Some(backend.clone()),
    )
    .await?;
    Ok(Prepared {
        backend,
        session,
        request,
        diff,
    })
}

/// The checks and the envelope of a run, in the contract's order (docs/CONTRACT.md §3), for one
/// backend or several: `pick` makes check 4, `session_backend` says which backend a session
/// would belong to (none: a session is refused). Also says which diff the envelope holds.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn prepare_run<B>(
    registry: &Registry,
    options: RelayOptions,
    env: &Env,
    cwd: &str,
    link: &CallLink,
    cancel: &CancellationToken,
    pick: impl FnOnce(&Registry, &str) -> Result<B, RelayError>,
    session_backend: impl FnOnce(&B) -> Option<Arc<dyn Backend>>,
) -> Result<(B, RunRequest, Option<Pending>, Option<DiffSource>), RelayFailure> {
    let deadline = &call_deadline(Some(&options.prompt), options.timeout_seconds, cancel)?;
    let target = check_target(
        registry,
        cwd,
        &options.repo_path,
        options.timeout_seconds,
        options.sandbox.as_deref(),
        pick,
    )?;
    let session_backend = session_backend(&target.backends);
    let in_session = options.session.is_some() || options.backend_session.is_some();
    if in_session && session_backend.is_none() {
        return Err(RelayError::Session(
            "relayAll takes no session: a session belongs to one backend".into(),
        )
        .into());
    }
    let schema = parse_schema(options.schema.as_deref())?;
    let session = match &session_backend {
        Some(backend) => {
            prepare_session(
                deadline,
                env,
                options.session.as_deref(),
                options.backend_session.as_deref(),
                backend.as_ref(),
                &target.repo,
            )
            .await?
        }
        None => None,
    };
    let (envelope, child_env, diff) = prepare_envelope(
        &options,
        &target.repo,
        schema.as_deref(),
        env,
        cwd,
        deadline,
    )
    .await?;
    // A replay sends the earlier turns too: as many as fit beside the envelope.
    let turn = session.as_ref().map(|pending| SessionTurn {
        history: sessions::fit_history(&pending.turn.history, envelope.len()),
        ..pending.turn.clone()
    });
    let request = RunRequest {
        session: turn,
        prompt: envelope,
        repo_path: target.repo,
        timeout: target.timeout,
        deadline: deadline.clone(),
        sandbox: target.sandbox,
        model: options.model,
        env: child_env,
        schema,
        chunks: ChunkSink::discard(),
        link: link.clone(),
    };
    Ok((target.backends, request, session, diff))
}

/// Steps 1 to 8 of `relay()` done at once, on the caller's thread, when they wait on nothing:
/// no context file, no git, no session store, no schema to compile. This lets a backend that
/// runs on the caller's own thread (a JS backend) be called without the call leaving that
/// thread. `None` when the options need any of those: the call takes [`relay`]'s path, whose
/// checks are these same functions.
pub fn prepare_relay_at_once(
    registry: &Registry,
    options: RelayOptions,
    env: &Env,
    cwd: &str,
    link: &CallLink,
) -> Option<Result<Prepared<RunRequest>, RelayFailure>> {
    if !waits_on_nothing(&options) {
        return None;
    }
    // Nothing can cancel a preparation that never waits; the caller's signal is the caller's
    // to watch from here on. With none of the waiting steps, it completes on its first poll.
    prepare_relay(registry, options, env, cwd, link, &CancellationToken::new()).now_or_never()
}

/// Whether preparing a relay with `options` waits on nothing: only checks, inline text and the
/// envelope.
pub fn waits_on_nothing(options: &RelayOptions) -> bool {
    options.context_file.is_none()
        && !options.include_diff
        && options.session.is_none()
        && options.backend_session.is_none()
        && options.schema.is_none()
}

/// Steps 5 to 8, which do not depend on the backend: the envelope (context, diff, size), the
/// child's environment (depth) and which diff the envelope holds.
async fn prepare_envelope(
    options: &RelayOptions,
    repo: &str,
    schema: Option<&Schema>,
    env: &Env,
    cwd: &str,
    deadline: &Deadline,
) -> Result<(String, Env, Option<DiffSource>), RelayFailure> {
    let context = resolve_context(
        options.context_file.as_deref(),
        options.context_text.as_ref(),
        cwd,
        deadline,
    )
    .await?;
    let diff = if options.include_diff {
        Some(
            git::diff_for_relay(repo, GitEnv::Exactly(env), deadline)
                .await
                .map_err(|e| git_failure(e, deadline, RUNNING_GIT_DIFF))?,
        )
    } else {
        None
    };
    let text = diff.as_ref().map_or("", |diff| diff.text.as_str());
    let envelope = with_schema(
        build_envelope(repo, &options.prompt, &context, text),
        schema,
    );
    check_prompt_size(&envelope)?;
    let child_env = next_relay_env(env)?;
    Ok((envelope, child_env, diff.map(|diff| diff.source)))
}

/// Everything `reviewRelay()` does before calling the backend: checks 2 to 4, the base, the
/// depth, within the call's deadline (started here; the request carries it).
pub async fn prepare_review(
    registry: &Registry,
    options: ReviewOptions,
    env: &Env,
    cwd: &str,
    link: &CallLink,
    cancel: &CancellationToken,
) -> Result<Prepared<ReviewRequest>, RelayFailure> {
    let deadline = &call_deadline(None, options.timeout_seconds, cancel)?;
    let target = check_target(
        registry,
        cwd,
        &options.repo_path,
        options.timeout_seconds,
        options.sandbox.as_deref(),
        one_backend(options.backend.as_deref()),
    )?;
    let (schema, prompt) = match (options.verdict, options.schema) {
        (true, Some(_)) => {
            return Err(RelayError::Schema(
                "Use either verdict or schema, not both: a verdict has its own schema".into(),
            )
            .into())
        }
        (true, None) => (
            parse_schema(Some(verdict::SCHEMA))?,
            Some(verdict::prompt(options.prompt.as_deref())),
        ),
        (false, schema) => (parse_schema(schema.as_deref())?, options.prompt),
    };
    let base = match options.base {
        Some(base) => base,
        None => git::detect_default_branch(&target.repo, GitEnv::Exactly(env), deadline)
            .await
            .map_err(|e| git_failure(e, deadline, "running git rev-parse"))?,
    };
    git::check_base(&base)?;
    let child_env = next_relay_env(env)?;
    Ok(Prepared {
        backend: target.backends,
        session: None,
        diff: None,
        request: ReviewRequest {
            repo_path: target.repo,
            timeout: target.timeout,
            deadline: deadline.clone(),
            sandbox: target.sandbox,
            model: options.model,
            env: child_env,
            base,
            prompt,
            schema,
            verdict: options.verdict,
            chunks: ChunkSink::discard(),
            link: link.clone(),
        },
    })
}

pub async fn relay(
    registry: Registry,
    options: RelayOptions,
    mut call: CallContext,
) -> Result<String, RelayFailure> {
    // The steps before and after the backend are boxed: their state is not part of what a relay
    // keeps while its backend runs, the longest wait by far (hundreds at once: BENCHMARKS.md).
    let Prepared {
        backend,
        mut request,
        session,
        diff,
    } = Box::pin(prepare_relay(
        &registry,
        options,
        &call.env,
        &call.cwd,
        &call.link,
        &call.cancel,
    ))
    .await?;
    // The request holds the child's own copy of the environment; the caller's is not kept for
    // as long as the backend runs.
    call.env = Env::new();
    warn_about_diff(&call, diff).await;
    let deadline = request.deadline.clone();
    request.chunks = call.chunks;
    let schema = request.schema.clone();
    // Kept for the session's history only when there is a session.
    let prompt = session.as_ref().map(|_| request.prompt.clone());
    let answer = run_backend(backend, request, &deadline).await?;
    if let Some(session) = &session {
        sessions::check_resumed(&session.label, &session.turn)?;
    }
    let answer = Box::pin(checked(answer, schema.as_ref(), false, &deadline)).await?;
    if let (Some(session), Some(prompt)) = (session, prompt) {
        // The answer is the caller's now: a save the call's deadline or abort stops (the store's
        // lock held elsewhere) is a warning.
        for warning in Box::pin(session.save(&prompt, &answer, &deadline)).await {
            call.warn.warn(warning).await;
        }
    }
    Ok(answer)
}

/// `includeDiff` that got another diff than the uncommitted changes says which, and why.
pub(crate) async fn warn_about_diff(call: &CallContext, diff: Option<DiffSource>) {
    if let Some(warning) = diff.and_then(DiffSource::warning) {
        call.warn.warn(warning).await;
    }
}

/// Checks a `session` / `backendSession` against the store (after the backend and sandbox).
async fn prepare_session(
    deadline: &Deadline,
    env: &Env,
    label: Option<&str>,
    adopted: Option<&str>,
    backend: &dyn Backend,
    repo: &str,
) -> Result<Option<Pending>, RelayError> {
    if label.is_none() && adopted.is_none() {
        return Ok(None);
    }
    let store = Store::from_env(env)?;
    sessions::prepare(
        deadline,
        store,
        label,
        adopted,
        backend.name(),
        backend.resume_strategy(),
        repo,
    )
    .await
}

pub async fn review_relay(
    registry: Registry,
    options: ReviewOptions,
    call: CallContext,
) -> Result<String, RelayFailure> {
    let Prepared {
        backend,
        mut request,
        ..
    } = prepare_review(
        &registry,
        options,
        &call.env,
        &call.cwd,
        &call.link,
        &call.cancel,
    )
    .await?;
    request.chunks = call.chunks.clone();
    let verdict = request.verdict;
    let stop = call.cancel.child_token();
    if let Some(native_review) = native_review(&backend, &request, &stop) {
        let result = within_stream_limit(&call.chunks, stop, native_review).await;
        match result {
            Err(BackendFailure::Thrown(thrown)) if thrown.is_relay_error => {
                return Err(RelayFailure::Thrown(thrown));
            }
            // The call's time is over: nothing is left for a fallback.
            timed_out @ Err(BackendFailure::Reported {
                kind: BackendFailureKind::Timeout,
                ..
            }) => {
                return streamed(
                    settle(backend.name(), timed_out, &call.cancel),
                    &call.chunks,
                )
                .await
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
            other => {
                return streamed(settle(backend.name(), other, &call.cancel), &call.chunks).await
            }
        }
    }
    let request = generic_review(request, &call.env).await?;
    let deadline = request.deadline.clone();
    let schema = request.schema.clone();
    let answer = run_backend(backend, request, &deadline).await?;
    checked(answer, schema.as_ref(), verdict, &deadline).await
}

/// Whether the backend may review natively: a schema (or a verdict) goes in the prompt, which
/// no native review takes. The real call and the dry run ask the same question here.
fn may_review_natively(request: &ReviewRequest) -> bool {
    request.schema.is_none()
}

/// The backend's own review, stopped by `stop`, unless the request needs the generic path.
fn native_review(
    backend: &Arc<dyn Backend>,
    request: &ReviewRequest,
    stop: &CancellationToken,
) -> Option<crate::backend::BackendFuture> {
    may_review_natively(request)
        .then(|| backend.clone().review(request, stop.clone()))
        .flatten()
}

/// A schema-checked answer is its JSON text; a verdict is also checked against its findings (and
/// written back compact, as upstream, the phone-a-friend v4.1.1 CLI, does: docs/CONTRACT.md §13).
/// The check runs where the call's deadline and abort stop waiting for it: a schema's patterns
/// over a large answer can take long.
pub(crate) async fn checked(
    answer: String,
    schema: Option<&Arc<Schema>>,
    verdict: bool,
    deadline: &Deadline,
) -> Result<String, RelayFailure> {
    let Some(schema) = schema else {
        return Ok(answer);
    };
    let schema = Arc::clone(schema);
    match deadline
        .bound_on_thread("paf-schema-check", move || {
            checked_now(&answer, &schema, verdict)
        })
        .await
    {
        Ok(Ok(checked)) => checked,
        Ok(Err(e)) => Err(RelayError::Schema(format!(
            "Could not check the answer against the schema: {e}"
        ))
        .into()),
        Err(stop) => Err(deadline.failure(stop, "checking the answer against the schema")),
    }
}

fn checked_now(answer: &str, schema: &Schema, verdict: bool) -> Result<String, RelayFailure> {
    let json = schema.check(answer)?;
    if !verdict {
        return Ok(json);
    }
    let verdict = verdict::parse(&json).map_err(RelayError::from)?;
    Ok(verdict.to_json())
}

fn parse_schema(text: Option<&str>) -> Result<Option<Arc<Schema>>, RelayError> {
    text.map(|text| Schema::parse(text).map(Arc::new))
        .transpose()
}

/// The envelope, then (for a schema) what asks the backend for JSON: counted in its size.
fn with_schema(envelope: String, schema: Option<&Schema>) -> String {
    match schema {
        Some(schema) => envelope + &schema.prompt_suffix(),
        None => envelope,
    }
}

/// A review without a native path: the diff against the base, in the envelope.
async fn generic_review(request: ReviewRequest, env: &Env) -> Result<RunRequest, RelayFailure> {
    let ReviewRequest {
        repo_path,
        timeout,
        deadline,
        sandbox,
        model,
        env: child_env,
        base,
        prompt,
        schema,
        verdict: _,
        chunks,
        link,
    } = request;
    let diff = git::diff_against_base(&repo_path, &base, GitEnv::Exactly(env), &deadline)
        .await
        .map_err(|e| git_failure(e, &deadline, RUNNING_GIT_DIFF))?;
    let envelope = with_schema(
        build_envelope(
            &repo_path,
            prompt.as_deref().unwrap_or(DEFAULT_REVIEW_REQUEST),
            "",
            &diff,
        ),
        schema.as_deref(),
    );
    check_prompt_size(&envelope)?;
    Ok(RunRequest {
        prompt: envelope,
        repo_path,
        timeout,
        deadline,
        sandbox,
        model,
        env: child_env,
        schema,
        // Reviews have no sessions.
        session: None,
        chunks,
        link,
    })
}

/// `relay({ dryRun: true })`: everything [`relay`] does before the backend, then what the
/// backend would do.
pub async fn dry_run_relay(
    registry: Registry,
    options: RelayOptions,
    call: CallContext,
) -> Result<DryRun, RelayFailure> {
    let Prepared {
        backend,
        request,
        diff,
        ..
    } = prepare_relay(
        &registry,
        options,
        &call.env,
        &call.cwd,
        &call.link,
        &call.cancel,
    )
    .await?;
    warn_about_diff(&call, diff).await;
    not_aborted(&request.deadline)?;
    let plan = backend.plan(&request);
    let dry_run = DryRun::of_run(backend.name(), plan, &request, &call.env, None).with_diff(diff);
    warn_about_refusals(&call, &dry_run).await;
    Ok(dry_run)
}

/// `reviewRelay({ dryRun: true })`: the native review the backend would run, else the generic
/// path's envelope.
pub async fn dry_run_review(
    registry: Registry,
    options: ReviewOptions,
    call: CallContext,
) -> Result<DryRun, RelayFailure> {
    let Prepared {
        backend, request, ..
    } = prepare_review(
        &registry,
        options,
        &call.env,
        &call.cwd,
        &call.link,
        &call.cancel,
    )
    .await?;
    let deadline = request.deadline.clone();
    if let Some(plan) = may_review_natively(&request)
        .then(|| backend.plan_review(&request))
        .flatten()
    {
        check_base_exists(&request, &call.env).await?;
        not_aborted(&deadline)?;
        return Ok(DryRun::of_review(backend.name(), plan, &request, &call.env));
    }
    let base = request.base.clone();
    let request = generic_review(request, &call.env).await?;
    not_aborted(&deadline)?;
    let plan = backend.plan(&request);
    let dry_run = DryRun::of_run(backend.name(), plan, &request, &call.env, Some(base));
    warn_about_refusals(&call, &dry_run).await;
    Ok(dry_run)
}

/// A native review against a base git does not know fails, and so does the generic path it
/// falls back to (`ERR_GIT_DIFF`, git's words): a dry run fails as that would. A diff too large
/// for the generic path is no failure of the native review.
async fn check_base_exists(request: &ReviewRequest, env: &Env) -> Result<(), RelayFailure> {
    let deadline = &request.deadline;
    match git::diff_against_base(
        &request.repo_path,
        &request.base,
        GitEnv::Exactly(env),
        deadline,
    )
    .await
    {
        Ok(_) | Err(GitError::Relay(RelayError::TooLarge { .. })) => Ok(()),
        Err(e) => Err(git_failure(e, deadline, RUNNING_GIT_DIFF)),
    }
}

/// What the backend would refuse that only its answer would tell (an Ollama chat without a
/// model), said by the dry run.
async fn warn_about_refusals(call: &CallContext, dry_run: &DryRun) {
    for warning in dry_run.refusals() {
        call.warn.warn(warning).await;
    }
}

/// An aborted call settles as aborted, as [`run_backend`] would.
fn not_aborted(deadline: &Deadline) -> Result<(), RelayFailure> {
    if deadline.cancel_token().is_cancelled() {
        return Err(RelayFailure::Aborted);
    }
    Ok(())
}

/// Runs the backend, unless the call was aborted. A deadline that passed during preparation is
/// the backend's to report (the request carries it): its own timeout error, as before.
pub(crate) async fn run_backend(
    backend: Arc<dyn Backend>,
    request: RunRequest,
    deadline: &Deadline,
) -> Result<String, RelayFailure> {
    not_aborted(deadline)?;
    let cancel = deadline.cancel_token();
    let name = backend.name().to_string();
    let chunks = request.chunks.clone();
    let stop = cancel.child_token();
    let run = backend.run(request, stop.clone());
    let result = within_stream_limit(&chunks, stop, run).await;
    streamed(settle(&name, result, cancel), &chunks).await
}

/// The backend's `run` (or review), begun with `stop` (a child of the call's token). A stream
/// that went past the output limit (stream.rs) stops the backend, as a cancel does, waits for it
/// to stop, and fails: the consumer has had all the text it will get.
async fn within_stream_limit(
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
async fn streamed(
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
        }) => Err(RelayError::Backend {
            kind,
            backend: name.to_string(),
            message,
            cause,
            output,
        }
        .into()),
    }
}

#[cfg(test)]
#[path = "relay_tests.rs"]
mod tests;
