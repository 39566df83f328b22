//! The task requests (docs/MCP.md, "Tasks"), as [`super::task_transport`] hands them to the
//! server: a `tools/call` run as a task, answered at once with the task while the tool runs on
//! (as a plain call would, progress included) under the task's cancellation token; `tasks/get`,
//! `tasks/result` (waits for the end), `tasks/list` and `tasks/cancel` read the connection's
//! [`super::task_store::TaskStore`]. Both forms of tasks ([`TaskForm`]) share the store; they
//! differ in the shapes of the answers and notes only.

use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomNotification, CustomRequest, CustomResult,
    DetailedTask, ErrorCode, ErrorData, GetTaskResult, ServerNotification, TaskAckResult,
    TaskPayload,
};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use serde_json::{json, Value};

use super::server::RelayServer;
use super::task_form::{extension_task, TaskForm, TaskLink};
use super::task_store::{CancelRefused, TaskOutcome, TaskSnapshot, TaskStatus};
use super::task_transport::{TASK_METHOD_PREFIX, TASK_TOOLS};

/// The `_meta` key a task's result names its task under.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
/// The JSON-RPC code of a task refused because too many run (implementation-defined range).
pub const TASKS_BUSY: ErrorCode = ErrorCode(-32000);

impl RelayServer {
    /// A renamed task request (see [`super::task_transport`]).
    pub(super) async fn on_task_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let params = request.params.unwrap_or(Value::Null);
        let task_id = || {
            params
                .get("taskId")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| ErrorData::invalid_params("taskId (a string) is required", None))
        };
        let now = Instant::now();
        let form = TaskForm::of_task_request(&context)?;
        match request.method.strip_prefix(TASK_METHOD_PREFIX) {
            Some("tools/call") => self.call_tool_as_task(params, context),
            Some("tasks/get") => {
                let id = task_id()?;
                let task = self.tasks.get(&id, now).ok_or_else(|| unknown(&id))?;
                Ok(CustomResult(match form {
                    TaskForm::Specification => task.to_json(),
                    TaskForm::Extension => {
                        let outcome = self.tasks.ended(&id, now).and_then(|(_, outcome)| outcome);
                        extension_json(&GetTaskResult::new(detailed(&task, outcome)))
                    }
                }))
            }
            Some("tasks/list") => {
                let tasks: Vec<Value> = self
                    .tasks
                    .list(now)
                    .iter()
                    .map(TaskSnapshot::to_json)
                    .collect();
                Ok(CustomResult(json!({ "tasks": tasks })))
            }
            Some("tasks/cancel") => {
                let id = task_id()?;
                let task = match self.tasks.cancel(&id, now) {
                    Ok(task) => task,
                    // Cancelling is cooperative in the extension: a task already ended is
                    // acknowledged; the 2025-11-25 form refuses it (-32602), as that spec says.
                    Err(CancelRefused::Ended { .. }) if form == TaskForm::Extension => {
                        return Ok(CustomResult(extension_json(&TaskAckResult::new())));
                    }
                    Err(refused) => {
                        return Err(ErrorData::invalid_params(refused.to_string(), None))
                    }
                };
                notify_status(&context.peer, &task, form).await;
                Ok(CustomResult(match form {
                    TaskForm::Specification => task.to_json(),
                    TaskForm::Extension => extension_json(&TaskAckResult::new()),
                }))
            }
            Some("tasks/result") => self.task_result(&task_id()?, context).await,
            _ => Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {}", request.method),
                None,
            )),
        }
    }

    /// A `tools/call` with `task` (2025-11-25): starts the tool as a task; answers with it.
    fn call_tool_as_task(
        &self,
        params: Value,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let ttl = params
            .get("task")
            .and_then(|task| task.get("ttl"))
            .and_then(Value::as_u64);
        let call: CallToolRequestParams = serde_json::from_value(params)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        if !TASK_TOOLS.contains(&&*call.name) {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "the tool {} does not run as a task (its execution.taskSupport is not declared): call it without task",
                    call.name
                ),
                None,
            ));
        }
        let task = self.start_task(call, ttl, context, TaskForm::Specification)?;
        Ok(CustomResult(json!({ "task": task.to_json() })))
    }

    /// Starts the tool in the background as a task, run as a plain call would be but under the
    /// task's token; its end is recorded in the store and told to the client in `form`.
    pub(super) fn start_task(
        &self,
        call: CallToolRequestParams,
        ttl: Option<u64>,
        context: RequestContext<RoleServer>,
        form: TaskForm,
    ) -> Result<TaskSnapshot, ErrorData> {
        let (task, cancel) = self
            .tasks
            .create(ttl, &self.config.cancel, Instant::now())
            .map_err(|refused| {
                ErrorData::new(
                    TASKS_BUSY,
                    refused.to_string(),
                    Some(json!({ "limit": self.tasks.limits().running })),
                )
            })?;
        // The tool's own request context, as a plain call's, but cancelled by the task.
        let mut tool_context = RequestContext::new(context.id.clone(), context.peer.clone());
        tool_context.ct = cancel;
        // rmcp moves a custom request's `_meta` (the progress token) to its context.
        tool_context.meta = call.meta.clone().unwrap_or_else(|| context.meta.clone());
        tool_context.extensions.insert(TaskLink {
            id: task.id.clone(),
        });
        let server = self.clone();
        let id = task.id.clone();
        let peer = context.peer;
        self.tracker.spawn(async move {
            let (outcome, message) = match server.call_tool_now(call, tool_context).await {
                Ok(CallToolResponse::Complete(result)) => {
                    let message = result
                        .structured_content
                        .as_ref()
                        .and_then(|outcome| outcome.pointer("/error/code"))
                        .and_then(Value::as_str)
                        .map(|code| format!("the tool answered with an error: {code}"));
                    let value = serde_json::to_value(&result).unwrap_or(Value::Null);
                    (TaskOutcome::Completed(value), message)
                }
                Ok(_) => (
                    TaskOutcome::Failed(json!({ "code": ErrorCode::INTERNAL_ERROR.0, "message": "the tool asked for input, which a task of this server cannot give" })),
                    None,
                ),
                Err(error) => {
                    let message = Some(error.message.to_string());
                    let value = serde_json::to_value(&error).unwrap_or(Value::Null);
                    (TaskOutcome::Failed(value), message)
                }
            };
            let ended = server.tasks.finish(&id, outcome, message, Instant::now());
            if let Some(task) = ended.filter(|task| task.status != TaskStatus::Cancelled) {
                notify_status(&peer, &task, form).await;
            }
        });
        Ok(task)
    }

    /// Waits for the task to end; answers with its result, as the request would have been.
    async fn task_result(
        &self,
        id: &str,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let mut done = self
            .tasks
            .watch(id, Instant::now())
            .ok_or_else(|| unknown(id))?;
        tokio::select! {
            // An error means the task was dropped: said below.
            _ = done.wait_for(|ended| *ended) => {}
            () = context.ct.cancelled() => return Err(ErrorData::new(ErrorCode::INTERNAL_ERROR, "cancelled", None)),
            () = self.config.cancel.cancelled() => return Err(ErrorData::new(ErrorCode::INTERNAL_ERROR, "the server is stopping", None)),
        }
        let (task, outcome) = self
            .tasks
            .ended(id, Instant::now())
            .ok_or_else(|| unknown(id))?;
        match outcome {
            Some(TaskOutcome::Completed(mut result)) => {
                if let Some(result) = result.as_object_mut() {
                    let meta = result.entry("_meta").or_insert_with(|| json!({}));
                    if let Some(meta) = meta.as_object_mut() {
                        meta.insert(RELATED_TASK.into(), json!({ "taskId": task.id }));
                    }
                }
                Ok(CustomResult(result))
            }
            Some(TaskOutcome::Failed(error)) => {
                Err(serde_json::from_value(error).unwrap_or_else(|_| {
                    ErrorData::new(ErrorCode::INTERNAL_ERROR, format!("task {id} failed"), None)
                }))
            }
            None => Err(ErrorData::invalid_params(
                format!("task {id} was cancelled: it has no result"),
                None,
            )),
        }
    }
}

fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("no task {id} (unknown, or dropped after its ttl)"),
        None,
    )
}

/// The extension's `DetailedTask`: the result (or error) inline once it ended.
fn detailed(task: &TaskSnapshot, outcome: Option<TaskOutcome>) -> DetailedTask {
    let object = |value: Value| match value {
        Value::Object(object) => object,
        _ => serde_json::Map::new(),
    };
    let payload = match (task.status, outcome) {
        (TaskStatus::Working, _) => TaskPayload::Working,
        (TaskStatus::Cancelled, _) => TaskPayload::Cancelled,
        (_, Some(TaskOutcome::Completed(result))) => TaskPayload::Completed {
            result: object(result),
        },
        (_, Some(TaskOutcome::Failed(error))) => TaskPayload::Failed {
            error: object(error),
        },
        (_, None) => TaskPayload::Failed {
            error: object(
                json!({ "code": ErrorCode::INTERNAL_ERROR.0, "message": "the task's outcome was not kept" }),
            ),
        },
    };
    DetailedTask::new(extension_task(task), payload)
}

fn extension_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The status note of the 2025-11-25 form: `notifications/tasks/status` with the task (optional
/// there); a client that does not poll learns the end this way. A client gone cannot be told.
/// The extension (MCP 2026-07-28) delivers its `notifications/tasks` only on a
/// `subscriptions/listen` stream the client opened, which rmcp 3.11 cannot serve for tasks: its
/// clients poll `tasks/get` (docs/MCP.md, "Tasks").
async fn notify_status(peer: &rmcp::Peer<RoleServer>, task: &TaskSnapshot, form: TaskForm) {
    if form == TaskForm::Extension {
        return;
    }
    let note = CustomNotification::new("notifications/tasks/status", Some(task.to_json()));
    let _ = peer
        .send_notification(ServerNotification::CustomNotification(note))
        .await;
}
