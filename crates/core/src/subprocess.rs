//! The one process runner ([`run_child`]), for the CLI backends and for git (docs/CONTRACT.md
//! §8): no shell, its own process group, stdin written while stdout and stderr are read, output
//! kept up to a limit and counted past it, and the whole group killed on timeout, cancellation or
//! drop, so no grandchild outlives the call. A CLI backend runs under the supervisor
//! ([`run_process`]); git runs without it, to stay cheap ([`Supervision::Unsupervised`]).

use std::collections::{BTreeMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::future::Future;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use thiserror::Error;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::time::{sleep, Instant};
use tokio_util::sync::CancellationToken;

use crate::bounded_text::{read_bounded_until, BoundedText, Measured, ReadStopped};
use crate::deadline::{Deadline, Stop};
use crate::descriptors;
use crate::env::Env;
use crate::lines::{LineSplitter, StdoutLine};
use phone_a_friend_supervisor::protocol::{
    spawn_failure_errno, END_OF_FLAGS, GRACE_FLAG, PARENT_FLAG, REMOVE_FLAG, SPAWN_FAILED_EXIT,
};

/// How long a group gets between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(500);
/// How long the pipes are still read once the supervisor has exited, having killed the tree.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);
/// Bound on the wait for a supervisor told to stop: its grace, its SIGKILL rounds, and slack.
const STOP_LIMIT: Duration = Duration::from_secs(3);
/// How long a killed unsupervised child may take to be reaped before it is left to tokio's
/// orphan reaper.
const REAP_GRACE: Duration = Duration::from_secs(2);
const READ_CHUNK: usize = 64 * 1024;
/// A limit far enough away to be none (a `timeout` too large to add to the clock).
const NO_LIMIT: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// What the child reads on stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdinSource {
    /// `/dev/null`.
    Null,
    /// These bytes, then end of file.
    Bytes(Vec<u8>),
}

/// One process to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSpec {
    /// An absolute path, already resolved (see [`find_executable`]); never run through a shell.
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// The child's entire environment: nothing of the relay's own is inherited.
    pub env: BTreeMap<String, String>,
    pub stdin: StdinSource,
    /// Counted from the call, a wait for file descriptors included; past it the group is killed
    /// and the call is `TimedOut`.
    pub timeout: Duration,
    /// Bytes of text kept per stream; the rest is counted and dropped.
    pub output_limit: usize,
    /// Folders the supervisor removes if the run is stopped or the host dies before the
    /// caller could remove them itself.
    pub remove_on_stop: Vec<PathBuf>,
}

/// How the child ended and what it printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOutput {
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    pub stdout: Measured,
    pub stderr: Measured,
}

#[derive(Debug, Error)]
pub enum ProcessError {
    /// The process could not be started: `NotFound` when the program, its `#!` interpreter or
    /// the working directory does not exist.
    #[error("failed to start the process: {0}")]
    Spawn(#[source] io::Error),
    #[error("the process timed out")]
    TimedOut,
    #[error("the process was cancelled")]
    Cancelled,
    #[error("I/O with the process failed: {0}")]
    Io(#[source] io::Error),
    /// The supervisor executable is missing (a broken installation).
    #[error("{0}")]
    Supervisor(#[source] io::Error),
}

/// Where [`run_process_streaming`] sends stdout, line by line; made by [`stdout_lines`].
#[derive(Debug)]
pub struct LineSender {
    sender: mpsc::Sender<StdoutLine>,
    max_line: usize,
    pipe_capacity: Option<usize>,
}

impl LineSender {
    /// Asks for a stdout pipe that holds `bytes` (best effort: Linux caps it at
    /// `/proc/sys/fs/pipe-max-size`, 1 MiB by default, and per user). For a child that loses
    /// what it has not yet written when it exits (Node's `process.stdout` on a full pipe): a
    /// write the pipe takes whole is never lost.
    pub fn with_pipe_capacity(mut self, bytes: usize) -> LineSender {
        self.pipe_capacity = Some(bytes);
        self
    }
}

/// A channel for stdout's lines, each cut to `max_line` bytes (see [`StdoutLine`]). It holds
/// one line: while the receiver does not take it, stdout is not read further, so the child
/// blocks on a full pipe. A receiver dropped early only stops the lines: stdout is still read.
pub fn stdout_lines(max_line: usize) -> (LineSender, mpsc::Receiver<StdoutLine>) {
    let (sender, receiver) = mpsc::channel(1);
    let lines = LineSender {
        sender,
        max_line,
        pipe_capacity: None,
    };
    (lines, receiver)
}

/// Runs `spec` to completion, timeout or cancellation, under the supervisor (see
/// `supervisor/src/main.rs`): whatever happens, including this future being
/// dropped or the whole host process dying, every process the backend started is killed.
pub async fn run_process(
    spec: ProcessSpec,
    cancel: &CancellationToken,
) -> Result<ProcessOutput, ProcessError> {
    run(spec, None, cancel).await
}

/// [`run_process`], also sending each line of stdout to `lines` as it arrives (the output still
/// has the bounded stdout text). Run the receiving side concurrently: the channel is closed
/// when this returns. Time spent waiting for the receiver after the child exited does not
/// count towards the drain: a slow consumer gets every line the child wrote.
pub async fn run_process_streaming(
    spec: ProcessSpec,
    lines: LineSender,
    cancel: &CancellationToken,
) -> Result<ProcessOutput, ProcessError> {
    run(spec, Some(lines), cancel).await
}

async fn run(
    spec: ProcessSpec,
    lines: Option<LineSender>,
    cancel: &CancellationToken,
) -> Result<ProcessOutput, ProcessError> {
    let ProcessSpec {
        program,
        args,
        cwd,
        env,
        stdin,
        timeout,
        output_limit,
        remove_on_stop,
    } = spec;
    // `Duration::MAX` means no limit.
    let until = Instant::now()
        .checked_add(timeout)
        .unwrap_or_else(|| Instant::now() + NO_LIMIT);
    let launch = Launch {
        program: program.as_os_str(),
        args: &args,
        cwd: Some(&cwd),
        env: Some(&env),
        extra_env: &[],
        stdin,
        supervision: Supervision::Supervised { remove_on_stop },
    };
    let stdout = BoundedText::new(output_limit);
    let done = run_child(launch, stdout, output_limit, lines, until, cancel).await?;
    Ok(ProcessOutput {
        code: done.status.code(),
        signal: done.status.signal(),
        stdout: done.stdout,
        stderr: done.stderr,
    })
}

/// How a child is kept from outliving its run.
#[derive(Debug)]
pub(crate) enum Supervision {
    /// Under the supervisor (the CLI backends): on timeout, cancel or drop it is asked to stop
    /// the whole tree (SIGTERM, never SIGKILL), and it does so on its own if the host dies,
    /// removing `remove_on_stop`'s folders whenever the run is stopped.
    Supervised { remove_on_stop: Vec<PathBuf> },
    /// The program itself, for one that must stay cheap (git): its group gets SIGKILL on
    /// timeout, cancel or drop, and it gets SIGKILL when the host dies (`PR_SET_PDEATHSIG`).
    /// Its descendants are not followed out of the group.
    Unsupervised,
}

/// One child to start, never through a shell, in a process group of its own, stdout and
/// stderr piped.
pub(crate) struct Launch<'a> {
    /// An absolute path, or a name the OS looks up on the child's `PATH`.
    pub program: &'a OsStr,
    pub args: &'a [OsString],
    /// `None`: the relay's own.
    pub cwd: Option<&'a Path>,
    /// The child's entire environment; `None`: the relay's own.
    pub env: Option<&'a Env>,
    /// Set on top of `env`.
    pub extra_env: &'a [(&'a str, &'a str)],
    pub stdin: StdinSource,
    pub supervision: Supervision,
}

/// How a child ended and what it printed.
pub(crate) struct Finished<T> {
    pub status: ExitStatus,
    pub stdout: T,
    /// Kept up to the run's stderr limit, counted past it.
    pub stderr: Measured,
}

/// Where a stream's bytes go as they are read.
pub(crate) trait Sink {
    type Output;
    fn push(&mut self, bytes: &[u8]);
    fn finish(self) -> Self::Output;
}

impl Sink for BoundedText {
    type Output = Measured;
    fn push(&mut self, bytes: &[u8]) {
        BoundedText::push(self, bytes);
    }
    fn finish(self) -> Measured {
        BoundedText::finish(self)
    }
}

/// The one process runner (for the CLI backends and git): starts `launch` once a file
/// descriptor is to be had, serves stdin, stdout (into `stdout`, and line by line to `lines`)
/// and stderr (kept up to `stderr_limit`) at once, and waits for the exit until `until` or the
/// token. On timeout, cancel or drop the child is stopped as its [`Supervision`] says, so
/// nothing it started outlives the run.
pub(crate) async fn run_child<S: Sink>(
    launch: Launch<'_>,
    stdout: S,
    stderr_limit: usize,
    lines: Option<LineSender>,
    until: Instant,
    cancel: &CancellationToken,
) -> Result<Finished<S::Output>, ProcessError> {
    if cancel.is_cancelled() {
        return Err(ProcessError::Cancelled);
    }
    if Instant::now() >= until {
        // The call's deadline passed before the program could start: start nothing.
        return Err(ProcessError::TimedOut);
    }
    let Launch {
        program,
        args,
        cwd,
        env,
        extra_env,
        stdin,
        supervision,
    } = launch;
    let (stdin_mode, stdin_bytes) = match stdin {
        StdinSource::Null => (Stdio::null(), None),
        StdinSource::Bytes(bytes) => (Stdio::piped(), Some(bytes)),
    };
    let supervised = matches!(supervision, Supervision::Supervised { .. });
    let mut command = match supervision {
        Supervision::Supervised { remove_on_stop } => {
            let supervisor = crate::supervisor::executable().map_err(ProcessError::Supervisor)?;
            let mut command = std::process::Command::new(supervisor);
            command
                .arg(PARENT_FLAG)
                .arg(std::process::id().to_string())
                .arg(GRACE_FLAG)
                .arg(TERM_GRACE.as_millis().to_string());
            for folder in remove_on_stop {
                command.arg(REMOVE_FLAG).arg(folder);
            }
            command.arg(END_OF_FLAGS).arg(program);
            command
        }
        Supervision::Unsupervised => {
            let mut command = std::process::Command::new(program);
            die_with_the_host(&mut command);
            command
        }
    };
    command.args(args);
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    if let Some(env) = env {
        command.env_clear().envs(env);
    }
    command
        .envs(extra_env.iter().copied())
        .stdin(stdin_mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Out of the host's group: a terminal's Ctrl-C is for the host to handle.
        .process_group(0);
    let mut command = Command::from(command);
    // Never SIGKILL the supervisor: only it can end what left the backend's process group.
    command.kill_on_drop(!supervised);
    // Its pipes need descriptors: in a burst, it waits for others to free theirs.
    let Some(spawned) = descriptors::when_available(until, cancel, || command.spawn()).await else {
        return Err(ProcessError::Cancelled);
    };
    let mut child = spawned.map_err(ProcessError::Spawn)?;
    // Declared after `child` so it drops first: the child is signalled while it is not yet
    // reaped, and so while its id cannot have been reused.
    let mut guard = match child.id().and_then(|id| i32::try_from(id).ok()) {
        Some(pid) => ChildGuard {
            pid,
            supervised,
            armed: true,
        },
        None => {
            let who = if supervised {
                "the supervisor"
            } else {
                "the child"
            };
            return Err(ProcessError::Io(io::Error::other(format!(
                "{who} has no process id"
            ))));
        }
    };

    let stdin_pipe = child.stdin.take();
    let stdout_pipe = child.stdout.take();
    if let (Some(pipe), Some(bytes)) = (&stdout_pipe, lines.as_ref().and_then(|l| l.pipe_capacity))
    {
        set_pipe_capacity(pipe.as_raw_fd(), bytes);
    }
    let stderr_pipe = child.stderr.take();
    let mut stdout = stdout;
    let mut stderr = BoundedText::new(stderr_limit);
    let consumer = ConsumerWait::default();
    let status = {
        // All three at once: a child may fill stdout before it reads stdin, or never read it.
        let io = async {
            tokio::try_join!(
                read_stdout(stdout_pipe, &mut stdout, lines, &consumer),
                read_stream(stderr_pipe, &mut stderr),
                write_stdin(stdin_pipe, stdin_bytes),
            )
            .map(|_| ())
        };
        let timeout = until.saturating_duration_since(Instant::now());
        supervise(&mut child, &mut guard, io, timeout, cancel, &consumer).await?
    };
    let stderr = stderr.finish();
    if supervised && status.code() == Some(SPAWN_FAILED_EXIT) {
        if let Some(errno) = spawn_failure_errno(&stderr.text) {
            return Err(ProcessError::Spawn(io::Error::from_raw_os_error(errno)));
        }
    }
    Ok(Finished {
        status,
        stdout: stdout.finish(),
        stderr,
    })
}

/// Makes an unsupervised child get SIGKILL when the host dies (git is quick, and with the
/// repository's programs neutralised starts none of its own, but a FIFO in the repository can
/// make it wait forever). `PR_SET_PDEATHSIG` follows the thread that started the child: a
/// runtime worker or the JS thread, which live as long as the host.
fn die_with_the_host(command: &mut std::process::Command) {
    // SAFETY: getpid is async-signal-safe and has no preconditions.
    let host = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the child between fork and exec and calls only prctl and
    // getppid, which are async-signal-safe; it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The host died before the signal was asked for.
            if libc::getppid() != host {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Waits for the child to exit and the pipes to close, whichever comes last, unless the
/// timeout or the token ends it first. Every path leaves the tree stopped and `guard` disarmed.
/// An unsupervised child is reaped only once its pipes have closed: until then its group's id
/// stays its own, so the group can be killed whatever in it still holds a pipe.
async fn supervise(
    child: &mut Child,
    guard: &mut ChildGuard,
    io: impl Future<Output = io::Result<()>>,
    timeout: Duration,
    cancel: &CancellationToken,
    consumer: &ConsumerWait,
) -> Result<ExitStatus, ProcessError> {
    tokio::pin!(io);
    // `sleep` saturates huge durations to "far future" rather than overflowing.
    let timer = sleep(timeout);
    tokio::pin!(timer);
    let drain = sleep(Duration::MAX);
    tokio::pin!(drain);
    let mut status = None;
    let mut io_done = false;
    // When the supervisor exited, and how long stdout's reader had waited for its consumer.
    let mut exited_at = (Instant::now(), Duration::ZERO);
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => {
                guard.stop(child).await;
                return Err(ProcessError::Cancelled);
            }
            // Once the backend has exited its status is the answer, whatever the clock says.
            () = &mut timer, if status.is_none() => {
                guard.stop(child).await;
                return Err(ProcessError::TimedOut);
            }
            exited = child.wait(), if status.is_none() && (io_done || guard.supervised) => match exited {
                Ok(exit) => {
                    // The supervisor killed the backend's whole tree before it exited; an
                    // unsupervised child's group may now be another's.
                    guard.disarm();
                    status = Some(exit);
                    exited_at = (Instant::now(), consumer.total());
                    drain.as_mut().reset(exited_at.0 + DRAIN_AFTER_EXIT);
                }
                Err(e) => {
                    guard.stop(child).await;
                    return Err(ProcessError::Io(e));
                }
            },
            done = &mut io, if !io_done => {
                if let Err(e) = done {
                    guard.stop(child).await;
                    return Err(ProcessError::Io(e));
                }
                io_done = true;
            }
            // Only a process outside the tree (one handed the pipe some other way) can still
            // hold it: keep what was read. Time spent waiting for a slow consumer of stdout's
            // lines is not time waiting on the pipe.
            () = &mut drain, if status.is_some() && !io_done => {
                let (at, waited_before) = exited_at;
                let end = at + DRAIN_AFTER_EXIT + consumer.total().saturating_sub(waited_before);
                if end > Instant::now() {
                    drain.as_mut().reset(end);
                } else {
                    io_done = true;
                }
            }
        }
        if let (true, Some(exit)) = (io_done, status) {
            return Ok(exit);
        }
    }
}

/// Reads a stream to its end into `sink`, which keeps what fits and counts the rest.
async fn read_stream<R: AsyncRead + Unpin, S: Sink>(
    stream: Option<R>,
    sink: &mut S,
) -> io::Result<()> {
    let Some(mut stream) = stream else {
        return Ok(());
    };
    let mut buf = vec![0; READ_CHUNK];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) => return Ok(()),
            Ok(n) => sink.push(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads stdout like [`read_stream`], also sending its lines to `lines` (if given), one at a
/// time: while the consumer has not taken a line, nothing more is read.
async fn read_stdout<R: AsyncRead + Unpin, S: Sink>(
    stream: Option<R>,
    text: &mut S,
    lines: Option<LineSender>,
    consumer: &ConsumerWait,
) -> io::Result<()> {
    let Some(LineSender {
        sender, max_line, ..
    }) = lines
    else {
        return read_stream(stream, text).await;
    };
    let Some(mut stream) = stream else {
        return Ok(());
    };
    let mut sender = Some(sender);
    let mut splitter = LineSplitter::new(max_line);
    let mut ready = VecDeque::new();
    let mut buf = vec![0; READ_CHUNK];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                text.push(&buf[..n]);
                splitter.push(&buf[..n], &mut ready);
                deliver(&mut sender, &mut ready, consumer).await;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    ready.extend(splitter.finish());
    deliver(&mut sender, &mut ready, consumer).await;
    Ok(())
}

/// Sends the lines in `ready`, in order; a consumer that has gone gets no more.
async fn deliver(
    sender: &mut Option<mpsc::Sender<StdoutLine>>,
    ready: &mut VecDeque<StdoutLine>,
    consumer: &ConsumerWait,
) {
    while let Some(line) = ready.pop_front() {
        let Some(open) = sender.as_ref() else {
            ready.clear();
            return;
        };
        consumer.start();
        let sent = open.send(line).await;
        consumer.stop();
        if sent.is_err() {
            *sender = None;
        }
    }
}

/// Best effort: a pipe left at its default size still works.
fn set_pipe_capacity(fd: std::os::fd::RawFd, bytes: usize) {
    let bytes = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: `fd` is an open pipe owned by the caller; F_SETPIPE_SZ takes an int and touches
    // no memory of ours.
    unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, bytes) };
}

/// How long stdout's reader has waited for its consumer to take a line, in all.
#[derive(Debug, Default)]
struct ConsumerWait {
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
    fn start(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.since = Some(Instant::now());
        }
    }

    fn stop(&self) {
        if let Ok(mut state) = self.state.lock() {
            if let Some(since) = state.since.take() {
                state.total += since.elapsed();
            }
        }
    }

    /// Every wait so far, the one under way included.
    fn total(&self) -> Duration {
        self.state.lock().map_or(Duration::ZERO, |state| {
            state.total + state.since.map_or(Duration::ZERO, |since| since.elapsed())
        })
    }
}

/// Writes the whole input, then closes the pipe so the child sees end of file.
async fn write_stdin(pipe: Option<ChildStdin>, bytes: Option<Vec<u8>>) -> io::Result<()> {
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

/// The running child, stopped when dropped while armed: the supervisor is asked to stop the
/// backend's tree (SIGTERM), an unsupervised child's whole group is killed (SIGKILL).
struct ChildGuard {
    pid: i32,
    supervised: bool,
    armed: bool,
}

impl ChildGuard {
    fn request_stop(&self) {
        if self.armed && self.pid > 1 {
            let (target, signal) = if self.supervised {
                (self.pid, libc::SIGTERM)
            } else {
                (-self.pid, libc::SIGKILL)
            };
            // SAFETY: `kill` takes plain integers and touches no memory of ours.
            unsafe { libc::kill(target, signal) };
        }
    }

    /// Stops the child and waits for it to exit, so the caller returns with nothing left
    /// running: the supervisor stops the tree (SIGTERM, then SIGKILL after [`TERM_GRACE`]); an
    /// unsupervised child, killed, is reaped within [`REAP_GRACE`] or left to tokio's orphan
    /// reaper (`kill_on_drop`).
    async fn stop(&mut self, child: &mut Child) {
        self.request_stop();
        if !self.supervised {
            let _ = tokio::time::timeout(REAP_GRACE, child.wait()).await;
        } else if tokio::time::timeout(STOP_LIMIT, child.wait())
            .await
            .is_err()
        {
            // A supervisor that does not answer is broken: end it rather than hang.
            let _ = child.start_kill();
            let _ = tokio::time::timeout(STOP_LIMIT, child.wait()).await;
        }
        self.disarm();
    }

    /// The child has exited: never signal its id again (it may be reused).
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        // The future was dropped mid-flight: the supervisor ends the tree on its own, an
        // unsupervised group is killed here; tokio reaps the child.
        self.request_stop();
    }
}

/// Reads a file (e.g. codex's `--output-last-message` answer file) as the pipes are read: at
/// most `limit` bytes of text kept, the exact trimmed size counted, within the call's deadline.
pub async fn read_bounded_file(
    path: &Path,
    limit: usize,
    deadline: &Deadline,
) -> Result<Measured, ReadStopped> {
    let not_regular = || {
        // The OS's own words for the common case (what reading a directory says).
        ReadStopped::Io(if path.is_dir() {
            io::Error::from_raw_os_error(libc::EISDIR)
        } else {
            io::Error::other("not a regular file")
        })
    };
    let until = Instant::now() + deadline.remaining();
    let opened = descriptors::when_available(until, deadline.cancel_token(), || {
        crate::bounded_text::open_regular(path)
    })
    .await
    .ok_or(ReadStopped::Deadline(Stop::Cancelled))?;
    let file = opened.map_err(ReadStopped::Io)?.ok_or_else(not_regular)?;
    read_bounded_until(file, limit, deadline).await
}

/// The first executable file named `name` in the `PATH` of `env` (the child's environment, not
/// the relay's own), like `which`: a relative entry (an empty one is `.`) is taken from the
/// relay's working directory, as `which` and `execvp` take it. The result is absolute, so
/// where the backend then runs (the repository) does not change which program that is.
pub fn find_executable(name: &str, env: &BTreeMap<String, String>) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    let path = env.get("PATH")?;
    // execvp does not expand a leading `~`; the crate would, with this process's HOME rather
    // than the child's: such an entry stays a relative directory named `~`.
    let entries = std::env::split_paths(path).map(|dir| {
        if dir.starts_with("~") {
            Path::new(".").join(dir)
        } else {
            dir
        }
    });
    let path = std::env::join_paths(entries).ok()?;
    let config = which::WhichConfig::new()
        .binary_name(name.into())
        .custom_path_list(path);
    let config = match std::env::current_dir() {
        Ok(cwd) => config.custom_cwd(cwd),
        // Without a working directory a relative entry names nothing.
        Err(_) => config.system_cwd(false),
    };
    config.all_results().ok()?.find(|found| found.is_absolute())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::time::Instant as StdInstant;
    use tempfile::TempDir;

    const MIB: usize = 1024 * 1024;

    struct Fixture {
        dir: TempDir,
    }

    impl Fixture {
        fn new() -> Fixture {
            Fixture {
                dir: tempfile::tempdir().expect("temp dir"),
            }
        }

        fn path(&self, name: &str) -> PathBuf {
            self.dir.path().join(name)
        }

        /// A fake CLI: a `#!/bin/sh` script, executable.
        fn script(&self, name: &str, body: &str) -> PathBuf {
            let path = self.path(name);
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
            path
        }

        fn spec(&self, program: PathBuf) -> ProcessSpec {
            ProcessSpec {
                program,
                args: Vec::new(),
                cwd: self.dir.path().to_path_buf(),
                env: BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]),
                stdin: StdinSource::Null,
                timeout: Duration::from_secs(20),
                output_limit: 8 * MIB,
                remove_on_stop: Vec::new(),
            }
        }

        /// A spec whose script gets a pid file path as `$1`.
        fn spec_with_pid_file(&self, program: PathBuf) -> (ProcessSpec, PathBuf) {
            let pid_file = self.path("pids");
            let mut spec = self.spec(program);
            spec.args = vec![pid_file.clone().into_os_string()];
            (spec, pid_file)
        }
    }

    async fn run(spec: ProcessSpec) -> Result<ProcessOutput, ProcessError> {
        run_with(spec, &CancellationToken::new()).await
    }

    /// `run_process`, retrying ETXTBSY: another test's fork can briefly hold a just-written
    /// script open for writing.
    async fn run_with(
        spec: ProcessSpec,
        cancel: &CancellationToken,
    ) -> Result<ProcessOutput, ProcessError> {
        let mut attempts = 0;
        loop {
            match run_process(spec.clone(), cancel).await {
                Err(ProcessError::Spawn(e))
                    if e.raw_os_error() == Some(libc::ETXTBSY) && attempts < 50 =>
                {
                    attempts += 1;
                    sleep(Duration::from_millis(10)).await;
                }
                other => return other,
            }
        }
    }

    fn ok(result: Result<ProcessOutput, ProcessError>) -> ProcessOutput {
        match result {
            Ok(output) => output,
            Err(e) => panic!("expected output, got {e:?}"),
        }
    }

    /// Distinct bytes with no whitespace at either end, so the echo must match exactly.
    fn pattern(len: usize) -> Vec<u8> {
        let mut bytes: Vec<u8> = (0..len).map(|i| b"abcdefghij\n"[i % 11]).collect();
        if let Some(last) = bytes.last_mut() {
            *last = b'z';
        }
        bytes
    }

    /// Pids the script wrote to the pid file, waiting for it to be written.
    async fn read_pids(file: &Path) -> Vec<i32> {
        for _ in 0..500 {
            if let Ok(text) = std::fs::read_to_string(file) {
                if text.ends_with('\n') {
                    return text
                        .split_whitespace()
                        .map(|p| p.parse().expect("pid"))
                        .collect();
                }
            }
            sleep(Duration::from_millis(5)).await;
        }
        panic!("no pid file at {}", file.display());
    }

    /// Running and not a zombie (init may be slow to reap orphans).
    fn is_alive(pid: i32) -> bool {
        std::fs::read(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| phone_a_friend_supervisor::process_tree::parse_stat(&stat))
            .is_some_and(|info| info.is_running())
    }

    /// Whether `pid` is dead within `limit` (a SIGKILL is delivered asynchronously).
    async fn dies_within(pid: i32, limit: Duration) -> bool {
        let start = StdInstant::now();
        while start.elapsed() < limit {
            if !is_alive(pid) {
                return true;
            }
            sleep(Duration::from_millis(5)).await;
        }
        false
    }

    /// Kills what a test started (`pids[0]` leads its group) so a failed assertion leaves
    /// nothing running.
    fn cleanup(pids: &[i32]) {
        if let Some(&leader) = pids.first().filter(|&&pid| pid > 1) {
            // SAFETY: plain integers; the group of a process this test started.
            unsafe { libc::kill(-leader, libc::SIGKILL) };
        }
        for &pid in pids.iter().filter(|&&pid| pid > 1) {
            // SAFETY: plain integers; `pid` is a process this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }

    #[tokio::test]
    async fn reports_exit_codes_and_trimmed_stdout() {
        let fx = Fixture::new();
        let zero = ok(run(fx.spec(fx.script("zero", "printf '  hello \\n'; exit 0"))).await);
        assert_eq!((zero.code, zero.signal), (Some(0), None));
        assert_eq!(zero.stdout.text, "hello");
        assert_eq!(zero.stdout.trimmed_len, 5);
        let three = ok(run(fx.spec(fx.script("three", "exit 3"))).await);
        assert_eq!((three.code, three.signal), (Some(3), None));
        assert_eq!(three.stdout.trimmed_len, 0);
    }

    #[tokio::test]
    async fn captures_stderr_apart_from_stdout() {
        let fx = Fixture::new();
        let script = fx.script("err", "echo out; echo 'it broke' >&2; exit 1");
        let output = ok(run(fx.spec(script)).await);
        assert_eq!(output.code, Some(1));
        assert_eq!(output.stdout.text, "out");
        assert_eq!(output.stderr.text, "it broke");
    }

    #[tokio::test]
    async fn reports_the_signal_that_ended_the_child() {
        let fx = Fixture::new();
        let output = ok(run(fx.spec(fx.script("killed", "kill -KILL $$"))).await);
        assert_eq!((output.code, output.signal), (None, Some(libc::SIGKILL)));
    }

    #[tokio::test]
    async fn child_gets_exactly_the_given_env_and_cwd() {
        let fx = Fixture::new();
        let script = fx.script(
            "env",
            "printf '%s|%s|%s' \"$FOO\" \"${HOME-unset}\" \"$(pwd -P)\"",
        );
        let mut spec = fx.spec(script);
        spec.env.insert("FOO".into(), "bar baz".into());
        let output = ok(run(spec).await);
        let cwd = fx.dir.path().canonicalize().expect("canonical temp dir");
        assert_eq!(
            output.stdout.text,
            format!("bar baz|unset|{}", cwd.display())
        );
    }

    #[tokio::test]
    async fn delivers_300k_of_stdin_whole() {
        let fx = Fixture::new();
        let input = pattern(300_000);
        let mut spec = fx.spec(fx.script("cat", "exec cat"));
        spec.stdin = StdinSource::Bytes(input.clone());
        let output = ok(run(spec).await);
        assert_eq!(output.code, Some(0));
        assert_eq!(output.stdout.text.as_bytes(), &input[..]);
    }

    // On the multi-threaded runtime, as under napi.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn delivers_8_mib_of_stdin_to_a_child_that_writes_first() {
        let fx = Fixture::new();
        // 1 MiB to stdout before stdin is read: writing stdin first would deadlock.
        let script = fx.script(
            "chatty",
            "head -c 1048576 /dev/zero | tr '\\0' y; cat > \"$1\"; wc -c < \"$1\" >&2",
        );
        let copy = fx.path("copy");
        let mut spec = fx.spec(script);
        spec.args = vec![copy.clone().into_os_string()];
        let input = pattern(8 * MIB);
        spec.stdin = StdinSource::Bytes(input.clone());
        let output = ok(run(spec).await);
        assert_eq!(output.code, Some(0));
        assert_eq!(output.stdout.trimmed_len, MIB as u64);
        assert_eq!(output.stderr.text, (8 * MIB).to_string());
        assert!(
            std::fs::read(&copy).expect("copy") == input,
            "stdin arrived altered"
        );
    }

    #[tokio::test]
    async fn a_child_that_ignores_stdin_is_not_an_error() {
        let fx = Fixture::new();
        let mut spec = fx.spec(fx.script("deaf", "echo done"));
        spec.stdin = StdinSource::Bytes(pattern(8 * MIB));
        let output = ok(run(spec).await);
        assert_eq!(output.code, Some(0));
        assert_eq!(output.stdout.text, "done");
    }

    #[tokio::test]
    async fn counts_200_mb_of_stdout_without_keeping_it() {
        let fx = Fixture::new();
        let size: u64 = 200 * 1024 * 1024;
        let script = fx.script("flood", &format!("exec head -c {size} /dev/zero"));
        let started = StdInstant::now();
        let output = ok(run(fx.spec(script)).await);
        assert_eq!(output.code, Some(0));
        assert!(output.stdout.text.len() <= 8 * MIB);
        assert_eq!(output.stdout.trimmed_len, size);
        if let Some(peak) = peak_rss() {
            // Buffering the stream would need 200 MB on its own.
            assert!(peak < 150 * MIB as u64, "peak RSS {peak} bytes");
        }
        assert!(started.elapsed() < Duration::from_secs(15));
    }

    /// The process's peak resident memory, where the platform tells.
    fn peak_rss() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    }

    #[tokio::test]
    async fn times_out_a_sleeping_child() {
        let fx = Fixture::new();
        let mut spec = fx.spec(fx.script("sleepy", "sleep 30"));
        spec.timeout = Duration::from_millis(300);
        let started = StdInstant::now();
        let result = run(spec).await;
        let elapsed = started.elapsed();
        assert!(matches!(result, Err(ProcessError::TimedOut)), "{result:?}");
        assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    }

    #[tokio::test]
    async fn timeout_kills_grandchildren() {
        let fx = Fixture::new();
        let script = fx.script("parent", "sleep 30 & echo $$ $! > \"$1\"; sleep 30");
        let (mut spec, pid_file) = fx.spec_with_pid_file(script);
        spec.timeout = Duration::from_millis(300);
        let result = run(spec).await;
        let pids = read_pids(&pid_file).await;
        let dead = dies_within(pids[1], Duration::from_secs(1)).await;
        cleanup(&pids);
        assert!(matches!(result, Err(ProcessError::TimedOut)), "{result:?}");
        assert!(dead, "grandchild {} survived the timeout", pids[1]);
    }

    // On the multi-threaded runtime, as under napi.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cancel_kills_the_group_promptly() {
        let fx = Fixture::new();
        let script = fx.script("parent", "sleep 30 & echo $$ $! > \"$1\"; sleep 30");
        let (spec, pid_file) = fx.spec_with_pid_file(script);
        let cancel = CancellationToken::new();
        let canceller = {
            let cancel = cancel.clone();
            async move {
                let pids = read_pids(&pid_file).await;
                cancel.cancel();
                (pids, StdInstant::now())
            }
        };
        let (result, (pids, cancelled_at)) = tokio::join!(run_with(spec, &cancel), canceller);
        let latency = cancelled_at.elapsed();
        let leader_dead = !is_alive(pids[0]);
        let grandchild_dead = dies_within(pids[1], Duration::from_secs(1)).await;
        cleanup(&pids);
        assert!(matches!(result, Err(ProcessError::Cancelled)), "{result:?}");
        // Both die on SIGTERM: the run ends before the grace period would have sent SIGKILL.
        assert!(latency < TERM_GRACE, "{latency:?}");
        assert!(leader_dead && grandchild_dead, "{pids:?} survived");
    }

    #[tokio::test]
    async fn a_cancelled_token_starts_nothing() {
        let fx = Fixture::new();
        let marker = fx.path("ran");
        let mut spec = fx.spec(fx.script("touch", "touch \"$1\""));
        spec.args = vec![marker.clone().into_os_string()];
        let cancel = CancellationToken::new();
        cancel.cancel();
        let result = run_with(spec, &cancel).await;
        assert!(matches!(result, Err(ProcessError::Cancelled)), "{result:?}");
        assert!(!marker.exists());
    }

    #[tokio::test]
    async fn sigkill_follows_an_ignored_sigterm_after_the_grace() {
        let fx = Fixture::new();
        let script = fx.script(
            "stubborn",
            "trap '' TERM; sleep 30 & echo $$ $! > \"$1\"; wait",
        );
        let (mut spec, pid_file) = fx.spec_with_pid_file(script);
        spec.timeout = Duration::from_millis(200);
        let started = StdInstant::now();
        let result = run(spec).await;
        let elapsed = started.elapsed();
        let pids = read_pids(&pid_file).await;
        let leader_dead = !is_alive(pids[0]);
        let grandchild_dead = dies_within(pids[1], Duration::from_secs(1)).await;
        cleanup(&pids);
        assert!(matches!(result, Err(ProcessError::TimedOut)), "{result:?}");
        assert!(
            elapsed >= Duration::from_millis(200) + TERM_GRACE,
            "{elapsed:?}"
        );
        assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
        assert!(leader_dead && grandchild_dead, "{pids:?} survived");
    }

    #[tokio::test]
    async fn a_grandchild_holding_stdout_does_not_outlive_its_leader() {
        let fx = Fixture::new();
        let script = fx.script("leaver", "sleep 30 & echo $$ $! > \"$1\"; echo done");
        let (spec, pid_file) = fx.spec_with_pid_file(script);
        let started = StdInstant::now();
        let result = run(spec).await;
        let elapsed = started.elapsed();
        let pids = read_pids(&pid_file).await;
        let dead = dies_within(pids[1], Duration::from_secs(1)).await;
        cleanup(&pids);
        let output = ok(result);
        assert_eq!(
            (output.code, output.stdout.text.as_str()),
            (Some(0), "done")
        );
        assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
        assert!(dead, "grandchild {} survived", pids[1]);
    }

    /// A script whose `setsid` child (out of reach of any group kill) writes its pid to `$1`
    /// and sleeps, keeping stdout open; the script then runs `then`.
    fn escaper(fx: &Fixture, then: &str) -> (ProcessSpec, PathBuf) {
        let script = fx.script(
            "escaper",
            &format!(
                "setsid sh -c 'echo $$ > \"$1\"; exec sleep 30' sh \"$1\" &\n\
                 while [ ! -s \"$1\" ]; do sleep 0.01; done; {then}"
            ),
        );
        fx.spec_with_pid_file(script)
    }

    #[tokio::test]
    async fn a_descendant_in_a_new_session_dies_with_its_backend() {
        let fx = Fixture::new();
        let (spec, pid_file) = escaper(&fx, "echo done");
        let started = StdInstant::now();
        let result = run(spec).await;
        let elapsed = started.elapsed();
        let pids = read_pids(&pid_file).await;
        let dead = dies_within(pids[0], Duration::from_secs(1)).await;
        cleanup(&pids);
        let output = ok(result);
        assert_eq!(
            (output.code, output.stdout.text.as_str()),
            (Some(0), "done")
        );
        assert!(dead, "the setsid descendant {} survived", pids[0]);
        // No waiting out the drain: nothing holds the pipes once the tree is gone.
        assert!(elapsed < DRAIN_AFTER_EXIT, "{elapsed:?}");
    }

    #[tokio::test]
    async fn a_descendant_in_a_new_session_dies_on_timeout_and_on_cancel() {
        for cancelled in [false, true] {
            let fx = Fixture::new();
            let (mut spec, pid_file) = escaper(&fx, "sleep 30");
            spec.timeout = Duration::from_millis(if cancelled { 20_000 } else { 300 });
            let cancel = CancellationToken::new();
            let canceller = async {
                let pids = read_pids(&pid_file).await;
                if cancelled {
                    cancel.cancel();
                }
                pids
            };
            let (result, pids) = tokio::join!(run_with(spec, &cancel), canceller);
            let dead = dies_within(pids[0], Duration::from_secs(1)).await;
            cleanup(&pids);
            let expected = if cancelled { "Cancelled" } else { "TimedOut" };
            assert_eq!(
                format!("{:?}", result.map(|_| ())),
                format!("Err({expected})")
            );
            assert!(dead, "the setsid descendant {} survived", pids[0]);
        }
    }

    #[tokio::test]
    async fn dropping_the_future_kills_the_group() {
        let fx = Fixture::new();
        let script = fx.script("parent", "sleep 30 & echo $$ $! > \"$1\"; sleep 30");
        let (spec, pid_file) = fx.spec_with_pid_file(script);
        let cancel = CancellationToken::new();
        let pending = run_with(spec, &cancel);
        // The caller gives up on the future: it is dropped with the child still running.
        let gave_up = tokio::time::timeout(Duration::from_secs(5), async {
            tokio::select! {
                _ = pending => false,
                _ = read_pids(&pid_file) => true,
            }
        })
        .await;
        let pids = read_pids(&pid_file).await;
        let mut dead = true;
        for &pid in &pids {
            dead &= dies_within(pid, Duration::from_secs(1)).await;
        }
        cleanup(&pids);
        assert_eq!(gave_up, Ok(true));
        assert!(dead, "{pids:?} survived the drop");
    }

    /// `run_process_streaming` with ETXTBSY retried (see [`run_with`]); `consume` reads each
    /// attempt's lines concurrently, and what it returns comes back with the result.
    async fn stream_with<F, Fut, T>(
        spec: ProcessSpec,
        max_line: usize,
        cancel: &CancellationToken,
        consume: F,
    ) -> (Result<ProcessOutput, ProcessError>, T)
    where
        F: Fn(mpsc::Receiver<StdoutLine>) -> Fut,
        Fut: Future<Output = T>,
    {
        let (result, consumed, _) = stream_timed(spec, max_line, cancel, consume).await;
        (result, consumed)
    }

    /// [`stream_with`], also telling how long the run itself took (the consumer may go on).
    async fn stream_timed<F, Fut, T>(
        spec: ProcessSpec,
        max_line: usize,
        cancel: &CancellationToken,
        consume: F,
    ) -> (Result<ProcessOutput, ProcessError>, T, Duration)
    where
        F: Fn(mpsc::Receiver<StdoutLine>) -> Fut,
        Fut: Future<Output = T>,
    {
        let mut attempts = 0;
        loop {
            let (lines, receiver) = stdout_lines(max_line);
            let started = StdInstant::now();
            let run = async {
                let result = run_process_streaming(spec.clone(), lines, cancel).await;
                (result, started.elapsed())
            };
            let ((result, took), consumed) = tokio::join!(run, consume(receiver));
            match result {
                Err(ProcessError::Spawn(e))
                    if e.raw_os_error() == Some(libc::ETXTBSY) && attempts < 50 =>
                {
                    attempts += 1;
                    sleep(Duration::from_millis(10)).await;
                }
                other => return (other, consumed, took),
            }
        }
    }

    async fn all_lines(mut receiver: mpsc::Receiver<StdoutLine>) -> Vec<StdoutLine> {
        let mut lines = Vec::new();
        while let Some(line) = receiver.recv().await {
            lines.push(line);
        }
        lines
    }

    fn texts(lines: &[StdoutLine]) -> Vec<&str> {
        lines.iter().map(|line| line.text.as_str()).collect()
    }

    #[tokio::test]
    async fn streams_stdout_lines_while_the_child_runs_and_keeps_its_text() {
        let fx = Fixture::new();
        // The child goes on only once the consumer has seen the first line.
        let script = fx.script(
            "chatty",
            "echo first; while [ ! -e \"$1\" ]; do sleep 0.01; done; printf 'second\\nthird'",
        );
        let marker = fx.path("seen-first");
        let mut spec = fx.spec(script);
        spec.args = vec![marker.clone().into_os_string()];
        let (result, lines) = stream_with(spec, 1000, &CancellationToken::new(), |mut rx| {
            let marker = marker.clone();
            async move {
                let first = rx.recv().await.expect("a first line");
                std::fs::write(&marker, "").expect("marker");
                let mut lines = vec![first];
                lines.extend(all_lines(rx).await);
                lines
            }
        })
        .await;
        let output = ok(result);
        assert_eq!(texts(&lines), ["first", "second", "third"]);
        assert!(lines.iter().all(|line| !line.cut));
        assert_eq!(output.code, Some(0));
        assert_eq!(output.stdout.text, "first\nsecond\nthird");
    }

    #[tokio::test]
    async fn a_character_split_across_writes_arrives_whole() {
        let fx = Fixture::new();
        let script = fx.script(
            "split",
            "printf 'a\\360\\237'; sleep 0.2; printf '\\230\\200b\\n\\303'; sleep 0.2; printf '\\274\\n'",
        );
        let (result, lines) =
            stream_with(fx.spec(script), 1000, &CancellationToken::new(), all_lines).await;
        assert_eq!(texts(&lines), ["a😀b", "ü"]);
        assert_eq!(ok(result).stdout.text, "a😀b\nü");
    }

    #[tokio::test]
    async fn a_line_past_the_limit_keeps_its_beginning_and_stdout_its_size() {
        let fx = Fixture::new();
        let script = fx.script(
            "long",
            "head -c 300000 /dev/zero | tr '\\0' x; echo; echo next",
        );
        let (result, lines) =
            stream_with(fx.spec(script), 1000, &CancellationToken::new(), all_lines).await;
        assert_eq!(
            lines,
            [
                StdoutLine {
                    text: "x".repeat(1000),
                    len: 300_000,
                    cut: true
                },
                StdoutLine {
                    text: "next".into(),
                    len: 4,
                    cut: false
                }
            ]
        );
        assert_eq!(ok(result).stdout.trimmed_len, 300_005);
    }

    #[tokio::test]
    async fn a_consumer_that_takes_no_line_pauses_the_child() {
        let fx = Fixture::new();
        // 1.2 MB of lines: far more than a pipe and the reader hold.
        let script = fx.script("many", "yes line | head -n 200000; touch \"$1\"");
        let done = fx.path("done");
        let mut spec = fx.spec(script);
        spec.args = vec![done.clone().into_os_string()];
        let (result, (finished_early, lines)) =
            stream_with(spec, 1000, &CancellationToken::new(), |rx| {
                let done = done.clone();
                async move {
                    sleep(Duration::from_millis(500)).await;
                    let finished_early = done.exists();
                    (finished_early, all_lines(rx).await)
                }
            })
            .await;
        assert!(
            !finished_early,
            "the child wrote everything to a consumer that read nothing"
        );
        assert_eq!(lines.len(), 200_000);
        assert!(lines.iter().all(|line| line.text == "line"));
        let output = ok(result);
        assert_eq!(output.stdout.trimmed_len, 200_000 * 5 - 1);
        assert!(done.exists());
    }

    #[tokio::test]
    async fn a_larger_pipe_takes_what_the_child_writes_while_the_consumer_waits() {
        let max = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
            .ok()
            .and_then(|text| text.trim().parse::<usize>().ok());
        if max.is_none_or(|max| max < MIB) {
            return; // This system allows no 1 MiB pipe.
        }
        let fx = Fixture::new();
        // 750 kB of lines: too much for a default pipe, not for a 1 MiB one.
        let script = fx.script("many", "yes line | head -n 150000; touch \"$1\"");
        let done = fx.path("done");
        let mut spec = fx.spec(script);
        spec.args = vec![done.clone().into_os_string()];
        let (lines, rx) = stdout_lines(1000);
        let cancel = CancellationToken::new();
        let consume = async {
            sleep(Duration::from_millis(500)).await;
            let finished = done.exists();
            (finished, all_lines(rx).await.len())
        };
        let (result, (finished, count)) = tokio::join!(
            run_process_streaming(spec, lines.with_pipe_capacity(MIB), &cancel),
            consume
        );
        assert!(finished, "the child waited although the pipe had room");
        assert_eq!(count, 150_000);
        assert_eq!(ok(result).stdout.trimmed_len, 150_000 * 5 - 1);
    }

    #[tokio::test]
    async fn a_slow_consumer_still_gets_every_line_the_child_wrote_before_exiting() {
        let fx = Fixture::new();
        // 30 kB: the pipe holds it all, so the child exits at once.
        let script = fx.script("quick", "yes line | head -n 6000");
        let started = StdInstant::now();
        let (result, lines) = stream_with(
            fx.spec(script),
            1000,
            &CancellationToken::new(),
            |rx| async {
                // Several times the drain after the exit.
                sleep(DRAIN_AFTER_EXIT * 3).await;
                all_lines(rx).await
            },
        )
        .await;
        assert!(started.elapsed() >= DRAIN_AFTER_EXIT * 3);
        assert_eq!(lines.len(), 6000);
        let output = ok(result);
        assert_eq!(
            (output.code, output.stdout.trimmed_len),
            (Some(0), 6000 * 5 - 1)
        );
    }

    #[tokio::test]
    async fn a_consumer_that_leaves_early_stops_only_the_lines() {
        let fx = Fixture::new();
        let script = fx.script("many", "yes line | head -n 200000");
        let (result, first) = stream_with(
            fx.spec(script),
            1000,
            &CancellationToken::new(),
            |mut rx| async move { rx.recv().await },
        )
        .await;
        assert_eq!(first.map(|line| line.text), Some("line".into()));
        let output = ok(result);
        assert_eq!(
            (output.code, output.stdout.trimmed_len),
            (Some(0), 200_000 * 5 - 1)
        );
    }

    #[tokio::test]
    async fn a_full_consumer_does_not_hold_off_a_timeout_or_a_cancel() {
        for cancelled in [false, true] {
            let fx = Fixture::new();
            let mut spec = fx.spec(fx.script("endless", "exec yes line"));
            spec.timeout = Duration::from_millis(if cancelled { 20_000 } else { 300 });
            let cancel = CancellationToken::new();
            let (result, (), took) = stream_timed(spec, 1000, &cancel, |rx| {
                let cancel = cancel.clone();
                async move {
                    sleep(Duration::from_millis(300)).await;
                    if cancelled {
                        cancel.cancel();
                    }
                    // Never reads: the reader waits on a full channel until the end.
                    sleep(Duration::from_secs(3)).await;
                    drop(rx);
                }
            })
            .await;
            let expected = if cancelled { "Cancelled" } else { "TimedOut" };
            assert_eq!(
                format!("{:?}", result.map(|_| ())),
                format!("Err({expected})")
            );
            // The consumer holds its full channel for 3 s; the run does not wait for it.
            assert!(took < Duration::from_millis(1500), "{took:?}");
        }
    }

    #[tokio::test]
    async fn a_missing_program_is_a_spawn_not_found() {
        let fx = Fixture::new();
        let result = run(fx.spec(fx.path("no-such-cli"))).await;
        match result {
            Err(ProcessError::Spawn(e)) => assert_eq!(e.kind(), io::ErrorKind::NotFound),
            other => panic!("expected Spawn(NotFound), got {other:?}"),
        }
    }

    #[tokio::test]
    async fn reads_a_file_with_the_bounded_reader_within_the_deadline() {
        let fx = Fixture::new();
        let seconds = |s| crate::deadline::Timeout::from_seconds(s).expect("valid timeout");
        let deadline = Deadline::starting_now(seconds(60.0), CancellationToken::new());
        let answer = fx.path("answer");
        std::fs::write(&answer, "\n  the answer \n").expect("write");
        let read = read_bounded_file(&answer, 100, &deadline)
            .await
            .expect("read");
        assert_eq!((read.text.as_str(), read.trimmed_len), ("the answer", 10));
        let big = fx.path("big");
        std::fs::write(&big, pattern(300_000)).expect("write");
        let read = read_bounded_file(&big, 1000, &deadline)
            .await
            .expect("read");
        assert_eq!((read.text.len(), read.trimmed_len), (1000, 300_000));
        let missing = read_bounded_file(&fx.path("missing"), 100, &deadline).await;
        assert!(
            matches!(&missing, Err(ReadStopped::Io(e)) if e.kind() == io::ErrorKind::NotFound),
            "{missing:?}"
        );
        // A FIFO in the answer's place is refused at once, never waited on.
        let fifo = fx.path("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let refused = tokio::time::timeout(
            Duration::from_secs(2),
            read_bounded_file(&fifo, 100, &deadline),
        )
        .await
        .expect("a FIFO does not block the read");
        assert!(matches!(refused, Err(ReadStopped::Io(_))), "{refused:?}");
        // An answer file that never ends (a sparse 64 GiB file) stops at the deadline.
        let sparse = fx.path("sparse");
        std::fs::File::create(&sparse)
            .and_then(|f| f.set_len(64 << 30))
            .expect("sparse file");
        let short = Deadline::starting_now(seconds(0.3), CancellationToken::new());
        let started = StdInstant::now();
        let stopped = read_bounded_file(&sparse, 1000, &short).await;
        assert!(
            matches!(
                stopped,
                Err(ReadStopped::Deadline(crate::deadline::Stop::TimedOut))
            ),
            "{stopped:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn takes_relative_path_entries_from_the_working_directory() {
        let fx = Fixture::new();
        std::fs::create_dir_all(fx.path("bin")).expect("mkdir");
        let tool = fx.script("bin/tool", "exit 0");
        let cwd = std::env::current_dir().expect("cwd");
        // The fixture's folder, relative to the working directory cargo runs tests in.
        let up = "../".repeat(cwd.components().count() - 1);
        let bin = fx.path("bin");
        let relative = format!("{up}{}", bin.display().to_string().trim_start_matches('/'));
        let env = BTreeMap::from([("PATH".to_string(), format!("/no/such/dir:{relative}"))]);
        let found = find_executable("tool", &env).expect("found through the relative entry");
        assert!(found.is_absolute(), "{found:?}");
        assert_eq!(found.canonicalize().ok(), tool.canonicalize().ok());
    }

    #[test]
    fn does_not_expand_a_tilde_in_path_as_exec_does_not() {
        // A tool under this process's home, named through `~/…`: exec would not find it there.
        let home = std::env::home_dir().expect("a home directory");
        let dir = tempfile::tempdir_in(&home).expect("a folder in the home directory");
        let tool = dir.path().join("tool");
        std::fs::write(&tool, "#!/bin/sh\nexit 0\n").expect("write");
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let name = dir.path().file_name().expect("a name").to_string_lossy();
        let env = BTreeMap::from([("PATH".to_string(), format!("~/{name}"))]);
        assert_eq!(find_executable("tool", &env), None);
        let env = BTreeMap::from([("PATH".to_string(), dir.path().display().to_string())]);
        assert_eq!(find_executable("tool", &env), Some(tool));
    }

    #[test]
    fn finds_executables_in_the_given_path_only() {
        let fx = Fixture::new();
        let first = fx.path("first");
        let second = fx.path("second");
        std::fs::create_dir_all(first.join("tool-dir")).expect("mkdir");
        std::fs::write(first.join("tool"), "not executable").expect("write");
        std::fs::create_dir_all(&second).expect("mkdir");
        let tool = fx.script("second/tool", "exit 0");
        let env = |path: String| BTreeMap::from([("PATH".to_string(), path)]);
        let path = format!(
            "relative::/no/such/dir:{}:{}",
            first.display(),
            second.display()
        );
        assert_eq!(find_executable("tool", &env(path.clone())), Some(tool));
        assert_eq!(find_executable("tool-dir", &env(path.clone())), None);
        assert_eq!(find_executable("missing", &env(path.clone())), None);
        assert_eq!(
            find_executable("second/tool", &env(fx.path("").display().to_string())),
            None
        );
        assert_eq!(find_executable("tool", &BTreeMap::new()), None);
        assert_eq!(
            find_executable("sh", &env("/usr/bin:/bin".into())).map(|p| p.is_absolute()),
            Some(true)
        );
    }
}
