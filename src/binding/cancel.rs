//! Cancellation tokens the JS wrapper opens for an `AbortSignal`. They are registered on the JS
//! thread before the call starts, so an abort can never race the registration.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};

use napi_derive::napi;
use tokio_util::sync::CancellationToken;

static NEXT_ID: AtomicU32 = AtomicU32::new(1);
static TOKENS: LazyLock<Mutex<HashMap<u32, CancellationToken>>> = LazyLock::new(Mutex::default);

fn tokens() -> MutexGuard<'static, HashMap<u32, CancellationToken>> {
    TOKENS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The token of `id`, or a fresh one that never fires (no signal was given).
pub fn token(id: Option<u32>) -> CancellationToken {
    id.and_then(|id| tokens().get(&id).cloned())
        .unwrap_or_default()
}

#[napi]
pub fn open_cancel_token() -> u32 {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    tokens().insert(id, CancellationToken::new());
    id
}

#[napi]
pub fn cancel(id: u32) {
    if let Some(token) = tokens().get(&id) {
        token.cancel();
    }
}

#[napi]
pub fn close_cancel_token(id: u32) {
    tokens().remove(&id);
}
