//! The tools: `relay` and `review` take the library's own option types (their JSON Schemas are
//! derived from them), `backends` says what `doctor` knows. A relay's failure is a tool result
//! with `isError` and the code, never a protocol error: the calling agent should read it.

use std::sync::Arc;
use std::time::Instant;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CreateTaskResult,
    CustomRequest, CustomResult, ErrorData, Extensions, Implementation, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, RequestMetaObject, ResourceContents,
    ServerCapabilities, ServerConfig as ServerInfo, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, Peer, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::arguments::{RelayArguments, ReviewArguments};
use super::context_files::ContextFiles;
use super::default_friend::default_friend;
use super::long_answers::{self, LongAnswers, ANSWER_LIMITS, INLINE_ANSWER_BYTES};
use super::progress_notes::{forward_progress, Listeners, STATUS_PACE};
use super::task_form::{extension_task, TaskForm, TaskLink};
use super::task_store::{TaskStore, TASK_LIMITS};
use super::task_transport::TASK_TOOLS;
use super::ServerConfig;
use crate::activity::{Activity, Watcher};
use crate::backend::CallLink;
use crate::backends::builtin;
use crate::doctor::{self, DoctorReport};
use crate::errors::{shown, RelayError, RelayFailure};
use crate::failure_reason;
use crate::fit::Coverage;
use crate::hint::hint_of;
use crate::limits::DEFAULT_IDLE_TIMEOUT_SECONDS;
use crate::relay::{self, Answered, Attempt, CallContext, Operation, RelayRequest};
use crate::stream::{chunk_channel, ChunkSink, ChunkSource};
use crate::usage::Usage;

/// What rmcp hands a tool call besides its arguments.
struct ToolCall {
    meta: RequestMetaObject,
    peer: Peer<RoleServer>,
    /// Fired when the client cancels the request.
    request: CancellationToken,
    extensions: Extensions,
}

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
    /// Set when `answer` is only the start of a longer answer (docs/MCP.md, "Long answers").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncated>,
    /// With `fit`, how a diff too large to send whole was fitted, every changed file in git's
    /// order (docs/CONTRACT.md §6a); absent when it went whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Vec<Coverage>>,
    /// The backends asked before the one that answered (`fallback`), with why each could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<Vec<Attempt>>,
    /// The model that answered, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What the answer cost, as far as the backend said (docs/CONTRACT.md §8b).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl ToolOutcome {
    /// The outcome of a backend that did not answer.
    fn failed(backend: String, error: ToolError) -> ToolOutcome {
        ToolOutcome {
            backend,
            ok: false,
            answer: None,
            error: Some(error),
            truncated: None,
            coverage: None,
            attempts: None,
            model: None,
            usage: None,
        }
    }
}

/// Where the whole of a cut answer is.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Truncated {
    /// The whole answer's length, in UTF-8 bytes.
    #[schemars(schema_with = "crate::schema_numbers::byte_count")]
    pub answer_bytes: usize,
    /// A resource holding the whole answer, for `resources/read` (kept an hour at most).
    pub resource: String,
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
    /// Why the backend failed (the library's `reason`: `auth`, `quota`, `rate-limit`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Seconds the backend said to wait before asking again (the library's
    /// `retryAfterSeconds`).
    // `default`: schemars then lists it as optional, as it does an `Option` of its own schema.
    #[serde(
        rename = "retryAfterSeconds",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "crate::schema_numbers::optional_seconds")]
    pub retry_after_seconds: Option<f64>,
    /// What the backend had answered when it was stopped (the library's `partialAnswer`).
    #[serde(rename = "partialAnswer", skip_serializing_if = "Option::is_none")]
    pub partial_answer: Option<String>,
    /// What to do about it: the name meant, how to get under a limit (the library's `hint`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

#[derive(Clone)]
pub struct RelayServer {
    pub(super) config: ServerConfig,
    /// Every call in flight, so the server can wait for them when it stops.
    pub(super) tracker: TaskTracker,
    /// The connection's tasks (docs/MCP.md, "Tasks").
    pub(super) tasks: Arc<TaskStore>,
    /// The whole of the answers cut in their results.
    answers: Arc<LongAnswers>,
    /// Which files an agent may name as context.
    context_files: Arc<ContextFiles>,
    tool_router: ToolRouter<Self>,
}

impl RelayServer {
    pub fn new(config: ServerConfig, tracker: TaskTracker) -> Self {
        RelayServer {
            context_files: Arc::new(ContextFiles::from_env(&config.env)),
            config,
            tracker,
            tasks: Arc::new(TaskStore::new(TASK_LIMITS)),
            answers: Arc::new(LongAnswers::new(ANSWER_LIMITS)),
            tool_router: Self::tool_router(),
        }
    }

    /// Runs one relay or review: streamed as progress notifications when the client asked for
    /// them (a progress token), and counted in its task's status when it runs as one; stopped
    /// when the client cancels the request (or the task) or the server stops; its result names
    /// the backend (the default when none is named). A relay's context file must be one the
    /// server may read (context_files.rs).
    async fn run(
        &self,
        operation: Operation,
        mut options: RelayRequest,
        ToolCall {
            meta,
            peer,
            request,
            extensions,
        }: ToolCall,
    ) -> CallToolResult {
        // The calling agent is named by the request (MCP 2026-07-28) or at `initialize`.
        let client = meta
            .client_info()
            .or_else(|| peer.peer_info().map(|info| info.client_info.clone()));
        let backend = options
            .backend
            .get_or_insert_with(|| {
                default_friend(client.as_ref().map(|c| c.name.as_str()), &self.config.env)
            })
            .clone();
        let context_file = options.context_file.as_deref().map(|file| {
            self.context_files
                .check(file, &options.repo_path, &self.config.cwd)
        });
        // A diff over its limit is fitted unless the agent says `fit: false`, and a stalled
        // backend is stopped after the CLI's idle time-out unless the agent sets one (docs/MCP.md).
        options.fit.get_or_insert(true);
        options
            .idle_timeout_seconds
            .get_or_insert(f64::from(DEFAULT_IDLE_TIMEOUT_SECONDS));
        let cancel = self.config.cancel.child_token();
        let progress = meta.get_progress_token();
        let task = extensions.get::<TaskLink>().cloned();
        let heard = progress.is_some() || task.is_some();
        let (chunks, source, activity, watcher) = outlets(heard);
        let call = CallContext {
            env: self.config.env.clone(),
            cwd: self.config.cwd.clone(),
            cancel: cancel.clone(),
            warn: self.config.warn.clone(),
            link: CallLink::default(),
            chunks,
            activity,
        };
        let registry = self.config.registry.clone();
        let work = async move {
            match operation {
                Operation::Review => relay::review_relay(registry, options, call).await,
                Operation::Relay | Operation::RelayAll => {
                    context_file.transpose().map_err(RelayFailure::from)?;
                    relay::relay(registry, options, call).await
                }
            }
        };
        let relay = self.tracker.track_future(work);
        let listeners = Listeners {
            peer,
            token: progress,
            task: task.map(|task| (self.tasks.clone(), task.id)),
        };
        let forward = forward_progress(listeners, source, watcher);
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
        self.tool_result(backend, result)
    }

    /// Calls a tool now, whatever the client declared.
    pub(super) async fn call_tool_now(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let call = ToolCallContext::new(self, request, context);
        self.tool_router.call(call).await
    }

    /// The tool result of a relay: the answer as text and as structured content (with the
    /// backend that answered and, for a fitted diff, its coverage), or `isError` with the code
    /// in both. An answer past [`INLINE_ANSWER_BYTES`] is cut, and says so and where the whole
    /// is (docs/MCP.md, "Long answers").
    fn tool_result(&self, asked: String, result: Result<Answered, RelayFailure>) -> CallToolResult {
        let (text, outcome) = match result {
            Ok(Answered {
                answer,
                backend,
                coverage,
                attempts,
                model,
                usage,
            }) => {
                let answered = |answer, truncated| ToolOutcome {
                    backend,
                    ok: true,
                    answer: Some(answer),
                    error: None,
                    truncated,
                    coverage,
                    attempts: (!attempts.is_empty()).then_some(attempts),
                    model,
                    usage,
                };
                if answer.len() <= INLINE_ANSWER_BYTES {
                    (answer.clone(), answered(answer, None))
                } else {
                    let resource = self.answers.keep(&answer, Instant::now());
                    let start = long_answers::cut(&answer, INLINE_ANSWER_BYTES).to_string();
                    let note = format!(
                        "\n\n[phone-a-friend: the answer is {} bytes; the first {} are above. The whole answer is the resource {resource}: read it with resources/read (kept {} minutes).]",
                        answer.len(),
                        start.len(),
                        self.answers.limits().ttl.as_secs() / 60,
                    );
                    let truncated = Truncated {
                        answer_bytes: answer.len(),
                        resource,
                    };
                    (format!("{start}{note}"), answered(start, Some(truncated)))
                }
            }
            Err(failure) => {
                let error = tool_error(&failure);
                let mut text = format!("Error [{}]: {}", error.code, error.message);
                if let Some(hint) = &error.hint {
                    text.push_str(&format!("\nHint: {hint}"));
                }
                (text, ToolOutcome::failed(asked, error))
            }
        };
        let mut result = match outcome.ok {
            true => CallToolResult::success(vec![ContentBlock::text(text)]),
            false => CallToolResult::error(vec![ContentBlock::text(text)]),
        };
        result.structured_content = serde_json::to_value(&outcome).ok();
        result
    }
}

/// Where a call's text and status go: to a client that hears them (a progress token, a task),
/// else nowhere.
fn outlets(heard: bool) -> (ChunkSink, Option<ChunkSource>, Activity, Option<Watcher>) {
    if !heard {
        return (ChunkSink::discard(), None, Activity::unwatched(), None);
    }
    let (sink, source) = chunk_channel();
    let (activity, watcher) = Activity::watched(STATUS_PACE);
    (sink, Some(source), activity, Some(watcher))
}

fn tool_error(failure: &RelayFailure) -> ToolError {
    let (code, message) = match failure {
        RelayFailure::Relay(err) => (err.code().to_string(), err.shown_message()),
        RelayFailure::Aborted => ("ABORT_ERR".into(), "The operation was aborted".into()),
        // Only a JS backend throws, and the server runs none.
        RelayFailure::Thrown(thrown) => ("ERR_BACKEND_FAILED".into(), shown(&thrown.message)),
    };
    let relay_error = match failure {
        RelayFailure::Relay(err) => Some(err),
        _ => None,
    };
    ToolError {
        code,
        message,
        backend_output: relay_error.and_then(RelayError::shown_backend_output),
        reason: relay_error
            .and_then(failure_reason::reason_of_error)
            .map(|reason| reason.as_str().to_string()),
        retry_after_seconds: relay_error.and_then(failure_reason::retry_after_of_error),
        partial_answer: relay_error
            .and_then(RelayError::partial_answer)
            .map(String::from),
        hint: relay_error.and_then(hint_of),
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
        Parameters(RelayArguments(options)): Parameters<RelayArguments>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        request: CancellationToken,
        extensions: Extensions,
    ) -> CallToolResult {
        let call = ToolCall {
            meta,
            peer,
            request,
            extensions,
        };
        self.run(Operation::Relay, options, call).await
    }

    /// Ask a backend to review the changes between a base and HEAD.
    #[tool(
        name = "review",
        description = format!("Ask another coding agent ({}) to review the changes between a base (default: main, master or HEAD~1) and HEAD of a local repository; codex uses its native review. Returns the review.", builtin::listed(builtin::BUILTINS, "or")),
        output_schema = schema_for_output::<ToolOutcome>()
    )]
    async fn review(
        &self,
        Parameters(ReviewArguments(options)): Parameters<ReviewArguments>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
        request: CancellationToken,
        extensions: Extensions,
    ) -> CallToolResult {
        let call = ToolCall {
            meta,
            peer,
            request,
            extensions,
        };
        self.run(Operation::Review, options, call).await
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
        // The extension form of tasks (SEP-2663) is declared here; the 2025-11-25 form by the
        // transport (see task_transport), rmcp having no field for it.
        ServerInfo::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_tasks()
                .build(),
        )
            .with_server_info(Implementation::new("phone-a-friend", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "Phone a friend: ask another coding agent ({}) for a second opinion with `relay`, or a review of a branch with `review`; `backends` says which are installed. repoPath defaults to the server's working directory.",
                builtin::listed(builtin::BUILTINS, "or")
            ))
    }

    /// A client that declared the tasks extension (SEP-2663) gets a task for `relay` and
    /// `review`; the rest are called at once.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if TaskForm::of(&context) == TaskForm::Extension && TASK_TOOLS.contains(&&*request.name) {
            let task = self.start_task(request, None, context, TaskForm::Extension)?;
            return Ok(CallToolResponse::Task(CreateTaskResult::new(
                extension_task(&task),
            )));
        }
        self.call_tool_now(request, context).await
    }

    /// The extension's `tasks/update` delivers answers to a task's requests for input; this
    /// server's tasks ask for none, so there is nothing to deliver.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        match self.tasks.get(&request.task_id, Instant::now()) {
            Some(_) => Ok(()),
            None => Err(ErrorData::invalid_params(
                format!(
                    "no task {} (unknown, or dropped after its ttl)",
                    request.task_id
                ),
                None,
            )),
        }
    }

    /// The task requests, renamed by the transport (see task_transport).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        self.on_task_request(request, context).await
    }

    /// The whole of a cut answer (docs/MCP.md, "Long answers").
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match self.answers.read(&request.uri, Instant::now()) {
            Some(answer) => Ok(ReadResourceResult::new(vec![ResourceContents::text(
                answer.to_string(),
                request.uri,
            )])
            .into()),
            None => Err(ErrorData::resource_not_found(
                format!(
                    "no resource {}: answers are kept {} minutes, {} at most",
                    request.uri,
                    self.answers.limits().ttl.as_secs() / 60,
                    self.answers.limits().kept
                ),
                None,
            )),
        }
    }
}
