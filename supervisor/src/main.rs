//! The process supervisor (docs/CONTRACT.md §14): the relay starts every CLI backend through it, so
//! that nothing the backend starts outlives the relay, whatever happens to the host.
//!
//! It starts the backend in a process group of its own and watches the Node process. Then:
//! - the backend exits: what it left running is killed, and the supervisor exits as it did;
//! - SIGTERM, SIGINT or SIGHUP (the relay's timeout or abort), or the Node process dies, even by
//!   SIGKILL: every descendant gets SIGTERM, then SIGKILL after the grace, the `--remove`
//!   folders are removed, and the supervisor exits.
//!
//! How it watches and finds descendants is the OS's part (docs/ARCHITECTURE.md §4):
//! `platform/linux.rs` (child subreaper, pidfd, signalfd, `/proc`) and `platform/macos.rs`
//! (kqueue, the backend's process group and libproc's parent links); this file is the rest.
//!
//! It runs in a process group of its own, so a terminal's Ctrl-C reaches Node, not the backend:
//! what Node does about it decides.
//!
//! It starts once per relay, so it skips std's runtime set-up (`no_main`: no stack-guard probe
//! of `/proc/self/maps`, no signal stack); std's API works as usual, except `args_os`, which is
//! empty on musl targets (musl gives std no `argc`/`argv` before `main`): the command line is
//! read from `main`'s own `argc` and `argv` instead.

#![no_main]
// Not built for Windows, where a Job Object does its work (docs/ARCHITECTURE.md §4).
#![cfg(unix)]

use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use phone_a_friend_supervisor::argv::after_program_name;
use phone_a_friend_supervisor::protocol::*;

#[cfg(target_os = "linux")]
#[path = "platform/linux.rs"]
mod platform;
#[cfg(target_os = "macos")]
#[path = "platform/macos.rs"]
mod platform;

use platform::Supervisor;

/// Longest pause between two looks at descendants that were sent SIGTERM.
const TERM_POLL: Duration = Duration::from_millis(10);
/// Bound on the SIGKILL rounds: a process stuck in the kernel (state D) dies when it leaves it.
const KILL_LIMIT: Duration = Duration::from_secs(5);

struct Args {
    parent: i32,
    /// [`EXEC_FLAG`]: become the program instead of supervising it.
    exec: bool,
    grace: Duration,
    remove: Vec<PathBuf>,
    program: OsString,
    program_args: Vec<OsString>,
}

impl Args {
    fn parse(mut argv: impl Iterator<Item = OsString>) -> Result<Args, String> {
        let mut parent = None;
        let mut grace = Duration::from_millis(500);
        let mut remove = Vec::new();
        let mut exec = false;
        loop {
            let flag = argv.next().ok_or("missing -- and the program")?;
            let flag = flag.to_str().ok_or("flags must be UTF-8")?.to_owned();
            if flag == END_OF_FLAGS {
                break;
            }
            if flag == EXEC_FLAG {
                exec = true;
                continue;
            }
            let value = argv.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let number = || -> Result<u64, String> {
                value
                    .to_str()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| format!("{flag} needs a number"))
            };
            match flag.as_str() {
                PARENT_FLAG => parent = Some(i32::try_from(number()?).map_err(|e| e.to_string())?),
                GRACE_FLAG => grace = Duration::from_millis(number()?),
                REMOVE_FLAG => remove.push(PathBuf::from(value)),
                other => return Err(format!("unknown flag {other}")),
            }
        }
        let program = argv.next().ok_or("missing the program")?;
        Ok(Args {
            parent: parent.ok_or("missing --parent")?,
            exec,
            grace,
            remove,
            program,
            program_args: argv.collect(),
        })
    }
}

#[no_mangle]
extern "C" fn main(argc: libc::c_int, argv: *const *const libc::c_char) -> libc::c_int {
    // SAFETY: the C runtime passes `argc` and `argv` as the kernel laid them out: `argc`
    // NUL-terminated strings, then a null pointer. A null `argv` or `argc` < 2 gives no
    // arguments, which `Args::parse` reports as a usage error.
    let command_line = unsafe { after_program_name(argc, argv) };
    let args = match Args::parse(command_line.into_iter()) {
        Ok(args) => args,
        Err(detail) => fail_to_start(&format!("{detail} (os error {})", libc::EINVAL)),
    };
    if args.exec {
        become_program(&args)
    }
    let mut supervisor = match Supervisor::start(&args) {
        Ok(supervisor) => supervisor,
        Err(e) => fail_to_start(&e.to_string()),
    };
    let ending = supervisor.watch();
    match ending {
        Ending::BackendExited(status) => {
            supervisor.kill_what_is_left();
            if !supervisor.parent_is_alive() {
                remove_folders(&args.remove);
            }
            exit_like(status)
        }
        Ending::Stopped => {
            supervisor.terminate(args.grace);
            remove_folders(&args.remove);
            std::process::exit(128 + libc::SIGTERM)
        }
    }
}

/// [`EXEC_FLAG`]: SIGKILL when the parent dies (kept across `execve`), then the program in this
/// process, with the stdio, group and environment it was given.
fn become_program(args: &Args) -> ! {
    if let Err(e) = platform::die_with_parent(args.parent) {
        fail_to_start(&e.to_string())
    }
    let e = Command::new(&args.program).args(&args.program_args).exec();
    fail_to_start(&e.to_string())
}

/// Says why on stderr (which the relay reads) and exits with [`SPAWN_FAILED_EXIT`]. `detail`
/// ends with `(os error <n>)`, as an OS error's text does.
fn fail_to_start(detail: &str) -> ! {
    eprintln!("{SPAWN_FAILED_PREFIX}{detail}");
    std::process::exit(SPAWN_FAILED_EXIT)
}

enum Ending {
    /// The backend exited with this wait status.
    BackendExited(libc::c_int),
    /// Asked to stop, or the parent died.
    Stopped,
}

/// An owned file descriptor (std's `OwnedFd` would do, but signalfd, pidfd and kqueue come from
/// libc).
struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own this descriptor and close it once.
        unsafe { libc::close(self.0) };
    }
}

fn os_result(result: libc::c_int) -> io::Result<libc::c_int> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result)
    }
}

fn spawn_backend(args: &Args) -> io::Result<i32> {
    let mut command = Command::new(&args.program);
    command.args(&args.program_args).process_group(0);
    // SAFETY: `in_backend_before_exec` only calls async-signal-safe functions.
    unsafe { command.pre_exec(platform::in_backend_before_exec) };
    let child = command.spawn()?;
    i32::try_from(child.id()).map_err(|_| io::Error::from_raw_os_error(libc::EOVERFLOW))
}

/// Points our own stdin, stdout and stderr at /dev/null, so the relay sees end of file on the
/// pipes exactly when the backend's whole tree has let go of them.
fn detach_stdio() {
    // SAFETY: opening a path and duplicating descriptors; failures leave the originals open,
    // which only delays end of file until the supervisor exits.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null >= 0 {
            for fd in 0..=2 {
                libc::dup2(null, fd);
            }
            libc::close(null);
        }
    }
}

fn my_pid() -> i32 {
    std::process::id() as i32
}

#[derive(PartialEq)]
enum Reaped {
    /// No child is left, running or not (`ECHILD`).
    NoChildren,
    /// Some child is still running.
    SomeRunning,
}

/// Reaps every child that has exited (on Linux also the orphans adopted as subreaper); the
/// backend's wait status if it was among them.
fn reap_children(backend: i32) -> Option<libc::c_int> {
    let mut backend_status = None;
    loop {
        let mut status = 0;
        // SAFETY: `status` is ours to write.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return backend_status;
        }
        if pid == backend {
            backend_status = Some(status);
        }
    }
}

/// Reaps every child that has exited.
fn reap_all() -> Reaped {
    loop {
        let mut status = 0;
        // SAFETY: `status` is ours to write.
        match unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } {
            0 => return Reaped::SomeRunning,
            pid if pid < 0 => {
                return match io::Error::last_os_error().raw_os_error() {
                    Some(libc::ECHILD) => Reaped::NoChildren,
                    _ => Reaped::SomeRunning,
                }
            }
            _ => {}
        }
    }
}

fn remove_folders(folders: &[PathBuf]) {
    for folder in folders {
        // Best effort: the relay removes them too on its normal paths.
        let _ = std::fs::remove_dir_all(folder);
    }
}

/// Exits as the backend did: the same code, or the same signal (with no core dump).
fn exit_like(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        // SAFETY: plain-data arguments; resetting the disposition and mask of our own process.
        unsafe {
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::signal(signal, libc::SIG_DFL);
            let mut set = std::mem::zeroed::<libc::sigset_t>();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::raise(signal);
        }
        std::process::exit(128 + signal)
    }
    std::process::exit(libc::WEXITSTATUS(status))
}
