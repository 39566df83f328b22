//! How a child is kept from outliving its run on Unix (docs/ARCHITECTURE.md §4): a CLI backend
//! runs under the supervisor (`supervisor/src/main.rs`), which stops its whole tree when asked
//! (SIGTERM) or when the host dies; git runs in a process group of its own, killed (SIGKILL) on
//! timeout, cancel or drop, and gets SIGKILL itself when the host dies.

use std::ffi::OsStr;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::ExitStatus;
use std::time::Duration;

use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use super::{ProcessError, Supervision};
use crate::env::Env;
use phone_a_friend_supervisor::protocol::{
    spawn_failure_errno, END_OF_FLAGS, GRACE_FLAG, PARENT_FLAG, REMOVE_FLAG, SPAWN_FAILED_EXIT,
};

/// How long a group gets between SIGTERM and SIGKILL.
pub(super) const TERM_GRACE: Duration = Duration::from_millis(500);
/// Bound on the wait for a supervisor told to stop: its grace, its SIGKILL rounds, and slack.
const STOP_LIMIT: Duration = Duration::from_secs(3);
/// How long a killed unsupervised child may take to be reaped before it is left to tokio's
/// orphan reaper.
const REAP_GRACE: Duration = Duration::from_secs(2);

/// A child not yet started: the program, under the supervisor or not, in a process group of
/// its own.
pub(super) struct Command {
    command: tokio::process::Command,
    supervised: bool,
    /// Started through the supervisor's executable (supervised, or `--exec`): a failure to
    /// start the program comes back as its exit and a line on stderr.
    launched: bool,
}

impl Command {
    /// `program`, started as it is (`_env`, the child's environment, is for Windows's
    /// shims).
    pub(super) fn new(
        program: &OsStr,
        _env: Option<&Env>,
        supervision: Supervision,
    ) -> Result<Command, ProcessError> {
        let supervised = matches!(supervision, Supervision::Supervised { .. });
        let mut launched = supervised;
        let mut command = match supervision {
            Supervision::Supervised { remove_on_stop } => {
                let supervisor =
                    crate::supervisor::executable().map_err(ProcessError::Supervisor)?;
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
            Supervision::Unsupervised => match die_with_the_host(program) {
                Some(command) => {
                    launched = true;
                    command
                }
                None => {
                    let mut command = std::process::Command::new(program);
                    die_with_the_host_after_fork(&mut command);
                    command
                }
            },
        };
        // Out of the host's group: a terminal's Ctrl-C is for the host to handle.
        command.process_group(0);
        let mut command = tokio::process::Command::from(command);
        // Never SIGKILL the supervisor: only it can end what left the backend's process group.
        command.kill_on_drop(!supervised);
        Ok(Command {
            command,
            supervised,
            launched,
        })
    }

    /// The command, for its arguments, environment, working directory and pipes.
    pub(super) fn std_mut(&mut self) -> &mut std::process::Command {
        self.command.as_std_mut()
    }

    /// Starts the child; retried while descriptors are short (`descriptors::when_available`).
    pub(super) fn spawn(&mut self) -> io::Result<Child> {
        self.command.spawn()
    }

    /// Arms the guard for a child this command started.
    pub(super) fn running(&self, child: Child) -> Result<Running, ProcessError> {
        let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
            let who = if self.supervised {
                "the supervisor"
            } else {
                "the child"
            };
            return Err(ProcessError::Io(io::Error::other(format!(
                "{who} has no process id"
            ))));
        };
        Ok(Running {
            guard: ChildGuard {
                pid,
                supervised: self.supervised,
                armed: true,
            },
            launched: self.launched,
            child,
        })
    }
}

/// A started child (the supervisor, or git) and the guard that stops it.
pub(super) struct Running {
    // Declared before `child` so it drops first: the child is signalled while it is not yet
    // reaped, and so while its id cannot have been reused.
    guard: ChildGuard,
    launched: bool,
    child: Child,
}

impl Running {
    pub(super) fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    pub(super) fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    pub(super) fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// Whether the exit may be waited for now: an unsupervised child is reaped only once its
    /// pipes have closed (`io_done`): until then its group's id stays its own, so the group can
    /// be killed whatever in it still holds a pipe.
    pub(super) fn may_wait(&self, io_done: bool) -> bool {
        io_done || self.guard.supervised
    }

    /// The child's exit. The supervisor killed the backend's whole tree before it exited; an
    /// unsupervised child's group may now be another's: neither is signalled again.
    pub(super) async fn wait(&mut self) -> io::Result<ExitStatus> {
        let exit = self.child.wait().await?;
        self.guard.disarm();
        Ok(exit)
    }

    /// Stops the child and waits for it to exit, so the caller returns with nothing left
    /// running: the supervisor stops the tree (SIGTERM, then SIGKILL after [`TERM_GRACE`]); an
    /// unsupervised child, killed, is reaped within [`REAP_GRACE`] or left to tokio's orphan
    /// reaper (`kill_on_drop`).
    pub(super) async fn stop(&mut self) {
        self.guard.request_stop();
        if !self.guard.supervised {
            let _ = tokio::time::timeout(REAP_GRACE, self.child.wait()).await;
        } else if tokio::time::timeout(STOP_LIMIT, self.child.wait())
            .await
            .is_err()
        {
            // A supervisor that does not answer is broken: end it rather than hang.
            let _ = self.child.start_kill();
            let _ = tokio::time::timeout(STOP_LIMIT, self.child.wait()).await;
        }
        self.guard.disarm();
    }

    /// The supervisor could not start the program: it said so as exit 127 and a line on
    /// stderr (`protocol::spawn_failure_errno`).
    pub(super) fn spawn_failure(&self, status: ExitStatus, stderr: &str) -> Option<io::Error> {
        if !self.launched || status.code() != Some(SPAWN_FAILED_EXIT) {
            return None;
        }
        spawn_failure_errno(stderr).map(io::Error::from_raw_os_error)
    }
}

/// The signal that ended the child, if one did.
pub(super) fn exit_signal(status: &ExitStatus) -> Option<i32> {
    status.signal()
}

/// What reading a directory as a file says, in the OS's own words.
pub(super) fn is_a_directory_error() -> io::Error {
    io::Error::from_raw_os_error(libc::EISDIR)
}

/// Asks for a larger stdout pipe (see `LineSender::with_pipe_capacity`); a Linux call.
pub(super) fn set_pipe_capacity(pipe: &ChildStdout, bytes: usize) {
    set_linux_pipe_size(pipe.as_raw_fd(), bytes);
}

/// An unsupervised child gets SIGKILL when the host dies (git is quick, and with the
/// repository's programs neutralised starts none of its own, but a FIFO in the repository can
/// make it wait forever). `PR_SET_PDEATHSIG` follows the thread that started the child: a
/// runtime worker or the JS thread, which live as long as the host.
///
/// Asked for by the supervisor's executable in `--exec` mode, which then becomes `program`:
/// started with `posix_spawn` (no `pre_exec`), that costs less than asking in the child between
/// `fork` and `exec`, as `fork` copies the host's page tables and runs its fork handlers
/// (BENCHMARKS.md, "Side by side with upstream": `gitDiffBase()` with a 400 MB heap, ~40 ms
/// a call with the fork, ~5 ms without). `None` when the executable is missing.
#[cfg(target_os = "linux")]
fn die_with_the_host(program: &OsStr) -> Option<std::process::Command> {
    let launcher = crate::supervisor::executable().ok()?;
    let mut command = std::process::Command::new(launcher);
    command
        .arg(PARENT_FLAG)
        .arg(std::process::id().to_string())
        .arg(phone_a_friend_supervisor::protocol::EXEC_FLAG)
        .arg(END_OF_FLAGS)
        .arg(program);
    Some(command)
}

/// macOS has no parent-death signal (see [`die_with_the_host_after_fork`]).
#[cfg(not(target_os = "linux"))]
fn die_with_the_host(_program: &OsStr) -> Option<std::process::Command> {
    None
}

/// [`die_with_the_host`] without the supervisor's executable: asked for in the child.
#[cfg(target_os = "linux")]
fn die_with_the_host_after_fork(command: &mut std::process::Command) {
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

/// macOS has no parent-death signal: git is killed with its group at the deadline, on abort and
/// drop, but if the host dies without its cleanup it ends when its work does
/// (docs/GUARANTEES.md, "On macOS").
#[cfg(not(target_os = "linux"))]
fn die_with_the_host_after_fork(_command: &mut std::process::Command) {}

/// Best effort: a pipe left at its default size still works.
#[cfg(target_os = "linux")]
fn set_linux_pipe_size(fd: std::os::fd::RawFd, bytes: usize) {
    let bytes = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: `fd` is an open pipe owned by the caller; F_SETPIPE_SZ takes an int and touches
    // no memory of ours.
    unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, bytes) };
}

/// macOS pipes have no settable size: they grow by themselves (to 64 KiB).
#[cfg(not(target_os = "linux"))]
fn set_linux_pipe_size(_fd: std::os::fd::RawFd, _bytes: usize) {}

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

/// The program to start for `program` and the arguments that go before the caller's: itself,
/// as the OS runs any executable file (Windows needs more: `windows.rs`).
pub(super) fn runnable(
    program: &std::path::Path,
    _env: Option<&Env>,
) -> Result<(std::path::PathBuf, Vec<std::ffi::OsString>), ProcessError> {
    Ok((program.to_path_buf(), Vec::new()))
}
