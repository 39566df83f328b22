//! The built-in Ollama backend: one `POST {host}/api/chat` to a local (or remote) Ollama
//! server. Reviews take the generic path (diff in the prompt).
//!
//! A call somebody streams (`relayStream()`, `onChunk`) asks for `"stream": true`; the NDJSON
//! answer is read line by line as it arrives (see [`super::ollama_ndjson`]) and each piece of
//! `message.content` goes to the call's chunk sink at once, so the caller gets Ollama's tokens
//! as the model writes them. The sink's backpressure is the body's: while the consumer has 1 MiB
//! unread the body is not read, and the server's writes stall once the socket buffers fill.
//! Any other call asks for `"stream": false`, as upstream's `relay()` does: one JSON object, one
//! write for the server and one line for us, read through the same parser with a larger limit
//! ([`WHOLE_BODY_BYTES`]). Either way the answer is the whole content, trimmed and kept to
//! `MAX_OUTPUT_BYTES` (counted past it).
//!
//! The answer ends at the line with `"done": true`. A body that ends without one (a server that
//! closes the stream cleanly early, or one that ignores `"stream": true` and answers a single
//! object without `done`) answers what arrived, as the non-streamed call did: the content seen,
//! or `Ollama completed without producing output`. A body cut off by a broken connection is a
//! transport failure (`Ollama request failed: …`).

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::activity::Doing;
use crate::backend::{
    Backend, BackendFailure, BackendFuture, BackendResult, Plan, RunRequest, Terms, WindowFuture,
    WindowQuery,
};
use crate::backends::ollama_host;
use crate::backends::ollama_http;
use crate::bounded_text::BoundedText;
use crate::deadline::{Stop, Timeout};
use crate::errors::BackendFailureKind;
use crate::limits::MAX_OUTPUT_BYTES;
use crate::schema::Schema;
use crate::sessions::ResumeStrategy;
use crate::text::is_js_whitespace;

use super::ollama_ndjson::{BadBody, ChatEvent, ChatStream, MAX_LINE_BYTES};

pub const NAME: &str = super::builtin::OLLAMA.name;

/// How long the "is anybody there" probe after a failed request may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// UTF-16 code units of an error body quoted in the message (`body.slice(0, 200)`).
const ERROR_BODY_UNITS: usize = 200;

/// Bytes of an error body read to find its first 200 UTF-16 units: each unit takes at most
/// 3 bytes, and the bytes just after the cut can change how the last ones decode.
const ERROR_BODY_BYTES: usize = 1024;

/// After `"done": true`, how long the rest of the body (normally just the end of the chunked
/// encoding, in the same packet as the last line) is waited for so that the connection can be
/// reused; a server that sends more or stalls has its connection closed instead.
const REST_OF_BODY_WAIT: Duration = Duration::from_millis(100);
const REST_OF_BODY_BYTES: usize = 64 * 1024;

/// The longest body of a `"stream": false` answer: the largest answer a backend may give,
/// JSON-escaped (most text grows by a few percent; the limit allows it to double), plus the
/// reply's other fields. A longer body is refused, never buffered whole.
const WHOLE_BODY_BYTES: usize = 2 * MAX_OUTPUT_BYTES + MAX_LINE_BYTES;

/// Stateless; HTTP connections are kept by the runtime's shared client (see [`client`]).
pub struct OllamaBackend {
    sandboxes: Vec<String>,
}

impl Default for OllamaBackend {
    fn default() -> Self {
        OllamaBackend {
            sandboxes: super::builtin::OLLAMA.sandboxes(),
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

    fn resume_strategy(&self) -> ResumeStrategy {
        ResumeStrategy::TranscriptReplay
    }

    fn model_window(&self, query: WindowQuery) -> Option<WindowFuture> {
        Some(Box::pin(super::ollama_window::model_window(query)))
    }

    fn plan(&self, request: &RunRequest) -> Plan {
        Plan::Http {
            method: "POST",
            url: chat_url(&ollama_host::shown_url(ollama_host_of(request))),
            // Serialising plain strings and an option cannot fail.
            body: serde_json::to_string(&chat_request(request)).unwrap_or_default(),
        }
    }
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    /// The session's earlier turns (a replay, docs/CONTRACT.md §12), then the envelope.
    messages: Vec<ChatMessage<'a>>,
    stream: bool,
    /// Ollama's structured output: the JSON Schema itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<&'a serde_json::Value>,
    /// Only for a fitted call whose prompt the model's default context would not hold
    /// (ollama_window.rs): Ollama would cut it silently.
    #[serde(skip_serializing_if = "Option::is_none")]
    options: Option<ChatOptions>,
}

#[derive(Serialize)]
struct ChatOptions {
    num_ctx: u64,
}

#[derive(Serialize)]
struct ChatMessage<'a> {
    role: &'a str,
    content: &'a str,
}

fn ollama_host_of(request: &RunRequest) -> Option<&str> {
    crate::env::var(&request.terms.env, "OLLAMA_HOST")
}

fn chat_url(base: &str) -> String {
    format!("{base}/api/chat")
}

fn chat_request(request: &RunRequest) -> ChatRequest<'_> {
    let history = request.session.iter().flat_map(|session| &session.history);
    let prompt_bytes = request.prompt.len() + history.map(|turn| turn.content.len()).sum::<usize>();
    ChatRequest {
        model: model(request),
        messages: request
            .session
            .iter()
            .flat_map(|session| &session.history)
            .map(|turn| ChatMessage {
                role: &turn.role,
                content: &turn.content,
            })
            .chain([ChatMessage {
                role: "user",
                content: &request.prompt,
            }])
            .collect(),
        // Watched for stalls, the tokens as they come are its progress.
        stream: request.terms.wants_stream(),
        format: request.terms.schema.as_deref().map(Schema::value),
        options: request
            .terms
            .window
            .and_then(|window| window.context_for(prompt_bytes))
            .map(|num_ctx| ChatOptions { num_ctx }),
    }
}

async fn chat(request: &RunRequest) -> BackendResult {
    let base = ollama_host::request_url(ollama_host_of(request));
    let body = chat_request(request);
    let client = ollama_http::client()
        .map_err(|err| failed(format!("Ollama request failed: {}", detail(&err))))?;
    let exchange = exchange(&client, &base, &body, &request.terms);
    match tokio::time::timeout(request.terms.deadline.remaining(), exchange).await {
        Ok(Ok(result)) => result,
        Ok(Err(err)) => {
            // The probe, too, ends with the call's deadline.
            match request
                .terms
                .deadline
                .bound(transport_failure(&client, request, &base, &err))
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
        format!(
            "Ollama timed out after {}s",
            request.terms.timeout.display()
        ),
    )
}

/// `model`, else `OLLAMA_MODEL` from the relay's environment. As in the original (`model ??
/// env.OLLAMA_MODEL`, then `if (model)`): `model: ''` sends no model, and so does an empty
/// `OLLAMA_MODEL`.
fn model(request: &RunRequest) -> Option<&str> {
    request
        .terms
        .model
        .as_deref()
        .or_else(|| crate::env::var(&request.terms.env, "OLLAMA_MODEL"))
        .filter(|model| !model.is_empty())
}

/// The request and its answer; `Err` only for transport failures, which need the probe.
async fn exchange(
    client: &reqwest::Client,
    base: &str,
    body: &ChatRequest<'_>,
    terms: &Terms,
) -> Result<BackendResult, reqwest::Error> {
    let (chunks, progress) = (&terms.chunks, &terms.progress);
    terms.activity.doing(Doing::Thinking);
    let mut response = client.post(chat_url(base)).json(body).send().await?;
    let status = response.status();
    if !status.is_success() {
        return http_error(response, status).await;
    }
    let streamed = body.stream;
    let mut lines = ChatStream::new(if streamed {
        MAX_LINE_BYTES
    } else {
        WHOLE_BODY_BYTES
    });
    let mut events = Vec::new();
    let mut answer = BoundedText::new(MAX_OUTPUT_BYTES);
    // Whether text that is not whitespace was streamed.
    let mut streaming = false;
    loop {
        // While `send` below waits for the consumer, the body is not read: backpressure.
        let bytes = tokio::select! {
            bytes = response.chunk() => bytes?,
            after = progress.stalled() => return Ok(Err(stalled(after, answer))),
        };
        progress.touch();
        let read = match &bytes {
            Some(bytes) => lines.push(bytes, &mut events),
            None => lines.finish(&mut events),
        };
        for event in events.drain(..) {
            match event {
                ChatEvent::Content(mut text) => {
                    answer.push(text.as_bytes());
                    terms.activity.wrote(text.len());
                    if !streaming {
                        // The stream starts where the answer does (as gemini's): the
                        // whitespace before the first text is not sent.
                        let skipped = text.len() - text.trim_start_matches(is_js_whitespace).len();
                        text.drain(..skipped);
                        streaming = !text.is_empty();
                    }
                    // The consumer's pace is not Ollama's.
                    let paused = progress.pause();
                    chunks.send(text).await;
                    drop(paused);
                }
                ChatEvent::Error(error) => {
                    return Ok(Err(failed(format!("Ollama error: {error}"))))
                }
                ChatEvent::Counted(reported) => terms.report.record(reported),
                ChatEvent::Done => {
                    read_rest_of_body(&mut response).await;
                    return Ok(settle(answer));
                }
            }
        }
        if let Err(bad) = read {
            return Ok(Err(bad_body(bad, status, streamed)));
        }
        if bytes.is_none() {
            let_the_connection_return_to_the_pool().await;
            return Ok(settle(answer));
        }
    }
}

/// A reply that is not a success: its status and the start of its body.
async fn http_error(
    mut response: reqwest::Response,
    status: reqwest::StatusCode,
) -> Result<BackendResult, reqwest::Error> {
    // When to come back (a 429, a 503), in seconds: said beside the message, which is the
    // original's (docs/ERRORS.md, `retryAfterSeconds`).
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u32>().ok());
    let head = ollama_http::read_head(&mut response, ERROR_BODY_BYTES).await?;
    let start = error_body_start(&head);
    // As the original's `${body ? `: ${body.slice(0, 200)}` : ''}`: no colon for no body.
    let separator = if start.is_empty() { "" } else { ": " };
    let message = format!("Ollama returned HTTP {}{separator}{start}", status.as_u16());
    Ok(Err(match retry_after {
        Some(seconds) => BackendFailure::with_words(
            BackendFailureKind::Failed,
            message,
            &format!("Retry-After: {seconds}"),
        ),
        None => failed(message),
    }))
}

/// Reads what follows the last line for a moment, so that the connection, its response
/// complete, goes back to the pool; anything else closes it (when `response` is dropped).
async fn read_rest_of_body(response: &mut reqwest::Response) {
    let drain = async {
        let mut left = REST_OF_BODY_BYTES;
        while let Ok(Some(bytes)) = response.chunk().await {
            let Some(still) = left.checked_sub(bytes.len()) else {
                return;
            };
            left = still;
        }
    };
    let _ = tokio::time::timeout(REST_OF_BODY_WAIT, drain).await;
    let_the_connection_return_to_the_pool().await;
}

/// A connection whose response is complete goes back to the pool in a task of its own; this
/// lets that task run before the caller can start the next request, which would otherwise open
/// a second connection when it finds the pool empty. (On a multi-threaded runtime that task may
/// still be late; the next request then opens one more connection, and sequential requests
/// alternate between the two from then on.)
async fn let_the_connection_return_to_the_pool() {
    tokio::task::yield_now().await;
}

fn bad_body(bad: BadBody, status: reqwest::StatusCode, streamed: bool) -> BackendFailure {
    match (bad, streamed) {
        (BadBody::InvalidJson, _) => failed(format!(
            "Ollama returned invalid JSON (HTTP {})",
            status.as_u16()
        )),
        (BadBody::LineTooLong, true) => failed(format!(
            "Ollama returned an NDJSON line longer than {MAX_LINE_BYTES} bytes (HTTP {})",
            status.as_u16()
        )),
        (BadBody::LineTooLong, false) => failed(format!(
            "Ollama returned an answer longer than {WHOLE_BODY_BYTES} bytes (HTTP {})",
            status.as_u16()
        )),
    }
}

/// The trimmed answer, or why there is none.
fn settle(answer: BoundedText) -> BackendResult {
    let answer = answer.finish();
    if answer.trimmed_len == 0 {
        return Err(BackendFailure::reported(
            BackendFailureKind::NoOutput,
            "Ollama completed without producing output",
        ));
    }
    super::cli::within_output_limit(answer)
}

/// Tells "no server there" from "the server broke the request" with a quick `GET /api/tags`.
async fn transport_failure(
    client: &reqwest::Client,
    request: &RunRequest,
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
                "Ollama server not reachable at {}. Is Ollama running? Install: {}",
                ollama_host::shown_url(ollama_host_of(request)),
                super::builtin::OLLAMA.install
            ),
        ),
    }
}

/// Marked stalled (`idleTimeoutSeconds`): what it had answered goes with the failure.
fn stalled(after: Timeout, answer: BoundedText) -> BackendFailure {
    BackendFailure::reported(
        BackendFailureKind::Stalled,
        format!(
            "Ollama made no progress for {}s (idleTimeoutSeconds)",
            after.display()
        ),
    )
    .with_partial(Some(answer.finish().text))
}

fn failed(message: String) -> BackendFailure {
    BackendFailure::reported(BackendFailureKind::Failed, message)
}

/// The error with its causes: reqwest's own text names only the URL, the cause says what broke.
/// The URL's user and password are masked.
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
    crate::secrets::mask_secrets(&text).into_owned()
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
    use crate::backend::ReviewRequest;
    use crate::deadline::Timeout;
    use crate::env::Env;
    use crate::stream::{chunk_channel, ChunkSource};
    use crate::test_http::{Event, Piece, Reply, TestServer};
    use std::sync::{Arc, Mutex};
    use std::time::Instant;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    const NOT_REACHABLE: &str = "Is Ollama running? Install: https://ollama.com/download";

    fn request(host: &str, timeout_seconds: f64) -> RunRequest {
        let mut env = Env::new();
        env.insert("OLLAMA_HOST".into(), host.into());
        env.insert("PATH".into(), "/usr/bin".into());
        RunRequest {
            prompt: "What is 2+2?".into(),
            terms: terms(env, timeout_seconds),
            session: None,
        }
    }

    fn terms(env: Env, timeout_seconds: f64) -> crate::backend::Terms {
        crate::backend::Terms::for_tests("/tmp", timeout_seconds, env, None)
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
                ..
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
            terms: terms(Env::new(), 1.0),
            base: "main".into(),
            prompt: None,
        };
        assert!(backend.review(&review, CancellationToken::new()).is_none());
    }

    #[tokio::test]
    async fn posts_the_prompt_and_answers_the_trimmed_content() {
        let server = TestServer::start(|_| chat_reply("\u{FEFF}\n  4 \u{3000}\r\n")).await;
        let mut req = request(&server.url(), 30.0);
        req.terms.model = Some("llama3.2".into());
        req.terms
            .env
            .insert("OLLAMA_MODEL".into(), "ignored".into());
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
    async fn asks_for_a_stream_only_when_somebody_streams() {
        let server = TestServer::start(|_| chat_reply("4")).await;
        let (running, source) =
            start_streaming(request(&server.url(), 30.0), &CancellationToken::new());
        let (chunks, result, _) = collect(running, source).await;
        assert_eq!((texts(&chunks), result), (vec!["4"], Ok("4".to_string())));
        assert_eq!(run(request(&server.url(), 30.0)).await, Ok("4".to_string()));
        let streams: Vec<serde_json::Value> = server
            .received()
            .iter()
            .map(|r| {
                serde_json::from_slice::<serde_json::Value>(&r.body).expect("JSON")["stream"]
                    .clone()
            })
            .collect();
        assert_eq!(streams, [true, false]);
    }

    #[tokio::test]
    async fn takes_the_model_from_ollama_model_else_sends_none() {
        let server = TestServer::start(|_| chat_reply("ok")).await;
        let mut with_env = request(&server.url(), 30.0);
        with_env
            .terms
            .env
            .insert("OLLAMA_MODEL".into(), "qwen2.5-coder".into());
        assert_eq!(run(with_env).await, Ok("ok".to_string()));
        assert_eq!(
            run(request(&server.url(), 30.0)).await,
            Ok("ok".to_string())
        );
        // `model: ''` is no model at all, not "fall back to OLLAMA_MODEL" (the original's `??`).
        let mut emptied = request(&server.url(), 30.0);
        emptied.terms.model = Some(String::new());
        emptied
            .terms
            .env
            .insert("OLLAMA_MODEL".into(), "ignored".into());
        assert_eq!(run(emptied).await, Ok("ok".to_string()));
        let bodies: Vec<serde_json::Value> = server
            .received()
            .iter()
            .map(|r| serde_json::from_slice(&r.body).expect("JSON request"))
            .collect();
        assert_eq!(bodies[0]["model"], "qwen2.5-coder");
        assert_eq!(bodies[1].get("model"), None);
        assert_eq!(bodies[1]["stream"], false);
        assert_eq!(bodies[1]["messages"][0]["content"], "What is 2+2?");
        assert_eq!(bodies[2].get("model"), None);
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
    async fn sends_a_user_and_password_as_basic_auth_and_never_shows_them() {
        let server = TestServer::start(|_| chat_reply("4")).await;
        let host = format!("http://user:PW@127.0.0.1:{}", server.port);
        assert_eq!(run(request(&host, 30.0)).await, Ok("4".to_string()));
        let received = server.received();
        // base64("user:PW")
        assert_eq!(
            received[0].authorization.as_deref(),
            Some("Basic dXNlcjpQVw==")
        );
        assert_eq!(received[0].path, "/api/chat");

        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("local address").port();
        drop(listener);
        for host in [
            format!("http://user:PW@127.0.0.1:{port}"),
            format!("user:PW@127.0.0.1:{port}"),
            format!("http://PW@127.0.0.1:{port}"),
        ] {
            let (_, message) = reported(run(request(&host, 30.0)).await);
            assert_eq!(
                message,
                format!(
                    "Ollama server not reachable at http://********@127.0.0.1:{port}. {NOT_REACHABLE}"
                ),
                "{host}"
            );
        }
        let plan = OllamaBackend::default().plan(&request("https://:PW@[::1]:9/x", 30.0));
        let Plan::Http { url, .. } = plan else {
            panic!("an HTTP plan");
        };
        assert_eq!(url, "https://********@[::1]:9/x/api/chat");
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

    /// One line as a real Ollama streams it.
    fn token_line(content: &str) -> Vec<u8> {
        let line = serde_json::json!({
            "model": "llama3.2",
            "created_at": "2024-07-01T10:00:00.123456Z",
            "message": { "role": "assistant", "content": content },
            "done": false,
        });
        format!("{line}\n").into_bytes()
    }

    /// A real Ollama's last line: empty content, `done`, statistics.
    fn done_line() -> Vec<u8> {
        let line = serde_json::json!({
            "model": "llama3.2",
            "created_at": "2024-07-01T10:00:01.123456Z",
            "message": { "role": "assistant", "content": "" },
            "done": true,
            "done_reason": "stop",
            "total_duration": 4_883_583_458_u64,
            "load_duration": 1_334_875,
            "prompt_eval_count": 26,
            "prompt_eval_duration": 342_546_000,
            "eval_count": 282,
            "eval_duration": 4_535_599_000_u64,
        });
        format!("{line}\n").into_bytes()
    }

    fn piece(after_ms: u64, bytes: Vec<u8>) -> Piece {
        Piece {
            after: Duration::from_millis(after_ms),
            bytes,
        }
    }

    /// `tokens`, one line (one write) each `gap_ms` apart, then the done line.
    fn streamed(tokens: &[&str], gap_ms: u64) -> Reply {
        let mut pieces: Vec<Piece> = tokens
            .iter()
            .map(|token| piece(gap_ms, token_line(token)))
            .collect();
        pieces.push(piece(gap_ms, done_line()));
        Reply::Ndjson(pieces)
    }

    /// Starts a run whose text goes to the returned source.
    fn start_streaming(
        mut req: RunRequest,
        cancel: &CancellationToken,
    ) -> (tokio::task::JoinHandle<BackendResult>, ChunkSource) {
        let (sink, source) = chunk_channel();
        req.terms.chunks = sink;
        let running = tokio::spawn(Arc::new(OllamaBackend::default()).run(req, cancel.clone()));
        (running, source)
    }

    /// Every chunk with when it came, then the run's result and when it ended.
    async fn collect(
        running: tokio::task::JoinHandle<BackendResult>,
        mut source: ChunkSource,
    ) -> (Vec<(String, Instant)>, BackendResult, Instant) {
        let mut chunks = Vec::new();
        while let Some(chunk) = source.next().await {
            chunks.push((chunk.text, Instant::now()));
        }
        let result = running.await.expect("no panic");
        (chunks, result, Instant::now())
    }

    fn texts(chunks: &[(String, Instant)]) -> Vec<&str> {
        chunks.iter().map(|(text, _)| text.as_str()).collect()
    }

    #[tokio::test]
    async fn streams_each_token_as_it_arrives_and_answers_the_trimmed_whole() {
        let tokens = ["\n", "  The", " sky", " is", " blue. \n"];
        let server = TestServer::start(move |_| streamed(&tokens, 80)).await;
        let (running, source) =
            start_streaming(request(&server.url(), 30.0), &CancellationToken::new());
        let (chunks, result, ended) = collect(running, source).await;
        assert_eq!(result, Ok("The sky is blue.".to_string()));
        // The whitespace before the first text is not streamed; the rest is, as it came.
        assert_eq!(texts(&chunks), ["The", " sky", " is", " blue. \n"]);
        // The first token comes as it is written, not with the rest (3 more lines, 80 ms apart).
        let first = chunks[0].1;
        assert!(
            ended.duration_since(first) >= Duration::from_millis(200),
            "{:?}",
            ended.duration_since(first)
        );
        // Without a consumer the same body gives the same answer.
        assert_eq!(
            run(request(&server.url(), 30.0)).await,
            Ok("The sky is blue.".to_string())
        );
    }

    #[tokio::test]
    async fn watched_for_stalls_it_streams_and_a_silent_server_stalls_with_the_partial_answer() {
        let server = TestServer::start(|_| {
            Reply::Ndjson(vec![
                piece(0, token_line("The sky")),
                piece(100, token_line(" is")),
                // Then nothing for far longer than the idle time-out.
                piece(20_000, done_line()),
            ])
        })
        .await;
        let mut req = request(&server.url(), 30.0);
        let limit = Timeout::from_seconds(0.3).expect("valid");
        req.terms.progress = crate::progress::Progress::watching(limit);
        let progress = req.terms.progress.clone();
        let watchdog = tokio::spawn(async move {
            progress.idle().await;
            progress.stall();
        });
        let started = Instant::now();
        let (kind, message, partial) = match run(req).await {
            Err(BackendFailure::Reported {
                kind,
                message,
                partial,
                ..
            }) => (kind, message, partial),
            other => panic!("expected a stall, got {other:?}"),
        };
        assert_eq!(kind, BackendFailureKind::Stalled);
        assert_eq!(
            message,
            "Ollama made no progress for 0.3s (idleTimeoutSeconds)"
        );
        assert_eq!(partial.as_deref(), Some("The sky is"));
        assert!(started.elapsed() < Duration::from_secs(5));
        let _ = watchdog.await;
        // Its tokens are its progress, so it asked for them streamed.
        let body: serde_json::Value =
            serde_json::from_slice(&server.received()[0].body).unwrap_or_default();
        assert_eq!(body["stream"], true);
    }

    #[tokio::test]
    async fn a_character_split_across_two_writes_arrives_whole() {
        let line = token_line("a😀b");
        let split = line
            .windows(4)
            .position(|w| w == "😀".as_bytes())
            .expect("the emoji")
            + 2;
        let server = TestServer::start(move |_| {
            Reply::Ndjson(vec![
                piece(0, line[..split].to_vec()),
                piece(30, line[split..].to_vec()),
                piece(0, token_line("é")),
                piece(0, done_line()),
            ])
        })
        .await;
        let (running, source) =
            start_streaming(request(&server.url(), 30.0), &CancellationToken::new());
        let (chunks, result, _) = collect(running, source).await;
        assert_eq!(texts(&chunks), ["a😀b", "é"]);
        assert_eq!(result, Ok("a😀bé".to_string()));
    }

    #[tokio::test]
    async fn an_error_line_mid_stream_fails_the_run() {
        let server = TestServer::start(|_| {
            Reply::Ndjson(vec![
                piece(0, token_line("partial")),
                piece(10, br#"{"error":"an error was encountered while running the model: unexpected EOF"}"#.to_vec()),
                piece(0, b"\n".to_vec()),
            ])
        })
        .await;
        let (running, source) =
            start_streaming(request(&server.url(), 30.0), &CancellationToken::new());
        let (chunks, result, _) = collect(running, source).await;
        assert_eq!(texts(&chunks), ["partial"]);
        assert_eq!(
            reported(result),
            (
                BackendFailureKind::Failed,
                "Ollama error: an error was encountered while running the model: unexpected EOF"
                    .to_string()
            )
        );
    }

    #[tokio::test]
    async fn a_body_that_ends_without_done_answers_what_arrived() {
        let server = TestServer::start(|_| {
            Reply::Ndjson(vec![
                piece(0, token_line("cut ")),
                piece(0, token_line("short")),
            ])
        })
        .await;
        assert_eq!(
            run(request(&server.url(), 30.0)).await,
            Ok("cut short".to_string())
        );
    }

    #[tokio::test]
    async fn nothing_after_the_done_line_counts() {
        let server = TestServer::start(|_| {
            Reply::Ndjson(vec![
                piece(0, token_line("kept")),
                piece(0, done_line()),
                piece(0, token_line(" dropped")),
                piece(0, b"not json\n".to_vec()),
            ])
        })
        .await;
        assert_eq!(
            run(request(&server.url(), 30.0)).await,
            Ok("kept".to_string())
        );
    }

    #[tokio::test]
    async fn refuses_a_streamed_line_past_the_line_limit() {
        let server = TestServer::start(|_| chat_reply(&"x".repeat(MAX_LINE_BYTES))).await;
        let (running, source) =
            start_streaming(request(&server.url(), 30.0), &CancellationToken::new());
        let (_, result, _) = collect(running, source).await;
        assert_eq!(
            reported(result),
            (
                BackendFailureKind::Failed,
                "Ollama returned an NDJSON line longer than 1048576 bytes (HTTP 200)".to_string()
            )
        );
        // Not streamed, the same reply is one answer of 1 MiB.
        let answer = run(request(&server.url(), 30.0)).await.expect("an answer");
        assert_eq!(answer.len(), MAX_LINE_BYTES);
    }

    #[tokio::test]
    async fn refuses_a_whole_body_past_its_limit() {
        let (kind, message) =
            answered_with(chat_reply(&"\u{1}".repeat(WHOLE_BODY_BYTES / 6 + 1))).await;
        assert_eq!(kind, BackendFailureKind::Failed);
        assert_eq!(
            message,
            format!("Ollama returned an answer longer than {WHOLE_BODY_BYTES} bytes (HTTP 200)")
        );
    }

    /// `total` bytes of `byte` as content, in lines of 64 KiB, then the done line.
    fn streamed_content(byte: char, total: usize) -> Reply {
        let token = byte.to_string().repeat(64 * 1024);
        let mut pieces = Vec::new();
        let mut left = total;
        while left > 0 {
            let take = left.min(token.len());
            pieces.push(piece(0, token_line(&token[..take])));
            left -= take;
        }
        pieces.push(piece(0, done_line()));
        Reply::Ndjson(pieces)
    }

    #[tokio::test]
    async fn refuses_an_answer_over_the_output_limit() {
        let (kind, message) = answered_with(streamed_content('x', MAX_OUTPUT_BYTES + 1)).await;
        assert_eq!(kind, BackendFailureKind::OutputTooLarge);
        assert_eq!(
            message,
            "Backend output is too large (8388609 bytes; max 8388608 bytes)"
        );
    }

    #[tokio::test]
    async fn counts_the_answer_not_the_escaped_body() {
        // Every `"` is escaped, so the body is twice the limit while the answer just fits.
        let server = TestServer::start(move |_| streamed_content('"', MAX_OUTPUT_BYTES)).await;
        let answer = run(request(&server.url(), 30.0)).await.expect("an answer");
        assert_eq!(answer.len(), MAX_OUTPUT_BYTES);
        assert!(answer.bytes().all(|b| b == b'"'));
    }

    #[tokio::test]
    async fn cancelling_mid_stream_drops_the_request_at_once() {
        let tokens = ["tick "; 200];
        let mut server = TestServer::start(move |_| streamed(&tokens, 50)).await;
        let cancel = CancellationToken::new();
        let (running, mut source) = start_streaming(request(&server.url(), 600.0), &cancel);
        assert_eq!(server.next_event().await, Some(Event::Request));
        let first = source.next().await.expect("a first chunk");
        assert_eq!(first.text, "tick ");
        let cancelled_at = Instant::now();
        cancel.cancel();
        let result = tokio::time::timeout(Duration::from_secs(1), running)
            .await
            .expect("resolves promptly")
            .expect("no panic");
        assert_eq!(result, Err(BackendFailure::Cancelled));
        assert_eq!(server.next_event().await, Some(Event::HungUp));
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(1),
            "{:?}",
            cancelled_at.elapsed()
        );
    }

    #[tokio::test]
    async fn a_consumer_that_never_reads_stops_the_body_being_read() {
        let mut server =
            TestServer::start(|_| Reply::Flood(token_line(&"z".repeat(64 * 1024)))).await;
        let cancel = CancellationToken::new();
        let (running, mut source) = start_streaming(request(&server.url(), 60.0), &cancel);
        // Wait until the server's writes stall: nothing more taken for 300 ms.
        let started = Instant::now();
        let mut last = 0;
        let stalled_at = loop {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let now = server.written();
            if now > 0 && now == last {
                break now;
            }
            last = now;
            assert!(started.elapsed() < Duration::from_secs(10), "never stalled");
        };
        let mut queued = 0;
        while let Some(chunk) = source.try_next() {
            queued += chunk.text.len();
        }
        eprintln!(
            "unread consumer: the server wrote {stalled_at} bytes of body before stalling; \
             {queued} bytes of text waited in the chunk queue"
        );
        // 1 MiB waits for the consumer; the rest is in the client's and the kernel's buffers.
        assert_eq!(queued, crate::stream::MAX_UNREAD_BYTES);
        assert!(stalled_at < 32 * 1024 * 1024, "{stalled_at}");
        assert!(!running.is_finished());
        cancel.cancel();
        assert_eq!(
            running.await.expect("no panic"),
            Err(BackendFailure::Cancelled)
        );
        assert_eq!(server.next_event().await, Some(Event::Request));
        assert_eq!(server.next_event().await, Some(Event::HungUp));
    }

    #[tokio::test]
    async fn sequential_runs_reuse_one_connection() {
        let server = TestServer::start(|_| streamed(&["re", "used"], 0)).await;
        for _ in 0..20 {
            assert_eq!(
                run(request(&server.url(), 30.0)).await,
                Ok("reused".to_string())
            );
        }
        assert_eq!(server.received().len(), 20);
        // Usually 1. A connection returns to the pool in a task of its own once its answer is
        // read: when the next run checks the pool before that task has run (a busy machine), it
        // opens a second one, and from then on one of the two is always idle.
        let connections = server.connections();
        assert!((1..=2).contains(&connections), "{connections} connections");
    }

    #[tokio::test]
    async fn a_kept_alive_connection_the_server_closed_is_not_reused() {
        let server = TestServer::start(|_| {
            Reply::NdjsonThenClose(vec![piece(0, token_line("fresh")), piece(0, done_line())])
        })
        .await;
        for _ in 0..3 {
            assert_eq!(
                run(request(&server.url(), 30.0)).await,
                Ok("fresh".to_string())
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(server.connections(), 3);
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
}
