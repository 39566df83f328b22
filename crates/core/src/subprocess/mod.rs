//! The one process runner ([`run_child`]), for the CLI backends and for git (docs/CONTRACT.md
//! §8): no shell, stdin written while stdout and stderr are read, output kept up to a limit and
//! counted past it, and the whole tree stopped on timeout, cancellation or drop, so no
//! grandchild outlives the call. A CLI backend runs supervised ([`run_process`]); git runs
//! unsupervised, to stay cheap ([`Supervision::Unsupervised`]).
//!
//! What this module does is the same on every OS; how a child is started so that it cannot
//! outlive its run, how it is stopped and what the host's death does to it is the OS's
//! (`unix.rs`: the supervisor and process groups; `windows.rs`: a Job Object), behind
//! [`os::Running`] (docs/ARCHITECTURE.md §4).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use thiserror::Error;
use tokio::sync::mpsc;
use tokio::time::{sleep, Instant};
use tokio_util::sync::CancellationToken;

use crate::bounded_text::{read_bounded_until, BoundedText, Measured, ReadStopped};
use crate::deadline::{Deadline, Stop, Timeout};
use crate::descriptors;
use crate::env::Env;
use crate::lines::StdoutLine;
use crate::progress::Progress;
use std::borrow::Cow;
use streams::{read_stdout, read_stream, write_stdin, ConsumerWait};

#[cfg(any(windows, test))]
mod cmd_shim;
mod find;
mod streams;
#[cfg(all(test, unix))]
mod tests;
#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as os;
#[cfg(windows)]
mod windows;
#[cfg(all(test, windows))]
mod windows_tests;
#[cfg(windows)]
use windows as os;

pub use find::{find_executable, find_program};

/// The command line that starts `name`, found on the `PATH` of `env`, as a relay starts a CLI:
/// the program and the arguments that go before the caller's (on Windows an npm `.cmd` shim is
/// the node script it starts, `cmd_shim.rs`; another batch file is refused). `None` when no
/// program of that name is found. For the CLI's `install`, which runs the hosts' own CLIs.
pub fn command_line(name: &str, env: &Env) -> Result<Option<Vec<OsString>>, ProcessError> {
    let Ok(program) = find_program(name, env) else {
        return Ok(None);
    };
    let (program, leading_args) = os::runnable(&program, Some(env))?;
    Ok(Some(
        std::iter::once(program.into_os_string())
            .chain(leading_args)
            .collect(),
    ))
}

/// How long the pipes are still read once the child has exited, having had its tree stopped.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);
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
    /// The run's progress, which its output touches; once the call's stall watchdog marks it
    /// stalled, the group is killed and the call is `Stalled`.
    pub progress: Progress,
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
    /// Past its timeout; `stderr`: what it had written there by then (a CLI's last words often
    /// say why it did not finish: a retry, a lost connection).
    #[error("the process timed out")]
    TimedOut { stderr: Measured },
    /// It wrote nothing for its idle time-out (`after`) and was stopped as on a time-out;
    /// `stderr` as for [`ProcessError::TimedOut`].
    #[error("the process made no progress")]
    Stalled { stderr: Measured, after: Timeout },
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
        progress,
    } = spec;
    // `Duration::MAX` means no limit.
    let until = Instant::now()
        .checked_add(timeout)
        .unwrap_or_else(|| Instant::now() + NO_LIMIT);
    let launch = Launch {
        program: program.as_os_str(),
        args: &args,
        cwd: Some(&cwd),
        env: Some(Cow::Owned(env)),
        extra_env: &[],
        stdin,
        supervision: Supervision::Supervised { remove_on_stop },
        progress,
    };
    let stdout = BoundedText::new(output_limit);
    let done = run_child(launch, stdout, output_limit, lines, until, cancel).await?;
    Ok(ProcessOutput {
        code: done.status.code(),
        signal: os::exit_signal(&done.status),
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
    /// The child's entire environment; `None`: the relay's own. Given, it is dropped once the
    /// child has started (hundreds of relays at once each keep none).
    pub env: Option<Cow<'a, Env>>,
    /// Set on top of `env`.
    pub extra_env: &'a [(&'a str, &'a str)],
    pub stdin: StdinSource,
    pub supervision: Supervision,
    /// Touched by every byte the child writes; stalled, the child is stopped (`Stalled`).
    /// Unwatched for git.
    pub progress: Progress,
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
        return Err(ProcessError::TimedOut {
            stderr: Measured::default(),
        });
    }
    let progress = launch.progress.clone();
    let (mut command, stdin_bytes) = command_for(launch)?;
    // Its pipes need descriptors: in a burst, it waits for others to free theirs.
    let Some(spawned) = descriptors::when_available(until, cancel, || command.spawn()).await else {
        return Err(ProcessError::Cancelled);
    };
    let mut child = command.running(spawned.map_err(ProcessError::Spawn)?)?;
    // Its copies of the arguments and environment are not needed while the child runs.
    drop(command);

    let stdin_pipe = child.take_stdin();
    let stdout_pipe = child.take_stdout();
    if let (Some(pipe), Some(bytes)) = (&stdout_pipe, lines.as_ref().and_then(|l| l.pipe_capacity))
    {
        os::set_pipe_capacity(pipe, bytes);
    }
    let stderr_pipe = child.take_stderr();
    let mut stdout = stdout;
    let mut stderr = BoundedText::new(stderr_limit);
    let consumer = ConsumerWait::default();
    let status = {
        // All three at once: a child may fill stdout before it reads stdin, or never read it.
        let io = async {
            tokio::try_join!(
                read_stdout(stdout_pipe, &mut stdout, lines, &consumer, &progress),
                read_stream(stderr_pipe, &mut stderr, &progress),
                write_stdin(stdin_pipe, stdin_bytes),
            )
            .map(|_| ())
        };
        let timeout = until.saturating_duration_since(Instant::now());
        supervise(&mut child, io, (timeout, &progress), cancel, &consumer).await
    };
    let stderr = stderr.finish();
    let status = match status {
        Err(ProcessError::TimedOut { .. }) => return Err(ProcessError::TimedOut { stderr }),
        Err(ProcessError::Stalled { after, .. }) => {
            return Err(ProcessError::Stalled { stderr, after })
        }
        other => other?,
    };
    if let Some(error) = child.spawn_failure(status, &stderr.text) {
        return Err(ProcessError::Spawn(error));
    }
    Ok(Finished {
        status,
        stdout: stdout.finish(),
        stderr,
    })
}

/// The command `launch` describes, with its three pipes, and the bytes for its stdin.
fn command_for(launch: Launch<'_>) -> Result<(os::Command, Option<Vec<u8>>), ProcessError> {
    let Launch {
        program,
        args,
        cwd,
        env,
        extra_env,
        stdin,
        supervision,
        progress: _,
    } = launch;
    let (stdin_mode, stdin_bytes) = match stdin {
        StdinSource::Null => (Stdio::null(), None),
        StdinSource::Bytes(bytes) => (Stdio::piped(), Some(bytes)),
    };
    let mut command = os::Command::new(program, env.as_deref(), supervision)?;
    let std_command = command.std_mut();
    std_command.args(args);
    if let Some(cwd) = cwd {
        std_command.current_dir(cwd);
    }
    if let Some(env) = env {
        std_command.env_clear().envs(env.iter());
    }
    std_command
        .envs(extra_env.iter().copied())
        .stdin(stdin_mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Ok((command, stdin_bytes))
}

/// Waits for the child to exit and the pipes to close, whichever comes last, unless the
/// timeout or the token ends it first. Every path leaves the tree stopped.
async fn supervise(
    child: &mut os::Running,
    io: impl Future<Output = io::Result<()>>,
    (timeout, progress): (Duration, &Progress),
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
    // When the child exited, and how long stdout's reader had waited for its consumer.
    let mut exited_at = (Instant::now(), Duration::ZERO);
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => {
                child.stop().await;
                return Err(ProcessError::Cancelled);
            }
            // Once the backend has exited its status is the answer, whatever the clock says.
            error = must_stop(timer.as_mut(), progress), if status.is_none() => {
                child.stop().await;
                return Err(error);
            }
            exited = child.wait(), if status.is_none() && child.may_wait(io_done) => match exited {
                Ok(exit) => {
                    status = Some(exit);
                    exited_at = (Instant::now(), consumer.total());
                    drain.as_mut().reset(exited_at.0 + DRAIN_AFTER_EXIT);
                }
                Err(e) => {
                    child.stop().await;
                    return Err(ProcessError::Io(e));
                }
            },
            done = &mut io, if !io_done => {
                if let Err(e) = done {
                    child.stop().await;
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

/// Resolves when the child must stop: past its timeout, or marked stalled by the call's
/// watchdog (stopped as on a time-out). Its stderr is filled in by `run_child`, which holds
/// stderr's text once the pipes' future is dropped.
async fn must_stop(
    timer: std::pin::Pin<&mut tokio::time::Sleep>,
    progress: &Progress,
) -> ProcessError {
    let stderr = Measured::default();
    tokio::select! {
        () = timer => ProcessError::TimedOut { stderr },
        after = progress.stalled() => ProcessError::Stalled { stderr, after },
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
            os::is_a_directory_error()
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
