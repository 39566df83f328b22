//! `listSessions()`, `deleteSession()`, `pruneSessions()`: the store as the caller's environment
//! places it, off the JS thread.

use napi::bindgen_prelude::PromiseRaw;
use napi::Result;
use napi_derive::napi;

use super::{call_context, errors, NativeCaller};
use crate::deadline::{Deadline, Timeout};
use crate::sessions::{self, store::Store};

/// How long reading the store, or a change to it waiting for its lock, may take.
const STORE_TIMEOUT: Timeout = Timeout::whole_seconds(std::num::NonZeroU32::MIN.saturating_add(9));

#[napi(object)]
pub struct NativeSessionInfo {
    pub label: String,
    pub backend: String,
    pub repo_path: String,
    pub backend_session_id: Option<String>,
    /// Turns kept for a replay.
    pub turns: u32,
    pub created_at: String,
    pub last_used_at: String,
}

fn store(caller: NativeCaller) -> Result<(Store, Deadline)> {
    let (_, context) = call_context(caller)?;
    let store = Store::from_env(&context.env).map_err(|e| errors::relay_error(&e.into()))?;
    Ok((store, Deadline::starting_now(STORE_TIMEOUT, context.cancel)))
}

#[napi(ts_return_type = "Promise<NativeSessionInfo[]>")]
pub fn list_sessions(
    env: &napi::Env,
    caller: NativeCaller,
) -> Result<PromiseRaw<'_, Vec<NativeSessionInfo>>> {
    let (store, deadline) = store(caller)?;
    env.spawn_future(async move {
        let sessions = sessions::list(&store, &deadline)
            .await
            .map_err(|e| errors::relay_error(&e))?;
        Ok(sessions
            .into_iter()
            .map(|s| NativeSessionInfo {
                turns: u32::try_from(s.history.len()).unwrap_or(u32::MAX),
                label: s.id,
                backend: s.backend,
                repo_path: s.repo_path,
                backend_session_id: s.backend_session_id,
                created_at: s.created_at,
                last_used_at: s.last_used_at,
            })
            .collect())
    })
}

#[napi(ts_return_type = "Promise<boolean>")]
pub fn delete_session(
    env: &napi::Env,
    label: String,
    caller: NativeCaller,
) -> Result<PromiseRaw<'_, bool>> {
    let (store, deadline) = store(caller)?;
    env.spawn_future(async move {
        sessions::delete(&store, &label, &deadline)
            .await
            .map_err(|e| errors::relay_error(&e))
    })
}

#[napi(ts_return_type = "Promise<string[]>")]
pub fn prune_sessions(
    env: &napi::Env,
    older_than_days: f64,
    caller: NativeCaller,
) -> Result<PromiseRaw<'_, Vec<String>>> {
    let (store, deadline) = store(caller)?;
    env.spawn_future(async move {
        sessions::prune(&store, older_than_days, &deadline)
            .await
            .map_err(|e| errors::relay_error(&e))
    })
}
