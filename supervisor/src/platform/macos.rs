//! The supervisor on macOS (docs/ARCHITECTURE.md §4), which has no child subreaper, no
//! parent-death signal, no pidfd and no signalfd. One kqueue wakes it:
//! - the Node process exits: `EVFILT_PROC`/`NOTE_EXIT` on its pid (allowed on any process we
//!   can see, not only a child); registered first, `getppid()` checked second, since Node may
//!   have died before (we were then re-parented to launchd, and its pid may be another's);
//! - SIGTERM, SIGINT, SIGHUP: `EVFILT_SIGNAL`, which records a signal even when it is ignored,
//!   so the three are ignored (their default action would end us without cleaning up);
//! - the backend exits: `EVFILT_PROC`/`NOTE_EXIT` on its pid.
//!
//! What the backend started is found and ended by `tree_kill` (its process group, libproc's
//! parent links, and every process seen before), looked at every [`LOOK_EVERY`] while the backend
//! runs, so that a child in a session of its own is remembered before its parent goes.

use std::io;
use std::time::{Duration, Instant};

use libproc::bsd_info::BSDInfo;
use libproc::proc_pid::pidinfo;
use libproc::processes::{pids_by_type, ProcFilter};
use phone_a_friend_supervisor::tree_kill::{Process, Processes, Signal, Tree};

use crate::{
    detach_stdio, my_pid, os_result, reap_all, spawn_backend, Args, Ending, Fd, KILL_LIMIT,
    TERM_POLL,
};

/// The signals that stop the run.
const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];
/// How often the backend's tree is looked at while it runs.
const LOOK_EVERY: Duration = Duration::from_millis(200);
/// `pbi_status` of a zombie (`SZOMB`).
const ZOMBIE: u32 = 5;

pub struct Supervisor {
    parent: i32,
    backend: i32,
    events: Fd,
    tree: Tree,
}

impl Supervisor {
    pub fn start(args: &Args) -> io::Result<Supervisor> {
        // SAFETY: no arguments. A kqueue is not inherited by a forked child (the backend).
        let events = Fd(os_result(unsafe { libc::kqueue() })?);
        for signal in STOP_SIGNALS {
            watch_exit_or_signal(&events, signal, libc::EVFILT_SIGNAL, 0)?;
        }
        // Registered first, ignored second: one arriving in between ends us by its default
        // action, before any backend exists.
        for signal in STOP_SIGNALS {
            // SAFETY: setting a disposition of our own process.
            if unsafe { libc::signal(signal, libc::SIG_IGN) } == libc::SIG_ERR {
                return Err(io::Error::last_os_error());
            }
        }
        // ESRCH when the parent is already gone.
        watch_exit_or_signal(&events, args.parent, libc::EVFILT_PROC, libc::NOTE_EXIT)?;
        // SAFETY: no arguments.
        if unsafe { libc::getppid() } != args.parent {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        let backend = spawn_backend(args)?;
        // Fails (ESRCH) when the backend has exited already: `watch` reaps before it waits and
        // wakes every LOOK_EVERY anyway, so a failure only delays noticing the exit.
        let _ = watch_exit_or_signal(&events, backend, libc::EVFILT_PROC, libc::NOTE_EXIT);
        detach_stdio();
        Ok(Supervisor {
            parent: args.parent,
            backend,
            events,
            tree: Tree::new(my_pid(), backend),
        })
    }

    pub fn parent_is_alive(&self) -> bool {
        // SAFETY: no arguments.
        unsafe { libc::getppid() == self.parent }
    }

    /// Waits until the backend exits or the run must stop.
    pub fn watch(&mut self) -> Ending {
        let mut stop = false;
        loop {
            if let Some(status) = super::reap_children(self.backend) {
                return Ending::BackendExited(status);
            }
            if stop || !self.parent_is_alive() {
                return Ending::Stopped;
            }
            self.tree.look(&mut Libproc);
            stop = self.wait_for_events(LOOK_EVERY);
        }
    }

    /// SIGTERM to the backend's tree, up to `grace` for it to end, then SIGKILL to what is left.
    pub fn terminate(&mut self, grace: Duration) {
        self.tree.signal_all(&mut Libproc, Signal::Term);
        let give_up = Instant::now() + grace;
        loop {
            reap_all();
            if self.tree.look(&mut Libproc).is_empty() {
                return;
            }
            let now = Instant::now();
            if now >= give_up {
                break;
            }
            self.wait_for_events((give_up - now).min(TERM_POLL));
        }
        self.kill_what_is_left();
    }

    /// After the backend exited, or after the grace: whatever is left of its tree.
    pub fn kill_what_is_left(&mut self) {
        self.tree
            .kill_all(&mut Libproc, Instant::now() + KILL_LIMIT);
        reap_all();
    }

    /// Sleeps until an event or `limit`; `true` when the run must stop (a stop signal, or the
    /// parent's exit).
    fn wait_for_events(&self, limit: Duration) -> bool {
        let timeout = libc::timespec {
            tv_sec: limit.as_secs().try_into().unwrap_or(libc::time_t::MAX),
            tv_nsec: limit.subsec_nanos().into(),
        };
        // SAFETY: plain-data structs, filled by kevent().
        let mut events = unsafe { std::mem::zeroed::<[libc::kevent; 8]>() };
        // SAFETY: `events` holds `events.len()` structs; no change list.
        let ready = unsafe {
            libc::kevent(
                self.events.0,
                std::ptr::null(),
                0,
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                &timeout,
            )
        };
        let ready = usize::try_from(ready).unwrap_or(0);
        events.iter().take(ready).any(|event| match event.filter {
            libc::EVFILT_SIGNAL => true,
            libc::EVFILT_PROC => event.ident == self.parent as libc::uintptr_t,
            _ => false,
        })
    }
}

/// Adds `EVFILT_PROC` (`ident` a pid, `fflags` `NOTE_EXIT`) or `EVFILT_SIGNAL` (`ident` a signal
/// number) to the kqueue.
fn watch_exit_or_signal(events: &Fd, ident: i32, filter: i16, fflags: u32) -> io::Result<()> {
    let ident =
        libc::uintptr_t::try_from(ident).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let change = libc::kevent {
        ident,
        filter,
        flags: libc::EV_ADD,
        fflags,
        data: 0,
        udata: std::ptr::null_mut(),
    };
    let no_wait = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: one change and no event list, so a failed change comes back as -1 and errno.
    os_result(unsafe { libc::kevent(events.0, &change, 1, std::ptr::null_mut(), 0, &no_wait) })
        .map(drop)
}

/// `--exec`: macOS has no parent-death signal, and the relay never asks for it there.
pub fn die_with_parent(_parent: i32) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(libc::ENOTSUP))
}

/// Runs in the backend between fork and exec: only async-signal-safe calls (signal).
pub fn in_backend_before_exec() -> io::Result<()> {
    // An ignored signal stays ignored across exec: the backend gets the defaults back, or it
    // and everything it starts would ignore SIGTERM.
    for signal in STOP_SIGNALS.into_iter().chain([libc::SIGPIPE]) {
        // SAFETY: async-signal-safe; resets a disposition of the child.
        if unsafe { libc::signal(signal, libc::SIG_DFL) } == libc::SIG_ERR {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// macOS's processes through libproc (proc_listpids, proc_pidinfo).
struct Libproc;

impl Processes for Libproc {
    fn children_of(&mut self, pid: i32) -> Vec<i32> {
        listed(pid, |ppid| ProcFilter::ByParentProcess { ppid })
    }

    fn members_of_group(&mut self, pgid: i32) -> Vec<i32> {
        listed(pgid, |pgrpid| ProcFilter::ByProgramGroup { pgrpid })
    }

    fn describe(&mut self, pid: i32) -> Option<Process> {
        // Argument 0: a zombie is not found (ESRCH), which reads as gone.
        let info = pidinfo::<BSDInfo>(pid, 0).ok()?;
        Some(Process {
            pid,
            ppid: i32::try_from(info.pbi_ppid).ok()?,
            pgid: i32::try_from(info.pbi_pgid).ok()?,
            running: info.pbi_status != ZOMBIE,
            started: info
                .pbi_start_tvsec
                .saturating_mul(1_000_000)
                .saturating_add(info.pbi_start_tvusec),
        })
    }

    fn signal(&mut self, pid: i32, signal: Signal) {
        // SAFETY: plain integers; a process gone since the look makes this fail (ESRCH).
        unsafe { libc::kill(pid, signal.number()) };
    }

    fn pause(&mut self) {
        reap_all();
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The pids libproc lists for `filter(id)`. A failure reads as none: proc_listpids returns 0
/// both for an empty list and for an error, and libproc tells them apart by errno, which may be
/// left over from an earlier call; either way there is nothing to signal.
fn listed(id: i32, filter: impl Fn(u32) -> ProcFilter) -> Vec<i32> {
    let Ok(id) = u32::try_from(id) else {
        return Vec::new();
    };
    pids_by_type(filter(id))
        .unwrap_or_default()
        .into_iter()
        .filter_map(|pid| i32::try_from(pid).ok())
        .collect()
}
