//! The built-in Ollama backend: one `POST {host}/api/chat` to a local (or remote) Ollama
//! server. Reviews take the generic path (diff in the prompt).

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::backend::{
    Backend, BackendFailure, BackendFuture, BackendResult, ReviewRequest, RunRequest,
};
use crate::backends::ollama_host;
use crate::deadline::Stop;
use crate::errors::{BackendFailureKind, Subject};
use crate::limits::MAX_OUTPUT_BYTES;

use super::ollama_reply::{ChatReply, ReplyScanner};

pub const NAME: &str = "ollama";

/// How long the "is anybody there" probe after a failed request may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// UTF-16 code units of an error body quoted in the message (`body.slice(0, 200)`).
const ERROR_BODY_UNITS: usize = 200;

/// Bytes of an error body read to find its first 200 UTF-16 units: each unit takes at most
/// 3 bytes, and the bytes just after the cut can change how the last ones decode.
const ERROR_BODY_BYTES: usize = 1024;

/// Stateless: each run builds its own HTTP client, so no connection outlives its run.
pub struct OllamaBackend {
    sandboxes: Vec<String>,
}

impl Default for OllamaBackend {
    fn default() -> Self {
        OllamaBackend {
            sandboxes: super::all_sandbox_modes(),
        }
    }
}

impl Backend for OllamaBackend {
    fn name(&self) -> &str {
        NAME
    }

    fn allowed_sandboxes(&self) -> &[String] {
        &self.sandboxes
    }

    fn run(self: Arc<Self>, request: RunRequest, cancel: CancellationToken) -> BackendFuture {
        Box::pin(async move {
            // Dropping the losing branch drops the HTTP request and closes its connection.
            tokio::select! {
                biased;
                () = cancel.cancelled() => Err(BackendFailure::Cancelled),
                result = chat(&request) => result,
            }
        })
    }

    fn review(
        self: Arc<Self>,
        _request: &ReviewRequest,
        _cancel: CancellationToken,
    ) -> Option<BackendFuture> {
        None
    }
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    messages: [ChatMessage<'a>; 1],
    stream: bool,
}

#[derive(Serialize)]
struct ChatMessage<'a> {
    role: &'a str,
    content: &'a str,
}

async fn chat(request: &RunRequest) -> BackendResult {
    let base = ollama_host::base_url(request.env.get("OLLAMA_HOST").map(String::as_str));
    let body = ChatRequest {
        model: model(request),
        messages: [ChatMessage {
            role: "user",
            content: &request.prompt,
        }],
        stream: false,
    };
    let client = reqwest::Client::builder()
        // Node's fetch ignores HTTP(S)_PROXY, and the process environment is not the relay's.
        .no_proxy()
        .build()
        .map_err(|err| failed(format!("Ollama request failed: {}", detail(&err))))?;
    let exchange = exchange(&client, &base, &body);
    match tokio::time::timeout(request.deadline.remaining(), exchange).await {
        Ok(Ok(result)) => result,
        Ok(Err(err)) => {
            // The probe, too, ends with the call's deadline.
            match request
                .deadline
                .bound(transport_failure(&client, &base, &err))
                .await
            {
                Ok(failure) => Err(failure),
                Err(Stop::Cancelled) => Err(BackendFailure::Cancelled),
                Err(Stop::TimedOut) => Err(timed_out(request)),
            }
        }
        Err(_) => Err(timed_out(request)),
    }
}

fn timed_out(request: &RunRequest) -> BackendFailure {
    BackendFailure::reported(
        BackendFailureKind::Timeout,
        format!("Ollama timed out after {}s", request.timeout.display()),
    )
}

/// `model`, else `OLLAMA_MODEL` from the relay's environment; an empty value counts as unset.
fn model(request: &RunRequest) -> Option<&str> {
    request
        .model
        .as_deref()
        .filter(|model| !model.is_empty())
        .or_else(|| {
            request
                .env
                .get("OLLAMA_MODEL")
                .map(String::as_str)
                .filter(|model| !model.is_empty())
        })
}

/// The request and its answer; `Err` only for transport failures, which need the probe.
async fn exchange(
    client: &reqwest::Client,
    base: &str,
    body: &ChatRequest<'_>,
) -> Result<BackendResult, reqwest::Error> {
    let mut response = client
        .post(format!("{base}/api/chat"))
        .json(body)
        .send()
        .await?;
    let status = response.status();
    if !status.is_success() {
        let head = read_head(&mut response, ERROR_BODY_BYTES).await?;
        return Ok(Err(failed(format!(
            "Ollama returned HTTP {}: {}",
            status.as_u16(),
            error_body_start(&head)
        ))));
    }
    let invalid_json = || {
        failed(format!(
            "Ollama returned invalid JSON (HTTP {})",
            status.as_u16()
        ))
    };
    let mut scanner = ReplyScanner::new(MAX_OUTPUT_BYTES);
    while let Some(chunk) = response.chunk().await? {
        if scanner.push(&chunk).is_err() {
            return Ok(Err(invalid_json()));
        }
    }
    Ok(match scanner.finish() {
        Ok(reply) => answer(reply),
        Err(_) => Err(invalid_json()),
    })
}

fn answer(reply: ChatReply) -> BackendResult {
    if let Some(error) = reply.error {
        return Err(failed(format!("Ollama error: {error}")));
    }
    match reply.content {
        Some(content) if content.trimmed_len > 0 => content
            .within(Subject::BackendOutput, MAX_OUTPUT_BYTES)
            .map_err(|err| {
                BackendFailure::reported(BackendFailureKind::OutputTooLarge, err.to_string())
            }),
        _ => Err(BackendFailure::reported(
            BackendFailureKind::NoOutput,
            "Ollama completed without producing output",
        )),
    }
}

/// Tells "no server there" from "the server broke the request" with a quick `GET /api/tags`.
async fn transport_failure(
    client: &reqwest::Client,
    base: &str,
    err: &reqwest::Error,
) -> BackendFailure {
    let probe = client
        .get(format!("{base}/api/tags"))
        .timeout(PROBE_TIMEOUT)
        .send()
        .await;
    match probe {
        // Any HTTP answer, whatever its status, means a server is listening.
        Ok(_) => failed(format!("Ollama request failed: {}", detail(err))),
        Err(_) => BackendFailure::reported(
            BackendFailureKind::Unavailable,
            format!(
                "Ollama server not reachable at {base}. Is Ollama running? Install: https://ollama.com/download"
            ),
        ),
    }
}

fn failed(message: String) -> BackendFailure {
    BackendFailure::reported(BackendFailureKind::Failed, message)
}

/// The error with its causes: reqwest's own text names only the URL, the cause says what broke.
fn detail(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// At most `max` bytes of the body; the rest is never read.
async fn read_head(
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

/// `(await res.text()).slice(0, 200)`: decoded as fetch decodes (lossy UTF-8, a leading BOM
/// dropped), then cut after 200 UTF-16 code units.
fn error_body_start(head: &[u8]) -> String {
    let text = String::from_utf8_lossy(head);
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    js_slice_units(text, ERROR_BODY_UNITS)
}

/// The first `units` UTF-16 code units of `text`, as JavaScript's `slice(0, units)`.
///
/// Where the cut splits a surrogate pair JavaScript keeps a lone high surrogate, which a Rust
/// string cannot hold; it becomes U+FFFD, which is what Node writes for a lone surrogate when it
/// encodes the message as UTF-8, and keeps the message's `length` the same.
fn js_slice_units(text: &str, units: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    for c in text.chars() {
        let width = c.len_utf16();
        if count + width > units {
            if count < units {
                out.push('\u{FFFD}');
            }
            break;
        }
        out.push(c);
        count += width;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Env, Timeout};
    use crate::backends::ollama_reply::InvalidJson;
    use crate::bounded_text::Measured;
    use std::sync::{Arc, Mutex};
    use std::time::Instant;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::mpsc;

    const NOT_REACHABLE: &str = "Is Ollama running? Install: https://ollama.com/download";

    #[derive(Debug, Clone)]
    struct Received {
        method: String,
        path: String,
        body: Vec<u8>,
    }

    enum Reply {
        Http(u16, Vec<u8>),
        /// Read the request, answer nothing, report when the client hangs up.
        Hang,
        /// Read the request and close the connection without an answer.
        Close,
    }

    #[derive(Debug, PartialEq)]
    enum Event {
        Request,
        HungUp,
    }

    /// A minimal HTTP/1.1 server on 127.0.0.1: one request per connection.
    struct TestServer {
        port: u16,
        received: Arc<Mutex<Vec<Received>>>,
        events: mpsc::UnboundedReceiver<Event>,
        accept: tokio::task::JoinHandle<()>,
    }

    impl Drop for TestServer {
        fn drop(&mut self) {
            self.accept.abort();
        }
    }

    impl TestServer {
        async fn start(handler: impl Fn(&Received) -> Reply + Send + Sync + 'static) -> Self {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let port = listener.local_addr().expect("local address").port();
            let handler = Arc::new(handler);
            let received = Arc::new(Mutex::new(Vec::new()));
            let (events_tx, events) = mpsc::unbounded_channel();
            let accept = tokio::spawn({
                let received = Arc::clone(&received);
                async move {
                    while let Ok((socket, _)) = listener.accept().await {
                        let handler = Arc::clone(&handler);
                        let received = Arc::clone(&received);
                        let events = events_tx.clone();
                        tokio::spawn(async move {
                            let mut socket = socket;
                            let Some(request) = read_request(&mut socket).await else {
                                return;
                            };
                            received.lock().expect("lock").push(request.clone());
                            let _ = events.send(Event::Request);
                            respond(socket, handler(&request), &events).await;
                        });
                    }
                }
            });
            TestServer {
                port,
                received,
                events,
                accept,
            }
        }

        fn url(&self) -> String {
            format!("http://127.0.0.1:{}", self.port)
        }

        fn received(&self) -> Vec<Received> {
            self.received.lock().expect("lock").clone()
        }

        async fn next_event(&mut self) -> Option<Event> {
            tokio::time::timeout(Duration::from_secs(5), self.events.recv())
                .await
                .ok()
                .flatten()
        }
    }

    async fn read_request(socket: &mut TcpStream) -> Option<Received> {
        let mut data = Vec::new();
        let mut buf = [0u8; 8192];
        let head_end = loop {
            if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
            match socket.read(&mut buf).await {
                Ok(n) if n > 0 => data.extend_from_slice(&buf[..n]),
                _ => return None,
            }
        };
        let head = String::from_utf8_lossy(&data[..head_end]).to_string();
        let mut request_line = head.lines().next()?.split(' ');
        let method = request_line.next()?.to_string();
        let path = request_line.next()?.to_string();
        let length = head
            .lines()
            .filter_map(|line| line.split_once(':'))
            .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, value)| value.trim().parse::<usize>().ok())
            .unwrap_or(0);
        while data.len() < head_end + length {
            match socket.read(&mut buf).await {
                Ok(n) if n > 0 => data.extend_from_slice(&buf[..n]),
                _ => return None,
            }
        }
        Some(Received {
            method,
            path,
            body: data[head_end..head_end + length].to_vec(),
        })
    }

    async fn respond(mut socket: TcpStream, reply: Reply, events: &mpsc::UnboundedSender<Event>) {
        match reply {
            Reply::Http(status, body) => {
                let head = format!(
                    "HTTP/1.1 {status} Test\r\nContent-Type: application/json\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body).await;
                let _ = socket.shutdown().await;
            }
            Reply::Hang => {
                let mut buf = [0u8; 1024];
                while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
                let _ = events.send(Event::HungUp);
            }
            Reply::Close => drop(socket),
        }
    }

    fn request(host: &str, timeout_seconds: f64) -> RunRequest {
        let mut env = Env::new();
        env.insert("OLLAMA_HOST".into(), host.into());
        env.insert("PATH".into(), "/usr/bin".into());
        RunRequest {
            prompt: "What is 2+2?".into(),
            repo_path: "/tmp".into(),
            timeout: Timeout::from_seconds(timeout_seconds).expect("valid timeout"),
            deadline: crate::deadline::Deadline::starting_now(
                Timeout::from_seconds(timeout_seconds).expect("valid timeout"),
                CancellationToken::new(),
            ),
            sandbox: "read-only".into(),
            model: None,
            env,
            chunks: crate::stream::ChunkSink::discard(),
            call_tag: 0,
        }
    }

    async fn run(request: RunRequest) -> BackendResult {
        Arc::new(OllamaBackend::default())
            .run(request, CancellationToken::new())
            .await
    }

    fn chat_reply(content: &str) -> Reply {
        let body = serde_json::json!({
            "model": "m",
            "message": { "role": "assistant", "content": content },
            "done": true,
        });
        Reply::Http(200, body.to_string().into_bytes())
    }

    fn reported(result: BackendResult) -> (BackendFailureKind, String) {
        match result {
            Err(BackendFailure::Reported {
                kind,
                message,
                cause: None,
            }) => (kind, message),
            other => panic!("expected a reported failure, got {other:?}"),
        }
    }

    async fn answered_with(reply: Reply) -> (BackendFailureKind, String) {
        let reply = Mutex::new(Some(reply));
        let server = TestServer::start(move |_| {
            reply
                .lock()
                .expect("lock")
                .take()
                .unwrap_or(Reply::Http(500, Vec::new()))
        })
        .await;
        reported(run(request(&server.url(), 30.0)).await)
    }

    #[tokio::test]
    async fn the_probe_after_a_failed_request_ends_with_the_deadline() {
        // The chat's connection is dropped (a transport error), the probe then gets no answer.
        let server = TestServer::start(|received| match received.path.as_str() {
            "/api/chat" => Reply::Close,
            _ => Reply::Hang,
        })
        .await;
        let started = std::time::Instant::now();
        let (kind, message) = reported(run(request(&server.url(), 0.5)).await);
        let elapsed = started.elapsed();
        assert_eq!(
            (kind, message.as_str()),
            (BackendFailureKind::Timeout, "Ollama timed out after 0.5s")
        );
        // Not the probe's own 3 s.
        assert!(elapsed < Duration::from_millis(1500), "{elapsed:?}");
    }

    #[test]
    fn is_the_ollama_backend() {
        let backend = Arc::new(OllamaBackend::default());
        assert_eq!(backend.name(), "ollama");
        assert_eq!(
            backend.allowed_sandboxes(),
            ["read-only", "workspace-write", "danger-full-access"]
        );
        let review = ReviewRequest {
            repo_path: "/tmp".into(),
            timeout: Timeout::from_seconds(1.0).expect("valid timeout"),
            deadline: crate::deadline::Deadline::starting_now(
                Timeout::from_seconds(1.0).expect("valid timeout"),
                CancellationToken::new(),
            ),
            sandbox: "read-only".into(),
            model: None,
            env: Env::new(),
            base: "main".into(),
            prompt: None,
            chunks: crate::stream::ChunkSink::discard(),
            call_tag: 0,
        };
        assert!(backend.review(&review, CancellationToken::new()).is_none());
    }

    #[tokio::test]
    async fn posts_the_prompt_and_answers_the_trimmed_content() {
        let server = TestServer::start(|_| chat_reply("\u{FEFF}\n  4 \u{3000}\r\n")).await;
        let mut req = request(&server.url(), 30.0);
        req.model = Some("llama3.2".into());
        req.env.insert("OLLAMA_MODEL".into(), "ignored".into());
        assert_eq!(run(req).await, Ok("4".to_string()));
        let received = server.received();
        assert_eq!(received.len(), 1);
        assert_eq!(received[0].method, "POST");
        assert_eq!(received[0].path, "/api/chat");
        assert_eq!(
            String::from_utf8_lossy(&received[0].body),
            r#"{"model":"llama3.2","messages":[{"role":"user","content":"What is 2+2?"}],"stream":false}"#
        );
    }

    #[tokio::test]
    async fn takes_the_model_from_ollama_model_else_sends_none() {
        let server = TestServer::start(|_| chat_reply("ok")).await;
        let mut with_env = request(&server.url(), 30.0);
        with_env
            .env
            .insert("OLLAMA_MODEL".into(), "qwen2.5-coder".into());
        assert_eq!(run(with_env).await, Ok("ok".to_string()));
        assert_eq!(
            run(request(&server.url(), 30.0)).await,
            Ok("ok".to_string())
        );
        let bodies: Vec<serde_json::Value> = server
            .received()
            .iter()
            .map(|r| serde_json::from_slice(&r.body).expect("JSON request"))
            .collect();
        assert_eq!(bodies[0]["model"], "qwen2.5-coder");
        assert_eq!(bodies[1].get("model"), None);
        assert_eq!(bodies[1]["stream"], false);
        assert_eq!(bodies[1]["messages"][0]["content"], "What is 2+2?");
    }

    #[tokio::test]
    async fn reads_a_host_without_scheme() {
        let server = TestServer::start(|_| chat_reply("schemeless")).await;
        let req = request(&format!(" '127.0.0.1:{}/' ", server.port), 30.0);
        assert_eq!(run(req).await, Ok("schemeless".to_string()));
        assert_eq!(server.received()[0].path, "/api/chat");
    }

    #[tokio::test]
    async fn reports_an_http_error_with_the_start_of_the_body() {
        let body = format!("{}{}", "x".repeat(199), "😀 and more");
        let (kind, message) = answered_with(Reply::Http(503, body.into_bytes())).await;
        assert_eq!(kind, BackendFailureKind::Failed);
        assert_eq!(
            message,
            format!("Ollama returned HTTP 503: {}\u{FFFD}", "x".repeat(199))
        );
        // What a real Ollama answers when no model is given: surfaced as it comes.
        let missing_model = br#"{"error":"model is required"}"#.to_vec();
        let (kind, message) = answered_with(Reply::Http(400, missing_model)).await;
        assert_eq!(kind, BackendFailureKind::Failed);
        assert_eq!(
            message,
            r#"Ollama returned HTTP 400: {"error":"model is required"}"#
        );
    }

    #[tokio::test]
    async fn reports_invalid_json() {
        let (kind, message) = answered_with(Reply::Http(200, b"<html>oops".to_vec())).await;
        assert_eq!(kind, BackendFailureKind::Failed);
        assert_eq!(message, "Ollama returned invalid JSON (HTTP 200)");
        let cut_short = br#"{"message":{"content":"half"#.to_vec();
        let (_, message) = answered_with(Reply::Http(201, cut_short)).await;
        assert_eq!(message, "Ollama returned invalid JSON (HTTP 201)");
    }

    #[tokio::test]
    async fn reports_the_error_field() {
        let body = br#"{"error":"model \"nope\" not found, try pulling it first"}"#.to_vec();
        let (kind, message) = answered_with(Reply::Http(200, body)).await;
        assert_eq!(kind, BackendFailureKind::Failed);
        assert_eq!(
            message,
            r#"Ollama error: model "nope" not found, try pulling it first"#
        );
    }

    #[tokio::test]
    async fn reports_an_empty_answer() {
        let (kind, message) = answered_with(chat_reply(" \n\t ")).await;
        assert_eq!(kind, BackendFailureKind::NoOutput);
        assert_eq!(message, "Ollama completed without producing output");
        let (kind, _) = answered_with(Reply::Http(200, br#"{"done":true}"#.to_vec())).await;
        assert_eq!(kind, BackendFailureKind::NoOutput);
    }

    #[tokio::test]
    async fn times_out_on_a_server_that_never_answers() {
        let mut server = TestServer::start(|_| Reply::Hang).await;
        let started = Instant::now();
        let (kind, message) = reported(run(request(&server.url(), 1.0)).await);
        let elapsed = started.elapsed();
        assert_eq!(kind, BackendFailureKind::Timeout);
        assert_eq!(message, "Ollama timed out after 1s");
        assert!(
            elapsed >= Duration::from_millis(950) && elapsed < Duration::from_secs(3),
            "{elapsed:?}"
        );
        assert_eq!(server.next_event().await, Some(Event::Request));
        assert_eq!(server.next_event().await, Some(Event::HungUp));
    }

    #[tokio::test]
    async fn says_not_reachable_when_nothing_listens() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("local address").port();
        drop(listener);
        let started = Instant::now();
        let (kind, message) = reported(run(request(&format!("127.0.0.1:{port}"), 30.0)).await);
        assert_eq!(kind, BackendFailureKind::Unavailable);
        assert_eq!(
            message,
            format!("Ollama server not reachable at http://127.0.0.1:{port}. {NOT_REACHABLE}")
        );
        assert!(started.elapsed() < Duration::from_secs(3));
        // A scheme reqwest cannot speak is no server either.
        let (kind, message) = reported(run(request("ftp://127.0.0.1:1", 30.0)).await);
        assert_eq!(kind, BackendFailureKind::Unavailable);
        assert_eq!(
            message,
            format!("Ollama server not reachable at ftp://127.0.0.1:1. {NOT_REACHABLE}")
        );
    }

    #[tokio::test]
    async fn speaks_tls_to_https_hosts() {
        // A plain HTTP server: the TLS handshake (rustls, no OpenSSL) fails, so does the probe.
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("local address").port();
        let server = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let _ = socket.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await;
            }
        });
        let host = format!("https://127.0.0.1:{port}");
        let (kind, message) = reported(run(request(&host, 30.0)).await);
        server.abort();
        assert_eq!(kind, BackendFailureKind::Unavailable);
        assert_eq!(
            message,
            format!("Ollama server not reachable at {host}. {NOT_REACHABLE}")
        );
    }

    #[tokio::test]
    async fn says_request_failed_when_the_probe_answers() {
        let server = TestServer::start(|request| match request.path.as_str() {
            "/api/chat" => Reply::Close,
            _ => Reply::Http(200, br#"{"models":[]}"#.to_vec()),
        })
        .await;
        let (kind, message) = reported(run(request(&server.url(), 30.0)).await);
        assert_eq!(kind, BackendFailureKind::Failed);
        assert!(
            message.starts_with("Ollama request failed: ") && message.len() > 23,
            "{message}"
        );
        // The cause, not just reqwest's "error sending request".
        assert!(message.contains("connection closed"), "{message}");
        let probe = &server.received()[1];
        assert_eq!(
            (probe.method.as_str(), probe.path.as_str()),
            ("GET", "/api/tags")
        );
    }

    #[tokio::test]
    async fn cancellation_drops_the_request_at_once() {
        let mut server = TestServer::start(|_| Reply::Hang).await;
        let cancel = CancellationToken::new();
        let running = tokio::spawn(
            Arc::new(OllamaBackend::default()).run(request(&server.url(), 600.0), cancel.clone()),
        );
        assert_eq!(server.next_event().await, Some(Event::Request));
        let cancelled_at = Instant::now();
        cancel.cancel();
        let result = tokio::time::timeout(Duration::from_secs(1), running)
            .await
            .expect("resolves promptly")
            .expect("no panic");
        assert_eq!(result, Err(BackendFailure::Cancelled));
        assert_eq!(server.next_event().await, Some(Event::HungUp));
        assert!(cancelled_at.elapsed() < Duration::from_secs(1));
    }

    #[tokio::test]
    async fn an_already_cancelled_run_sends_nothing() {
        let server = TestServer::start(|_| chat_reply("never")).await;
        let cancel = CancellationToken::new();
        cancel.cancel();
        let result = Arc::new(OllamaBackend::default())
            .run(request(&server.url(), 30.0), cancel)
            .await;
        assert_eq!(result, Err(BackendFailure::Cancelled));
        assert!(server.received().is_empty());
    }

    #[tokio::test]
    async fn refuses_an_answer_over_the_output_limit() {
        let (kind, message) = answered_with(chat_reply(&"x".repeat(MAX_OUTPUT_BYTES + 1))).await;
        assert_eq!(kind, BackendFailureKind::OutputTooLarge);
        assert_eq!(
            message,
            "Backend output is too large (8388609 bytes; max 8388608 bytes)"
        );
    }

    #[tokio::test]
    async fn counts_the_answer_not_the_escaped_body() {
        // Every `"` is escaped, so the body is twice the limit while the answer just fits.
        let content = "\"".repeat(MAX_OUTPUT_BYTES);
        let server = TestServer::start(move |_| chat_reply(&content)).await;
        let answer = run(request(&server.url(), 30.0)).await.expect("an answer");
        assert_eq!(answer.len(), MAX_OUTPUT_BYTES);
        assert!(answer.bytes().all(|b| b == b'"'));
    }

    #[test]
    fn slices_utf16_units_like_javascript() {
        assert_eq!(js_slice_units("abc", 2), "ab");
        assert_eq!(js_slice_units("abc", 5), "abc");
        assert_eq!(js_slice_units("é€", 2), "é€");
        assert_eq!(js_slice_units("a😀", 3), "a😀");
        // `"a😀".slice(0, 2)` keeps a lone high surrogate.
        assert_eq!(js_slice_units("a😀b", 2), "a\u{FFFD}");
        assert_eq!(error_body_start(b"\xEF\xBB\xBFok\xFF"), "ok\u{FFFD}");
        let long = "y".repeat(ERROR_BODY_BYTES);
        assert_eq!(error_body_start(long.as_bytes()).len(), ERROR_BODY_UNITS);
    }

    fn scan(body: &[u8], limit: usize) -> Result<ChatReply, InvalidJson> {
        let mut scanner = ReplyScanner::new(limit);
        scanner.push(body)?;
        scanner.finish()
    }

    /// Scans the body whole and split at every byte, and checks all agree.
    fn scan_any_split(body: &str) -> Result<ChatReply, InvalidJson> {
        let whole = scan(body.as_bytes(), 100);
        for at in 1..body.len() {
            let mut scanner = ReplyScanner::new(100);
            let split = scanner
                .push(&body.as_bytes()[..at])
                .and_then(|()| scanner.push(&body.as_bytes()[at..]))
                .and_then(|()| scanner.finish());
            assert_eq!(split, whole, "{body:?} split at {at}");
        }
        whole
    }

    fn content(text: &str) -> Option<Measured> {
        Some(crate::bounded_text::measure(text.as_bytes(), 100))
    }

    #[test]
    fn scanner_keeps_what_json_parse_would_keep() {
        let reply = scan_any_split(
            r#" {"model":"m","created_at":"2024","message":{"role":"assistant",
               "content":" a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00 ","images":null,
               "tool_calls":[{"function":{"content":"not this"}}]},
               "done":true,"total_duration":-1.5e+3,"eval_count":0,"x":[[],{},false]} "#,
        )
        .expect("valid");
        assert_eq!(reply.error, None);
        assert_eq!(reply.content, content("a\"\\/\u{8}\u{C}\n\r\t\u{E9}😀"));
    }

    #[test]
    fn scanner_lets_later_members_win() {
        let reply = scan_any_split(
            r#"{"message":{"content":"first","content":"second"},"error":"x","error":null}"#,
        )
        .expect("valid");
        assert_eq!(reply.content, content("second"));
        assert_eq!(reply.error, None);
        let reply =
            scan_any_split(r#"{"message":{"content":"gone"},"message":{}}"#).expect("valid");
        assert_eq!(reply.content, None);
        let reply = scan_any_split(r#"{"\u0065rror":"escaped key","message":{"content":7}}"#)
            .expect("valid");
        assert_eq!(reply.error.as_deref(), Some("escaped key"));
        assert_eq!(reply.content, None);
        // Only the top-level `message` and `error` count.
        let reply = scan_any_split(r#"{"other":{"error":"no","message":{"content":"no"}}}"#)
            .expect("valid");
        assert_eq!(
            reply,
            ChatReply {
                error: None,
                content: None
            }
        );
    }

    #[test]
    fn scanner_replaces_what_a_string_cannot_hold() {
        let reply = scan_any_split(r#"{"message":{"content":"\ud83d|\ude00|\ud83d\ud83d\ude00"}}"#)
            .expect("valid");
        assert_eq!(reply.content, content("\u{FFFD}|\u{FFFD}|\u{FFFD}😀"));
        let mut body = br#"{"error":"bad "#.to_vec();
        body.extend_from_slice(b"\xFF\xE2\x82\"}");
        let reply = scan(&body, 100).expect("valid");
        assert_eq!(reply.error.as_deref(), Some("bad \u{FFFD}\u{FFFD}"));
        assert_eq!(
            scan(b"\xEF\xBB\xBF{}", 100),
            Ok(ChatReply {
                error: None,
                content: None
            })
        );
    }

    #[test]
    fn scanner_accepts_any_json_value() {
        for body in [
            "0",
            "-0.5e-3",
            "12",
            "\"s\"",
            "true",
            " null ",
            "[1,[2],{}]",
            "{}",
        ] {
            assert!(scan_any_split(body).is_ok(), "{body:?}");
        }
    }

    #[test]
    fn scanner_refuses_what_json_parse_refuses() {
        let invalid = [
            "",
            " ",
            "{",
            "}",
            "{\"a\"}",
            "{\"a\":}",
            "{\"a\":1,}",
            "[1,]",
            "[1 2]",
            "01",
            "1.",
            "-",
            "1e",
            "+1",
            ".5",
            "tru",
            "nul",
            "truex",
            "\"\u{1}\"",
            "\"\\x\"",
            "\"\\u12g4\"",
            "{}x",
            "{} {}",
            "{'a':1}",
            "{\"a\" 1}",
            "{a:1}",
            "[}",
            "{]",
            "\u{FEFF}\u{FEFF}{}",
            "NaN",
            "\"open",
        ];
        for body in invalid {
            assert_eq!(scan(body.as_bytes(), 100), Err(InvalidJson), "{body:?}");
        }
        assert_eq!(scan(b"{\xFF:1}", 100), Err(InvalidJson));
        let deep = format!("{}{}", "[".repeat(2000), "]".repeat(2000));
        assert_eq!(scan(deep.as_bytes(), 100), Err(InvalidJson));
    }

    #[test]
    fn scanner_counts_content_past_its_limit() {
        let reply = scan(br#"{"message":{"content":"  abcdefghij  "}}"#, 4).expect("valid");
        let measured = reply.content.expect("content");
        assert_eq!(measured.trimmed_len, 10);
        assert_eq!(measured.text, "abcd");
    }
}
