//! The HTTP of the Ollama backend: one client per tokio runtime, kept for its connections, and
//! a body read up to a limit.

use std::sync::{Mutex, PoisonError};

/// Clients kept: one per tokio runtime that ran an Ollama request (see [`client`]).
const MAX_CLIENTS: usize = 8;

/// The HTTP client of the current tokio runtime, built on first use.
///
/// One client keeps its idle connections (HTTP/1.1 keep-alive), so sequential relays to the same
/// server reuse one TCP connection instead of opening one each. A connection belongs to the
/// runtime whose task drives it: a pooled connection handed to a request on another runtime
/// hangs if its runtime is alive but idle, or fails ("dispatch task is gone") if that runtime
/// was dropped. The addon runs every call on one runtime, so this is one client for the whole
/// process; Rust tests (a runtime each) get a client each and never share a connection. A
/// runtime's client is kept while fewer than [`MAX_CLIENTS`] runtimes have one; past that the
/// oldest is forgotten (its runtime, if still alive, just builds a new one).
pub(super) fn client() -> Result<reqwest::Client, reqwest::Error> {
    static CLIENTS: Mutex<Vec<(tokio::runtime::Id, reqwest::Client)>> = Mutex::new(Vec::new());
    let runtime = tokio::runtime::Handle::current().id();
    let clients = || CLIENTS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, client)) = clients().iter().find(|(id, _)| *id == runtime) {
        return Ok(client.clone());
    }
    let client = reqwest::Client::builder()
        // Node's fetch ignores HTTP(S)_PROXY, and the process environment is not the relay's.
        .no_proxy()
        .build()?;
    let mut clients = clients();
    if let Some((_, built_meanwhile)) = clients.iter().find(|(id, _)| *id == runtime) {
        return Ok(built_meanwhile.clone());
    }
    if clients.len() >= MAX_CLIENTS {
        clients.remove(0);
    }
    clients.push((runtime, client.clone()));
    Ok(client)
}

/// At most `max` bytes of the body; the rest is never read.
pub(super) async fn read_head(
    response: &mut reqwest::Response,
    max: usize,
) -> Result<Vec<u8>, reqwest::Error> {
    let mut head = Vec::new();
    while head.len() < max {
        let Some(chunk) = response.chunk().await? else {
            break;
        };
        let take = chunk.len().min(max - head.len());
        head.extend_from_slice(&chunk[..take]);
    }
    Ok(head)
}
