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
use crate::relay::RelayRequest;

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
            if self.name == "long" {
                return Ok(format!("{}é", "x".repeat(INLINE_ANSWER_BYTES + 50)));
            }
            request.terms.chunks.send("Hello, ".into()).await;
            request.terms.chunks.send("world".into()).await;
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
    /// The host's token (the process going away).
    host: CancellationToken,
}

impl Client {
    async fn start() -> Client {
        Client::start_declaring(json!({})).await
    }

    /// A client whose `initialize` declares `capabilities`.
    async fn start_declaring(capabilities: Value) -> Client {
        let mut client = Client::connect().await;
        let init = client
            .request(
                0,
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": capabilities,
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

    /// A server and a client that has sent nothing yet.
    async fn connect() -> Client {
        let cancelled = Arc::new(AtomicBool::new(false));
        let started = Arc::new(tokio::sync::Notify::new());
        let host = CancellationToken::new();
        let backends: Vec<Arc<dyn Backend>> = ["talk", "hang", "long"]
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
        // Only PATH, so that a relay finds git.
        let path = std::env::var("PATH").unwrap_or_default();
        let config = ServerConfig {
            registry: Registry::new(backends),
            env: crate::env::Env::from([("PATH".to_string(), path)]),
            cwd: std::env::temp_dir().to_string_lossy().into_owned(),
            warn: Arc::new(NoWarnings),
            cancel: host.clone(),
        };
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(theirs);
        let server = tokio::spawn(serve(server_read, server_write, config));
        let (read, writer) = tokio::io::split(ours);
        Client {
            lines: BufReader::new(read).lines(),
            writer,
            server,
            cancelled,
            init: Value::Null,
            started,
            host,
        }
    }

    /// Ends the server's input: the server must stop within 2 s, cancelling what it ran.
    async fn close_input_and_expect_everything_stopped(mut self) {
        self.writer.shutdown().await.expect("end of input");
        self.expect_everything_stopped().await;
    }

    /// The server ends within 2 s, having cancelled what it ran; its input stays open until then.
    async fn expect_everything_stopped(self) {
        let Client {
            server,
            cancelled,
            writer,
            lines,
            ..
        } = self;
        let served = tokio::time::timeout(Duration::from_secs(2), server)
            .await
            .expect("the server stopped")
            .expect("task");
        assert!(served.is_ok(), "{served:?}");
        assert!(cancelled.load(Ordering::SeqCst));
        drop((writer, lines));
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

#[tokio::test]
async fn each_tool_takes_only_its_own_calls_options() {
    let mut client = Client::start().await;
    let list = client.request(1, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().expect("tools");
    let names = |tool: &Value| -> Vec<String> {
        tool["inputSchema"]["properties"]
            .as_object()
            .map(|properties| properties.keys().cloned().collect())
            .unwrap_or_default()
    };
    let (relay, review) = (names(&tools[1]), names(&tools[2]));
    for name in RelayRequest::REVIEW_ONLY {
        assert!(!relay.iter().any(|n| n == name) && review.iter().any(|n| n == name));
    }
    for name in RelayRequest::RELAY_ONLY {
        assert!(relay.iter().any(|n| n == name) && !review.iter().any(|n| n == name));
    }
    // Given anyway, the other call's option is refused as rmcp refuses an unknown field.
    for (id, tool, arguments, field) in [
        (2, "relay", json!({ "prompt": "p", "base": "main" }), "base"),
        (
            3,
            "review",
            json!({ "contextFile": "notes.md" }),
            "contextFile",
        ),
    ] {
        let params = json!({ "name": tool, "arguments": arguments });
        let refused = client.request(id, "tools/call", params).await;
        assert_eq!(refused["result"]["isError"], json!(true), "{refused}");
        let message = refused["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("");
        assert!(
            message.contains(&format!("unknown field `{field}`")),
            "{message}"
        );
    }
}

#[cfg_attr(windows, ignore = "a relay runs git: none under wine")]
#[tokio::test]
async fn a_diff_over_its_limit_is_fitted_unless_the_agent_says_fit_false() {
    let repo = crate::git::test_repo::repo_with_commit("main");
    std::fs::write(repo.path().join("Cargo.lock"), "").expect("write");
    crate::git::test_repo::commit_all(repo.path(), "lock");
    let lock: String = (0..10_000)
        .map(|n| format!("lock line {n:060}\n"))
        .collect();
    std::fs::write(repo.path().join("Cargo.lock"), lock).expect("write");
    std::fs::write(repo.path().join("a.txt"), "changed\n").expect("write");
    let repo_path = repo.path().to_string_lossy().into_owned();
    let mut client = Client::start().await;
    let call = |id: u64, fit: Value| {
        let arguments = json!({ "prompt": "Review", "backend": "talk", "repoPath": repo_path, "includeDiff": true, "fit": fit });
        (id, json!({ "name": "relay", "arguments": arguments }))
    };
    let (id, params) = call(1, Value::Null);
    let fitted = client.request(id, "tools/call", params).await;
    assert_eq!(fitted["result"]["isError"], json!(false), "{fitted}");
    // The result says what the backend did not see.
    let coverage = &fitted["result"]["structuredContent"]["coverage"];
    assert_eq!(coverage[0]["path"], "Cargo.lock", "{fitted}");
    assert_eq!(coverage[0]["status"], "left-out");
    assert_eq!(coverage[0]["reason"], "a lock file");
    assert_eq!(coverage[1]["path"], "a.txt");
    assert_eq!(coverage[1]["status"], "whole");
    assert_eq!(coverage[1]["reason"], Value::Null);
    let (id, params) = call(2, json!(false));
    let refused = client.request(id, "tools/call", params).await;
    assert_eq!(
        refused["result"]["structuredContent"]["error"]["code"], "ERR_TOO_LARGE",
        "{refused}"
    );
    // An agent's own budget for the envelope.
    let (id, mut params) = call(3, json!(false));
    params["arguments"]["maxPromptBytes"] = json!(100);
    params["arguments"]["includeDiff"] = json!(false);
    let small = client.request(id, "tools/call", params).await;
    let message = small["result"]["structuredContent"]["error"]["message"].as_str();
    assert!(
        message.is_some_and(|m| m.ends_with(" bytes; max 100 bytes)")),
        "{small}"
    );
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
    // The answer's pieces; the relay's status notes come between them.
    let meta = |n: &Value| n["params"]["_meta"]["io.github.phone-a-friend/progress"].clone();
    let progress: Vec<_> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress" && meta(n)["kind"] == "text")
        .map(|n| {
            (
                n["params"]["progressToken"].clone(),
                meta(n)["answerBytes"].clone(),
                n["params"]["message"].clone(),
            )
        })
        .collect();
    assert_eq!(
        progress,
        [
            (json!("p1"), json!(7), json!("Hello, ")),
            (json!("p1"), json!(12), json!("world"))
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
    client.close_input_and_expect_everything_stopped().await;
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

/// The 2025-11-25 task requests, as the TypeScript SDK sends them (docs/MCP.md, "Tasks").
impl Client {
    async fn call_as_task(&mut self, id: u64, backend: &str, ttl: u64) -> Value {
        self.call_as_task_noting(id, backend, ttl).await.0
    }

    async fn call_as_task_noting(
        &mut self,
        id: u64,
        backend: &str,
        ttl: u64,
    ) -> (Value, Vec<Value>) {
        let params = json!({
            "name": "relay",
            "arguments": { "prompt": "p", "backend": backend },
            "task": { "ttl": ttl },
            "_meta": { "progressToken": format!("t{id}") }
        });
        self.request_noting(id, "tools/call", params).await
    }

    /// Waits (bounded) until `flag` is set.
    async fn until(&self, what: &str, flag: impl Fn() -> bool) {
        tokio::time::timeout(Duration::from_secs(5), async {
            while !flag() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{what} in time"));
    }
}

#[tokio::test]
async fn declares_tasks_and_marks_the_relay_tools_task_capable() {
    let mut client = Client::start().await;
    assert_eq!(
        client.init["result"]["capabilities"]["tasks"],
        json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } })
    );
    assert!(client.init["result"]["capabilities"]["resources"].is_object());
    let list = client.request(1, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().expect("tools");
    let support: Vec<_> = tools
        .iter()
        .map(|tool| {
            (
                tool["name"].clone(),
                tool["execution"]["taskSupport"].clone(),
            )
        })
        .collect();
    assert_eq!(
        support,
        [
            (json!("backends"), Value::Null),
            (json!("relay"), json!("optional")),
            (json!("review"), json!("optional"))
        ]
    );
    // The rest of each tool is as rmcp made it.
    assert_eq!(tools[1]["inputSchema"]["required"], json!(["prompt"]));
    // No schemars integer formats ("uint"), which clients' validators warn about.
    // What may be absent from a result is not required of it.
    assert_eq!(
        tools[1]["outputSchema"]["$defs"]["ToolError"]["required"],
        json!(["code", "message"])
    );
    let output = tools[1]["outputSchema"].to_string();
    assert!(
        output.contains("answerBytes") && !output.contains("\"format\""),
        "{output}"
    );
    let refused = client
        .request(
            2,
            "tools/call",
            json!({ "name": "backends", "arguments": {}, "task": {} }),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
}

#[tokio::test]
async fn a_task_answers_at_once_and_its_result_comes_from_tasks_result() {
    let mut client = Client::start().await;
    let (created, mut notes) = client.call_as_task_noting(1, "talk", 60_000).await;
    let task = &created["result"]["task"];
    let id = task["taskId"].as_str().expect("taskId").to_string();
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60_000);
    assert_eq!(task["pollInterval"], 1000);
    let (result, more) = client
        .request_noting(2, "tasks/result", json!({ "taskId": id }))
        .await;
    notes.extend(more);
    let result = &result["result"];
    assert_eq!(result["isError"], json!(false));
    assert!(result["structuredContent"]["answer"]
        .as_str()
        .is_some_and(|answer| answer.starts_with("Hello, world")));
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    let status = notes
        .iter()
        .find(|note| note["method"] == "notifications/tasks/status")
        .expect("a status note");
    assert_eq!(status["params"]["taskId"], id);
    assert_eq!(status["params"]["status"], "completed");
    // Progress under the call's token.
    let methods: Vec<_> = notes.iter().map(|note| note["method"].clone()).collect();
    assert!(
        methods.contains(&json!("notifications/progress")),
        "{notes:?}"
    );
    assert!(notes
        .iter()
        .filter(|note| note["method"] == "notifications/progress")
        .all(|note| note["params"]["progressToken"] == "t1"));
    let got = client
        .request(3, "tasks/get", json!({ "taskId": id }))
        .await;
    assert_eq!(got["result"]["status"], "completed");
    assert_eq!(got["result"]["taskId"], id);
    let list = client.request(4, "tasks/list", json!({})).await;
    assert_eq!(list["result"]["tasks"][0]["taskId"], id);
    let unknown = client
        .request(5, "tasks/get", json!({ "taskId": "nope" }))
        .await;
    assert_eq!(unknown["error"]["code"], -32602);
    // A cancel after the end is refused.
    let late = client
        .request(6, "tasks/cancel", json!({ "taskId": id }))
        .await;
    assert_eq!(late["error"]["code"], -32602);
}

#[tokio::test]
async fn cancelling_a_task_stops_its_backend() {
    let mut client = Client::start().await;
    let created = client.call_as_task(1, "hang", 60_000).await;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .expect("id")
        .to_string();
    client.backend_started().await;
    let working = client
        .request(2, "tasks/get", json!({ "taskId": id }))
        .await;
    assert_eq!(working["result"]["status"], "working");
    let cancelled = client
        .request(3, "tasks/cancel", json!({ "taskId": id }))
        .await;
    assert_eq!(cancelled["result"]["status"], "cancelled");
    let flag = client.cancelled.clone();
    client
        .until("the backend's cancellation", || flag.load(Ordering::SeqCst))
        .await;
    let result = client
        .request(4, "tasks/result", json!({ "taskId": id }))
        .await;
    assert!(
        result["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("cancelled")),
        "{result}"
    );
}

#[tokio::test]
async fn past_the_running_cap_a_task_is_refused_with_a_clear_error() {
    let mut client = Client::start().await;
    let mut ids = Vec::new();
    for n in 0..TASK_LIMITS.running as u64 {
        let created = client.call_as_task(10 + n, "hang", 60_000).await;
        ids.push(
            created["result"]["task"]["taskId"]
                .as_str()
                .expect("id")
                .to_string(),
        );
    }
    let refused = client.call_as_task(20, "hang", 60_000).await;
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("tasks are running, the server's limit"),
        "{message}"
    );
    // Plain calls are not tasks: they still run.
    let plain = client
        .request(
            21,
            "tools/call",
            json!({ "name": "relay", "arguments": { "prompt": "p", "backend": "talk" } }),
        )
        .await;
    assert_eq!(plain["result"]["isError"], json!(false));
    client
        .request(22, "tasks/cancel", json!({ "taskId": ids[0] }))
        .await;
    // Once the cancelled one's backend is gone, a slot is free.
    let mut created = Value::Null;
    for attempt in 0..100u64 {
        created = client.call_as_task(30 + attempt, "talk", 60_000).await;
        if created.get("result").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(created["result"]["task"]["status"], "working", "{created}");
}

#[tokio::test]
async fn closing_the_input_stops_every_task_backend() {
    let mut client = Client::start().await;
    client.call_as_task(1, "hang", 60_000).await;
    client.backend_started().await;
    client.close_input_and_expect_everything_stopped().await;
}

#[tokio::test]
async fn a_long_answer_is_cut_with_a_note_and_read_whole_as_a_resource() {
    let mut client = Client::start().await;
    let response = client
        .request(
            1,
            "tools/call",
            json!({ "name": "relay", "arguments": { "prompt": "p", "backend": "long" } }),
        )
        .await;
    let result = &response["result"];
    let whole = INLINE_ANSWER_BYTES + 50 + "é".len();
    let structured = &result["structuredContent"];
    assert_eq!(
        structured["answer"].as_str().map(str::len),
        Some(INLINE_ANSWER_BYTES)
    );
    assert_eq!(structured["truncated"]["answerBytes"], whole);
    let uri = structured["truncated"]["resource"]
        .as_str()
        .expect("uri")
        .to_string();
    assert!(uri.starts_with(ANSWER_URI_PREFIX));
    let text = result["content"][0]["text"].as_str().expect("text");
    assert!(
        text.contains(&format!("the answer is {whole} bytes")),
        "{}",
        &text[INLINE_ANSWER_BYTES..]
    );
    assert!(text.contains(&uri));
    let read = client
        .request(2, "resources/read", json!({ "uri": uri }))
        .await;
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["text"].as_str().map(str::len), Some(whole));
    assert!(contents["text"].as_str().is_some_and(|t| t.ends_with('é')));
    let missing = client
        .request(
            3,
            "resources/read",
            json!({ "uri": format!("{ANSWER_URI_PREFIX}nope") }),
        )
        .await;
    assert!(
        missing["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("kept")),
        "{missing}"
    );
}

/// A client of the tasks extension (SEP-2663), which rmcp implements: it declares the extension,
/// and the server answers `relay` with a task whose result `tasks/get` carries.
async fn extension_client() -> Client {
    Client::start_declaring(json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } })).await
}

/// `tasks/get` until the task is no longer working: its last answer, and every note meanwhile.
async fn poll_task(client: &mut Client, id: &str) -> (Value, Vec<Value>) {
    let mut notes = Vec::new();
    for n in 0..100u64 {
        let (got, noted) = client
            .request_noting(10 + n, "tasks/get", json!({ "taskId": id }))
            .await;
        notes.extend(noted);
        if got["result"]["status"] != "working" {
            return (got, notes);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (Value::Null, notes)
}

#[tokio::test]
async fn a_client_of_the_extension_gets_a_task_and_its_result_from_tasks_get() {
    let mut client = extension_client().await;
    assert!(
        client.init["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"]
            .is_object()
    );
    let created = client
        .request(
            1,
            "tools/call",
            json!({ "name": "relay", "arguments": { "prompt": "p", "backend": "talk" } }),
        )
        .await;
    let task = &created["result"];
    assert_eq!(task["resultType"], "task", "{created}");
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttlMs"], TASK_LIMITS.default_ttl.as_millis() as u64);
    assert_eq!(task["pollIntervalMs"], 1000);
    let id = task["taskId"].as_str().expect("taskId").to_string();
    let (got, notes) = poll_task(&mut client, &id).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");
    // Its notes go only on a subscriptions/listen stream, which rmcp cannot serve: none sent.
    let methods: Vec<_> = notes.iter().map(|note| note["method"].clone()).collect();
    assert!(
        !methods.contains(&json!("notifications/tasks")),
        "{methods:?}"
    );
    assert!(
        got["result"]["result"]["structuredContent"]["answer"]
            .as_str()
            .is_some_and(|answer| answer.starts_with("Hello, world")),
        "{got}"
    );
    // backends is called at once, as for any client.
    let backends = client
        .request(
            200,
            "tools/call",
            json!({ "name": "backends", "arguments": {} }),
        )
        .await;
    assert!(
        backends["result"]["structuredContent"]["backends"].is_array(),
        "{backends}"
    );
    let update = client
        .request(
            201,
            "tasks/update",
            json!({ "taskId": id, "inputResponses": {} }),
        )
        .await;
    assert!(update.get("result").is_some(), "{update}");
}

#[tokio::test]
async fn a_client_of_the_extension_cancels_with_an_acknowledgement_and_the_backend_stops() {
    let mut client = extension_client().await;
    let created = client
        .request(
            1,
            "tools/call",
            json!({ "name": "relay", "arguments": { "prompt": "p", "backend": "hang" } }),
        )
        .await;
    let id = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_string();
    client.backend_started().await;
    let ack = client
        .request(2, "tasks/cancel", json!({ "taskId": id }))
        .await;
    assert_eq!(ack["result"], json!({ "resultType": "complete" }), "{ack}");
    let flag = client.cancelled.clone();
    client
        .until("the backend's cancellation", || flag.load(Ordering::SeqCst))
        .await;
    let got = client
        .request(3, "tasks/get", json!({ "taskId": id }))
        .await;
    assert_eq!(got["result"]["status"], "cancelled");
    // Cancelling is cooperative in the extension: a task that ended is acknowledged again.
    let again = client
        .request(4, "tasks/cancel", json!({ "taskId": id }))
        .await;
    assert_eq!(
        again["result"],
        json!({ "resultType": "complete" }),
        "{again}"
    );
}

#[tokio::test]
async fn tasks_result_waits_for_the_end_and_a_cancel_ends_the_wait() {
    let mut client = Client::start().await;
    let created = client.call_as_task(1, "hang", 60_000).await;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .expect("id")
        .to_string();
    client.backend_started().await;
    client
        .send(json!({ "jsonrpc": "2.0", "id": 2, "method": "tasks/result", "params": { "taskId": id } }))
        .await;
    // Still waiting: the next answer is the list's.
    let list = client.request(3, "tasks/list", json!({})).await;
    assert_eq!(list["result"]["tasks"][0]["status"], "working");
    let (cancelled, notes) = client
        .request_noting(4, "tasks/cancel", json!({ "taskId": id }))
        .await;
    assert_eq!(cancelled["result"]["status"], "cancelled");
    let mut waited: Vec<Value> = notes.into_iter().filter(|m| m["id"] == json!(2)).collect();
    while waited.is_empty() {
        let message = client.next().await;
        if message["id"] == json!(2) {
            waited.push(message);
        }
    }
    assert!(
        waited[0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("was cancelled")),
        "{waited:?}"
    );
}

#[tokio::test]
async fn the_host_going_away_stops_the_server_and_every_task_backend() {
    let mut client = Client::start().await;
    client.call_as_task(1, "hang", 60_000).await;
    client.backend_started().await;
    // The input stays open: only the host's token says to stop.
    client.host.cancel();
    client.expect_everything_stopped().await;
}

/// A request of MCP 2026-07-28: no `initialize`, the client named in each request's `_meta`.
async fn stateless_request(
    client: &mut Client,
    id: u64,
    method: &str,
    params: Value,
    capabilities: Value,
) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": { "name": "test", "version": "0" },
    });
    client.request(id, method, params).await
}

#[tokio::test]
async fn results_of_2026_07_28_requests_name_the_server() {
    let mut client = Client::connect().await;
    let listed = stateless_request(&mut client, 1, "tools/list", json!({}), json!({})).await;
    let server = &listed["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
    assert_eq!(server["name"], "phone-a-friend", "{listed}");
    assert_eq!(server["version"], env!("CARGO_PKG_VERSION"));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    let called = stateless_request(
        &mut client,
        2,
        "tools/call",
        json!({ "name": "relay", "arguments": { "prompt": "p", "backend": "talk" } }),
        json!({}),
    )
    .await;
    assert_eq!(
        called["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "phone-a-friend",
        "{called}"
    );
    assert!(
        called["result"]["structuredContent"]["answer"].is_string(),
        "{called}"
    );
    // A client of 2025-11-25 saw the name at `initialize`: its results carry none.
    let mut session = Client::start().await;
    let listed = session.request(1, "tools/list", json!({})).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    assert!(listed["result"].get("_meta").is_none(), "{listed}");
}

#[tokio::test]
async fn a_2026_07_28_task_request_without_the_extension_is_missing_a_capability() {
    let mut client = Client::connect().await;
    for (id, method) in [
        (1, "tasks/get"),
        (2, "tasks/cancel"),
        (3, "tasks/result"),
        (4, "tasks/list"),
    ] {
        let refused =
            stateless_request(&mut client, id, method, json!({ "taskId": "t" }), json!({})).await;
        assert_eq!(refused["error"]["code"], -32021, "{method}: {refused}");
        assert!(
            refused["error"]["data"]["requiredCapabilities"]["extensions"]
                ["io.modelcontextprotocol/tasks"]
                .is_object(),
            "{method}: {refused}"
        );
    }
    // With the extension declared, the same request reaches the tasks.
    let tasks = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let created = stateless_request(
        &mut client,
        5,
        "tools/call",
        json!({ "name": "relay", "arguments": { "prompt": "p", "backend": "talk" } }),
        tasks.clone(),
    )
    .await;
    let id = created["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_string();
    let got = stateless_request(&mut client, 6, "tasks/get", json!({ "taskId": id }), tasks).await;
    assert!(got.get("result").is_some(), "{got}");
    assert_eq!(
        got["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "phone-a-friend",
        "{got}"
    );
    // The 2025-11-25 form is untouched: a session client asking for an unknown task.
    let mut session = Client::start().await;
    let unknown = session
        .request(1, "tasks/get", json!({ "taskId": "t" }))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

#[tokio::test]
async fn a_client_that_only_discovers_and_leaves_was_served() {
    let mut client = Client::connect().await;
    let discovered =
        stateless_request(&mut client, 1, "server/discover", json!({}), json!({})).await;
    assert!(
        discovered["result"]["supportedVersions"].is_array(),
        "{discovered}"
    );
    let Client {
        server,
        mut writer,
        lines,
        ..
    } = client;
    writer.shutdown().await.expect("end of input");
    let served = tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the server stopped")
        .expect("task");
    assert!(served.is_ok(), "{served:?}");
    drop(lines);
}
