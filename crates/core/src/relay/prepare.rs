//! Everything a run does before its backend, in the contract's order (docs/CONTRACT.md §3):
//! checks 1 to 4, the schema, the session, the context, the diff, the envelope's size and the
//! depth. One deadline, started with the checks, bounds every wait (the context file's reads,
//! git, the session store), on the call's task.

use std::borrow::Cow;
use std::sync::Arc;

use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;

use super::call::Caller;
use super::checks::{call_deadline, check_target, check_with_fallback, Target};
use super::request::{EnvelopeLimit, Operation, RelayRequest};
use crate::activity::Activity;
use crate::backend::{Backend, CallLink, RunRequest, Terms, WindowQuery};
use crate::context::resolve_context;
use crate::deadline::Deadline;
use crate::depth::next_relay_env;
use crate::env::Env;
use crate::envelope::{build_envelope, check_prompt_size, Attached};
use crate::errors::{RelayError, RelayFailure};
use crate::fit::{
    coverage_limit, coverage_section, cut_context, diff_budget, diff_budget_reserve, Fitted,
};
use crate::git::{self, DiffSource, GitEnv, GitError};
use crate::limits::{DEFAULT_BACKEND, MAX_PROMPT_BYTES};
use crate::model_window::ModelWindow;
use crate::progress::Progress;
use crate::registry::Registry;
use crate::schema::Schema;
use crate::sessions::{self, store::Store, Pending, SessionTurn};
use crate::stream::ChunkSink;
use crate::usage::RunReport;

pub(super) const RUNNING_GIT_DIFF: &str = "running git diff";

/// A call prepared: what runs it (one backend, or `relayAll()`'s several) and what they are
/// given.
pub struct Prepared<B, R> {
    pub backend: B,
    pub request: R,
    /// The session the run belongs to, saved after an answer.
    pub session: Option<Pending>,
    /// Which diff the envelope holds, when the call asked for one (`includeDiff`).
    pub diff: Option<DiffSource>,
    /// How the diff was fitted to its budget (`fit`), when it did not fit whole.
    pub fitted: Option<Fitted>,
}

/// A relay prepared for its one backend.
pub type PreparedRelay = Prepared<Arc<dyn Backend>, RunRequest>;

/// `relay()`'s preparation for its one backend.
pub async fn prepare_relay(
    registry: &Registry,
    request: RelayRequest,
    caller: Caller<'_>,
) -> Result<PreparedRelay, RelayFailure> {
    let (name, fallback) = (request.backend.clone(), request.fallback.clone());
    let pick = move |registry: &Registry, sandbox: &str| {
        let name = name.as_deref().unwrap_or(DEFAULT_BACKEND);
        check_with_fallback(registry, (name, &fallback.unwrap_or_default()), sandbox)
    };
    prepare_run(registry, request, caller, pick, |backend| {
        Some(backend.clone())
    })
    .await
}

/// A run's preparation for one backend or several: `pick` makes check 4 for the sandbox asked,
/// `session_backend` says which backend a session would belong to (none: a session is refused).
pub(crate) async fn prepare_run<B: CallBackends>(
    registry: &Registry,
    request: RelayRequest,
    caller: Caller<'_>,
    pick: impl FnOnce(&Registry, &str) -> Result<B, RelayError>,
    session_backend: impl FnOnce(&B) -> Option<Arc<dyn Backend>>,
) -> Result<Prepared<B, RunRequest>, RelayFailure> {
    // A run's checks are a relay's; relayAll() makes check 4 per backend, in `pick`.
    let deadline = &call_deadline(Operation::Relay, &request, caller.cancel)?;
    let target = check_target(registry, caller.cwd, &request, pick)?;
    let session_backend = session_backend(&target.backends);
    check_one_session_backend(&request, session_backend.is_some())?;
    let schema = parse_schema(request.schema.as_deref())?;
    let session = match &session_backend {
        Some(backend) => {
            prepare_session(
                deadline,
                caller.env,
                &request,
                backend.as_ref(),
                &target.repo,
            )
            .await?
        }
        None => None,
    };
    let (limit, window) =
        envelope_limit(&request, &target.backends.each(), caller.env, deadline).await;
    let (envelope, child_env, diff) = prepare_envelope(
        &request,
        (&target.repo, limit),
        schema.as_deref(),
        caller,
        deadline,
    )
    .await?;
    // A replay sends the earlier turns too: as many as fit beside the envelope.
    let turn = session.as_ref().map(|pending| SessionTurn {
        history: sessions::fit_history(&pending.turn.history, envelope.len(), limit.bytes),
        ..pending.turn.clone()
    });
    let (backends, mut terms) = terms(
        target,
        deadline,
        request.model,
        child_env,
        schema,
        caller.link,
    );
    (terms.prompt_limit, terms.window) = (limit.bytes, window);
    Ok(Prepared {
        backend: backends,
        request: RunRequest {
            terms,
            prompt: envelope,
            session: turn,
        },
        session,
        fitted: diff.as_ref().and_then(|diff| diff.fitted.clone()),
        diff: diff.map(|diff| diff.source),
    })
}

/// A session belongs to one backend at a time: a call to several backends has none, and one
/// with a fallback attaches to no backend session (the next backend could not continue it); its
/// `session` moves to the backend that answered (docs/CONTRACT.md §8a).
fn check_one_session_backend(request: &RelayRequest, one: bool) -> Result<(), RelayError> {
    if !request.in_session() {
        return Ok(());
    }
    let falls_back = request.fallback.as_ref().is_some_and(|f| !f.is_empty());
    let why = match (falls_back && request.backend_session.is_some(), one) {
        (true, _) => "fallback takes no backendSession",
        (false, false) => "relayAll takes no session",
        (false, true) => return Ok(()),
    };
    Err(RelayError::Session(format!(
        "{why}: a session belongs to one backend"
    )))
}

/// `relay()`'s preparation done at once, on the caller's thread, when it waits on nothing
/// ([`RelayRequest::waits_on_nothing`]). This lets a backend that runs on the caller's own
/// thread (a JS backend) be called without the call leaving that thread. `None` when it would wait: the call takes the
/// runtime's road, whose preparation is this same one.
pub fn prepare_relay_at_once(
    registry: &Registry,
    request: RelayRequest,
    env: &Env,
    cwd: &str,
) -> Option<Result<PreparedRelay, RelayFailure>> {
    if !request.waits_on_nothing() {
        return None;
    }
    // Nothing can cancel a preparation that never waits; the caller's signal is the caller's
    // to watch from here on. With none of the waiting steps, it completes on its first poll.
    let (link, cancel) = (CallLink::default(), CancellationToken::new());
    let caller = Caller {
        env,
        cwd,
        link: &link,
        cancel: &cancel,
    };
    prepare_relay(registry, request, caller).now_or_never()
}

/// The steps that do not depend on the backend: the envelope (context, diff, size), the child's
/// environment (depth) and the diff the envelope holds.
async fn prepare_envelope(
    request: &RelayRequest,
    (repo, limit): (&str, EnvelopeLimit),
    schema: Option<&Schema>,
    caller: Caller<'_>,
    deadline: &Deadline,
) -> Result<(String, Env, Option<git::RelayDiff>), RelayFailure> {
    let context = resolve_context(
        request.context_file.as_deref(),
        request.context_text.as_ref(),
        caller.cwd,
        deadline,
    )
    .await?;
    let others = |attached| envelope(repo, request.prompt_text(), attached, schema).len();
    let EnvelopeLimit { bytes: limit, fit } = limit;
    let context = match fit {
        true => {
            let without = others(Attached::default());
            fit_context(context, without, request.includes_diff(), limit)
        }
        false => context,
    };
    let diff = if request.includes_diff() {
        let fit = fit.then(|| diff_budget(others(Attached::only_context(&context)), limit));
        Some(
            git::diff_for_relay(repo, GitEnv::Exactly(caller.env), fit, deadline)
                .await
                .map_err(|e| git_failure(e, deadline, RUNNING_GIT_DIFF))?,
        )
    } else {
        None
    };
    let coverage = diff
        .as_ref()
        .and_then(|diff| diff.fitted.as_ref())
        .map(|fitted| coverage_section(fitted, coverage_limit(limit)))
        .unwrap_or_default();
    let attached = Attached {
        context: &context,
        diff: diff.as_ref().map_or("", |diff| diff.text.as_str()),
        coverage: &coverage,
    };
    let envelope = envelope(repo, request.prompt_text(), attached, schema);
    check_prompt_size(&envelope, limit)?;
    let child_env = next_relay_env(caller.env)?;
    Ok((envelope, child_env, diff))
}

/// A call's backends, whichever they are: one, or `relayAll()`'s several.
pub(crate) trait CallBackends {
    fn each(&self) -> Vec<&Arc<dyn Backend>>;
}

impl CallBackends for Arc<dyn Backend> {
    fn each(&self) -> Vec<&Arc<dyn Backend>> {
        vec![self]
    }
}

/// The envelope's limit for a call to `backends`: the request's, and with `fit` within what
/// each backend's model window holds, when it can tell (the smallest: one envelope goes to
/// all); and that window. The windows are asked at once, within the call's deadline.
pub(super) async fn envelope_limit(
    request: &RelayRequest,
    backends: &[&Arc<dyn Backend>],
    env: &Env,
    deadline: &Deadline,
) -> (EnvelopeLimit, Option<ModelWindow>) {
    let limit = request.envelope_limit();
    if !limit.fit {
        return (limit, None);
    }
    let asked = backends.iter().filter_map(|backend| {
        backend.model_window(WindowQuery {
            model: request.model.clone(),
            env: env.clone(),
            deadline: deadline.clone(),
        })
    });
    let windows = futures_util::future::join_all(asked).await;
    let window = windows
        .into_iter()
        .flatten()
        .min_by_key(|window| window.prompt_bytes());
    let bytes = window.map_or(limit.bytes, |window| limit.bytes.min(window.prompt_bytes()));
    (EnvelopeLimit { bytes, ..limit }, window)
}

/// With `fit`, a context that would push the envelope (of `others` bytes without it) over its
/// `limit` is cut to what fits, leaving room for a fitted diff's coverage when there is a diff,
/// and says so at its end (docs/CONTRACT.md §6a).
fn fit_context(
    context: Cow<'_, str>,
    others: usize,
    with_diff: bool,
    limit: usize,
) -> Cow<'_, str> {
    let reserve = if with_diff {
        diff_budget_reserve(limit)
    } else {
        0
    };
    let heading = "\n\nAdditional Context:\n".len();
    let room = limit.saturating_sub(others + heading + reserve);
    if context.len() <= room {
        return context;
    }
    Cow::Owned(cut_context(&context, room))
}

/// Checks a `session` / `backendSession` against the store (after the backend and sandbox).
async fn prepare_session(
    deadline: &Deadline,
    env: &Env,
    request: &RelayRequest,
    backend: &dyn Backend,
    repo: &str,
) -> Result<Option<Pending>, RelayError> {
    if !request.in_session() {
        return Ok(None);
    }
    let store = Store::from_env(env)?;
    sessions::prepare(
        deadline,
        store,
        request.session.as_deref(),
        request.backend_session.as_deref(),
        sessions::User {
            backend: backend.name(),
            strategy: backend.resume_strategy(),
            repo_path: repo,
        },
    )
    .await
}

/// What the request for the backend carries, once the checks gave `target` (and its backends
/// back) and the preparation the rest. Nobody streams it yet.
pub(super) fn terms<B>(
    target: Target<B>,
    deadline: &Deadline,
    model: Option<String>,
    env: Env,
    schema: Option<Arc<Schema>>,
    link: &CallLink,
) -> (B, Terms) {
    let terms = Terms {
        repo_path: target.repo,
        timeout: target.timeout,
        deadline: deadline.clone(),
        sandbox: target.sandbox,
        model,
        env,
        schema,
        chunks: ChunkSink::discard(),
        link: link.clone(),
        // The call's own, once its preparation knows it (`envelope_limit`).
        prompt_limit: MAX_PROMPT_BYTES,
        window: None,
        progress: target
            .idle
            .map_or_else(Progress::unwatched, Progress::watching),
        report: RunReport::default(),
        activity: Activity::unwatched(),
    };
    (target.backends, terms)
}

/// A git helper's error as the call's failure: a stop names the step it interrupted.
pub(super) fn git_failure(
    err: GitError,
    deadline: &Deadline,
    during: &'static str,
) -> RelayFailure {
    match err {
        GitError::Relay(err) => err.into(),
        GitError::Stopped(stop) => deadline.failure(stop, during),
    }
}

pub(super) fn parse_schema(text: Option<&str>) -> Result<Option<Arc<Schema>>, RelayError> {
    text.map(|text| Schema::parse(text).map(Arc::new))
        .transpose()
}

/// The envelope, then (for a schema) what asks the backend for JSON: counted in its size.
pub(super) fn envelope(
    repo: &str,
    request: &str,
    attached: Attached<'_>,
    schema: Option<&Schema>,
) -> String {
    let envelope = build_envelope(repo, request, attached);
    match schema {
        Some(schema) => envelope + &schema.prompt_suffix(),
        None => envelope,
    }
}
