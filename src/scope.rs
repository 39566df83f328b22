//! One scope per loaded JS module (the main thread and each worker load their own): its backend
//! registry and the token every call it starts descends
//! from. Threadsafe functions belong to one JS environment, so a backend registered in one worker
//! is never called from another; when that environment is torn down (`worker.terminate()`,
//! exit), the scope's calls are cancelled, which kills their backend processes.
//!
//! Each operation enters here once (`relay`, `review`, `relayAll`, the sessions) and comes back
//! through one `NativeCall` (docs/ARCHITECTURE.md §2).

use std::sync::Arc;

use napi::bindgen_prelude::{Either, Either3};
use napi::{Env, Result};
use napi_derive::napi;
use tokio_util::sync::CancellationToken;

use crate::call::{Ending, NativeCall, Start};
use crate::dry_run::NativeDryRun;
use crate::failure::{outcome, NativeFailure};
use crate::invocation::BackendOutcome;
use crate::js_backend::{self, BackendCall, JsBackend};
use crate::relay_all::NativeBackendOutcome;
use crate::{caller_env, NativeCaller};
use relay_core::backends::builtins;
use relay_core::dry_run::DryRun;
use relay_core::env::Env as Environment;
use relay_core::errors::RelayError;
use relay_core::limits::DEFAULT_BACKEND;
use relay_core::limits::DEPTH_ENV_VAR;
use relay_core::registry::Registry;
use relay_core::relay::{self, Operation, Prepared, RelayRequest};
use relay_core::sessions::ResumeStrategy;

/// How a `relay()` or `reviewRelay()` is made.
#[napi(object)]
pub struct CallMode {
    /// Say what would be run, running nothing.
    pub dry_run: bool,
    /// Hand the answer's text to `next()` as it is produced.
    pub stream: bool,
    /// Hand what the backend is doing to `next()` (`onProgress`): each change of phase, and the
    /// same again every second without one.
    pub progress: Option<bool>,
}

/// A relay the wrapper runs on the JS thread (see [`RelayScope::relay`]): the backend's name and
/// its trampoline's call.
#[napi(object, object_from_js = false)]
pub struct DirectRelay {
    pub backend: String,
    pub call: BackendCall,
}

/// How a JS backend continues a conversation (docs/CONTRACT.md §12).
#[napi(string_enum = "kebab-case")]
pub enum ResumeStrategyName {
    NativeSession,
    TranscriptReplay,
    Unsupported,
}

impl From<ResumeStrategyName> for ResumeStrategy {
    fn from(name: ResumeStrategyName) -> Self {
        match name {
            ResumeStrategyName::NativeSession => ResumeStrategy::NativeSession,
            ResumeStrategyName::TranscriptReplay => ResumeStrategy::TranscriptReplay,
            ResumeStrategyName::Unsupported => ResumeStrategy::Unsupported,
        }
    }
}

#[napi]
pub struct RelayScope {
    registry: Registry,
    /// Parent of every call token of this scope; cancelled when its JS environment goes away.
    cancel: CancellationToken,
}

impl RelayScope {
    /// The registry as it is now (cheap: a map of `Arc`s) and the call's context, snapshotted
    /// here, on the JS thread.
    fn call(&self, caller: NativeCaller, mode: &CallMode) -> Start {
        Start {
            registry: self.registry.clone(),
            env: caller_env(caller.env.as_deref(), caller.depth),
            cwd: caller.cwd,
            cancel: self.cancel.child_token(),
            stream: mode.stream,
            progress: mode.progress.unwrap_or(false),
        }
    }

    /// A token for work of this scope that is not a call (the MCP server, the sessions).
    pub fn child_token(&self) -> CancellationToken {
        self.cancel.child_token()
    }

    /// Whether a relay may run on the JS thread: its preparation waits on nothing (no file, git
    /// or session store: see [`relay::prepare_relay_at_once`]) and its backend is a JS one.
    /// Each thread hop the runtime's road takes costs tens of microseconds; a JS backend answers
    /// in a few.
    fn runs_here(&self, request: &RelayRequest) -> bool {
        let name = request.backend.as_deref().unwrap_or(DEFAULT_BACKEND);
        request.waits_on_nothing()
            && self
                .registry
                .find(name)
                .is_some_and(|backend| backend.runs_on_caller_thread())
    }

    /// Prepares a relay that [`Self::runs_here`] with the runtime road's own checks, for the
    /// wrapper to hand to the backend's trampoline itself.
    fn direct(
        &self,
        request: RelayRequest,
        caller: NativeCaller,
    ) -> Either<DirectRelay, NativeFailure> {
        // The environment is copied once, as the entries the backend's `env` is made from; the
        // preparation reads only the depth from it (it runs no git and opens no store).
        let entries = caller.env.unwrap_or_else(relay_core::env::process_entries);
        let mut env: Environment = relay_core::depth::depth_entry(&entries)
            .map(|depth| (DEPTH_ENV_VAR.to_string(), depth.to_string()))
            .into_iter()
            .collect();
        if let Some(depth) = caller.depth {
            relay_core::depth::raise_to(&mut env, u64::from(depth));
        }
        let prepared = relay::prepare_relay_at_once(&self.registry, request, &env, &caller.cwd);
        match prepared {
            Some(Ok(Prepared {
                backend, request, ..
            })) => {
                let name = backend.name().to_string();
                // The child's environment is the caller's with the depth the preparation raised.
                let child_depth = request
                    .terms
                    .env
                    .get(DEPTH_ENV_VAR)
                    .cloned()
                    .unwrap_or_default();
                let call = js_backend::run_call(
                    &name,
                    backend.resume_strategy(),
                    request,
                    relay_core::depth::with_depth_entry(&entries, &child_depth),
                    None,
                    false,
                );
                Either::A(DirectRelay {
                    backend: name,
                    call,
                })
            }
            Some(Err(failure)) => Either::B(NativeFailure::from(&failure)),
            // `runs_here` said it waits on nothing.
            None => Either::B(NativeFailure::from(&RelayError::Internal(
                "a relay that waits on nothing waited".into(),
            ))),
        }
    }
}

impl RelayScope {
    /// A relay or a review on the runtime's road: refused where it is made when a check that
    /// waits on nothing refuses it, else one `NativeCall`.
    fn start(
        &self,
        operation: Operation,
        request: RelayRequest,
        caller: NativeCaller,
        mode: CallMode,
    ) -> Either<NativeCall, NativeFailure> {
        if let Some(refused) =
            relay::refused_at_once(&self.registry, operation, &request, &caller.cwd)
        {
            return Either::B(NativeFailure::from(&refused));
        }
        let dry_run = |dry_run: DryRun| Ending::DryRun(Box::new(NativeDryRun::from(dry_run)));
        Either::A(NativeCall::start(
            self.call(caller, &mode),
            move |registry, context| async move {
                match (operation, mode.dry_run) {
                    (Operation::Review, true) => {
                        Box::pin(relay::dry_run_review(registry, request, context))
                            .await
                            .map(dry_run)
                    }
                    (Operation::Review, false) => {
                        Box::pin(relay::review_relay(registry, request, context))
                            .await
                            .map(Ending::Answer)
                    }
                    (_, true) => relay::dry_run_relay(registry, request, context)
                        .await
                        .map(dry_run),
                    (_, false) => relay::relay(registry, request, context)
                        .await
                        .map(Ending::Answer),
                }
            },
        ))
    }
}

#[napi]
impl RelayScope {
    #[napi(constructor)]
    pub fn new(env: Env) -> Result<Self> {
        let cancel = CancellationToken::new();
        // Runs on this environment's own teardown (a worker's included), before napi stops the
        // async runtime after the last one: nothing can answer its JS backends or read its
        // results any more.
        env.add_env_cleanup_hook(cancel.clone(), |cancel| cancel.cancel())?;
        Ok(RelayScope {
            registry: Registry::new(builtins()),
            cancel,
        })
    }

    /// Registers a JS backend, replacing any backend of the same name in this scope. The
    /// wrapper keeps its trampoline by name and runs it when a call hands it an invocation.
    #[napi]
    pub fn register_js_backend(
        &mut self,
        name: String,
        allowed_sandboxes: Vec<String>,
        has_review: bool,
        resume_strategy: ResumeStrategyName,
    ) {
        self.registry.register(Arc::new(JsBackend {
            name,
            allowed_sandboxes,
            has_review,
            resume_strategy: resume_strategy.into(),
        }));
    }

    /// Drops the JS backends of this scope and restores the built-ins.
    #[napi]
    pub fn reset_registry(&mut self) {
        self.registry = Registry::new(builtins());
    }

    /// Starts a `relay()` on the runtime's road (docs/ARCHITECTURE.md §2).
    #[napi]
    pub fn relay(
        &self,
        request: RelayRequest,
        caller: NativeCaller,
        mode: CallMode,
    ) -> Either<NativeCall, NativeFailure> {
        self.start(Operation::Relay, request, caller, mode)
    }

    /// Starts a `relay()` to a backend the wrapper holds a trampoline for, that neither streams
    /// nor is a dry run: when its preparation waits on nothing and its backend is a JS one of
    /// this scope, it is prepared here, on the JS thread, and comes back as a `DirectRelay` (or
    /// its failure) for the wrapper to call the trampoline itself; else it starts as
    /// [`Self::relay`] starts it.
    #[napi]
    pub fn relay_here(
        &self,
        request: RelayRequest,
        caller: NativeCaller,
    ) -> Either3<DirectRelay, NativeCall, NativeFailure> {
        if self.runs_here(&request) {
            return match self.direct(request, caller) {
                Either::A(direct) => Either3::A(direct),
                Either::B(failure) => Either3::C(failure),
            };
        }
        let mode = CallMode {
            dry_run: false,
            stream: false,
            progress: None,
        };
        match self.start(Operation::Relay, request, caller, mode) {
            Either::A(call) => Either3::B(call),
            Either::B(failure) => Either3::C(failure),
        }
    }

    /// Starts a `reviewRelay()`.
    #[napi]
    pub fn review(
        &self,
        request: RelayRequest,
        caller: NativeCaller,
        mode: CallMode,
    ) -> Either<NativeCall, NativeFailure> {
        self.start(Operation::Review, request, caller, mode)
    }

    /// Starts a `relayAll()`.
    #[napi]
    pub fn relay_all(
        &self,
        request: RelayRequest,
        backends: Vec<String>,
        caller: NativeCaller,
    ) -> Either<NativeCall, NativeFailure> {
        if let Some(refused) =
            relay::refused_at_once(&self.registry, Operation::RelayAll, &request, &caller.cwd)
        {
            return Either::B(NativeFailure::from(&refused));
        }
        Either::A(NativeCall::start(
            self.call(
                caller,
                &CallMode {
                    dry_run: false,
                    stream: false,
                    progress: None,
                },
            ),
            |registry, context| async move {
                relay_core::relay_all::relay_all(registry, request, backends, context)
                    .await
                    .map(|outcomes| {
                        Ending::Outcomes(
                            outcomes
                                .into_iter()
                                .map(NativeBackendOutcome::from)
                                .collect(),
                        )
                    })
            },
        ))
    }
}

/// A `DirectRelay`'s outcome as the relay's answer or failure, made by the same functions as on
/// the runtime's road (the wrapper takes a string answer as it is, without this call).
#[napi]
pub fn settle_direct(backend: String, result: BackendOutcome) -> Either<String, NativeFailure> {
    let result = js_backend::outcome_result(&backend, "run", result);
    outcome(relay::settle(&backend, result, &CancellationToken::new()))
}
