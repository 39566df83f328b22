//! The server driven over an in-memory pipe with raw JSON-RPC lines, as a client sends them.
//! (The JS tests drive the built server with the official TypeScript client.)

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, WriteHalf};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::backend::{Backend, BackendFailure, BackendFuture, Plan, RunRequest};
use crate::backends::builtin::BUILTINS;
use crate::limits::SANDBOX_MODES;

/// Streams two chunks, then answers; or, called `hang`, waits for its cancellation.
struct Talker {
    name: String,
    allowed: Vec<String>,
    cancelled: Arc<AtomicBool>,
    /// Notified when `hang` starts waiting.
    started: Arc<tokio::sync::Notify>,
}

impl Backend for Talker {
    fn name(&self) -> &str {
        &self.name
    }
    fn allowed_sandboxes(&self) -> &[String] {
        &self.allowed
    }
    fn run(self: Arc<Self>, request: RunRequest, cancel: CancellationToken) -> BackendFuture {
        Box::pin(async move {
            if self.name == "hang" {
                self.started.notify_one();
                cancel.cancelled().await;
                self.cancelled.store(true, Ordering::SeqCst);
                return Err(BackendFailure::Cancelled);
            }
            request.chunks.send("Hello, ".into()).await;
            request.chunks.send("world".into()).await;
            Ok(format!(
                "Hello, world ({} bytes asked)",
                request.prompt.len()
            ))
        })
    }
    fn plan(&self, _: &RunRequest) -> Plan {
        Plan::JsRun
    }
}

struct NoWarnings;

impl crate::relay::Warn for NoWarnings {
    fn warn(&self, _: String) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async {})
    }
}

struct Client {
    lines: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    server: tokio::task::JoinHandle<Result<(), super::McpError>>,
    cancelled: Arc<AtomicBool>,
    /// The server's answer to `initialize`.
    init: Value,
    started: Arc<tokio::sync::Notify>,
}

impl Client {
    async fn start() -> Client {
        let cancelled = Arc::new(AtomicBool::new(false));
        let started = Arc::new(tokio::sync::Notify::new());
        let backends: Vec<Arc<dyn Backend>> = ["talk", "hang"]
            .iter()
            .map(|name| {
                Arc::new(Talker {
                    name: name.to_string(),
                    allowed: SANDBOX_MODES.iter().map(|m| m.to_string()).collect(),
                    cancelled: cancelled.clone(),
                    started: started.clone(),
                }) as Arc<dyn Backend>
            })
            .collect();
        let config = ServerConfig {
            registry: Registry::new(backends),
            env: crate::env::Env::new(),
            cwd: std::env::temp_dir().to_string_lossy().into_owned(),
            warn: Arc::new(NoWarnings),
            cancel: CancellationToken::new(),
        };
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(theirs);
        let server = tokio::spawn(serve(server_read, server_write, config));
        let (read, writer) = tokio::io::split(ours);
        let mut client = Client {
            lines: BufReader::new(read).lines(),
            writer,
            server,
            cancelled,
            init: Value::Null,
            started,
        };
        let init = client
            .request(
                0,
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": { "name": "test", "version": "0" }
                }),
            )
            .await;
        assert_eq!(init["result"]["serverInfo"]["name"], "phone-a-friend");
        client.init = init;
        client
            .send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        client
    }

    /// Waits (bounded) until the `hang` backend runs.
    async fn backend_started(&self) {
        tokio::time::timeout(Duration::from_secs(5), self.started.notified())
            .await
            .expect("the backend started");
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.expect("write");
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(5), self.lines.next_line())
            .await
            .expect("a message in time")
            .expect("read")
            .expect("a line");
        serde_json::from_str(&line).expect("JSON")
    }

    /// Sends a request; returns its response, keeping the notifications that came first.
    async fn request_noting(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
    ) -> (Value, Vec<Value>) {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        let mut notes = Vec::new();
        loop {
            let message = self.next().await;
            if message["id"] == json!(id) {
                return (message, notes);
            }
            notes.push(message);
        }
    }

    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.request_noting(id, method, params).await.0
    }
}

#[tokio::test]
async fn lists_the_three_tools_with_schemas_from_the_option_types() {
    let mut client = Client::start().await;
    let list = client.request(1, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().expect("tools");
    let names: Vec<_> = tools
        .iter()
        .map(|t| t["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["backends", "relay", "review"]);
    let relay = &tools[1]["inputSchema"];
    assert_eq!(relay["type"], "object");
    assert_eq!(relay["required"], json!(["prompt"]));
    assert_eq!(relay["additionalProperties"], json!(false));
    for field in [
        "prompt",
        "repoPath",
        "backend",
        "contextFile",
        "contextText",
        "includeDiff",
        "timeoutSeconds",
        "model",
        "sandbox",
    ] {
        assert!(
            relay["properties"][field].is_object(),
            "relay lacks {field}"
        );
    }
    // Option<String> deserializes null, so the type allows it and the enum must too.
    assert_eq!(
        relay["properties"]["sandbox"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(
        relay["properties"]["sandbox"]["enum"],
        json!(["read-only", "workspace-write", "danger-full-access", null])
    );
    let review = &tools[2]["inputSchema"];
    assert_eq!(
        review["properties"]["sandbox"],
        relay["properties"]["sandbox"]
    );
    assert!(review["properties"]["base"].is_object());
    assert!(review.get("required").is_none_or(|r| r == &json!([])));
    assert!(tools[1]["outputSchema"]["properties"]["answer"].is_object());
}

/// The built-in backends a text names, among every name the table has.
fn builtins_named(text: &str) -> Vec<&'static str> {
    let words: Vec<&str> = text.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    BUILTINS
        .iter()
        .map(|backend| backend.name)
        .filter(|name| words.contains(name))
        .collect()
}

#[tokio::test]
async fn instructions_descriptions_and_schemas_name_every_builtin_backend() {
    let mut client = Client::start().await;
    let every: Vec<&str> = BUILTINS.iter().map(|backend| backend.name).collect();
    let instructions = client.init["result"]["instructions"].as_str().unwrap_or("");
    assert_eq!(builtins_named(instructions), every, "{instructions}");
    let list = client.request(1, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().expect("tools");
    for tool in tools {
        let description = tool["description"].as_str().unwrap_or("");
        assert_eq!(builtins_named(description), every, "{description}");
        if let Some(backend) = tool["inputSchema"]["properties"].get("backend") {
            let description = backend["description"].as_str().unwrap_or("");
            assert_eq!(builtins_named(description), every, "{description}");
        }
    }
}

#[cfg_attr(windows, ignore = "a relay runs git: none under wine")]
#[tokio::test]
async fn answers_as_text_and_structured_content_with_progress_when_asked() {
    let mut client = Client::start().await;
    let params = json!({
        "name": "relay",
        "arguments": { "prompt": "Check this", "backend": "talk" },
        "_meta": { "progressToken": "p1" }
    });
    let (response, notes) = client.request_noting(2, "tools/call", params).await;
    let result = &response["result"];
    assert_eq!(result["isError"], json!(false));
    let answer = result["structuredContent"]["answer"]
        .as_str()
        .expect("answer");
    assert!(answer.starts_with("Hello, world"));
    assert_eq!(result["content"][0]["text"], answer);
    assert_eq!(result["structuredContent"]["backend"], "talk");
    let progress: Vec<_> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .map(|n| {
            (
                n["params"]["progressToken"].clone(),
                n["params"]["progress"].clone(),
                n["params"]["message"].clone(),
            )
        })
        .collect();
    assert_eq!(
        progress,
        [
            (json!("p1"), json!(7.0), json!("Hello, ")),
            (json!("p1"), json!(12.0), json!("world"))
        ]
    );
    // No token, no notifications.
    let (_, notes) = client
        .request_noting(
            3,
            "tools/call",
            json!({ "name": "relay", "arguments": { "prompt": "p", "backend": "talk" } }),
        )
        .await;
    assert!(notes.is_empty());
}

#[tokio::test]
async fn a_failed_relay_is_an_error_result_carrying_the_code() {
    let mut client = Client::start().await;
    let response = client
        .request(
            4,
            "tools/call",
            json!({ "name": "relay", "arguments": { "prompt": "  ", "backend": "talk" } }),
        )
        .await;
    let result = &response["result"];
    assert_eq!(result["isError"], json!(true));
    assert_eq!(
        result["content"][0]["text"],
        "Error [ERR_PROMPT_REQUIRED]: Prompt is required"
    );
    assert_eq!(
        result["structuredContent"],
        json!({ "backend": "talk", "ok": false, "error": { "code": "ERR_PROMPT_REQUIRED", "message": "Prompt is required" } })
    );
    let unknown_field = client
        .request(
            5,
            "tools/call",
            json!({ "name": "relay", "arguments": { "prompt": "p", "repo": "/" } }),
        )
        .await;
    assert!(
        unknown_field.get("error").is_some() || unknown_field["result"]["isError"] == json!(true)
    );
}

#[cfg_attr(windows, ignore = "a relay runs git: none under wine")]
#[tokio::test]
async fn a_cancelled_request_stops_its_backend() {
    let mut client = Client::start().await;
    client
        .send(json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": { "name": "relay", "arguments": { "prompt": "p", "backend": "hang" } } }))
        .await;
    client.backend_started().await;
    assert!(!client.cancelled.load(Ordering::SeqCst));
    client
        .send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 6, "reason": "enough" } }))
        .await;
    tokio::time::timeout(Duration::from_secs(2), async {
        while !client.cancelled.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the backend saw the cancellation");
    // The server still serves.
    let list = client.request(7, "tools/list", json!({})).await;
    assert!(list["result"]["tools"].is_array());
}

#[cfg_attr(windows, ignore = "a relay runs git: none under wine")]
#[tokio::test]
async fn closing_the_input_stops_the_server_and_every_relay_in_flight() {
    let mut client = Client::start().await;
    client
        .send(json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": { "name": "relay", "arguments": { "prompt": "p", "backend": "hang" } } }))
        .await;
    client.backend_started().await;
    let Client {
        mut writer,
        server,
        cancelled,
        lines,
        ..
    } = client;
    writer.shutdown().await.expect("end of input");
    let served = tokio::time::timeout(Duration::from_secs(2), server)
        .await
        .expect("the server stopped")
        .expect("task");
    assert!(served.is_ok(), "{served:?}");
    assert!(cancelled.load(Ordering::SeqCst));
    drop(lines);
}

#[tokio::test]
async fn a_client_gone_before_initializing_is_a_typed_error_with_the_same_message() {
    let config = ServerConfig {
        registry: Registry::new(Vec::new()),
        env: crate::env::Env::new(),
        cwd: std::env::temp_dir().to_string_lossy().into_owned(),
        warn: Arc::new(NoWarnings),
        cancel: CancellationToken::new(),
    };
    let (ours, theirs) = tokio::io::duplex(1024);
    drop(ours);
    let (read, write) = tokio::io::split(theirs);
    let served = tokio::time::timeout(Duration::from_secs(5), serve(read, write, config))
        .await
        .expect("the server gives up at once");
    let error = served.expect_err("nobody to initialize");
    assert!(matches!(error, McpError::Initialization(_)), "{error:?}");
    assert!(
        error.to_string().starts_with("MCP initialization failed: "),
        "{error}"
    );
    let stdio = McpError::Stdio(std::io::Error::other("no standard handles"));
    assert_eq!(
        stdio.to_string(),
        "cannot take stdin and stdout: no standard handles"
    );
}
