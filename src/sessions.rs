//! `listSessions()`, `deleteSession()`, `pruneSessions()`: the store as the caller's environment
//! places it, off the JS thread.

use napi::bindgen_prelude::{Either, PromiseRaw};
use napi::Result;
use napi_derive::napi;

use crate::failure::{outcome, NativeFailure};
use crate::scope::RelayScope;
use crate::{caller_env, NativeCaller};
use relay_core::deadline::{Deadline, Timeout};
use relay_core::sessions::{self, store::Store};

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
    /// Whether its next turn continues the conversation (a backend session id, or turns).
    pub resumable: bool,
    pub created_at: String,
    pub last_used_at: String,
}

/// The store the caller's environment names, and the deadline of one operation on it.
fn store(
    scope: &RelayScope,
    caller: NativeCaller,
) -> std::result::Result<(Store, Deadline), relay_core::errors::RelayError> {
    let env = caller_env(caller.env.as_deref(), caller.depth);
    let store = Store::from_env(&env)?;
    Ok((
        store,
        Deadline::starting_now(STORE_TIMEOUT, scope.child_token()),
    ))
}

/// Runs `work` on the store on the runtime; a failure to find the store resolves at once.
fn with_store<'env, T, Work>(
    env: &'env napi::Env,
    scope: &RelayScope,
    caller: NativeCaller,
    work: impl FnOnce(Store, Deadline) -> Work,
) -> Result<PromiseRaw<'env, Either<T, NativeFailure>>>
where
    T: napi::bindgen_prelude::ToNapiValue + Send + 'static,
    Work: std::future::Future<Output = std::result::Result<T, relay_core::errors::RelayError>>
        + Send
        + 'static,
{
    let work = store(scope, caller).map(|(store, deadline)| work(store, deadline));
    env.spawn_future(async move {
        Ok(match work {
            Ok(work) => outcome(work.await),
            Err(failure) => Either::B(NativeFailure::from(&failure)),
        })
    })
}

#[napi(ts_return_type = "Promise<NativeSessionInfo[] | NativeFailure>")]
pub fn list_sessions<'env>(
    env: &'env napi::Env,
    scope: &RelayScope,
    caller: NativeCaller,
) -> Result<PromiseRaw<'env, Either<Vec<NativeSessionInfo>, NativeFailure>>> {
    with_store(env, scope, caller, |store, deadline| async move {
        let sessions = sessions::list(&store, &deadline).await?;
        Ok(sessions
            .into_iter()
            .map(|s| NativeSessionInfo {
                resumable: s.continuable(),
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

#[napi(ts_return_type = "Promise<boolean | NativeFailure>")]
pub fn delete_session<'env>(
    env: &'env napi::Env,
    scope: &RelayScope,
    label: String,
    caller: NativeCaller,
) -> Result<PromiseRaw<'env, Either<bool, NativeFailure>>> {
    with_store(env, scope, caller, |store, deadline| async move {
        sessions::delete(&store, &label, &deadline).await
    })
}

#[napi(ts_return_type = "Promise<string[] | NativeFailure>")]
pub fn prune_sessions<'env>(
    env: &'env napi::Env,
    scope: &RelayScope,
    older_than_days: f64,
    caller: NativeCaller,
) -> Result<PromiseRaw<'env, Either<Vec<String>, NativeFailure>>> {
    with_store(env, scope, caller, |store, deadline| async move {
        sessions::prune(&store, older_than_days, &deadline).await
    })
}
