//! What the server and the task requests both need to know of a task (docs/MCP.md, "Tasks"):
//! which task a tool call runs as, which form of tasks its client speaks, and a task as the
//! extension's wire type.

use rmcp::model::{ClientCapabilities, ErrorData, ProtocolVersion, Task, TaskStatus as WireStatus};
use rmcp::service::RequestContext;
use rmcp::RoleServer;

use super::task_store::{TaskSnapshot, TaskStatus};

/// Which task a tool call runs as (in its request context's extensions).
#[derive(Debug, Clone)]
pub struct TaskLink {
    pub id: String,
}

/// Which form of tasks a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TaskForm {
    /// The 2025-11-25 specification's: the client asks per call (`task`), reads the result with
    /// `tasks/result`.
    Specification,
    /// The `io.modelcontextprotocol/tasks` extension's (SEP-2663), which rmcp implements: the
    /// client declares the extension, the server makes a task of the calls it chooses, and
    /// `tasks/get` carries the result.
    Extension,
}

impl TaskForm {
    /// The extension's when the client declared it.
    pub(super) fn of(context: &RequestContext<RoleServer>) -> Self {
        match context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks())
        {
            true => TaskForm::Extension,
            false => TaskForm::Specification,
        }
    }

    /// The form of a task request (`tasks/*`, or a `tools/call` with `task`). A request of MCP
    /// 2026-07-28 or later knows tasks only as the extension, so one whose client did not
    /// declare it is refused with -32021, as rmcp refuses the extension's own methods.
    pub(super) fn of_task_request(context: &RequestContext<RoleServer>) -> Result<Self, ErrorData> {
        let form = TaskForm::of(context);
        let revision = context.protocol_version();
        if form == TaskForm::Specification
            && revision.is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
        {
            return Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ));
        }
        Ok(form)
    }
}

/// A task in the extension's form.
pub(super) fn extension_task(task: &TaskSnapshot) -> Task {
    let status = match task.status {
        TaskStatus::Working => WireStatus::Working,
        TaskStatus::Completed => WireStatus::Completed,
        TaskStatus::Failed => WireStatus::Failed,
        TaskStatus::Cancelled => WireStatus::Cancelled,
    };
    let json = task.to_json();
    let at = |key: &str| json[key].as_str().unwrap_or_default().to_string();
    let mut wire = Task::new(
        task.id.clone(),
        status,
        at("createdAt"),
        at("lastUpdatedAt"),
    )
    .with_ttl_ms(u64::try_from(task.ttl.as_millis()).unwrap_or(u64::MAX))
    .with_poll_interval_ms(u64::try_from(task.poll_interval.as_millis()).unwrap_or(u64::MAX));
    if let Some(message) = &task.status_message {
        wire = wire.with_status_message(message.clone());
    }
    wire
}
