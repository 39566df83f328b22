//! The one HTTP server of the Rust tests: a minimal HTTP/1.1 server on 127.0.0.1 that stands in
//! for Ollama. A fixed reply is not enough for what the backend must survive (NDJSON written
//! piece by piece with delays, a server that hangs, closes, floods, or closes a kept-alive
//! connection), so it is a small tokio server rather than a mock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) method: String,
    pub(crate) path: String,
    /// The `Authorization` header, when the request had one.
    pub(crate) authorization: Option<String>,
    pub(crate) body: Vec<u8>,
}

pub(crate) enum Reply {
    /// A whole body with its length, then the connection is closed.
    Http(u16, Vec<u8>),
    /// `200` with a chunked NDJSON body as a real Ollama streams it: each piece is one
    /// chunk (one write), sent after its delay; the connection is kept alive after it.
    Ndjson(Vec<Piece>),
    /// As `Ndjson`, then the server closes the connection (as when its keep-alive timeout
    /// passes) without saying so in the response.
    NdjsonThenClose(Vec<Piece>),
    /// `200` with chunked NDJSON that never ends: this line, again and again, as fast as
    /// the client reads it.
    Flood(Vec<u8>),
    /// Read the request, answer nothing, report when the client hangs up.
    Hang,
    /// Read the request and close the connection without an answer.
    Close,
}

pub(crate) struct Piece {
    pub(crate) after: Duration,
    pub(crate) bytes: Vec<u8>,
}

#[derive(Debug, PartialEq)]
pub(crate) enum Event {
    Request,
    HungUp,
}

/// A minimal HTTP/1.1 server on 127.0.0.1: a connection serves requests until a reply that
/// is not `Ndjson`.
pub(crate) struct TestServer {
    pub(crate) port: u16,
    received: Arc<Mutex<Vec<Received>>>,
    events: mpsc::UnboundedReceiver<Event>,
    /// Connections accepted.
    connections: Arc<AtomicUsize>,
    /// Bytes of NDJSON bodies the client took (the kernel accepted the writes).
    written: Arc<AtomicUsize>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

#[derive(Clone)]
struct Counters {
    events: mpsc::UnboundedSender<Event>,
    written: Arc<AtomicUsize>,
}

impl TestServer {
    pub(crate) async fn start(
        handler: impl Fn(&Received) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("local address").port();
        let handler = Arc::new(handler);
        let received = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let written = Arc::new(AtomicUsize::new(0));
        let (events_tx, events) = mpsc::unbounded_channel();
        let counters = Counters {
            events: events_tx,
            written: Arc::clone(&written),
        };
        let accept = tokio::spawn({
            let received = Arc::clone(&received);
            let connections = Arc::clone(&connections);
            async move {
                while let Ok((socket, _)) = listener.accept().await {
                    connections.fetch_add(1, Ordering::SeqCst);
                    // As Go's (Ollama's) and Node's servers do.
                    let _ = socket.set_nodelay(true);
                    let handler = Arc::clone(&handler);
                    let received = Arc::clone(&received);
                    let counters = counters.clone();
                    tokio::spawn(async move {
                        let mut socket = socket;
                        loop {
                            let Some(request) = read_request(&mut socket).await else {
                                return;
                            };
                            received.lock().expect("lock").push(request.clone());
                            let _ = counters.events.send(Event::Request);
                            match respond(socket, handler(&request), &counters).await {
                                Some(kept_alive) => socket = kept_alive,
                                None => return,
                            }
                        }
                    });
                }
            }
        });
        TestServer {
            port,
            received,
            events,
            connections,
            written,
            accept,
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }

    pub(crate) fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    pub(crate) fn written(&self) -> usize {
        self.written.load(Ordering::SeqCst)
    }

    pub(crate) async fn next_event(&mut self) -> Option<Event> {
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
    let authorization = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        .map(|(_, value)| value.trim().to_string());
    Some(Received {
        method,
        path,
        authorization,
        body: data[head_end..head_end + length].to_vec(),
    })
}

const NDJSON_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n\
                             Transfer-Encoding: chunked\r\n\r\n";

/// Writes one chunk of a chunked body, counting its bytes once written.
async fn write_chunk(
    socket: &mut (impl AsyncWriteExt + Unpin),
    bytes: &[u8],
    written: &AtomicUsize,
) -> std::io::Result<()> {
    let mut chunk = format!("{:x}\r\n", bytes.len()).into_bytes();
    chunk.extend_from_slice(bytes);
    chunk.extend_from_slice(b"\r\n");
    socket.write_all(&chunk).await?;
    socket.flush().await?;
    written.fetch_add(bytes.len(), Ordering::SeqCst);
    Ok(())
}

/// Streams `pieces` as NDJSON; the socket back unless the client hung up first.
async fn ndjson(
    mut socket: TcpStream,
    pieces: Vec<Piece>,
    counters: &Counters,
) -> Option<TcpStream> {
    let (mut reader, mut writer) = socket.split();
    let write = async {
        writer.write_all(NDJSON_HEAD).await?;
        for piece in pieces {
            tokio::time::sleep(piece.after).await;
            write_chunk(&mut writer, &piece.bytes, &counters.written).await?;
        }
        writer.write_all(b"0\r\n\r\n").await?;
        writer.flush().await
    };
    // The client sends nothing while it reads an answer: a read that ends is the
    // client hanging up.
    let mut byte = [0u8; 1];
    let finished = tokio::select! {
        written = write => written.is_ok(),
        _ = reader.read(&mut byte) => false,
    };
    if finished {
        Some(socket)
    } else {
        let _ = counters.events.send(Event::HungUp);
        None
    }
}

/// Writes `line` until the client hangs up.
async fn flood(mut socket: TcpStream, line: Vec<u8>, counters: &Counters) {
    let (mut reader, mut writer) = socket.split();
    let write = async {
        writer.write_all(NDJSON_HEAD).await?;
        loop {
            write_chunk(&mut writer, &line, &counters.written).await?;
        }
        #[allow(unreachable_code)]
        std::io::Result::Ok(())
    };
    let mut byte = [0u8; 1];
    tokio::select! {
        _ = write => {}
        _ = reader.read(&mut byte) => {}
    }
    let _ = counters.events.send(Event::HungUp);
}

/// Answers one request; the socket back when the connection stays open for another.
async fn respond(mut socket: TcpStream, reply: Reply, counters: &Counters) -> Option<TcpStream> {
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
            None
        }
        Reply::NdjsonThenClose(pieces) => {
            Box::pin(respond(socket, Reply::Ndjson(pieces), counters)).await;
            None
        }
        Reply::Ndjson(pieces) => ndjson(socket, pieces, counters).await,
        Reply::Flood(line) => {
            flood(socket, line, counters).await;
            None
        }
        Reply::Hang => {
            let mut buf = [0u8; 1024];
            while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
            let _ = counters.events.send(Event::HungUp);
            None
        }
        Reply::Close => None,
    }
}
