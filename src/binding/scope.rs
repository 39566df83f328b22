//! One scope per loaded JS module (the main thread and each worker load their own): its backend
//! registry, where its warnings go, and the token every call it starts descends from. Threadsafe
//! functions belong to one JS environment, so a backend registered in one worker is never called
//! from another; when that environment is torn down (`worker.terminate()`, exit), the scope's
//! calls are cancelled, which kills their backend processes.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use napi::bindgen_prelude::{Function, Promise};
use napi::threadsafe_function::ThreadsafeFunction;
use napi::{Env, Error, Result, Status};
use napi_derive::napi;
use tokio_util::sync::CancellationToken;

use super::cancel;
use super::js_backend::{AbortFn, BackendCall, BackendOutcome, InvocationAbort, JsBackend};
use crate::backends::builtins;
use crate::registry::Registry;
use crate::relay::Warn;
use crate::sessions::ResumeStrategy;

/// A warning about one call: the wrapper gives it to that call's `onWarning`, else
/// `console.error`.
#[napi(object)]
pub struct NativeWarning {
    pub call_tag: u32,
    pub message: String,
}

type WarnFn = ThreadsafeFunction<NativeWarning, (), NativeWarning, Status, false, true>;

struct ConsoleWarn(Arc<WarnFn>);

impl Warn for ConsoleWarn {
    /// Resolves once the JS sink has run, so the warning is printed before the fallback starts.
    fn warn(&self, call_tag: u32, message: String) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let sink = self.0.clone();
        Box::pin(async move {
            // A closing environment cannot print; the relay goes on regardless.
            let _ = sink.call_async(NativeWarning { call_tag, message }).await;
        })
    }
}

struct Scope {
    registry: Registry,
    warn: Arc<dyn Warn>,
    /// The trampolines' `abortInvocation`, shared by this scope's JS backends.
    abort: Arc<AbortFn>,
    /// Parent of every call token of this scope; cancelled when its JS environment goes away.
    cancel: CancellationToken,
}

static NEXT_SCOPE: AtomicU32 = AtomicU32::new(1);
static SCOPES: LazyLock<Mutex<HashMap<u32, Scope>>> = LazyLock::new(Mutex::default);

fn scopes() -> MutexGuard<'static, HashMap<u32, Scope>> {
    SCOPES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn unknown_scope(id: u32) -> Error {
    Error::new(Status::InvalidArg, format!("unknown relay scope {id}"))
}

/// What a call of scope `id` needs: the registry as it is now (cheap: a map of `Arc`s), the
/// warning sink, and the scope's token (the call's token must be its child).
pub fn snapshot(id: u32) -> Result<(Registry, Arc<dyn Warn>, CancellationToken)> {
    scopes()
        .get(&id)
        .map(|scope| {
            (
                scope.registry.clone(),
                scope.warn.clone(),
                scope.cancel.clone(),
            )
        })
        .ok_or_else(|| unknown_scope(id))
}

/// A new token for one call of scope `id`: cancelled with the scope.
pub fn call_token(id: u32) -> Result<CancellationToken> {
    scopes()
        .get(&id)
        .map(|scope| scope.cancel.child_token())
        .ok_or_else(|| unknown_scope(id))
}

// The wrapper's bridge for an `AbortSignal`: a token for one call, a child of the scope's, so
// the scope's teardown cancels it too. Opened here so that `cancel` needs nothing of scopes.
#[napi]
pub fn open_cancel_token(scope: u32) -> Result<u32> {
    Ok(cancel::register(scope, call_token(scope)?))
}

/// The scope's JS environment is going away: nothing can answer its JS backends or read its
/// results, so every call it started is cancelled (their processes are killed) and it is dropped.
fn close_scope(id: u32) {
    let scope = scopes().remove(&id);
    if let Some(scope) = scope {
        scope.cancel.cancel();
    }
    cancel::close_scope_tokens(id);
}

/// Opens a scope whose review fallback warnings go to `warn` (the wrapper passes `console.error`)
/// and whose JS backends are told to stop through `abort_invocation`.
#[napi]
pub fn create_scope(
    env: Env,
    warn: Function<NativeWarning, ()>,
    abort_invocation: Function<InvocationAbort, ()>,
) -> Result<u32> {
    // Weak: neither keeps Node alive once the work is done.
    let sink = warn
        .build_threadsafe_function()
        .callee_handled::<false>()
        .weak::<true>()
        .build()?;
    let abort = abort_invocation
        .build_threadsafe_function()
        .callee_handled::<false>()
        .weak::<true>()
        .build()?;
    let id = NEXT_SCOPE.fetch_add(1, Ordering::Relaxed);
    let scope = Scope {
        registry: Registry::new(builtins()),
        warn: Arc::new(ConsoleWarn(Arc::new(sink))),
        abort: Arc::new(abort),
        cancel: CancellationToken::new(),
    };
    scopes().insert(id, scope);
    // Runs on this environment's own teardown (a worker's included), before napi stops the
    // async runtime after the last one.
    if let Err(e) = env.add_env_cleanup_hook(id, close_scope) {
        close_scope(id);
        return Err(e);
    }
    Ok(id)
}

/// Registers a JS backend, replacing any backend of the same name in this scope.
#[napi]
pub fn register_js_backend(
    scope: u32,
    name: String,
    allowed_sandboxes: Vec<String>,
    has_review: bool,
    #[napi(ts_arg_type = "'native-session' | 'transcript-replay' | 'unsupported'")] resume_strategy: String,
    invoke: Function<BackendCall, Promise<BackendOutcome>>,
) -> Result<()> {
    let resume_strategy = match resume_strategy.as_str() {
        "native-session" => ResumeStrategy::NativeSession,
        "transcript-replay" => ResumeStrategy::TranscriptReplay,
        _ => ResumeStrategy::Unsupported,
    };
    // Weak: a registered backend must not keep Node alive once the work is done.
    let invoke = invoke
        .build_threadsafe_function()
        .callee_handled::<false>()
        .weak::<true>()
        .build()?;
    let mut scopes = scopes();
    let scope = scopes.get_mut(&scope).ok_or_else(|| unknown_scope(scope))?;
    let backend = JsBackend {
        name,
        allowed_sandboxes,
        has_review,
        resume_strategy,
        invoke: Arc::new(invoke),
        abort: scope.abort.clone(),
    };
    scope.registry.register(Arc::new(backend));
    Ok(())
}

/// Drops the JS backends of this scope and restores the built-ins.
#[napi]
pub fn reset_registry(scope: u32) -> Result<()> {
    let mut scopes = scopes();
    let scope = scopes.get_mut(&scope).ok_or_else(|| unknown_scope(scope))?;
    scope.registry = Registry::new(builtins());
    Ok(())
}
