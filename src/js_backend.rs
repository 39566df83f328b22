//! A backend written in JavaScript. The runtime does not call it: it hands the invocation to the
//! call that made it, as a step of that call (`crate::call`), and the caller's own JS runs the
//! backend's trampoline with the call's record in hand.
//!
//! The JS wrapper's trampoline, not the user's `run`, is what runs: it awaits `run`/`review`,
//! catches whatever they throw (synchronously or not) and always settles with a
//! `BackendOutcome`, keeping thrown values in the call's own record so the caller can get the
//! very same value back.
//!
//! The trampoline makes an `AbortController` per invocation, whose signal the backend receives,
//! and keeps the invocation's time (it is told what the deadline leaves): at the end it aborts
//! the backend's signal, and gives up a grace later. This side tells it of cancellations through
//! the invocation's `stopped()` ([`crate::invocation`]), refuses an answer that comes after the
//! deadline, and stops waiting on its own a while after the trampoline should have given up, in
//! case its thread is stuck.

use relay_core::progress::Progress;
use std::sync::Arc;
use std::time::Duration;

use napi_derive::napi;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use relay_core::backend::{
    Backend, BackendFailure, BackendFuture, BackendResult, CallLink, Plan, ReviewRequest,
    RunRequest, Terms,
};
use relay_core::deadline::{Deadline, Stop, Timeout};
use relay_core::errors::{BackendFailureKind, ThrownValue};
use relay_core::sessions::{ReportedId, ResumeStrategy};
use relay_core::stream::ChunkSink;

use crate::invocation::{BackendOutcome, Control, Invocation, OutcomeFailure};

/// How long past its timeout a JS backend may take to settle before the relay gives up on it;
/// long enough that a backend's own timeout error wins the race.
const SETTLE_GRACE: Duration = Duration::from_secs(1);

/// How much longer than the trampoline this side waits before it gives up on its own (the
/// trampoline's thread may be too busy to keep its time).
const BACKSTOP: Duration = Duration::from_secs(1);

/// What the trampoline receives: the method and the options it passes on.
#[napi(object, object_from_js = false)]
pub struct BackendCall {
    /// The registered backend's name: the caller runs its trampoline.
    pub backend: String,
    pub method: String,
    /// Made from the runtime: where streamed chunks go and how the relay stops it. Absent when
    /// the wrapper calls the trampoline itself (it keeps the caller's signal and time).
    pub invocation: Option<Invocation>,
    pub prompt: Option<String>,
    pub repo_path: String,
    pub timeout_seconds: f64,
    /// What the call's deadline leaves: then the backend's signal aborts with `timeoutMessage`.
    pub time_left_ms: f64,
    /// How long after that the backend may still settle (its own answer to the abort).
    pub grace_ms: f64,
    /// The `ERR_BACKEND_TIMEOUT` message.
    pub timeout_message: String,
    pub sandbox: String,
    pub model: Option<String>,
    /// The backend's whole `env` (the caller's, depth raised) as `key=value` entries each ended
    /// by NUL: the trampoline turns it into an object only if the backend reads it.
    pub env: String,
    /// Its `PHONE_A_FRIEND_DEPTH`.
    pub depth: String,
    pub base: Option<String>,
    pub review_prompt: Option<String>,
    /// The JSON Schema's text the answer must match (it is in the prompt too).
    pub schema: Option<String>,
    /// In a session (docs/CONTRACT.md §12): the backend's own session to continue
    /// (`native-session`).
    pub session_id: Option<String>,
    /// The earlier turns as a JSON array of `{ role, content }` (`transcript-replay`).
    pub session_history: Option<String>,
    /// Whether the call belongs to a session.
    pub in_session: bool,
    /// The caller streams: the trampoline uses the backend's `runStream` when it has one and
    /// hands each chunk to `invocation.push`.
    pub stream: bool,
}

/// Where a call's JS backend invocations go: its `NativeCall`, whose `next()` hands them to the
/// caller's JS. Attached to the call as its [`relay_core::backend::CallLink`]. Boxed: a channel
/// allocates its first block of 32 slots when made, for every call, JS backend or not.
pub struct Invoker(pub mpsc::UnboundedSender<Box<BackendCall>>);

pub struct JsBackend {
    pub name: String,
    pub allowed_sandboxes: Vec<String>,
    pub has_review: bool,
    /// From its `capabilities.resumeStrategy`.
    pub resume_strategy: ResumeStrategy,
}

fn serialized_env(env: &relay_core::env::Env) -> String {
    relay_core::env::encode(env)
}

fn child_depth(env: &relay_core::env::Env) -> String {
    env.get(relay_core::limits::DEPTH_ENV_VAR)
        .cloned()
        .unwrap_or_default()
}

fn timeout_message(name: &str, timeout: Timeout) -> String {
    format!("{name} timed out after {}s", timeout.display())
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The trampoline's call for `run()`: what the backend receives, and the time it has. `env` is
/// the request's environment as entries (see [`serialized_env`]).
pub fn run_call(
    name: &str,
    resume_strategy: ResumeStrategy,
    request: RunRequest,
    env: String,
    invocation: Option<Invocation>,
    stream: bool,
) -> BackendCall {
    let session = request.session.as_ref();
    BackendCall {
        schema: request
            .terms
            .schema
            .as_deref()
            .map(|s| s.text().to_string()),
        in_session: session.is_some(),
        session_id: session.and_then(|s| s.resume.clone()),
        session_history: session
            .filter(|_| resume_strategy == ResumeStrategy::TranscriptReplay)
            .and_then(|s| serde_json::to_string(&s.history).ok()),
        stream,
        prompt: Some(request.prompt),
        ..backend_call(name, "run", &request.terms, env, invocation)
    }
}

/// The trampoline's call for a native `review()`, which answers in one piece. A review with a
/// schema never reaches one.
fn review_call(name: &str, request: &ReviewRequest, invocation: Invocation) -> BackendCall {
    BackendCall {
        base: Some(request.base.clone()),
        review_prompt: request.prompt.clone(),
        ..backend_call(
            name,
            "review",
            &request.terms,
            serialized_env(&request.terms.env),
            Some(invocation),
        )
    }
}

/// What every call of the trampoline carries: the request's terms and the time they leave.
fn backend_call(
    name: &str,
    method: &str,
    terms: &Terms,
    env: String,
    invocation: Option<Invocation>,
) -> BackendCall {
    BackendCall {
        backend: name.to_string(),
        method: method.into(),
        invocation,
        prompt: None,
        repo_path: terms.repo_path.clone(),
        timeout_seconds: terms.timeout.seconds(),
        time_left_ms: millis(terms.deadline.remaining()),
        grace_ms: millis(SETTLE_GRACE),
        timeout_message: timeout_message(name, terms.timeout),
        sandbox: terms.sandbox.clone(),
        model: terms.model.clone(),
        env,
        depth: child_depth(&terms.env),
        base: None,
        review_prompt: None,
        schema: None,
        session_id: None,
        session_history: None,
        in_session: false,
        stream: false,
    }
}

/// An invocation handed to the caller, and what the relay waits on.
struct Handed {
    call: BackendCall,
    control: Arc<Control>,
    outcome: oneshot::Receiver<BackendOutcome>,
    /// Where the call goes: the caller's JS (see [`Invoker`]).
    link: CallLink,
    timeout: Timeout,
    /// The call's: what it leaves of `timeout` (preparation used the rest) is the backend's.
    deadline: Deadline,
    /// Where a session id the backend reports goes.
    reported: Option<ReportedId>,
    /// Its progress: once the call's watchdog marks it stalled, the backend is stopped.
    progress: Progress,
}

impl JsBackend {
    fn timeout_message(&self, timeout: Timeout) -> String {
        timeout_message(&self.name, timeout)
    }

    async fn call(
        &self,
        Handed {
            call,
            control,
            outcome,
            link,
            timeout,
            deadline,
            reported,
            progress,
        }: Handed,
        cancel: CancellationToken,
    ) -> BackendResult {
        let method = call.method.clone();
        let timed_out = || {
            control.stop(Some(self.timeout_message(timeout)));
            Err(BackendFailure::reported(
                BackendFailureKind::Timeout,
                self.timeout_message(timeout),
            ))
        };
        let could_not_call = |why: &str| {
            Err(BackendFailure::reported(
                BackendFailureKind::Failed,
                format!("Backend {} could not be called: {why}", self.name),
            ))
        };
        // The caller's JS runs the trampoline; a call made from elsewhere (none is) has nobody.
        let Some(Invoker(invoker)) = link.get::<Invoker>() else {
            return could_not_call("no JS caller");
        };
        if invoker.send(Box::new(call)).is_err() {
            return could_not_call("its caller is gone");
        }
        // The trampoline keeps the invocation's time; this side waits for its outcome, the
        // caller's cancellation, or (a stuck thread) the backstop.
        let given_up_at = tokio::time::sleep(
            deadline
                .remaining()
                .saturating_add(SETTLE_GRACE)
                .saturating_add(BACKSTOP),
        );
        tokio::select! {
            biased;
            () = cancel.cancelled() => {
                // Told before the relay settles: a caller that exits as soon as its relay
                // rejects (the CLI on a closed stdout) still leaves the backend aborted. A
                // trampoline that has not run yet finds the invocation stopped when it does.
                control.stop_and_tell(None).await;
                Err(BackendFailure::Cancelled)
            }
            settled = outcome => match settled {
                Ok(outcome) => {
                    if let (Some(reported), Some(id)) = (&reported, &outcome.session_id) {
                        reported.set(id.as_str());
                    }
                    // An answer that comes once the call's time is over is too late, whatever
                    // it says (the trampoline, on its own clock, may have let it through).
                    if outcome.output.is_some() && deadline.check() == Err(Stop::TimedOut) {
                        return timed_out();
                    }
                    outcome_result(&self.name, &method, outcome)
                }
                // The caller's environment went away before the trampoline settled.
                Err(_) => could_not_call("its caller is gone"),
            },
            () = given_up_at => timed_out(),
            after = progress.stalled() => {
                let message = format!(
                    "Backend {} made no progress for {}s (idleTimeoutSeconds)",
                    self.name,
                    after.display()
                );
                control.stop(Some(message.clone()));
                Err(BackendFailure::reported(BackendFailureKind::Stalled, message))
            }
        }
    }
}

/// What an invocation's outcome means for the relay.
pub fn outcome_result(name: &str, method: &str, outcome: BackendOutcome) -> BackendResult {
    if let Some(output) = outcome.output {
        return Ok(output);
    }
    let message = outcome.message.unwrap_or_default();
    let thrown = |is_relay_error| {
        outcome.handle.map(|handle| ThrownValue {
            handle,
            is_relay_error,
            message: message.clone(),
        })
    };
    let failure = match outcome.failure {
        Some(OutcomeFailure::Backend) => BackendFailure::Reported {
            kind: BackendFailureKind::Failed,
            message: message.clone(),
            cause: thrown(false),
            output: None,
            partial: None,
        },
        Some(kind @ (OutcomeFailure::Relay | OutcomeFailure::Thrown)) => {
            match thrown(matches!(kind, OutcomeFailure::Relay)) {
                Some(value) => BackendFailure::Thrown(value),
                // The call's table is gone (it already settled): nothing left to hand back.
                None => BackendFailure::reported(BackendFailureKind::Failed, message),
            }
        }
        Some(OutcomeFailure::Invalid) => {
            BackendFailure::reported(BackendFailureKind::Failed, message)
        }
        Some(OutcomeFailure::Timeout) => {
            BackendFailure::reported(BackendFailureKind::Timeout, message)
        }
        Some(OutcomeFailure::Aborted) => BackendFailure::Cancelled,
        None => BackendFailure::reported(
            BackendFailureKind::Failed,
            format!("Backend {name} {method}() settled without an answer"),
        ),
    };
    Err(failure)
}

impl Backend for JsBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn allowed_sandboxes(&self) -> &[String] {
        &self.allowed_sandboxes
    }

    fn run(self: Arc<Self>, mut request: RunRequest, cancel: CancellationToken) -> BackendFuture {
        let (timeout, deadline) = (request.terms.timeout, request.terms.deadline.clone());
        // A backend with `runStream` streams when somebody reads it, and when the stall
        // watchdog watches it: its chunks are its progress.
        let stream = request.terms.wants_stream();
        let chunks = std::mem::replace(&mut request.terms.chunks, ChunkSink::discard());
        let progress = request.terms.progress.clone();
        let activity = request.terms.activity.clone();
        let (invocation, control, outcome) = Invocation::open(chunks, progress.clone(), activity);
        let reported = request.session.as_ref().map(|s| s.reported.clone());
        let env = serialized_env(&request.terms.env);
        let link = request.terms.link.clone();
        let call = run_call(
            &self.name,
            self.resume_strategy,
            request,
            env,
            Some(invocation),
            stream,
        );
        let handed = Handed {
            call,
            control: control.clone(),
            outcome,
            link,
            timeout,
            deadline,
            reported,
            progress,
        };
        Box::pin(async move {
            let result = self.call(handed, cancel).await;
            control.finish();
            result
        })
    }

    fn review(
        self: Arc<Self>,
        request: &ReviewRequest,
        cancel: CancellationToken,
    ) -> Option<BackendFuture> {
        if !self.has_review {
            return None;
        }
        let (timeout, deadline) = (request.terms.timeout, request.terms.deadline.clone());
        let progress = request.terms.progress.clone();
        let activity = request.terms.activity.clone();
        let (invocation, control, outcome) =
            Invocation::open(ChunkSink::discard(), progress.clone(), activity);
        let link = request.terms.link.clone();
        let call = review_call(&self.name, request, invocation);
        let handed = Handed {
            call,
            control,
            outcome,
            link,
            timeout,
            deadline,
            reported: None,
            progress,
        };
        Some(Box::pin(async move { self.call(handed, cancel).await }))
    }

    fn resume_strategy(&self) -> ResumeStrategy {
        self.resume_strategy
    }

    fn runs_on_caller_thread(&self) -> bool {
        true
    }

    fn plan(&self, _: &RunRequest) -> Plan {
        Plan::JsRun
    }

    fn plan_review(&self, _: &ReviewRequest) -> Option<Plan> {
        self.has_review.then_some(Plan::JsReview)
    }
}
