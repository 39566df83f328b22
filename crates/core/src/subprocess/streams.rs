//! Serving a child's three pipes at once: stdin written whole, stdout and stderr read into
//! their sinks (stdout also line by line), each read bounded.

use crate::progress::Progress;
use std::collections::VecDeque;
use std::io;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{LineSender, Sink, READ_CHUNK};
use crate::lines::{LineSplitter, StdoutLine};

/// One pipe's read buffer. Its memory is only touched where reads write (it is never zeroed):
/// a child that prints a line costs a page, not [`READ_CHUNK`], which with hundreds of relays
/// at once is most of their memory (BENCHMARKS.md, "Side by side with upstream").
struct ReadBuffer(Vec<u8>);

impl ReadBuffer {
    fn new() -> Self {
        ReadBuffer(Vec::with_capacity(READ_CHUNK))
    }

    /// The next bytes of `stream`; empty at its end.
    async fn read_from<R: AsyncRead + Unpin>(&mut self, stream: &mut R) -> io::Result<&[u8]> {
        self.0.clear();
        stream.read_buf(&mut self.0).await?;
        Ok(&self.0)
    }
}

/// Reads a stream to its end into `sink`, which keeps what fits and counts the rest.
pub(super) async fn read_stream<R: AsyncRead + Unpin, S: Sink>(
    stream: Option<R>,
    sink: &mut S,
    progress: &Progress,
) -> io::Result<()> {
    let Some(mut stream) = stream else {
        return Ok(());
    };
    let mut buf = ReadBuffer::new();
    loop {
        match buf.read_from(&mut stream).await {
            Ok(&[]) => return Ok(()),
            Ok(bytes) => {
                progress.touch();
                sink.push(bytes);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads stdout like [`read_stream`], also sending its lines to `lines` (if given), one at a
/// time: while the consumer has not taken a line, nothing more is read.
pub(super) async fn read_stdout<R: AsyncRead + Unpin, S: Sink>(
    stream: Option<R>,
    text: &mut S,
    lines: Option<LineSender>,
    consumer: &ConsumerWait,
    progress: &Progress,
) -> io::Result<()> {
    let Some(LineSender {
        sender, max_line, ..
    }) = lines
    else {
        return read_stream(stream, text, progress).await;
    };
    let Some(mut stream) = stream else {
        return Ok(());
    };
    let mut sender = Some(sender);
    let mut splitter = LineSplitter::new(max_line);
    let mut ready = VecDeque::new();
    let mut buf = ReadBuffer::new();
    loop {
        match buf.read_from(&mut stream).await {
            Ok(&[]) => break,
            Ok(bytes) => {
                progress.touch();
                text.push(bytes);
                splitter.push(bytes, &mut ready);
                deliver(&mut sender, &mut ready, consumer, progress).await;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    ready.extend(splitter.finish());
    deliver(&mut sender, &mut ready, consumer, progress).await;
    Ok(())
}

/// Sends the lines in `ready`, in order; a consumer that has gone gets no more. Waiting for
/// the consumer is not the child's idleness: the progress clock stops meanwhile.
async fn deliver(
    sender: &mut Option<mpsc::Sender<StdoutLine>>,
    ready: &mut VecDeque<StdoutLine>,
    consumer: &ConsumerWait,
    progress: &Progress,
) {
    while let Some(line) = ready.pop_front() {
        let Some(open) = sender.as_ref() else {
            ready.clear();
            return;
        };
        consumer.start();
        let paused = progress.pause();
        let sent = open.send(line).await;
        drop(paused);
        consumer.stop();
        if sent.is_err() {
            *sender = None;
        }
    }
}

/// How long stdout's reader has waited for its consumer to take a line, in all.
#[derive(Debug, Default)]
pub(super) struct ConsumerWait {
    state: Mutex<WaitState>,
}

#[derive(Debug, Default)]
struct WaitState {
    /// When the current wait began, if one is under way.
    since: Option<Instant>,
    /// Finished waits.
    total: Duration,
}

impl ConsumerWait {
    pub(super) fn start(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.since = Some(Instant::now());
        }
    }

    pub(super) fn stop(&self) {
        if let Ok(mut state) = self.state.lock() {
            if let Some(since) = state.since.take() {
                state.total += since.elapsed();
            }
        }
    }

    /// Every wait so far, the one under way included.
    pub(super) fn total(&self) -> Duration {
        self.state.lock().map_or(Duration::ZERO, |state| {
            state.total + state.since.map_or(Duration::ZERO, |since| since.elapsed())
        })
    }
}

/// Writes the whole input, then closes the pipe so the child sees end of file.
pub(super) async fn write_stdin<W: AsyncWrite + Unpin>(
    pipe: Option<W>,
    bytes: Option<Vec<u8>>,
) -> io::Result<()> {
    let (Some(mut pipe), Some(bytes)) = (pipe, bytes) else {
        return Ok(());
    };
    match pipe.write_all(&bytes).await {
        // The child exited or closed stdin without reading it all: its exit status tells.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
    // `pipe` drops here, closing the child's stdin.
}
