//! The process's stdin and stdout as the server's transport, from inside a Node process.
//!
//! The server takes fd 0 and 1 for itself: it keeps private duplicates and puts `/dev/null` in
//! place of stdin and stderr in place of stdout, so nothing else in the process (a stray
//! `console.log`, a child that inherits them) can read the client's messages or write into the
//! protocol stream. Each duplicate is served by a thread of its own doing plain blocking I/O
//! (waiting in `poll` should Node have made the file description non-blocking): never the JS
//! thread, and never tokio's blocking pool, whose shutdown would wait on a read that cannot be
//! cancelled. The threads hand bytes to the runtime through in-memory pipes.
//!
//! On Windows there is no such swap: Node's streams hold the C runtime's descriptors of
//! another C runtime than this library's. The threads serve private duplicates of the
//! standard handles the same way; what else in the host writes to its stdout reaches the client,
//! so the host must not, while it serves. A handle in no-wait mode is retried after a short
//! sleep.
//!
//! The stdin thread passes on whole lines of JSON only. rmcp drops a line that is not JSON, or
//! longer than it takes, without a word, and answers a request whose `params` are not an object
//! with no id at all: a client would wait for its answer forever. Such a line is answered here,
//! as JSON-RPC asks, with the request's id whenever it can be read (else null): from the start of
//! a line too long to take, or from its end (the TypeScript SDK writes `id` last).

use std::fs::File;
use std::io::{self, Read, Write};
#[cfg(unix)]
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use std::sync::LazyLock;

use regex::bytes::Regex;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncWrite, AsyncWriteExt, ReadHalf, SimplexStream, WriteHalf};
use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::PollSender;

/// Bytes in flight from the stdin thread to the server.
const PIPE_BYTES: usize = 64 * 1024;
/// Writes in flight from the server to the stdout thread; past that the server waits.
const WRITES_IN_FLIGHT: usize = 16;
/// The longest message taken, without its newline: the largest relay (a 500 kB prompt, 200 kB
/// of context and a schema, each up to six times longer in JSON's escapes) fits well. rmcp
/// itself drops lines past 16 MiB.
pub const MAX_MESSAGE_BYTES: usize = 8 * 1024 * 1024;
/// JSON-RPC's codes for a line that is not JSON, and for a message refused as such.
const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;
const INVALID_PARAMS: i32 = -32602;
/// How much of the start and of the end of a line too long to take is kept to read its id.
const ID_WINDOW: usize = 4096;
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// The server's ends of the process's stdin and stdout.
pub struct ProcessStdio {
    pub reader: ReadHalf<SimplexStream>,
    pub writer: ChannelWriter,
    /// Resolves once everything the server wrote reached fd 1 (or fd 1 broke).
    pub flushed: oneshot::Receiver<()>,
}

/// Takes fd 0 and 1 (see the module) and starts their threads. Must run on `handle`'s runtime
/// or beside it; call it once per process.
pub fn take_process_stdio(handle: &Handle) -> io::Result<ProcessStdio> {
    let (input, output) = take_standard_streams()?;
    let (reader, to_server) = tokio::io::simplex(PIPE_BYTES);
    let (sender, from_server) = mpsc::channel(WRITES_IN_FLIGHT);
    // Weak: the stdout thread ends once the server drops its writer, whatever stdin does.
    let replies = sender.downgrade();
    let writer = ChannelWriter(PollSender::new(sender));
    let (done, flushed) = oneshot::channel();
    let runtime = handle.clone();
    std::thread::Builder::new()
        .name("mcp-stdin".into())
        .spawn(move || pump_in(input, to_server, &replies, &runtime))?;
    std::thread::Builder::new()
        .name("mcp-stdout".into())
        .spawn(move || {
            pump_out(from_server, output);
            let _ = done.send(());
        })?;
    Ok(ProcessStdio {
        reader,
        writer,
        flushed,
    })
}

/// Private duplicates of fd 0 and 1; `/dev/null` is put in place of stdin, stderr of stdout.
#[cfg(unix)]
fn take_standard_streams() -> io::Result<(File, File)> {
    let input = duplicate(0)?;
    let output = duplicate(1)?;
    let null = File::open("/dev/null")?;
    replace(null.as_raw_fd(), 0)?;
    replace(2, 1)?;
    Ok((File::from(input), File::from(output)))
}

/// Private duplicates of the standard input and output handles (see the module).
#[cfg(windows)]
fn take_standard_streams() -> io::Result<(File, File)> {
    use std::os::windows::io::AsHandle;
    let input = io::stdin().as_handle().try_clone_to_owned()?;
    let output = io::stdout().as_handle().try_clone_to_owned()?;
    Ok((File::from(input), File::from(output)))
}

/// A close-on-exec duplicate of `fd`, numbered 3 or higher.
#[cfg(unix)]
fn duplicate(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC only reads `fd` and returns a new descriptor or -1.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `copy` is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(copy) })
}

/// Makes `target` refer to what `source` refers to.
#[cfg(unix)]
fn replace(source: RawFd, target: RawFd) -> io::Result<()> {
    // SAFETY: dup2 on two descriptors of this process; it cannot touch memory.
    if unsafe { libc::dup2(source, target) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Which way a stream is waited on.
#[derive(Clone, Copy)]
enum Ready {
    Read,
    Write,
}

/// Waits until `file` is ready (a non-blocking descriptor said EAGAIN).
#[cfg(unix)]
fn wait_ready(file: &File, ready: Ready) {
    let events = match ready {
        Ready::Read => libc::POLLIN,
        Ready::Write => libc::POLLOUT,
    };
    let mut poll = libc::pollfd {
        fd: file.as_raw_fd(),
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd; an error or a hang-up is seen by the next read or write.
    unsafe { libc::poll(&mut poll, 1, -1) };
}

/// Waits a little before the next try (a pipe in no-wait mode said it would block): Windows
/// has no `poll` for anonymous pipes. Only this stream's own thread waits.
#[cfg(windows)]
fn wait_ready(_file: &File, _ready: Ready) {
    std::thread::sleep(std::time::Duration::from_millis(5));
}

/// stdin to the server, until end of file or an error; then the server sees the end. A line
/// that is not a message is answered on stdout instead (see the module).
fn pump_in(
    mut input: File,
    mut to_server: WriteHalf<SimplexStream>,
    replies: &mpsc::WeakSender<Vec<u8>>,
    runtime: &Handle,
) {
    let mut buffer = vec![0u8; PIPE_BYTES];
    let mut lines = Lines::new(MAX_MESSAGE_BYTES);
    let mut sorted = Vec::new();
    'reading: loop {
        let read = match input.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                wait_ready(&input, Ready::Read);
                continue;
            }
            Err(_) => break,
        };
        lines.push(&buffer[..read], &mut sorted);
        for line in sorted.drain(..) {
            match line {
                Line::Message(message) => {
                    if runtime.block_on(to_server.write_all(&message)).is_err() {
                        break 'reading;
                    }
                }
                // Nobody to answer once the server has stopped writing.
                Line::Reply(reply) => {
                    if let Some(stdout) = replies.upgrade() {
                        let _ = stdout.blocking_send(reply);
                    }
                }
            }
        }
    }
    // An unfinished last line: the server's to drop, as before.
    let _ = runtime.block_on(to_server.write_all(lines.rest()));
    let _ = runtime.block_on(to_server.shutdown());
}

/// What a line of stdin is for.
#[derive(Debug, PartialEq)]
enum Line {
    /// A message for the server, its newline included.
    Message(Vec<u8>),
    /// The answer to a line that is no message, a line of its own.
    Reply(Vec<u8>),
}

/// Cuts stdin into lines, keeping at most `max` bytes of one: past that, the rest of the line
/// is skipped as it comes.
struct Lines {
    line: Vec<u8>,
    max: usize,
    skipping: bool,
    /// While skipping a line whose start named no id: its last bytes, where the id may be.
    tail: Option<Vec<u8>>,
}

impl Lines {
    fn new(max: usize) -> Lines {
        Lines {
            line: Vec::new(),
            max,
            skipping: false,
            tail: None,
        }
    }

    fn too_long(&self, id: Option<serde_json::Value>) -> Line {
        Line::Reply(error_reply(
            INVALID_REQUEST,
            &format!(
                "Invalid Request: a message must be at most {} bytes, on one line",
                self.max
            ),
            id,
        ))
    }

    /// Takes the next bytes of stdin; each line they end goes to `out`.
    fn push(&mut self, mut bytes: &[u8], out: &mut Vec<Line>) {
        while !bytes.is_empty() {
            let end = bytes.iter().position(|b| *b == b'\n');
            let (part, rest) = bytes.split_at(end.map_or(bytes.len(), |at| at + 1));
            bytes = rest;
            let ended = end.is_some();
            if self.skipping {
                if let Some(tail) = &mut self.tail {
                    keep_end(tail, part);
                }
                self.skipping = !ended;
                if ended {
                    if let Some(tail) = self.tail.take() {
                        out.push(self.too_long(id_at_end(&tail)));
                    }
                }
                continue;
            }
            let length = self.line.len() + part.len() - usize::from(ended);
            if length > self.max {
                let mut start = std::mem::take(&mut self.line);
                start.extend_from_slice(&part[..part.len().min(ID_WINDOW)]);
                self.skipping = !ended;
                let start = &start[..start.len().min(ID_WINDOW)];
                match id_at_start(start) {
                    // Answered at once: its end may be long in coming.
                    Some(id) => out.push(self.too_long(Some(id))),
                    // Not an object: no id anywhere, so no reason to wait for its end either.
                    None if !starts_an_object(start) => out.push(self.too_long(None)),
                    None if ended => {
                        let mut tail = Vec::new();
                        keep_end(&mut tail, part);
                        out.push(self.too_long(id_at_end(&tail)));
                    }
                    None => {
                        let mut tail = Vec::new();
                        keep_end(&mut tail, part);
                        self.tail = Some(tail);
                    }
                }
                continue;
            }
            self.line.extend_from_slice(part);
            if ended {
                let line = std::mem::take(&mut self.line);
                if let Some(sorted) = sort(line) {
                    out.push(sorted);
                }
            }
        }
    }

    /// What follows the last newline.
    fn rest(&self) -> &[u8] {
        &self.line
    }
}

/// Appends `bytes` to `tail`, keeping its last [`ID_WINDOW`] bytes.
fn keep_end(tail: &mut Vec<u8>, bytes: &[u8]) {
    tail.extend_from_slice(&bytes[bytes.len().saturating_sub(ID_WINDOW)..]);
    let excess = tail.len().saturating_sub(ID_WINDOW);
    tail.drain(..excess);
}

/// A JSON-RPC id: a number or a string.
const ID: &str = r#"(-?[0-9]{1,20}|"(?:[^"\\]|\\.){0,256}")"#;

/// `"id"` among the first members of a message, before any whose value is not a plain string
/// or number (`params`), so an `id` inside `params` is never taken for the request's.
static ID_AT_START: LazyLock<Regex> = LazyLock::new(|| {
    let member = r#""(?:jsonrpc|method)"\s*:\s*"(?:[^"\\]|\\.){0,256}"\s*,\s*"#;
    Regex::new(&format!(r#"^\s*\{{\s*(?:{member})*"id"\s*:\s*{ID}"#))
        .unwrap_or_else(|_| unreachable!("a constant pattern"))
});

/// `"id"` as the last member of a message (or just before a last `"jsonrpc"`): a nested
/// object's `id` would be followed by more than one closing brace.
static ID_AT_END: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r#"[,{{]\s*"id"\s*:\s*{ID}\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}}\s*$"#
    ))
    .unwrap_or_else(|_| unreachable!("a constant pattern"))
});

fn id_at_start(start: &[u8]) -> Option<serde_json::Value> {
    let start = start.strip_prefix(UTF8_BOM).unwrap_or(start);
    let found = ID_AT_START.captures(start)?.get(1)?;
    serde_json::from_slice(found.as_bytes()).ok()
}

fn starts_an_object(start: &[u8]) -> bool {
    let start = start.strip_prefix(UTF8_BOM).unwrap_or(start);
    start.trim_ascii_start().first() == Some(&b'{')
}

fn id_at_end(end: &[u8]) -> Option<serde_json::Value> {
    let found = ID_AT_END.captures(end)?.get(1)?;
    serde_json::from_slice(found.as_bytes()).ok()
}

/// What the line says of itself, read without copying its parts.
#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<&'a RawValue>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// The members of `tools/call`'s and `resources/read`'s params whose type rmcp would refuse as
/// an unknown method.
#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow)]
    uri: Option<&'a RawValue>,
}

/// A line of JSON is a message; a blank one is nothing; any other gets a parse error. A request
/// whose `params` rmcp would answer without its id (not an object; `tools/call` arguments or a
/// `resources/read` uri of the wrong type) gets -32602 with it.
fn sort(line: Vec<u8>) -> Option<Line> {
    let text = line.strip_suffix(b"\n").unwrap_or(&line);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    let text = text.strip_prefix(UTF8_BOM).unwrap_or(text);
    if text.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    if let Ok(probe) = serde_json::from_slice::<Probe>(text) {
        if let Some(why) = probe.id.and_then(|_| invalid_params(&probe)) {
            let id = probe.id.and_then(|id| serde_json::from_str(id.get()).ok());
            return Some(Line::Reply(error_reply(
                INVALID_PARAMS,
                &format!("Invalid params: {why}"),
                id,
            )));
        }
        return Some(Line::Message(line));
    }
    match serde_json::from_slice::<IgnoredAny>(text) {
        Ok(_) => Some(Line::Message(line)),
        Err(e) => Some(Line::Reply(error_reply(
            PARSE_ERROR,
            &format!("Parse error: {e}"),
            None,
        ))),
    }
}

/// Why a request's params are refused here, if they are.
fn invalid_params(probe: &Probe) -> Option<&'static str> {
    let params = probe.params?;
    let is_object = |raw: &RawValue| raw.get().starts_with('{');
    if !is_object(params) {
        return Some("params must be an object");
    }
    let method = probe.method.map(RawValue::get);
    if !matches!(method, Some("\"tools/call\"" | "\"resources/read\"")) {
        return None;
    }
    let Ok(call) = serde_json::from_str::<CallParams>(params.get()) else {
        return None;
    };
    match method {
        Some("\"tools/call\"") if call.arguments.is_some_and(|a| !is_object(a)) => {
            Some("a tool's arguments must be an object")
        }
        Some("\"resources/read\"") if !call.uri.is_some_and(|uri| uri.get().starts_with('"')) => {
            Some("resources/read takes a uri, a string")
        }
        _ => None,
    }
}

/// A JSON-RPC error response, to the request `id` when it could be read (else null).
fn error_reply(code: i32, message: &str, id: Option<serde_json::Value>) -> Vec<u8> {
    let reply = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message },
    });
    let mut line = reply.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// The server's output to stdout, until the server drops its writer or stdout breaks.
fn pump_out(mut from_server: mpsc::Receiver<Vec<u8>>, mut output: File) {
    while let Some(bytes) = from_server.blocking_recv() {
        if write_all(&mut output, &bytes).is_err() {
            return;
        }
    }
}

/// The server's writer: each write goes to the stdout thread. Dropping it (which rmcp does
/// when it stops, without always shutting it down) ends the thread once it wrote everything.
pub struct ChannelWriter(PollSender<Vec<u8>>);

impl AsyncWrite for ChannelWriter {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let closed = || io::Error::from(io::ErrorKind::BrokenPipe);
        ready!(self.0.poll_reserve(cx)).map_err(|_| closed())?;
        self.0.send_item(buf.to_vec()).map_err(|_| closed())?;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.0.close();
        Poll::Ready(Ok(()))
    }
}

fn write_all(output: &mut File, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match output.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(written) => bytes = &bytes[written..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait_ready(output, Ready::Write),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &Line) -> serde_json::Value {
        match line {
            Line::Reply(bytes) => serde_json::from_slice(bytes).expect("a JSON reply"),
            Line::Message(_) => panic!("expected a reply, got {line:?}"),
        }
    }

    #[test]
    fn passes_on_json_and_answers_the_rest() {
        let mut lines = Lines::new(64);
        let mut out = Vec::new();
        lines.push(b"{\"a\":1}\n\n  \r\nnot json\r\n\xEF\xBB\xBF[1,", &mut out);
        lines.push(b"2]\r\n{\"unfinished\"", &mut out);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], Line::Message(b"{\"a\":1}\n".to_vec()));
        assert_eq!(
            reply(&out[1]),
            serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error: expected ident at line 1 column 2"}})
        );
        assert_eq!(out[2], Line::Message(b"\xEF\xBB\xBF[1,2]\r\n".to_vec()));
        assert_eq!(lines.rest(), b"{\"unfinished\"");
    }

    #[test]
    fn answers_a_line_too_long_at_once_and_skips_it_without_keeping_it() {
        let mut lines = Lines::new(1000);
        let mut out = Vec::new();
        // Exactly the limit is taken.
        let fits = format!("\"{}\"\n", "a".repeat(998));
        lines.push(fits.as_bytes(), &mut out);
        assert!(matches!(out.pop(), Some(Line::Message(line)) if line.len() == 1001));
        lines.push(b"\"", &mut out);
        for _ in 0..10_000 {
            lines.push(&[b'x'; 700], &mut out);
            assert!(lines.line.capacity() <= 2000, "the line is not kept");
        }
        assert_eq!(out.len(), 1, "answered once, before its end");
        assert_eq!(
            reply(&out[0]),
            serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Invalid Request: a message must be at most 1000 bytes, on one line"}})
        );
        lines.push(b"still the long line\n{\"next\":true}\n", &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[1], Line::Message(b"{\"next\":true}\n".to_vec()));
    }

    /// The id of a line too long to take: from its start (answered at once) or, as the
    /// TypeScript SDK writes it last, from its end; never an id inside `params`.
    #[test]
    fn answers_a_line_too_long_with_its_id_read_from_its_start_or_its_end() {
        let pad = "x".repeat(5000);
        let cases: [(String, serde_json::Value); 5] = [
            (
                format!(
                    r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"p":"{pad}"}}}}"#
                ),
                serde_json::json!(7),
            ),
            (
                format!(r#"{{ "id" : "a\"b", "params":{{"p":"{pad}"}}}}"#),
                serde_json::json!("a\"b"),
            ),
            (
                format!(
                    r#"{{"method":"tools/call","params":{{"p":"{pad}"}},"jsonrpc":"2.0","id":42}}"#
                ),
                serde_json::json!(42),
            ),
            (
                format!(r#"{{"method":"m","params":{{"p":"{pad}","id":9}}}}"#),
                serde_json::Value::Null,
            ),
            (
                format!(r#"{{"params":{{"id":3,"p":"{pad}"}},"id":8}}"#),
                serde_json::json!(8),
            ),
        ];
        for (message, id) in cases {
            let mut lines = Lines::new(1000);
            let mut out = Vec::new();
            // In pieces, as a pipe delivers it.
            for piece in message.as_bytes().chunks(700) {
                lines.push(piece, &mut out);
            }
            lines.push(b"\n", &mut out);
            assert_eq!(out.len(), 1, "{message:.80}");
            assert_eq!(reply(&out[0])["id"], id, "{message:.80}");
        }
    }

    #[test]
    fn answers_params_rmcp_would_refuse_without_an_id_with_invalid_params_and_the_id() {
        let refused = [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}"#,
                1,
                "params must be an object",
            ),
            (
                r#"{"jsonrpc":"2.0","id":"s","method":"ping","params":"x"}"#,
                2,
                "params must be an object",
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"relay","arguments":[]}}"#,
                3,
                "a tool's arguments must be an object",
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":5}}"#,
                4,
                "resources/read takes a uri, a string",
            ),
            (
                r#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{}}"#,
                5,
                "resources/read takes a uri, a string",
            ),
        ];
        for (text, n, why) in refused {
            let line = sort(format!("{text}\n").into_bytes()).expect("a line");
            let reply = reply(&line);
            assert_eq!(reply["error"]["code"], -32602, "{text}");
            assert_eq!(
                reply["error"]["message"],
                format!("Invalid params: {why}"),
                "{text}"
            );
            let id = if n == 2 {
                serde_json::json!("s")
            } else {
                serde_json::json!(n)
            };
            assert_eq!(reply["id"], id, "{text}");
        }
        for fine in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"relay","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"phone-a-friend://answers/x"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/x","params":[1]}"#,
            r#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#,
        ] {
            let line = format!("{fine}\n").into_bytes();
            assert_eq!(sort(line.clone()), Some(Line::Message(line)), "{fine}");
        }
    }
}
