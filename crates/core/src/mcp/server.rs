//! The tools: `relay` and `review` take the library's own option types (their JSON Schemas are
//! derived from them), `backends` says what `doctor` knows. A relay's failure is a tool result
//! with `isError` and the code, never a protocol error: the calling agent should read it.

use std::future::Future;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ProgressNotificationParam, ProgressToken,
    RequestMetaObject, ServerCapabilities, ServerConfig as ServerInfo,
};
use rmcp::{tool, tool_handler, tool_router, Peer, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::ServerConfig;
use crate::backend::CallLink;
use crate::backends::builtin;
use crate::doctor::{self, DoctorReport};
use crate::errors::RelayFailure;
use crate::limits::DEFAULT_BACKEND;
use crate::registry::Registry;
use crate::relay::{self, CallContext, RelayOptions, ReviewOptions};
use crate::stream::{chunk_channel, ChunkSink, ChunkSource};

/// What `relay` and `review` return as structured content (also on failure, with `isError`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ToolOutcome {
    /// The backend asked.
    pub backend: String,
    /// Whether it answered.
    pub ok: bool,
    /// Its answer, when it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Why it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
}

/// A failure as the library's `RelayError` carries it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ToolError {
    /// `ERR_PROMPT_REQUIRED`, `ERR_BACKEND_TIMEOUT`... (the library's codes).
    pub code: String,
    pub message: String,
    /// What a CLI backend said last, at most 2 KiB (the library's `backendOutput`).
    #[serde(rename = "backendOutput", skip_serializing_if = "Option::is_none")]
    pub backend_output: Option<String>,
}

#[derive(Clone)]
pub struct RelayServer {
    config: ServerConfig,
    /// Every call in flight, so the server can wait for them when it stops.
    tracker: TaskTracker,
    tool_router: ToolRouter<Self>,
}

impl RelayServer {
    pub fn new(config: ServerConfig, tracker: TaskTracker) -> Self {
        RelayServer {
            config,
            tracker,
            tool_router: Self::tool_router(),
        }
    }

    /// Runs one relay: streamed as progress notifications when the client asked for them
    /// (a progress token), stopped when the client cancels the request or the server stops;
    /// its result names `backend` (the default when absent).
    async fn run<F, W>(
        &self,
        backend: Option<&str>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        request: CancellationToken,
        work: W,
    ) -> CallToolResult
    where
        W: FnOnce(Registry, CallContext) -> F,
        F: Future<Output = Result<String, RelayFailure>> + Send,
    {
        let backend = backend.unwrap_or(DEFAULT_BACKEND).to_string();
        let cancel = self.config.cancel.child_token();
        let progress = meta.get_progress_token();
        let (chunks, source) = match progress {
            Some(_) => {
                let (sink, source) = chunk_channel();
                (sink, Some(source))
            }
            None => (ChunkSink::discard(), None),
        };
        let call = CallContext {
            env: self.config.env.clone(),
            cwd: self.config.cwd.clone(),
            cancel: cancel.clone(),
            warn: self.config.warn.clone(),
            link: CallLink::default(),
            chunks,
        };
        let relay = self
            .tracker
            .track_future(work(self.config.registry.clone(), call));
        let forward = forward_progress(peer, progress, source);
        // A cancelled request fires the relay's token; the relay is not dropped but left to stop
        // its backend and settle (as aborted), so this only ever ends through the first branch.
        let relay_cancel = async {
            request.cancelled().await;
            cancel.cancel();
            std::future::pending::<()>().await
        };
        let result = tokio::select! {
            (result, ()) = async { tokio::join!(relay, forward) } => result,
            () = relay_cancel => Err(RelayFailure::Aborted),
        };
        tool_result(backend, result)
    }
}

/// Sends each chunk of the answer as a progress notification: `progress` counts the bytes so
/// far, `message` is the chunk's text.
async fn forward_progress(
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    source: Option<ChunkSource>,
) {
    let (Some(token), Some(mut source)) = (token, source) else {
        return;
    };
    let mut sent = 0usize;
    while let Some(chunk) = source.next().await {
        sent += chunk.text.len();
        let note =
            ProgressNotificationParam::new(token.clone(), sent as f64).with_message(chunk.text);
        // A client that went away cannot be told; the relay goes on to its end or its cancel.
        let _ = peer.notify_progress(note).await;
    }
}

/// The tool result of a relay: the answer as text and as structured content, or `isError`
/// with the code in both.
fn tool_result(backend: String, result: Result<String, RelayFailure>) -> CallToolResult {
    let (text, outcome) = match result {
        Ok(answer) => (
            answer.clone(),
            ToolOutcome {
                backend,
                ok: true,
                answer: Some(answer),
                error: None,
            },
        ),
        Err(failure) => {
            let error = tool_error(&failure);
            (
                format!("Error [{}]: {}", error.code, error.message),
                ToolOutcome {
                    backend,
                    ok: false,
                    answer: None,
                    error: Some(error),
                },
            )
        }
    };
    let mut result = match outcome.ok {
        true => CallToolResult::success(vec![ContentBlock::text(text)]),
        false => CallToolResult::error(vec![ContentBlock::text(text)]),
    };
    result.structured_content = serde_json::to_value(&outcome).ok();
    result
}

fn tool_error(failure: &RelayFailure) -> ToolError {
    let (code, message) = match failure {
        RelayFailure::Relay(err) => (err.code().to_string(), err.to_string()),
        RelayFailure::Aborted => ("ABORT_ERR".into(), "The operation was aborted".into()),
        // Only a JS backend throws, and the server runs none.
        RelayFailure::Thrown(thrown) => ("ERR_BACKEND_FAILED".into(), thrown.message.clone()),
    };
    let backend_output = match failure {
        RelayFailure::Relay(err) => err.backend_output().map(String::from),
        _ => None,
    };
    ToolError {
        code,
        message,
        backend_output,
    }
}

#[tool_router]
impl RelayServer {
    /// Ask another coding agent (a backend) for a second opinion on work in a repository.
    #[tool(
        name = "relay",
        description = format!("Ask another coding agent ({}) for a second opinion on work in a local repository: the prompt goes with optional context (a file or text) and optionally the uncommitted git diff. Returns the other agent's answer. Long-running (minutes): progress notifications carry the answer as it is produced.", builtin::listed(builtin::BUILTINS, "or")),
        output_schema = schema_for_output::<ToolOutcome>()
    )]
    async fn relay(
        &self,
        Parameters(options): Parameters<RelayOptions>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        request: CancellationToken,
    ) -> CallToolResult {
        let backend = options.backend.clone();
        self.run(backend.as_deref(), meta, peer, request, |registry, call| {
            relay::relay(registry, options, call)
        })
        .await
    }

    /// Ask a backend to review the changes between a base and HEAD.
    #[tool(
        name = "review",
        description = format!("Ask another coding agent ({}) to review the changes between a base (default: main, master or HEAD~1) and HEAD of a local repository; codex uses its native review. Returns the review.", builtin::listed(builtin::BUILTINS, "or")),
        output_schema = schema_for_output::<ToolOutcome>()
    )]
    async fn review(
        &self,
        Parameters(options): Parameters<ReviewOptions>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        request: CancellationToken,
    ) -> CallToolResult {
        let backend = options.backend.clone();
        self.run(backend.as_deref(), meta, peer, request, |registry, call| {
            relay::review_relay(registry, options, call)
        })
        .await
    }

    /// Which backends are ready, and how to get the rest.
    #[tool(
        name = "backends",
        description = format!("Which backends the relay and review tools can reach, as `phone-a-friend doctor --json` says: {} when their CLI is installed, answers --version and is not signed out (with its version, sign-in state and version drift), {} when its server answers; with install hints for the rest.", builtin::listed(builtin::clis(), "and"), builtin::listed(builtin::servers(), "and"))
    )]
    async fn backends(&self, request: CancellationToken) -> Json<DoctorReport> {
        // Stopped with the server, or when the client cancels the call: the CLIs' checks are
        // processes, killed then.
        let cancel = self.config.cancel.child_token();
        let cwd = std::path::Path::new(&self.config.cwd);
        let report = doctor::report(&self.config.env, cwd, None, &cancel);
        tokio::pin!(report);
        Json(tokio::select! {
            report = &mut report => report,
            () = request.cancelled() => {
                cancel.cancel();
                report.await
            }
        })
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for RelayServer {
    fn get_info(&self) -> ServerInfo {
        ServerInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("phone-a-friend", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "Phone a friend: ask another coding agent ({}) for a second opinion with `relay`, or a review of a branch with `review`; `backends` says which are installed. repoPath defaults to the server's working directory.",
                builtin::listed(builtin::BUILTINS, "or")
            ))
    }
}
