//! Cancellation tokens the JS wrapper opens for an `AbortSignal`. They are registered on the JS
//! thread before the call starts, so an abort can never race the registration. Each is a child of
//! its scope's token, so the scope's teardown cancels it too.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};

use napi_derive::napi;
use tokio_util::sync::CancellationToken;

struct Entry {
    scope: u32,
    token: CancellationToken,
}

static NEXT_ID: AtomicU32 = AtomicU32::new(1);
static TOKENS: LazyLock<Mutex<HashMap<u32, Entry>>> = LazyLock::new(Mutex::default);

fn tokens() -> MutexGuard<'static, HashMap<u32, Entry>> {
    TOKENS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The token of `id`, if it is open.
pub fn token(id: Option<u32>) -> Option<CancellationToken> {
    id.and_then(|id| tokens().get(&id).map(|entry| entry.token.clone()))
}

/// Drops the tokens of a scope whose environment is gone (its wrapper cannot close them).
pub fn close_scope_tokens(scope: u32) {
    tokens().retain(|_, entry| entry.scope != scope);
}

/// Registers `token`, a call token of `scope`, and returns its id.
pub fn register(scope: u32, token: CancellationToken) -> u32 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    tokens().insert(id, Entry { scope, token });
    id
}

#[napi]
pub fn cancel(id: u32) {
    if let Some(entry) = tokens().get(&id) {
        entry.token.cancel();
    }
}

#[napi]
pub fn close_cancel_token(id: u32) {
    tokens().remove(&id);
}
