//! A backend written in JavaScript, called from Rust through a threadsafe function.
//!
//! The JS wrapper registers a trampoline, not the user's `run`: it awaits `run`/`review`, catches
//! whatever they throw (synchronously or not) and always resolves with a `BackendOutcome`, keeping
//! thrown values in the call's own table so the caller can get the very same value back.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::Promise;
use napi::threadsafe_function::ThreadsafeFunction;
use napi::Status;
use napi_derive::napi;
use tokio_util::sync::CancellationToken;

use crate::backend::{
    Backend, BackendFailure, BackendFuture, BackendResult, ReviewRequest, RunRequest, Timeout,
};
use crate::errors::{BackendFailureKind, ThrownValue};

/// How long past its timeout a JS backend may take to settle before the relay gives up on it;
/// long enough that a backend's own timeout error wins the race.
const SETTLE_GRACE: Duration = Duration::from_secs(1);

/// What the trampoline receives: the method and the options it passes on.
#[napi(object)]
pub struct BackendCall {
    pub method: String,
    pub call_tag: u32,
    pub prompt: Option<String>,
    pub repo_path: String,
    pub timeout_seconds: f64,
    pub sandbox: String,
    pub model: Option<String>,
    pub env: HashMap<String, String>,
    pub base: Option<String>,
    pub review_prompt: Option<String>,
}

/// What the trampoline resolves with: an `output`, or a `failure` kind.
#[napi(object)]
pub struct BackendOutcome {
    pub output: Option<String>,
    /// `'backend'` (a BackendError), `'relay'` (a RelayError), `'thrown'` (anything else) or
    /// `'invalid'` (run resolved with something other than a string).
    pub failure: Option<String>,
    pub message: Option<String>,
    /// Where the trampoline keeps the thrown value.
    pub handle: Option<u32>,
}

pub type InvokeFn =
    ThreadsafeFunction<BackendCall, Promise<BackendOutcome>, BackendCall, Status, false, true>;

pub struct JsBackend {
    pub name: String,
    pub allowed_sandboxes: Vec<String>,
    pub has_review: bool,
    pub invoke: Arc<InvokeFn>,
}

impl JsBackend {
    async fn call(
        &self,
        call: BackendCall,
        timeout: Timeout,
        cancel: CancellationToken,
    ) -> BackendResult {
        let method = call.method.clone();
        let invoke = async {
            let promise = self.invoke.call_async(call).await?;
            promise.await
        };
        let deadline = timeout.duration().saturating_add(SETTLE_GRACE);
        tokio::select! {
            _ = cancel.cancelled() => Err(BackendFailure::Cancelled),
            settled = tokio::time::timeout(deadline, invoke) => match settled {
                Err(_) => Err(BackendFailure::reported(
                    BackendFailureKind::Timeout,
                    format!("{} timed out after {}s", self.name, timeout.display()),
                )),
                Ok(Err(e)) => Err(BackendFailure::reported(
                    BackendFailureKind::Failed,
                    format!("Backend {} could not be called: {e}", self.name),
                )),
                Ok(Ok(outcome)) => outcome_result(&self.name, &method, outcome),
            },
        }
    }
}

fn outcome_result(name: &str, method: &str, outcome: BackendOutcome) -> BackendResult {
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
    let failure = match outcome.failure.as_deref() {
        Some("backend") => BackendFailure::Reported {
            kind: BackendFailureKind::Failed,
            message: message.clone(),
            cause: thrown(false),
        },
        Some(kind @ ("relay" | "thrown")) => match thrown(kind == "relay") {
            Some(value) => BackendFailure::Thrown(value),
            // The call's table is gone (it already settled): nothing left to hand back.
            None => BackendFailure::reported(BackendFailureKind::Failed, message),
        },
        Some("invalid") => BackendFailure::reported(BackendFailureKind::Failed, message),
        _ => BackendFailure::reported(
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

    fn run(self: Arc<Self>, request: RunRequest, cancel: CancellationToken) -> BackendFuture {
        let timeout = request.timeout;
        let call = BackendCall {
            method: "run".into(),
            call_tag: request.call_tag,
            prompt: Some(request.prompt),
            repo_path: request.repo_path,
            timeout_seconds: timeout.seconds(),
            sandbox: request.sandbox,
            model: request.model,
            env: request.env.into_iter().collect(),
            base: None,
            review_prompt: None,
        };
        Box::pin(async move { self.call(call, timeout, cancel).await })
    }

    fn review(
        self: Arc<Self>,
        request: &ReviewRequest,
        cancel: CancellationToken,
    ) -> Option<BackendFuture> {
        if !self.has_review {
            return None;
        }
        let timeout = request.timeout;
        let call = BackendCall {
            method: "review".into(),
            call_tag: request.call_tag,
            prompt: None,
            repo_path: request.repo_path.clone(),
            timeout_seconds: timeout.seconds(),
            sandbox: request.sandbox.clone(),
            model: request.model.clone(),
            env: request
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            base: Some(request.base.clone()),
            review_prompt: request.prompt.clone(),
        };
        Some(Box::pin(
            async move { self.call(call, timeout, cancel).await },
        ))
    }
}
