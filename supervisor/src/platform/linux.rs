//! The supervisor on Linux (docs/ARCHITECTURE.md §4): a child subreaper, so every descendant of
//! the backend, also one that called `setsid()` or double-forked, stays below it; the Node
//! process watched through a pidfd (not `PR_SET_PDEATHSIG`, which follows the thread that forked,
//! not the process); SIGCHLD, SIGTERM, SIGINT and SIGHUP read from a signalfd; descendants found
//! in `/proc`.

use std::io;
use std::time::{Duration, Instant};

use phone_a_friend_supervisor::process_tree;

use crate::{
    detach_stdio, my_pid, os_result, reap_all, spawn_backend, Args, Ending, Fd, Reaped, KILL_LIMIT,
    TERM_POLL,
};

/// How often the parent is looked at when the kernel has no pidfd (before Linux 5.3).
const PARENT_POLL: Duration = Duration::from_millis(100);

pub struct Supervisor {
    parent: i32,
    backend: i32,
    signals: Fd,
    /// `None` on kernels without `pidfd_open`: the parent is then polled.
    parent_fd: Option<Fd>,
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
    pub fn start(args: &Args) -> io::Result<Supervisor> {
        // SAFETY: plain integer arguments.
        os_result(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })?;
        let set = watched_signals();
        // SAFETY: `set` is initialised; blocking first means no signal is lost before the
        // signalfd exists. The backend gets an empty mask back (see `in_backend_before_exec`).
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

    pub fn parent_is_alive(&self) -> bool {
        // SAFETY: no arguments.
        unsafe { libc::getppid() == self.parent }
    }

    /// Waits until the backend exits or the run must stop.
    pub fn watch(&mut self) -> Ending {
        loop {
            let stop = self.wait_for_events(None);
            if let Some(status) = super::reap_children(self.backend) {
                return Ending::BackendExited(status);
            }
            if stop || !self.parent_is_alive() {
                return Ending::Stopped;
            }
        }
    }

    /// SIGTERM to every descendant, up to `grace` for them to end, SIGKILL to whatever is left.
    pub fn terminate(&mut self, grace: Duration) {
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

    /// After the backend exited: whatever it left running.
    pub fn kill_what_is_left(&mut self) {
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

/// `--exec`: this process (and the program it becomes) gets SIGKILL when `parent` dies.
pub fn die_with_parent(parent: i32) -> io::Result<()> {
    // SAFETY: plain integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // The parent died before the signal was asked for.
    // SAFETY: no arguments, no preconditions.
    if unsafe { libc::getppid() } != parent {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

/// Runs in the backend between fork and exec: only async-signal-safe calls (sigprocmask, signal,
/// prctl).
pub fn in_backend_before_exec() -> io::Result<()> {
    // The signals the supervisor reads through its signalfd are blocked in it, and a mask is
    // inherited across exec: without this, the backend and everything it starts would ignore
    // SIGTERM.
    // SAFETY: async-signal-safe calls on a set we own.
    unsafe {
        let mut empty = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut empty);
        if libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        // If the supervisor itself is killed (only SIGKILL can do that without it cleaning up),
        // the backend goes with it rather than running unsupervised.
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
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
