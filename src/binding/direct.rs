//! `relay()` to a JS backend without leaving the JS thread: when preparing the call waits on
//! nothing (see [`relay::prepare_relay_at_once`]), the checks and the envelope are made in one
//! synchronous call, the wrapper calls the backend's trampoline itself, and a failure is turned
//! into the relay's error by the same functions as on the asynchronous path. Each thread hop
//! the other path takes costs tens of microseconds; a JS backend answers in a few.

use napi::Result;
use napi_derive::napi;
use tokio_util::sync::CancellationToken;

use super::js_backend::{self, BackendCall, BackendOutcome};
use super::{errors, scope, NativeCaller, NativeRelayOptions};
use crate::env::Env;
use crate::limits::DEPTH_ENV_VAR;
use crate::relay::{self, Prepared, RelayOptions};

/// A relay the wrapper runs on the JS thread: the backend's name and its trampoline's call.
#[napi(object)]
pub struct DirectRelay {
    pub backend: String,
    pub call: BackendCall,
}

/// Checks and prepares a `relay()` on the JS thread. `null` when it cannot run there (its
/// preparation waits on a file, git or the session store, or the backend is not a JS one): the
/// wrapper then makes the asynchronous call, which checks again.
#[napi]
pub fn prepare_direct_relay(
    options: NativeRelayOptions,
    caller: NativeCaller,
) -> Result<Option<DirectRelay>> {
    let options = RelayOptions::from(options);
    // Before the environment is copied: a call that cannot run here pays nothing for trying.
    if !relay::waits_on_nothing(&options) {
        return Ok(None);
    }
    let (registry, _, _) = scope::snapshot(caller.scope)?;
    // The environment is copied once, as the entries the backend's `env` is made from; the
    // preparation reads only the depth from it (it runs no git and opens no store).
    let entries = caller.env.unwrap_or_else(process_environment);
    let mut env: Env = crate::depth::depth_entry(&entries)
        .map(|depth| (DEPTH_ENV_VAR.to_string(), depth.to_string()))
        .into_iter()
        .collect();
    if let Some(depth) = caller.depth {
        crate::depth::raise_to(&mut env, u64::from(depth));
    }
    let prepared =
        relay::prepare_relay_at_once(&registry, options, &env, &caller.cwd, caller.call_tag);
    match prepared {
        Some(Ok(Prepared {
            backend, request, ..
        })) if backend.runs_on_caller_thread() => {
            let name = backend.name().to_string();
            // The child's environment is the caller's with the depth the preparation raised.
            let child_depth = request.env.get(DEPTH_ENV_VAR).cloned().unwrap_or_default();
            let call = js_backend::run_call(
                &name,
                backend.resume_strategy(),
                request,
                crate::depth::with_depth_entry(&entries, &child_depth),
                js_backend::next_invocation(),
                false,
            );
            Ok(Some(DirectRelay {
                backend: name,
                call,
            }))
        }
        Some(Err(failure)) => Err(errors::to_napi_error(&failure)),
        _ => Ok(None),
    }
}

/// An invocation's outcome as the relay's answer or error, made by the same functions as on the
/// asynchronous path (the wrapper takes an answer as it is, without this call).
#[napi]
pub fn settle_direct(backend: String, outcome: BackendOutcome) -> Result<String> {
    let result = js_backend::outcome_result(&backend, "run", outcome);
    relay::settle(&backend, result, &CancellationToken::new())
        .map_err(|failure| errors::to_napi_error(&failure))
}

/// This process's environment as `key=value` entries each ended by NUL (read on the JS thread,
/// where Node writes it); what JS cannot see (a name that is not UTF-8) is left out, and a value
/// that is not UTF-8 is replaced, as Node decodes it.
fn process_environment() -> String {
    let vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(key, value)| {
            let value = value
                .into_string()
                .unwrap_or_else(|value| value.to_string_lossy().into_owned());
            Some((key.into_string().ok()?, value))
        })
        .collect();
    crate::env::encode(vars.iter().map(|(key, value)| (key, value)))
}
