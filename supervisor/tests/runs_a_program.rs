//! Runs the supervisor executable as the relay does (crates/core/src/subprocess/unix.rs): `--parent <our pid>
//! --grace-ms <n> -- <program> <args>…`, in a process group of its own, and checks that the
//! program ran with its arguments intact and that its exit status came back.
//!
//! Twice: the binary cargo built for this host, and the static musl one (musl gives `no_main`
//! programs no `std::env::args_os`). The musl one is built by .ci/run:
//!   cargo build --release -p phone-a-friend-supervisor --target x86_64-unknown-linux-musl \
//!     --target-dir target/supervisor
//! With `PHONE_A_FRIEND_MUSL_SUPERVISOR=<path>` (as .ci/run sets it) it must be there; without,
//! it is looked for where that command puts it, and its tests are skipped, saying so on stderr,
//! when it is not.

// The supervisor is Unix-only (src/main.rs).
#![cfg(unix)]

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use phone_a_friend_supervisor::protocol::*;

const MUSL_PATH_VARIABLE: &str = "PHONE_A_FRIEND_MUSL_SUPERVISOR";
const MUSL_DEFAULT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../target/supervisor/x86_64-unknown-linux-musl/release/",
    "phone-a-friend-supervisor"
);

fn host_supervisor() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_phone-a-friend-supervisor"))
}

/// The musl supervisor, or `None` (said on stderr) when it was not built and not asked for.
fn musl_supervisor(test: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(MUSL_PATH_VARIABLE) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "{MUSL_PATH_VARIABLE}={} is not a file",
            path.display()
        );
        return Some(path);
    }
    let path = PathBuf::from(MUSL_DEFAULT);
    if path.is_file() {
        return Some(path);
    }
    // Straight to stderr: the test harness captures what eprintln! writes from a passing test.
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED {test}: no musl supervisor at {} (build it as .ci/run does, or set {MUSL_PATH_VARIABLE}) ***",
        path.display()
    );
    None
}

/// Runs `program args…` under `supervisor` as the relay starts it.
fn run(supervisor: &Path, program: &str, args: &[&OsStr]) -> Output {
    Command::new(supervisor)
        .arg(PARENT_FLAG)
        .arg(std::process::id().to_string())
        .arg(GRACE_FLAG)
        .arg("500")
        .arg(END_OF_FLAGS)
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .process_group(0)
        .output()
        .expect("the supervisor starts")
}

fn runs_echo_with_its_arguments_intact(supervisor: &Path) {
    let odd = OsStr::from_bytes(b"caf\xc3\xa9 \xff");
    let output = run(supervisor, "/bin/echo", &["hi".as_ref(), odd]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.stdout, b"hi caf\xc3\xa9 \xff\n");
}

fn returns_the_exit_status(supervisor: &Path) {
    let output = run(supervisor, "/bin/sh", &["-c".as_ref(), "exit 3".as_ref()]);
    assert_eq!(
        output.status.code(),
        Some(3),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let output = run(
        supervisor,
        "/bin/sh",
        &["-c".as_ref(), "kill -9 $$".as_ref()],
    );
    assert_eq!(output.status.signal(), Some(libc::SIGKILL));
}

fn reports_a_usage_error_as_it_does_a_spawn_failure(supervisor: &Path) {
    let output = Command::new(supervisor)
        .arg(PARENT_FLAG)
        .stdin(Stdio::null())
        .output()
        .expect("the supervisor starts");
    assert_eq!(output.status.code(), Some(SPAWN_FAILED_EXIT));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(spawn_failure_errno(&stderr), Some(libc::EINVAL), "{stderr}");
    assert!(stderr.contains("--parent needs a value"), "{stderr}");
}

#[test]
fn host_build_runs_echo_with_its_arguments_intact() {
    runs_echo_with_its_arguments_intact(&host_supervisor());
}

#[test]
fn host_build_returns_the_exit_status() {
    returns_the_exit_status(&host_supervisor());
}

#[test]
fn host_build_reports_a_usage_error() {
    reports_a_usage_error_as_it_does_a_spawn_failure(&host_supervisor());
}

#[test]
fn musl_build_runs_echo_with_its_arguments_intact() {
    if let Some(supervisor) = musl_supervisor("musl_build_runs_echo_with_its_arguments_intact") {
        runs_echo_with_its_arguments_intact(&supervisor);
    }
}

#[test]
fn musl_build_returns_the_exit_status() {
    if let Some(supervisor) = musl_supervisor("musl_build_returns_the_exit_status") {
        returns_the_exit_status(&supervisor);
    }
}

#[test]
fn musl_build_reports_a_usage_error() {
    if let Some(supervisor) = musl_supervisor("musl_build_reports_a_usage_error") {
        reports_a_usage_error_as_it_does_a_spawn_failure(&supervisor);
    }
}

/// `--exec` as the relay starts git on Linux (crates/core/src/subprocess/unix.rs).
#[cfg(target_os = "linux")]
fn exec(supervisor: &Path, parent: u32, program: &str, args: &[&str]) -> Command {
    let mut command = Command::new(supervisor);
    command
        .arg(PARENT_FLAG)
        .arg(parent.to_string())
        .arg(EXEC_FLAG)
        .arg(END_OF_FLAGS)
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .process_group(0);
    command
}

#[cfg(target_os = "linux")]
fn becomes_the_program(supervisor: &Path) {
    // The program is the process that was started (exec, not a child): `$$` is its pid.
    let child = exec(
        supervisor,
        std::process::id(),
        "sh",
        &["-c", "echo $$; exit 4"],
    )
    .stdout(Stdio::piped())
    .spawn()
    .expect("the supervisor starts");
    let pid = child.id();
    let output = child.wait_with_output().expect("it ends");
    assert_eq!(output.status.code(), Some(4));
    assert_eq!(String::from_utf8_lossy(&output.stdout), format!("{pid}\n"));
    // A program it cannot start comes back as a spawn failure, with the OS's error.
    let output = exec(supervisor, std::process::id(), "no-such-program-here", &[])
        .output()
        .expect("the supervisor starts");
    assert_eq!(output.status.code(), Some(SPAWN_FAILED_EXIT));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(spawn_failure_errno(&stderr), Some(libc::ENOENT), "{stderr}");
    // Told a parent that is not its own (as when the host died before it asked for the
    // signal), it starts nothing.
    let output = exec(supervisor, 1, "sh", &["-c", "echo ran"])
        .output()
        .expect("the supervisor starts");
    assert_eq!(output.status.code(), Some(SPAWN_FAILED_EXIT));
    assert_eq!(output.stdout, b"");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(spawn_failure_errno(&stderr), Some(libc::ESRCH), "{stderr}");
}

/// The program it became is killed when the process that started it dies.
#[cfg(target_os = "linux")]
fn the_program_dies_with_its_parent(supervisor: &Path) {
    // A shell starts the supervisor in the background, says the program's pid, and exits:
    // the program (a long sleep) must die with it.
    let script = format!(
        "{} {} $$ {} {} sleep 600 >/dev/null 2>&1 & echo $!; sleep 0.2; exit 0",
        supervisor.display(),
        PARENT_FLAG,
        EXEC_FLAG,
        END_OF_FLAGS
    );
    let output = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .output()
        .expect("sh runs");
    let pid: i32 = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .expect("a pid");
    let started = std::time::Instant::now();
    // SAFETY: signal 0 only checks that the process exists.
    while unsafe { libc::kill(pid, 0) } == 0 {
        if started.elapsed() > std::time::Duration::from_secs(5) {
            // SAFETY: plain-data arguments; the test's own stray process.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the program {pid} outlived its parent");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn host_build_exec_becomes_the_program() {
    becomes_the_program(&host_supervisor());
}

#[cfg(target_os = "linux")]
#[test]
fn host_build_exec_dies_with_its_parent() {
    the_program_dies_with_its_parent(&host_supervisor());
}

#[cfg(target_os = "linux")]
#[test]
fn musl_build_exec_becomes_the_program() {
    if let Some(supervisor) = musl_supervisor("musl_build_exec_becomes_the_program") {
        becomes_the_program(&supervisor);
    }
}
