//! The processes below a given one, read from `/proc`. A process group is not enough to find
//! what a backend started: the claude and opencode CLIs run their tool commands in new sessions
//! (docs/BACKENDS.md §3 and §4), and daemons double-fork away from their parent. Under a
//! child subreaper every such orphan is re-parented to the subreaper, so the parent links
//! always lead back to it.

use std::collections::HashMap;
use std::io;

/// One line of `/proc/<pid>/stat`, as far as we need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessInfo {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    /// The state letter: `R`, `S`, `D`, `Z` (zombie), `X` (dead), …
    pub state: u8,
}

impl ProcessInfo {
    /// Still running: neither a zombie waiting to be reaped nor dead.
    pub fn is_running(&self) -> bool {
        self.state != b'Z' && self.state != b'X'
    }
}

/// Parses `pid (comm) S ppid pgrp …`, where `comm` may itself contain spaces and parentheses.
pub fn parse_stat(stat: &[u8]) -> Option<ProcessInfo> {
    let open = stat.iter().position(|&b| b == b'(')?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    let pid = std::str::from_utf8(stat.get(..open)?)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let mut fields = stat
        .get(close + 1..)?
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty());
    let state = *fields.next()?.first()?;
    let number =
        |field: Option<&[u8]>| -> Option<i32> { std::str::from_utf8(field?).ok()?.parse().ok() };
    let ppid = number(fields.next())?;
    let pgrp = number(fields.next())?;
    Some(ProcessInfo {
        pid,
        ppid,
        pgrp,
        state,
    })
}

/// Every process visible in `/proc` now. A process that exits while it is read is skipped.
pub fn all_processes() -> io::Result<Vec<ProcessInfo>> {
    let mut table = Vec::new();
    let mut path = String::with_capacity(32);
    for entry in std::fs::read_dir("/proc")? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        path.clear();
        path.push_str("/proc/");
        path.push_str(pid);
        path.push_str("/stat");
        if let Some(info) = std::fs::read(&path).ok().as_deref().and_then(parse_stat) {
            table.push(info);
        }
    }
    Ok(table)
}

/// The processes below `root` in `table` (children, their children, …), parents first.
pub fn descendants_in(table: &[ProcessInfo], root: i32) -> Vec<ProcessInfo> {
    let mut children: HashMap<i32, Vec<ProcessInfo>> = HashMap::new();
    for info in table {
        if info.pid != root {
            children.entry(info.ppid).or_default().push(*info);
        }
    }
    let mut found = Vec::new();
    let mut next = vec![root];
    while let Some(parent) = next.pop() {
        for child in children.remove(&parent).unwrap_or_default() {
            next.push(child.pid);
            found.push(child);
        }
    }
    found
}

/// The processes below `root` now.
pub fn descendants(root: i32) -> io::Result<Vec<ProcessInfo>> {
    Ok(descendants_in(&all_processes()?, root))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_stat_line_whose_name_holds_parentheses_and_spaces() {
        let line = b"4242 (a (weird) name) S 17 4242 4242 0 -1 4194560 0 0";
        assert_eq!(
            parse_stat(line),
            Some(ProcessInfo {
                pid: 4242,
                ppid: 17,
                pgrp: 4242,
                state: b'S'
            })
        );
        assert_eq!(parse_stat(b"garbage"), None);
        assert_eq!(parse_stat(b"12 (x) Z"), None);
    }

    #[test]
    fn finds_children_and_grandchildren_but_not_siblings() {
        let p = |pid, ppid, state| ProcessInfo {
            pid,
            ppid,
            pgrp: pid,
            state,
        };
        let table = [
            p(1, 0, b'S'),
            p(10, 1, b'S'),
            p(11, 10, b'S'),
            p(12, 11, b'Z'),
            p(13, 10, b'R'),
            p(20, 1, b'S'),
        ];
        let mut below: Vec<i32> = descendants_in(&table, 10).iter().map(|i| i.pid).collect();
        below.sort_unstable();
        assert_eq!(below, vec![11, 12, 13]);
        assert!(descendants_in(&table, 20).is_empty());
        assert!(!table[3].is_running() && table[4].is_running());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn sees_a_real_child_of_this_process() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep runs");
        let me = std::process::id() as i32;
        let found = descendants(me).expect("proc readable");
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            found.iter().any(|info| info.pid == child.id() as i32),
            "{found:?}"
        );
    }
}
