//! The process's stdin and stdout as the server's transport, from inside a Node process.
//!
//! The server takes fd 0 and 1 for itself: it keeps private duplicates and puts `/dev/null` in
//! place of stdin and stderr in place of stdout, so nothing else in the process (a stray
//! `console.log`, a child that inherits them) can read the client's messages or write into the
//! protocol stream. Each duplicate is served by a thread of its own doing plain blocking I/O
//! (waiting in `poll` should Node have made the file description non-blocking): never the JS
//! thread, and never tokio's blocking pool, whose shutdown would wait on a read that cannot be
//! cancelled. The threads hand bytes to the runtime through in-memory pipes.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncWrite, AsyncWriteExt, ReadHalf, SimplexStream, WriteHalf};
use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::PollSender;

/// Bytes in flight from the stdin thread to the server.
const PIPE_BYTES: usize = 64 * 1024;
/// Writes in flight from the server to the stdout thread; past that the server waits.
const WRITES_IN_FLIGHT: usize = 16;

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
    let input = duplicate(0)?;
    let output = duplicate(1)?;
    let null = File::open("/dev/null")?;
    replace(null.as_raw_fd(), 0)?;
    replace(2, 1)?;
    let (reader, to_server) = tokio::io::simplex(PIPE_BYTES);
    let (sender, from_server) = mpsc::channel(WRITES_IN_FLIGHT);
    let writer = ChannelWriter(PollSender::new(sender));
    let (done, flushed) = oneshot::channel();
    let runtime = handle.clone();
    std::thread::Builder::new()
        .name("mcp-stdin".into())
        .spawn(move || pump_in(File::from(input), to_server, &runtime))?;
    std::thread::Builder::new()
        .name("mcp-stdout".into())
        .spawn(move || {
            pump_out(from_server, File::from(output));
            let _ = done.send(());
        })?;
    Ok(ProcessStdio {
        reader,
        writer,
        flushed,
    })
}

/// A close-on-exec duplicate of `fd`, numbered 3 or higher.
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
fn replace(source: RawFd, target: RawFd) -> io::Result<()> {
    // SAFETY: dup2 on two descriptors of this process; it cannot touch memory.
    if unsafe { libc::dup2(source, target) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Waits until `fd` is ready for `events` (a non-blocking descriptor said EAGAIN).
fn wait_ready(fd: RawFd, events: libc::c_short) {
    let mut poll = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd; an error or a hang-up is seen by the next read or write.
    unsafe { libc::poll(&mut poll, 1, -1) };
}

/// stdin to the server, until end of file or an error; then the server sees the end.
fn pump_in(mut input: File, mut to_server: WriteHalf<SimplexStream>, runtime: &Handle) {
    let mut buffer = vec![0u8; PIPE_BYTES];
    loop {
        let read = match input.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                wait_ready(input.as_raw_fd(), libc::POLLIN);
                continue;
            }
            Err(_) => break,
        };
        if runtime
            .block_on(to_server.write_all(&buffer[..read]))
            .is_err()
        {
            break;
        }
    }
    let _ = runtime.block_on(to_server.shutdown());
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
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                wait_ready(output.as_raw_fd(), libc::POLLOUT)
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
