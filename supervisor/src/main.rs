//! The process supervisor (docs/CONTRACT.md §14): the relay starts every CLI backend through it, so
//! that nothing the backend starts outlives the relay, whatever happens to the host.
//!
//! It is a child subreaper, so every descendant of the backend, also one that called `setsid()`
//! or double-forked, stays below it. It watches the Node process through a pidfd (not
//! `PR_SET_PDEATHSIG`, which follows the thread that forked, not the process). Then:
//! - the backend exits: what it left running is killed, and the supervisor exits as it did;
//! - SIGTERM, SIGINT or SIGHUP (the relay's timeout or abort), or the Node process dies, even by
//!   SIGKILL: every descendant gets SIGTERM, then SIGKILL after the grace, the `--remove`
//!   folders are removed, and the supervisor exits.
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
use std::time::{Duration, Instant};

use phone_a_friend_supervisor::argv::after_program_name;
use phone_a_friend_supervisor::process_tree;
use phone_a_friend_supervisor::protocol::*;

/// How often the parent is looked at when the kernel has no pidfd (before Linux 5.3).
const PARENT_POLL: Duration = Duration::from_millis(100);
/// Longest pause between two looks at descendants that were sent SIGTERM.
const TERM_POLL: Duration = Duration::from_millis(10);
/// Bound on the SIGKILL rounds: a process stuck in the kernel (state D) dies when it leaves it.
const KILL_LIMIT: Duration = Duration::from_secs(5);

struct Args {
    parent: i32,
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
        loop {
            let flag = argv.next().ok_or("missing -- and the program")?;
            let flag = flag.to_str().ok_or("flags must be UTF-8")?.to_owned();
            if flag == END_OF_FLAGS {
                break;
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
    let mut supervisor = match Supervisor::start(&args) {
        Ok(supervisor) => supervisor,
        Err(e) => fail_to_start(&e.to_string()),
    };
    let ending = supervisor.watch();
    match ending {
        Ending::BackendExited(status) => {
            kill_everything_below_me();
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

struct Supervisor {
    parent: i32,
    backend: i32,
    signals: Fd,
    /// `None` on kernels without `pidfd_open`: the parent is then polled.
    parent_fd: Option<Fd>,
}

/// An owned file descriptor (std's `OwnedFd` would do, but signalfd and pidfd come from libc).
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

/// The signals the supervisor reads from a signalfd instead of being interrupted by them.
fn watched_signals() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise and fill a set we own.
    unsafe {
        let mut set = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut set);
        for signal in [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

impl Supervisor {
    fn start(args: &Args) -> io::Result<Supervisor> {
        // SAFETY: plain integer arguments.
        os_result(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })?;
        let set = watched_signals();
        // SAFETY: `set` is initialised; blocking first means no signal is lost before the
        // signalfd exists. The backend gets an empty mask back (see `spawn_backend`).
        os_result(unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) })?;
        // SAFETY: as above.
        let signals = Fd(os_result(unsafe {
            libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK)
        })?);
        let parent_fd = open_pidfd(args.parent)?;
        // The parent may have died before the pidfd was opened: then we were re-parented.
        // SAFETY: no arguments.
        if unsafe { libc::getppid() } != args.parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        let backend = spawn_backend(args)?;
        detach_stdio();
        Ok(Supervisor {
            parent: args.parent,
            backend,
            signals,
            parent_fd,
        })
    }

    fn parent_is_alive(&self) -> bool {
        // SAFETY: no arguments.
        unsafe { libc::getppid() == self.parent }
    }

    /// Waits until the backend exits or the run must stop.
    fn watch(&mut self) -> Ending {
        loop {
            let stop = self.wait_for_events(None);
            if let Some(status) = self.reap_children() {
                return Ending::BackendExited(status);
            }
            if stop || !self.parent_is_alive() {
                return Ending::Stopped;
            }
        }
    }

    /// SIGTERM to every descendant, up to `grace` for them to end, SIGKILL to whatever is left.
    fn terminate(&mut self, grace: Duration) {
        signal_everything_below_me(libc::SIGTERM);
        let give_up = Instant::now() + grace;
        loop {
            // No child at all (ECHILD) means no descendant: skip the /proc scan.
            if reap_all() == Reaped::NoChildren || running_below_me().is_empty() {
                return;
            }
            let now = Instant::now();
            if now >= give_up {
                break;
            }
            self.wait_for_events(Some((give_up - now).min(TERM_POLL)));
        }
        kill_everything_below_me();
    }

    /// Sleeps until a signal arrives, the parent dies or `limit` passes; `true` when the run
    /// must stop (a stop signal, or the parent's death).
    fn wait_for_events(&self, limit: Option<Duration>) -> bool {
        let mut fds = vec![libc::pollfd {
            fd: self.signals.0,
            events: libc::POLLIN,
            revents: 0,
        }];
        if let Some(parent) = &self.parent_fd {
            fds.push(libc::pollfd {
                fd: parent.0,
                events: libc::POLLIN,
                revents: 0,
            });
        }
        let limit = match (limit, &self.parent_fd) {
            (Some(limit), _) => Some(limit),
            (None, None) => Some(PARENT_POLL),
            (None, Some(_)) => None,
        };
        let timeout_ms = limit.map_or(-1, |l| l.as_millis().clamp(1, 60_000) as libc::c_int);
        // SAFETY: `fds` is a live array of `fds.len()` pollfd structs.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if ready <= 0 {
            return false;
        }
        let parent_died = fds.get(1).is_some_and(|fd| fd.revents != 0);
        self.drain_signals() || parent_died
    }

    /// Reads every pending signal; `true` if one of them asks the run to stop.
    fn drain_signals(&self) -> bool {
        let mut stop = false;
        loop {
            // SAFETY: zeroed plain-data struct, filled by read().
            let mut info = unsafe { std::mem::zeroed::<libc::signalfd_siginfo>() };
            let size = std::mem::size_of::<libc::signalfd_siginfo>();
            // SAFETY: `info` is `size` bytes we own.
            let read = unsafe {
                libc::read(
                    self.signals.0,
                    (&mut info as *mut libc::signalfd_siginfo).cast(),
                    size,
                )
            };
            if read != size as isize {
                return stop;
            }
            stop |= info.ssi_signo != libc::SIGCHLD as u32;
        }
    }

    /// Reaps every child that has exited (orphans adopted as subreaper too); the backend's wait
    /// status once it has exited.
    fn reap_children(&mut self) -> Option<libc::c_int> {
        let mut backend_status = None;
        loop {
            let mut status = 0;
            // SAFETY: `status` is ours to write.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                return backend_status;
            }
            if pid == self.backend {
                backend_status = Some(status);
            }
        }
    }
}

/// `pidfd_open(pid)`; `None` where the kernel does not have it.
fn open_pidfd(pid: i32) -> io::Result<Option<Fd>> {
    // SAFETY: plain integer arguments.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd >= 0 {
        return Ok(Some(Fd(fd as libc::c_int)));
    }
    match io::Error::last_os_error() {
        e if e.raw_os_error() == Some(libc::ENOSYS) => Ok(None),
        e => Err(e),
    }
}

fn spawn_backend(args: &Args) -> io::Result<i32> {
    let mut command = Command::new(&args.program);
    command.args(&args.program_args).process_group(0);
    // SAFETY: the closure only calls async-signal-safe functions (sigprocmask, signal, prctl).
    unsafe {
        command.pre_exec(|| {
            // The signals the supervisor reads through its signalfd are blocked in it, and a
            // mask is inherited across exec: without this, the backend and everything it
            // starts would ignore SIGTERM.
            let mut empty = std::mem::zeroed::<libc::sigset_t>();
            libc::sigemptyset(&mut empty);
            if libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            // If the supervisor itself is killed (only SIGKILL can do that without it
            // cleaning up), the backend goes with it rather than running unsupervised.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
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

fn running_below_me() -> Vec<process_tree::ProcessInfo> {
    process_tree::descendants(my_pid())
        .unwrap_or_default()
        .into_iter()
        .filter(process_tree::ProcessInfo::is_running)
        .collect()
}

fn signal_everything_below_me(signal: libc::c_int) {
    for process in running_below_me() {
        // SAFETY: plain integers; a process that exited since the listing makes this fail.
        unsafe { libc::kill(process.pid, signal) };
    }
}

/// SIGKILL to every descendant until none is left running, reaping what becomes ours.
fn kill_everything_below_me() {
    let give_up = Instant::now() + KILL_LIMIT;
    loop {
        // As a subreaper, no child at all means no descendant at all: skip the /proc scan,
        // which is most of the supervisor's cost on the common path.
        if reap_all() == Reaped::NoChildren {
            return;
        }
        let running = running_below_me();
        for process in &running {
            // SAFETY: plain integers.
            unsafe { libc::kill(process.pid, libc::SIGKILL) };
        }
        if reap_all() == Reaped::NoChildren || running.is_empty() || Instant::now() >= give_up {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[derive(PartialEq)]
enum Reaped {
    /// No child is left, running or not (`ECHILD`).
    NoChildren,
    /// Some child is still running.
    SomeRunning,
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
