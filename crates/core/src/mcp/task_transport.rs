//! Tasks as clients ask for them today (the 2025-11-25 specification, which the official
//! TypeScript SDK implements), carried through rmcp, which knows only the later extension
//! (docs/MCP.md, "Tasks"). rmcp drops the `task` field of a `tools/call`, refuses `tasks/*`
//! from a client that has not declared the extension, and its server capabilities and tools
//! have no field to declare task support. So, around it:
//!
//! - in: a `tools/call` carrying `task`, and `tasks/get`, `tasks/result`, `tasks/list` and
//!   `tasks/cancel`, get our prefix on their method ([`TASK_METHOD_PREFIX`]): rmcp hands such
//!   requests to the handler as custom requests, their params intact;
//! - out: the `initialize` result declares `capabilities.tasks`, and `tools/list` marks the
//!   task tools ([`TASK_TOOLS`]) `execution.taskSupport: "optional"`.
//!
//! Everything else passes unchanged, but for the server's name on the results of MCP 2026-07-28
//! requests ([`ServerInfoStamp`]).

use std::borrow::Cow;

use rmcp::model::{CustomResult, JsonRpcMessage, RequestId, ServerJsonRpcMessage, ServerResult};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleServer;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::server_info_meta::ServerInfoStamp;

/// What the renamed methods start with.
pub const TASK_METHOD_PREFIX: &str = "phone-a-friend/";
/// The tools a client may run as tasks.
pub const TASK_TOOLS: [&str; 2] = ["relay", "review"];
/// The task methods of the 2025-11-25 specification.
const TASK_METHODS: [&str; 4] = ["tasks/get", "tasks/result", "tasks/list", "tasks/cancel"];
/// The longest line passed on: rmcp's own limit, past which it drops a line.
const MAX_LINE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
const READ_BYTES: usize = 64 * 1024;

/// Copies the client's lines from `reader` to `to_rmcp`, renaming the task requests and noting
/// the requests of MCP 2026-07-28 in `stamp`, until the end of `reader` (then `to_rmcp` ends
/// too) or `stop`. A line longer than rmcp takes is dropped here, as rmcp would drop it.
pub async fn reroute<R, W>(
    mut reader: R,
    mut to_rmcp: W,
    stamp: ServerInfoStamp,
    stop: CancellationToken,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let copy = async {
        let mut buffer = vec![0u8; READ_BYTES];
        let mut line = Vec::new();
        let mut discarding = false;
        loop {
            let read = match reader.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            let mut rest = &buffer[..read];
            while let Some(newline) = rest.iter().position(|byte| *byte == b'\n') {
                let (end, after) = rest.split_at(newline + 1);
                rest = after;
                if std::mem::take(&mut discarding) || line.len() + end.len() > MAX_LINE_BYTES {
                    line.clear();
                    continue;
                }
                line.extend_from_slice(end);
                if to_rmcp.write_all(&rename(&line, &stamp)).await.is_err() {
                    return;
                }
                line.clear();
            }
            if !discarding {
                if line.len() + rest.len() > MAX_LINE_BYTES {
                    line.clear();
                    discarding = true;
                } else {
                    line.extend_from_slice(rest);
                }
            }
        }
        // A last line without its newline is no message (rmcp drops it too).
    };
    tokio::select! {
        () = copy => {}
        () = stop.cancelled() => {}
    }
    // rmcp sees the end of its input.
    let _ = to_rmcp.shutdown().await;
}

/// The parts of a message that decide whether it is renamed or noted; the rest is skipped
/// unread.
#[derive(Deserialize)]
struct Head<'a> {
    id: Option<RequestId>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<HeadParams<'a>>,
}

#[derive(Deserialize)]
struct HeadParams<'a> {
    task: Option<IgnoredAny>,
    #[serde(rename = "_meta", borrow)]
    meta: Option<HeadMeta<'a>>,
}

#[derive(Deserialize)]
struct HeadMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow)]
    protocol_version: Option<Cow<'a, str>>,
}

/// `line` (with its newline), its method prefixed when it is a task request; a request of MCP
/// 2026-07-28 is noted in `stamp`.
fn rename<'a>(line: &'a [u8], stamp: &ServerInfoStamp) -> Cow<'a, [u8]> {
    let Ok(head) = serde_json::from_slice::<Head>(line) else {
        return Cow::Borrowed(line);
    };
    let Some(method) = head.method else {
        return Cow::Borrowed(line);
    };
    if let Some(id) = head.id {
        let meta = head.params.as_ref().and_then(|params| params.meta.as_ref());
        stamp.note(id, meta.and_then(|meta| meta.protocol_version.as_deref()));
    }
    let asks_a_task = head.params.is_some_and(|params| params.task.is_some());
    let renamed = (method == "tools/call" && asks_a_task) || TASK_METHODS.contains(&&*method);
    if !renamed {
        return Cow::Borrowed(line);
    }
    let Ok(mut message) = serde_json::from_slice::<Value>(line) else {
        return Cow::Borrowed(line);
    };
    if let Some(object) = message.as_object_mut() {
        object.insert(
            "method".into(),
            Value::String(format!("{TASK_METHOD_PREFIX}{method}")),
        );
    }
    match serde_json::to_vec(&message) {
        Ok(mut renamed) => {
            renamed.push(b'\n');
            Cow::Owned(renamed)
        }
        Err(_) => Cow::Borrowed(line),
    }
}

/// rmcp's transport, with the server's task support declared in what it sends, and its name on
/// the results of MCP 2026-07-28 requests.
pub struct DeclareTasks<T> {
    inner: T,
    stamp: ServerInfoStamp,
}

impl<T> DeclareTasks<T> {
    pub fn new(inner: T, stamp: ServerInfoStamp) -> Self {
        DeclareTasks { inner, stamp }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for DeclareTasks<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let item = match declare_tasks(item) {
            JsonRpcMessage::Response(mut response) if self.stamp.take(&response.id) => {
                response.result = self.stamp.stamp(response.result);
                JsonRpcMessage::Response(response)
            }
            JsonRpcMessage::Error(error) => {
                // An error answers its request too: forgotten.
                if let Some(id) = &error.id {
                    self.stamp.take(id);
                }
                JsonRpcMessage::Error(error)
            }
            item => item,
        };
        self.inner.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// `message`, with `capabilities.tasks` in an `initialize` result and `execution` on the task
/// tools of a `tools/list` result.
fn declare_tasks(message: ServerJsonRpcMessage) -> ServerJsonRpcMessage {
    let JsonRpcMessage::Response(mut response) = message else {
        return message;
    };
    let declared = match &response.result {
        ServerResult::InitializeResult(result) => {
            serde_json::to_value(result).ok().map(|mut value| {
                if let Some(capabilities) = value
                    .get_mut("capabilities")
                    .and_then(Value::as_object_mut)
                {
                    capabilities.insert(
                        "tasks".into(),
                        json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }),
                    );
                }
                value
            })
        }
        ServerResult::ListToolsResult(result) => {
            serde_json::to_value(result).ok().map(|mut value| {
                let tools = value.get_mut("tools").and_then(Value::as_array_mut);
                for tool in tools.into_iter().flatten() {
                    let task_tool = tool
                        .get("name")
                        .and_then(Value::as_str)
                        .is_some_and(|name| TASK_TOOLS.contains(&name));
                    if let (true, Some(tool)) = (task_tool, tool.as_object_mut()) {
                        tool.insert("execution".into(), json!({ "taskSupport": "optional" }));
                    }
                }
                value
            })
        }
        _ => None,
    };
    if let Some(value) = declared {
        response.result = ServerResult::CustomResult(CustomResult(value));
    }
    JsonRpcMessage::Response(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp() -> ServerInfoStamp {
        ServerInfoStamp::new(&rmcp::model::Implementation::new("p", "1"))
    }

    fn renamed(line: &str) -> String {
        String::from_utf8_lossy(&rename(line.as_bytes(), &stamp())).into_owned()
    }

    #[test]
    fn renames_task_requests_only() {
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"relay","arguments":{"prompt":"p"},"task":{"ttl":60000}}}"#;
        let out: Value = serde_json::from_str(&renamed(&format!("{call}\n"))).expect("json");
        assert_eq!(out["method"], "phone-a-friend/tools/call");
        assert_eq!(out["params"]["task"]["ttl"], 60000);
        assert_eq!(out["params"]["arguments"]["prompt"], "p");
        for method in TASK_METHODS {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":2,"method":"{method}","params":{{"taskId":"t"}}}}"#
            );
            let out: Value = serde_json::from_str(&renamed(&line)).expect("json");
            assert_eq!(out["method"], format!("phone-a-friend/{method}"));
        }
        // Unchanged, byte for byte.
        for line in [
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"relay\"}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":[1]}\n",
            "not json\n",
        ] {
            assert!(
                matches!(rename(line.as_bytes(), &stamp()), Cow::Borrowed(_)),
                "{line}"
            );
        }
    }
}
