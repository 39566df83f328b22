//! Ending every process a backend started where the OS has no child subreaper (macOS,
//! docs/ARCHITECTURE.md §4). There a process whose parent dies is re-parented to launchd, so
//! parent links alone lose it. The tree is therefore:
//! - every process below the supervisor by parent links;
//! - every member of the backend's process group, whatever its parent, and what is below it;
//! - every process found by an earlier look that is still the same process (same start time),
//!   and what is below it: a child whose parent exited on SIGTERM during the grace is still
//!   found, even in a session of its own.
//!
//! A process that leaves the group (`setsid`, `setpgid`) and whose parent exits before any look
//! has seen it escapes all three: the limit docs/GUARANTEES.md states for macOS.
//!
//! Killing freezes the tree first: SIGSTOP to everything found, and looks again until a look
//! finds nothing new (a stopped process cannot fork, and it stays alive, so its children keep
//! their parent link); then SIGKILL to all of it. Rounds until a look finds nothing.
//!
//! The OS is behind [`Processes`], so these rounds are unit-tested with a fake process table on
//! any OS, and with real processes on Linux.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// What the tree needs to know of one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Process {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    /// Neither a zombie nor dead.
    pub running: bool,
    /// When it started, in the OS's unit: with the pid, tells a process from a later one that
    /// was given the same pid.
    pub started: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Term,
    Stop,
    Kill,
}

#[cfg(unix)]
impl Signal {
    /// The signal's number, for `kill(2)`.
    pub fn number(self) -> libc::c_int {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Stop => libc::SIGSTOP,
            Signal::Kill => libc::SIGKILL,
        }
    }
}

/// The OS's processes, as far as the tree needs them.
pub trait Processes {
    /// The processes whose parent is `pid` (zombies may be among them).
    fn children_of(&mut self, pid: i32) -> Vec<i32>;
    /// The processes in process group `pgid`.
    fn members_of_group(&mut self, pgid: i32) -> Vec<i32>;
    /// What `pid` is now; `None` once it is gone (or cannot be read).
    fn describe(&mut self, pid: i32) -> Option<Process>;
    /// Sends `signal`; a process that is gone by then is no error.
    fn signal(&mut self, pid: i32, signal: Signal);
    /// Between two kill rounds: reap what is the caller's, give the kernel time to deliver.
    fn pause(&mut self);
}

/// The processes to end: below `root`, in `group`, and every one seen so far.
pub struct Tree {
    /// The supervisor.
    root: i32,
    /// The backend's process group (the backend's pid).
    group: i32,
    /// Every running process a look found, by pid.
    seen: HashMap<i32, Process>,
}

impl Tree {
    pub fn new(root: i32, group: i32) -> Tree {
        Tree {
            root,
            group,
            seen: HashMap::new(),
        }
    }

    /// Every running process of the tree now, each once; all of them are remembered.
    pub fn look(&mut self, os: &mut impl Processes) -> Vec<Process> {
        // A stack of (pid, reached only through memory). Remembered pids go at the bottom, so
        // that every pid reachable by links or the group is taken as such first: only a pid
        // reached through memory alone must prove it is the same process.
        let mut next: Vec<(i32, bool)> = self.seen.keys().map(|&pid| (pid, true)).collect();
        next.extend(
            os.children_of(self.root)
                .into_iter()
                .map(|pid| (pid, false)),
        );
        if self.group > 1 {
            next.extend(
                os.members_of_group(self.group)
                    .into_iter()
                    .map(|pid| (pid, false)),
            );
        }
        let mut visited = HashSet::new();
        let mut found = Vec::new();
        while let Some((pid, from_memory)) = next.pop() {
            // Never the supervisor itself, launchd/init, or the kernel.
            if pid <= 1 || pid == self.root || !visited.insert(pid) {
                continue;
            }
            let now = os.describe(pid);
            let remembered = self.seen.get(&pid).copied();
            let same = match (now, remembered) {
                (Some(now), Some(before)) if from_memory => now.started == before.started,
                (Some(_), _) => true,
                (None, _) => false,
            };
            match now {
                Some(now) if same && now.running => {
                    self.seen.insert(pid, now);
                    found.push(now);
                    next.extend(os.children_of(pid).into_iter().map(|child| (child, false)));
                }
                _ => {
                    self.seen.remove(&pid);
                }
            }
        }
        found
    }

    /// Sends `signal` to every process of the tree; how many there were.
    pub fn signal_all(&mut self, os: &mut impl Processes, signal: Signal) -> usize {
        let found = self.look(os);
        for process in &found {
            os.signal(process.pid, signal);
        }
        found.len()
    }

    /// Ends every process of the tree: freeze, SIGKILL, and again until a look finds none, or
    /// until `give_up` (a process stuck in the kernel dies when it leaves it).
    pub fn kill_all(&mut self, os: &mut impl Processes, give_up: Instant) {
        loop {
            let mut frozen = HashSet::new();
            loop {
                let mut new = false;
                for process in self.look(os) {
                    if frozen.insert(process.pid) {
                        os.signal(process.pid, Signal::Stop);
                        new = true;
                    }
                }
                if !new || Instant::now() >= give_up {
                    break;
                }
            }
            if frozen.is_empty() {
                return;
            }
            for &pid in &frozen {
                os.signal(pid, Signal::Kill);
            }
            if Instant::now() >= give_up {
                return;
            }
            os.pause();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A process table that behaves as macOS does where it matters: a process that dies is
    /// gone, its children are re-parented to launchd (pid 1), SIGSTOP stops it, and a
    /// "forker" starts a child in a new session each time it is looked at while not stopped.
    #[derive(Default)]
    struct FakeOs {
        table: Vec<FakeProcess>,
        next_pid: i32,
        signals: Vec<(i32, Signal)>,
    }

    #[derive(Clone, Copy)]
    struct FakeProcess {
        process: Process,
        stopped: bool,
        ignores_term: bool,
        forker: bool,
    }

    impl FakeOs {
        fn new() -> FakeOs {
            let mut os = FakeOs {
                next_pid: 100,
                ..FakeOs::default()
            };
            os.add(1, 0, 1); // launchd
            os
        }

        fn add(&mut self, pid: i32, ppid: i32, pgid: i32) -> &mut FakeProcess {
            self.table.push(FakeProcess {
                process: Process {
                    pid,
                    ppid,
                    pgid,
                    running: true,
                    started: pid as u64,
                },
                stopped: false,
                ignores_term: false,
                forker: false,
            });
            self.table.last_mut().expect("just pushed")
        }

        fn find(&mut self, pid: i32) -> Option<&mut FakeProcess> {
            self.table.iter_mut().find(|p| p.process.pid == pid)
        }

        fn die(&mut self, pid: i32) {
            self.table.retain(|p| p.process.pid != pid);
            for orphan in &mut self.table {
                if orphan.process.ppid == pid {
                    orphan.process.ppid = 1;
                }
            }
        }

        fn alive(&self) -> Vec<i32> {
            let mut pids: Vec<i32> = self.table.iter().map(|p| p.process.pid).collect();
            pids.sort_unstable();
            pids
        }
    }

    impl Processes for FakeOs {
        fn children_of(&mut self, pid: i32) -> Vec<i32> {
            let forkers: Vec<i32> = self
                .table
                .iter()
                .filter(|p| p.forker && !p.stopped && p.process.ppid == pid)
                .map(|p| p.process.pid)
                .collect();
            for forker in forkers {
                self.next_pid += 1;
                let child = self.next_pid;
                self.add(child, forker, child);
            }
            self.table
                .iter()
                .filter(|p| p.process.ppid == pid)
                .map(|p| p.process.pid)
                .collect()
        }

        fn members_of_group(&mut self, pgid: i32) -> Vec<i32> {
            self.table
                .iter()
                .filter(|p| p.process.pgid == pgid)
                .map(|p| p.process.pid)
                .collect()
        }

        fn describe(&mut self, pid: i32) -> Option<Process> {
            self.find(pid).map(|p| p.process)
        }

        fn signal(&mut self, pid: i32, signal: Signal) {
            assert!(pid > 1, "signalled pid {pid}");
            self.signals.push((pid, signal));
            let Some(target) = self.find(pid) else { return };
            match signal {
                Signal::Stop => target.stopped = true,
                Signal::Term if target.ignores_term => {}
                Signal::Term | Signal::Kill => self.die(pid),
            }
        }

        fn pause(&mut self) {}
    }

    const SUPERVISOR: i32 = 10;
    const BACKEND: i32 = 20;

    fn far_off() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    /// launchd, an unrelated process, the supervisor below it, the backend below that.
    fn with_backend() -> FakeOs {
        let mut os = FakeOs::new();
        os.add(5, 1, 5);
        os.add(SUPERVISOR, 5, SUPERVISOR);
        os.add(BACKEND, SUPERVISOR, BACKEND);
        os
    }

    #[test]
    fn finds_children_the_group_and_what_is_below_them_but_nothing_else() {
        let mut os = with_backend();
        os.add(21, BACKEND, BACKEND);
        os.add(22, 21, 22); // a new session below the backend
        os.add(30, 1, BACKEND); // re-parented, still in the group
        os.add(31, 30, 31); // below it, in a session of its own
        os.add(40, 1, 40); // unrelated
        let mut found: Vec<i32> = Tree::new(SUPERVISOR, BACKEND)
            .look(&mut os)
            .iter()
            .map(|p| p.pid)
            .collect();
        found.sort_unstable();
        assert_eq!(found, vec![BACKEND, 21, 22, 30, 31]);
    }

    #[test]
    fn kills_the_whole_tree_and_leaves_everything_else() {
        let mut os = with_backend();
        os.add(21, BACKEND, BACKEND);
        os.add(22, 21, 22);
        os.add(23, 22, 22);
        os.add(40, 1, 40);
        Tree::new(SUPERVISOR, BACKEND).kill_all(&mut os, far_off());
        assert_eq!(os.alive(), vec![1, 5, SUPERVISOR, 40]);
        // Frozen before any SIGKILL: no process was killed while one of the tree still ran.
        let first_kill = os.signals.iter().position(|s| s.1 == Signal::Kill);
        let last_stop = os.signals.iter().rposition(|s| s.1 == Signal::Stop);
        assert!(
            last_stop.is_some() && last_stop < first_kill,
            "{:?}",
            os.signals
        );
    }

    #[test]
    fn a_child_whose_parent_died_on_sigterm_is_still_killed() {
        let mut os = with_backend();
        os.add(21, BACKEND, 21).ignores_term = true; // its own session, survives SIGTERM
        os.add(22, 21, 21).ignores_term = true;
        let mut tree = Tree::new(SUPERVISOR, BACKEND);
        assert_eq!(tree.signal_all(&mut os, Signal::Term), 3);
        // The backend is gone and 21 was re-parented to launchd: no link leads to it any more.
        assert_eq!(os.describe(21).map(|p| p.ppid), Some(1));
        tree.kill_all(&mut os, far_off());
        assert_eq!(os.alive(), vec![1, 5, SUPERVISOR]);
    }

    #[test]
    fn a_process_that_forks_while_being_killed_leaves_no_child() {
        let mut os = with_backend();
        os.add(21, BACKEND, BACKEND).forker = true;
        Tree::new(SUPERVISOR, BACKEND).kill_all(&mut os, far_off());
        assert_eq!(os.alive(), vec![1, 5, SUPERVISOR]);
        assert!(os.next_pid > 100, "the forker never forked");
    }

    #[test]
    fn a_pid_remembered_but_now_another_process_is_left_alone() {
        let mut os = with_backend();
        os.add(21, BACKEND, 21).ignores_term = true;
        let mut tree = Tree::new(SUPERVISOR, BACKEND);
        tree.look(&mut os);
        os.die(21);
        os.die(BACKEND);
        // Pid 21 given to an unrelated process that started later.
        os.add(21, 1, 21).process.started = 999;
        tree.kill_all(&mut os, far_off());
        assert_eq!(os.alive(), vec![1, 5, SUPERVISOR, 21]);
    }

    #[test]
    fn the_documented_limit_an_escape_before_any_look_is_not_found() {
        let mut os = with_backend();
        // Double-forked and setsid before the supervisor first looked: a new session whose
        // parent is launchd. Nothing links it to the backend any more.
        os.add(50, 1, 50);
        Tree::new(SUPERVISOR, BACKEND).kill_all(&mut os, far_off());
        assert_eq!(os.alive(), vec![1, 5, SUPERVISOR, 50]);
    }

    #[test]
    fn gives_up_at_the_deadline_on_a_process_that_will_not_die() {
        struct Undying(FakeOs);
        impl Processes for Undying {
            fn children_of(&mut self, pid: i32) -> Vec<i32> {
                self.0.children_of(pid)
            }
            fn members_of_group(&mut self, pgid: i32) -> Vec<i32> {
                self.0.members_of_group(pgid)
            }
            fn describe(&mut self, pid: i32) -> Option<Process> {
                self.0.describe(pid)
            }
            fn signal(&mut self, pid: i32, signal: Signal) {
                self.0.signals.push((pid, signal));
            }
            fn pause(&mut self) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let mut os = Undying(with_backend());
        let start = Instant::now();
        Tree::new(SUPERVISOR, BACKEND).kill_all(&mut os, start + Duration::from_millis(50));
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(50) && took < Duration::from_secs(2));
        assert!(os.0.signals.iter().filter(|s| s.1 == Signal::Kill).count() > 1);
    }

    /// The same rounds against real processes: Linux without a subreaper re-parents orphans as
    /// macOS does (to init, or the nearest subreaper above), through `/proc`.
    #[cfg(target_os = "linux")]
    mod real {
        use super::super::*;
        use crate::process_tree::{all_processes, parse_stat};
        use std::os::unix::process::CommandExt;
        use std::process::Command;
        use std::time::Duration;

        struct Proc;

        impl Processes for Proc {
            fn children_of(&mut self, pid: i32) -> Vec<i32> {
                let table = all_processes().unwrap_or_default();
                table
                    .iter()
                    .filter(|p| p.ppid == pid)
                    .map(|p| p.pid)
                    .collect()
            }
            fn members_of_group(&mut self, pgid: i32) -> Vec<i32> {
                let table = all_processes().unwrap_or_default();
                table
                    .iter()
                    .filter(|p| p.pgrp == pgid)
                    .map(|p| p.pid)
                    .collect()
            }
            fn describe(&mut self, pid: i32) -> Option<Process> {
                let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
                let info = parse_stat(&stat)?;
                Some(Process {
                    pid,
                    ppid: info.ppid,
                    pgid: info.pgrp,
                    running: info.is_running(),
                    started: 0,
                })
            }
            fn signal(&mut self, pid: i32, signal: Signal) {
                // SAFETY: plain integers.
                unsafe { libc::kill(pid, signal.number()) };
            }
            fn pause(&mut self) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }

        fn running(pid: i32) -> bool {
            Proc.describe(pid).is_some_and(|p| p.running)
        }

        fn read_pids(path: &std::path::Path, count: usize) -> Vec<i32> {
            let give_up = Instant::now() + Duration::from_secs(10);
            loop {
                let pids: Vec<i32> = std::fs::read_to_string(path)
                    .unwrap_or_default()
                    .split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect();
                if pids.len() >= count || Instant::now() >= give_up {
                    return pids;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }

        #[test]
        fn a_grandchild_in_its_own_session_that_outlived_its_parent_is_killed() {
            let dir = std::env::temp_dir().join(format!("tree-kill-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("temp dir");
            let pids = dir.join("pids");
            // The backend (own group) starts, in a new session, a shell that ignores SIGTERM
            // (so does its sleep, which inherits the ignored disposition), then waits.
            let script = format!(
                "setsid sh -c 'trap \"\" TERM; echo $$ >> {p}; sleep 300 & echo $! >> {p}; wait' & wait",
                p = pids.display()
            );
            let mut backend = Command::new("sh")
                .args(["-c", &script])
                .process_group(0)
                .spawn()
                .expect("sh runs");
            let backend_pid = backend.id() as i32;
            let below = read_pids(&pids, 2);
            assert_eq!(below.len(), 2, "{below:?}");
            // No process has pid i32::MAX: the tree is the backend's group and what is below
            // it, not this test process's other children (other tests run beside this one).
            let mut tree = Tree::new(i32::MAX, backend_pid);
            assert!(tree.signal_all(&mut Proc, Signal::Term) >= 3);
            let _ = backend.wait();
            // The session leader lost its parent: no parent link and no group leads to it.
            let orphan = below[0];
            let give_up = Instant::now() + Duration::from_secs(5);
            while Proc.describe(orphan).is_some_and(|p| p.ppid == backend_pid) {
                assert!(Instant::now() < give_up, "never re-parented");
                std::thread::sleep(Duration::from_millis(5));
            }
            assert!(below.iter().all(|&pid| running(pid)), "SIGTERM was ignored");
            tree.kill_all(&mut Proc, Instant::now() + Duration::from_secs(5));
            let give_up = Instant::now() + Duration::from_secs(5);
            while below.iter().any(|&pid| running(pid)) && Instant::now() < give_up {
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = std::fs::remove_dir_all(&dir);
            let left: Vec<i32> = below.iter().copied().filter(|&pid| running(pid)).collect();
            for &pid in &below {
                Proc.signal(pid, Signal::Kill);
            }
            assert!(left.is_empty(), "still running: {left:?}");
        }
    }
}
