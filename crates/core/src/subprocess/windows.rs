//! How a child is kept from outliving its run on Windows (docs/ARCHITECTURE.md §4): every child,
//! a CLI backend's and git's, is created suspended, put in a Job Object of its own with
//! `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`, then resumed (`process-wrap`'s `JobObject`), so
//! whatever it starts is in the job too. The job's handle lives in this (the host's) process:
//! when the host dies, even killed, the OS closes the handle and kills the whole tree. Stopping
//! the run (timeout, cancel, drop) terminates the job. There is no supervisor: the job is it.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, CreationFlags, JobObject, KillOnDrop};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use windows::Win32::System::Threading::CREATE_NEW_PROCESS_GROUP;

use super::cmd_shim::{self, ShimTarget};
use super::find::windows_ending;
use super::{find_executable, ProcessError, Supervision};
use crate::env::Env;

/// How long a terminated job's main process may take to be reported gone.
const REAP_GRACE: Duration = Duration::from_secs(2);
/// How long the `remove_on_stop` folders are retried for: a file is removed only once every
/// process that had it open is gone, which follows the job's termination asynchronously.
const REMOVE_GRACE: Duration = Duration::from_secs(1);
/// A shim is a few hundred bytes; a larger `.cmd` is not one.
const MAX_SHIM_BYTES: u64 = 16 * 1024;

/// A child not yet started, to run in a Job Object of its own.
pub(super) struct Command {
    command: CommandWrap,
    remove_on_stop: Vec<PathBuf>,
}

impl Command {
    /// `program` as the OS runs it: an `.exe` directly, an npm `.cmd` shim as what it starts
    /// (`cmd_shim`), any other batch file refused. `env` is the child's environment (`None`:
    /// the relay's), whose `PATH` finds the `node` a shim needs.
    pub(super) fn new(
        program: &OsStr,
        env: Option<&Env>,
        supervision: Supervision,
    ) -> Result<Command, ProcessError> {
        let (program, leading_args) = runnable(Path::new(program), env)?;
        let mut command = CommandWrap::with_new(program, |command| {
            command.args(leading_args);
        });
        // Out of the console's process group: a console's Ctrl-C is for the host to handle
        // (the child starts with Ctrl-C ignored). Before `JobObject`, which adds
        // `CREATE_SUSPENDED` to these flags. `KillOnDrop` also gives the job
        // `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`.
        command
            .wrap(CreationFlags(CREATE_NEW_PROCESS_GROUP))
            .wrap(JobObject)
            .wrap(KillOnDrop);
        let remove_on_stop = match supervision {
            Supervision::Supervised { remove_on_stop } => remove_on_stop,
            Supervision::Unsupervised => Vec::new(),
        };
        Ok(Command {
            command,
            remove_on_stop,
        })
    }

    /// The command, for its arguments, environment, working directory and pipes.
    pub(super) fn std_mut(&mut self) -> &mut std::process::Command {
        self.command.command_mut().as_std_mut()
    }

    /// Starts the child; retried while handles are short (`descriptors::when_available`).
    pub(super) fn spawn(&mut self) -> io::Result<Box<dyn ChildWrapper>> {
        self.command.spawn()
    }

    pub(super) fn running(&self, child: Box<dyn ChildWrapper>) -> Result<Running, ProcessError> {
        Ok(Running {
            child,
            remove_on_stop: self.remove_on_stop.clone(),
            armed: true,
        })
    }
}

/// A started child and its job: terminated when dropped while armed.
pub(super) struct Running {
    child: Box<dyn ChildWrapper>,
    remove_on_stop: Vec<PathBuf>,
    armed: bool,
}

impl Running {
    pub(super) fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin().take()
    }

    pub(super) fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout().take()
    }

    pub(super) fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr().take()
    }

    /// Always: the process handle is held until `Running` drops, so its id is never reused
    /// under it, and the job is terminated by handle, never by id.
    pub(super) fn may_wait(&self, _io_done: bool) -> bool {
        true
    }

    /// The main child's exit (not the whole job's, which `JobObjectChild::wait` would wait
    /// for); what it left running is then terminated, as the Unix supervisor does.
    pub(super) async fn wait(&mut self) -> io::Result<ExitStatus> {
        let exit = self.child.inner_mut().wait().await?;
        self.terminate_job();
        self.armed = false;
        Ok(exit)
    }

    /// Terminates the job and waits for the main child to be gone, then removes the
    /// `remove_on_stop` folders, all within a bound.
    pub(super) async fn stop(&mut self) {
        self.terminate_job();
        let _ = tokio::time::timeout(REAP_GRACE, self.child.inner_mut().wait()).await;
        self.armed = false;
        let folders = std::mem::take(&mut self.remove_on_stop);
        if !folders.is_empty() {
            // Off the runtime's workers: removal is file system work.
            let removal = tokio::task::spawn_blocking(move || remove_folders(&folders));
            let _ = tokio::time::timeout(REMOVE_GRACE * 2, removal).await;
        }
    }

    /// A child that could not be started is an error from the spawn itself on Windows.
    pub(super) fn spawn_failure(&self, _status: ExitStatus, _stderr: &str) -> Option<io::Error> {
        None
    }

    fn terminate_job(&mut self) {
        // Fails only for a job already gone; its processes are then gone too.
        let _ = self.child.start_kill();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.armed {
            // The future was dropped mid-flight. Closing the job's handle (when `child` drops)
            // would kill the tree as well; terminating first makes it happen before the
            // folders are removed.
            self.terminate_job();
            let folders = std::mem::take(&mut self.remove_on_stop);
            if !folders.is_empty() {
                std::thread::spawn(move || remove_folders(&folders));
            }
        }
    }
}

/// Removes each folder, retrying for [`REMOVE_GRACE`] while a just-terminated process still
/// holds a file in it.
fn remove_folders(folders: &[PathBuf]) {
    let start = std::time::Instant::now();
    for folder in folders {
        while std::fs::remove_dir_all(folder).is_err_and(|e| e.kind() != io::ErrorKind::NotFound)
            && start.elapsed() < REMOVE_GRACE
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Windows reports no signals.
pub(super) fn exit_signal(_status: &ExitStatus) -> Option<i32> {
    None
}

/// What reading a directory as a file says.
pub(super) fn is_a_directory_error() -> io::Error {
    io::Error::from(io::ErrorKind::IsADirectory)
}

/// A pipe's size is fixed when std creates it: a stdout of the default size still works.
pub(super) fn set_pipe_capacity(_pipe: &ChildStdout, _bytes: usize) {}

/// The program to start for `program` and the arguments that go before the caller's.
pub(super) fn runnable(
    program: &Path,
    env: Option<&Env>,
) -> Result<(PathBuf, Vec<OsString>), ProcessError> {
    let batch = windows_ending(program)
        .is_some_and(|ext| ext.eq_ignore_ascii_case("cmd") || ext.eq_ignore_ascii_case("bat"));
    if !batch {
        return Ok((program.to_path_buf(), Vec::new()));
    }
    let refused = |why: &str| {
        ProcessError::Spawn(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{} is a batch file {why}: it is not run, since cmd.exe would interpret the \
                 arguments; put the program's .exe on the PATH instead",
                program.display()
            ),
        ))
    };
    let text = read_shim(program).map_err(ProcessError::Spawn)?;
    let folder = program.parent().unwrap_or(Path::new(""));
    match text.as_deref().and_then(cmd_shim::parse) {
        Some(ShimTarget::Program { program }) => Ok((folder.join(program), Vec::new())),
        Some(ShimTarget::Node { args, script }) => {
            let own = folder.join("node.exe");
            let node = if own.is_file() {
                own
            } else {
                let relay_env;
                let env = match env {
                    Some(env) => env,
                    None => {
                        relay_env = std::env::vars_os()
                            .filter_map(|(k, v)| {
                                Some((k.into_string().ok()?, v.into_string().ok()?))
                            })
                            .collect::<Env>();
                        &relay_env
                    }
                };
                // node.exe itself: a `node.cmd` earlier on the PATH is not the program.
                find_executable("node.exe", env)
                    .ok_or_else(|| refused("that needs node.exe, found on no PATH"))?
            };
            let mut leading: Vec<OsString> = args.into_iter().map(OsString::from).collect();
            leading.push(folder.join(script).into_os_string());
            Ok((node, leading))
        }
        None => Err(refused("that is not an npm shim")),
    }
}

/// The shim's text, if it is small UTF-8 text.
fn read_shim(path: &Path) -> io::Result<Option<String>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_SHIM_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SHIM_BYTES {
        return Ok(None);
    }
    Ok(String::from_utf8(bytes).ok())
}
