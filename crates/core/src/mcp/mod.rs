//! The MCP server (docs/CONTRACT.md §16): `phone-a-friend mcp` serves `relay`, `review` and
//! `backends` over the Model Context Protocol, built on the official Rust SDK (`rmcp`). Free of
//! napi: the bindings only hand it the process's stdio, environment and working directory.

mod arguments;
mod context_files;
mod default_friend;
mod long_answers;
mod progress_notes;
mod server;
mod server_info_meta;
pub mod stdio;
mod task_form;
mod task_methods;
mod task_store;
mod task_transport;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rmcp::service::ServerInitializeError;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::ServiceExt;
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::env::Env;
use crate::registry::Registry;
use crate::relay::Warn;

pub use crate::doctor::{BackendReport, DoctorReport as BackendsReport};
pub use context_files::CONTEXT_DIRS_VAR;
pub use long_answers::{ANSWER_URI_PREFIX, INLINE_ANSWER_BYTES};
pub use server::{RelayServer, ToolError, ToolOutcome, Truncated};
pub use task_store::TASK_LIMITS;

/// Why the server could not serve, or stopped serving, its client.
#[derive(Debug, Error)]
pub enum McpError {
    /// Not called on a tokio runtime.
    #[error("{0}")]
    NoRuntime(#[from] tokio::runtime::TryCurrentError),
    #[error("cannot take stdin and stdout: {0}")]
    Stdio(#[source] std::io::Error),
    #[error("MCP initialization failed: {0}")]
    // Boxed: rmcp's error is large, and the others are small.
    Initialization(#[source] Box<ServerInitializeError>),
    #[error("MCP server stopped: {0}")]
    Stopped(#[from] tokio::task::JoinError),
}

/// What every call the server makes shares.
#[derive(Clone)]
pub struct ServerConfig {
    pub registry: Registry,
    /// The server's environment, snapshotted when it started: every relay's.
    pub env: Env,
    /// Where relative paths resolve, and the `repoPath` of a call that names none.
    pub cwd: String,
    pub warn: Arc<dyn Warn>,
    /// Cancels every call in flight (the host is going away).
    pub cancel: CancellationToken,
}

/// Serves one client on `reader`/`writer` until it closes the connection (or `config.cancel`
/// fires), then stops every relay still running and waits for each to settle, so no backend
/// process outlives the server.
pub async fn serve<R, W>(reader: R, writer: W, config: ServerConfig) -> Result<(), McpError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let tracker = TaskTracker::new();
    let host = config.cancel.clone();
    // Every call's token: the host going away, or the input ending, stops them.
    let calls = host.child_token();
    let server = RelayServer::new(
        ServerConfig {
            cancel: calls.clone(),
            ..config
        },
        tracker.clone(),
    );
    // rmcp lets handlers run on for up to 5 s after the input ends, for their responses; with
    // the client gone nobody reads them, so the relays stop at once. (rmcp itself stops on the
    // end of its input, which must reach it as such: cancelled first, a client gone before
    // `initialize` would look like a cancellation.)
    let reader = EofCancels {
        inner: reader,
        cancel: calls.clone(),
    };
    // The client's lines reach rmcp through the task rerouting (see task_transport).
    // and the results of MCP 2026-07-28 requests name the server (see server_info_meta).
    let stamp =
        server_info_meta::ServerInfoStamp::new(&rmcp::ServerHandler::get_info(&server).server_info);
    let (rerouted, to_rmcp) = tokio::io::simplex(REROUTE_BYTES);
    tracker.spawn(task_transport::reroute(
        reader,
        to_rmcp,
        stamp.clone(),
        calls.clone(),
    ));
    let transport = task_transport::DeclareTasks::new(
        AsyncRwTransport::new_server(rerouted, writer),
        stamp.clone(),
    );
    let running = match server.serve_with_ct(transport, host.child_token()).await {
        Ok(running) => running,
        // A client of MCP 2026-07-28 that only discovered the server and left chose no
        // lifecycle, which rmcp reports as a failed initialization: it was served.
        Err(ServerInitializeError::ConnectionClosed(_)) if stamp.answered_the_revision() => {
            calls.cancel();
            return Ok(());
        }
        Err(error) => {
            calls.cancel();
            return Err(McpError::Initialization(Box::new(error)));
        }
    };
    let quit = running.waiting().await;
    calls.cancel();
    tracker.close();
    tracker.wait().await;
    quit.map(|_| ()).map_err(McpError::from)
}

/// Bytes in flight from the rerouting to rmcp.
const REROUTE_BYTES: usize = 64 * 1024;

/// Reads `inner`; its end of file cancels `cancel`.
struct EofCancels<R> {
    inner: R,
    cancel: CancellationToken,
}

impl<R: AsyncRead + Unpin> AsyncRead for EofCancels<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            if buf.filled().len() == before && buf.remaining() > 0 {
                self.cancel.cancel();
            }
        }
        polled
    }
}

/// How long a stopping server waits for its last messages to reach a client that does not read.
const FLUSH_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// [`serve`] on the process's own stdin and stdout (see [`stdio`]). Must run on a tokio runtime.
pub async fn serve_process_stdio(config: ServerConfig) -> Result<(), McpError> {
    let handle = tokio::runtime::Handle::try_current()?;
    let stdio = stdio::take_process_stdio(&handle).map_err(McpError::Stdio)?;
    let served = serve(stdio.reader, stdio.writer, config).await;
    let _ = tokio::time::timeout(FLUSH_WAIT, stdio.flushed).await;
    served
}

#[cfg(test)]
mod tests;
