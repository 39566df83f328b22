//! How the relay and the supervisor executable talk: its command line, and how it reports a
//! backend it could not start.

/// The executable's file name; it ships beside the addon's `.node` file.
pub const SUPERVISOR_FILE_NAME: &str = "phone-a-friend-supervisor";

/// `--parent <pid>`: the process whose death ends the run (the Node process).
pub const PARENT_FLAG: &str = "--parent";
/// `--grace-ms <n>`: how long descendants get between SIGTERM and SIGKILL.
pub const GRACE_FLAG: &str = "--grace-ms";
/// `--remove <dir>` (repeatable): folders removed when the run is stopped or its parent dies.
pub const REMOVE_FLAG: &str = "--remove";
/// `--exec` (no value): supervise nothing; ask for SIGKILL when `--parent` dies and become the
/// program (`execvp`, the same process). For a short child that must not outlive the host but
/// needs no tree kill (git on Linux): it is started without a `fork` of the host, which costs
/// more than this binary's start (docs/ARCHITECTURE.md §4). Linux only.
pub const EXEC_FLAG: &str = "--exec";
/// Ends the supervisor's own flags; the backend's program and arguments follow.
pub const END_OF_FLAGS: &str = "--";

/// Exit code when the backend could not be started; stderr then holds one line
/// `<SPAWN_FAILED_PREFIX><detail> (os error <n>)`.
pub const SPAWN_FAILED_EXIT: i32 = 127;
pub const SPAWN_FAILED_PREFIX: &str = "phone-a-friend-supervisor: could not start the backend: ";

/// The OS error number at the end of a spawn failure line, if it has one.
pub fn spawn_failure_errno(stderr: &str) -> Option<i32> {
    let line = stderr
        .lines()
        .find_map(|line| line.strip_prefix(SPAWN_FAILED_PREFIX))?;
    let code = line.rsplit_once("(os error ")?.1.strip_suffix(')')?;
    code.parse().ok()
}
