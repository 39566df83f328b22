//! The process runner on Unix, with real processes: `sh` scripts as fake CLIs.

use super::unix::TERM_GRACE;
use super::*;
use std::os::unix::fs::PermissionsExt;
use std::time::Instant as StdInstant;
use tempfile::TempDir;

const MIB: usize = 1024 * 1024;

struct Fixture {
    dir: TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A fake CLI: a `#!/bin/sh` script, executable.
    fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    fn spec(&self, program: PathBuf) -> ProcessSpec {
        ProcessSpec {
            program,
            args: Vec::new(),
            cwd: self.dir.path().to_path_buf(),
            env: BTreeMap::from([("PATH".to_string(), "/usr/bin:/bin".to_string())]),
            stdin: StdinSource::Null,
            timeout: Duration::from_secs(20),
            output_limit: 8 * MIB,
            remove_on_stop: Vec::new(),
            progress: crate::progress::Progress::unwatched(),
        }
    }

    /// A spec whose script gets a pid file path as `$1`.
    fn spec_with_pid_file(&self, program: PathBuf) -> (ProcessSpec, PathBuf) {
        let pid_file = self.path("pids");
        let mut spec = self.spec(program);
        spec.args = vec![pid_file.clone().into_os_string()];
        (spec, pid_file)
    }
}

async fn run(spec: ProcessSpec) -> Result<ProcessOutput, ProcessError> {
    run_with(spec, &CancellationToken::new()).await
}

/// `run_process`, retrying ETXTBSY: another test's fork can briefly hold a just-written
/// script open for writing.
async fn run_with(
    spec: ProcessSpec,
    cancel: &CancellationToken,
) -> Result<ProcessOutput, ProcessError> {
    let mut attempts = 0;
    loop {
        match run_process(spec.clone(), cancel).await {
            Err(ProcessError::Spawn(e))
                if e.raw_os_error() == Some(libc::ETXTBSY) && attempts < 50 =>
            {
                attempts += 1;
                sleep(Duration::from_millis(10)).await;
            }
            other => return other,
        }
    }
}

fn ok(result: Result<ProcessOutput, ProcessError>) -> ProcessOutput {
    match result {
        Ok(output) => output,
        Err(e) => panic!("expected output, got {e:?}"),
    }
}

/// Distinct bytes with no whitespace at either end, so the echo must match exactly.
fn pattern(len: usize) -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..len).map(|i| b"abcdefghij\n"[i % 11]).collect();
    if let Some(last) = bytes.last_mut() {
        *last = b'z';
    }
    bytes
}

/// Pids the script wrote to the pid file, waiting for it to be written.
async fn read_pids(file: &Path) -> Vec<i32> {
    for _ in 0..500 {
        if let Ok(text) = std::fs::read_to_string(file) {
            if text.ends_with('\n') {
                return text
                    .split_whitespace()
                    .map(|p| p.parse().expect("pid"))
                    .collect();
            }
        }
        sleep(Duration::from_millis(5)).await;
    }
    panic!("no pid file at {}", file.display());
}

/// Running and not a zombie (init may be slow to reap orphans).
fn is_alive(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| phone_a_friend_supervisor::process_tree::parse_stat(&stat))
        .is_some_and(|info| info.is_running())
}

/// Whether `pid` is dead within `limit` (a SIGKILL is delivered asynchronously).
async fn dies_within(pid: i32, limit: Duration) -> bool {
    let start = StdInstant::now();
    while start.elapsed() < limit {
        if !is_alive(pid) {
            return true;
        }
        sleep(Duration::from_millis(5)).await;
    }
    false
}

/// Kills what a test started (`pids[0]` leads its group) so a failed assertion leaves
/// nothing running.
fn cleanup(pids: &[i32]) {
    if let Some(&leader) = pids.first().filter(|&&pid| pid > 1) {
        // SAFETY: plain integers; the group of a process this test started.
        unsafe { libc::kill(-leader, libc::SIGKILL) };
    }
    for &pid in pids.iter().filter(|&&pid| pid > 1) {
        // SAFETY: plain integers; `pid` is a process this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

#[tokio::test]
async fn reports_exit_codes_and_trimmed_stdout() {
    let fx = Fixture::new();
    let zero = ok(run(fx.spec(fx.script("zero", "printf '  hello \\n'; exit 0"))).await);
    assert_eq!((zero.code, zero.signal), (Some(0), None));
    assert_eq!(zero.stdout.text, "hello");
    assert_eq!(zero.stdout.trimmed_len, 5);
    let three = ok(run(fx.spec(fx.script("three", "exit 3"))).await);
    assert_eq!((three.code, three.signal), (Some(3), None));
    assert_eq!(three.stdout.trimmed_len, 0);
}

#[tokio::test]
async fn captures_stderr_apart_from_stdout() {
    let fx = Fixture::new();
    let script = fx.script("err", "echo out; echo 'it broke' >&2; exit 1");
    let output = ok(run(fx.spec(script)).await);
    assert_eq!(output.code, Some(1));
    assert_eq!(output.stdout.text, "out");
    assert_eq!(output.stderr.text, "it broke");
}

#[tokio::test]
async fn reports_the_signal_that_ended_the_child() {
    let fx = Fixture::new();
    let output = ok(run(fx.spec(fx.script("killed", "kill -KILL $$"))).await);
    assert_eq!((output.code, output.signal), (None, Some(libc::SIGKILL)));
}

#[tokio::test]
async fn child_gets_exactly_the_given_env_and_cwd() {
    let fx = Fixture::new();
    let script = fx.script(
        "env",
        "printf '%s|%s|%s' \"$FOO\" \"${HOME-unset}\" \"$(pwd -P)\"",
    );
    let mut spec = fx.spec(script);
    spec.env.insert("FOO".into(), "bar baz".into());
    let output = ok(run(spec).await);
    let cwd = fx.dir.path().canonicalize().expect("canonical temp dir");
    assert_eq!(
        output.stdout.text,
        format!("bar baz|unset|{}", cwd.display())
    );
}

#[tokio::test]
async fn delivers_300k_of_stdin_whole() {
    let fx = Fixture::new();
    let input = pattern(300_000);
    let mut spec = fx.spec(fx.script("cat", "exec cat"));
    spec.stdin = StdinSource::Bytes(input.clone());
    let output = ok(run(spec).await);
    assert_eq!(output.code, Some(0));
    assert_eq!(output.stdout.text.as_bytes(), &input[..]);
}

/// Runs a script that writes `$$ $!` (itself, then a grandchild) to `pid_file`: its result, how
/// long it took, and whether the grandchild died within a second of the end.
async fn run_leaving_a_grandchild(
    spec: ProcessSpec,
    pid_file: &Path,
) -> (Result<ProcessOutput, ProcessError>, Duration, bool) {
    let started = StdInstant::now();
    let result = run(spec).await;
    let elapsed = started.elapsed();
    let pids = read_pids(pid_file).await;
    let dead = dies_within(pids[1], Duration::from_secs(1)).await;
    cleanup(&pids);
    (result, elapsed, dead)
}

/// A watchdog as the relay's (settle.rs `watched`): marks the run stalled once it went idle.
fn watchdog(progress: &crate::progress::Progress) {
    let progress = progress.clone();
    tokio::spawn(async move {
        progress.idle().await;
        progress.stall();
    });
}

#[tokio::test]
async fn a_child_that_falls_silent_is_stalled_with_its_last_words_and_its_tree_killed() {
    let fx = Fixture::new();
    // Output every 100 ms for half a second keeps it alive; then silence.
    let script = "sleep 30 & echo $$ $! > \"$1\"; for i in 1 2 3 4 5; do echo \"tick $i\" >&2; sleep 0.1; done; sleep 30";
    let (mut spec, pid_file) = fx.spec_with_pid_file(fx.script("silent", script));
    let limit = crate::deadline::Timeout::from_seconds(0.4).expect("valid");
    spec.progress = crate::progress::Progress::watching(limit);
    watchdog(&spec.progress);
    let (result, elapsed, dead) = run_leaving_a_grandchild(spec, &pid_file).await;
    match result {
        Err(ProcessError::Stalled { stderr, after }) => {
            assert_eq!(stderr.text, "tick 1\ntick 2\ntick 3\ntick 4\ntick 5");
            assert_eq!(after, limit);
        }
        other => panic!("expected a stall, got {other:?}"),
    }
    // The ticks kept it from stalling early; silence stopped it long before its 20 s.
    assert!(elapsed >= Duration::from_millis(800), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert!(dead, "the grandchild survived the stall");
}

#[tokio::test]
async fn waiting_on_a_slow_stdout_consumer_is_not_idleness() {
    let fx = Fixture::new();
    let script = "for i in 1 2 3; do echo \"line $i\"; done; sleep 30";
    let mut spec = fx.spec(fx.script("lines", script));
    let limit = crate::deadline::Timeout::from_seconds(0.2).expect("valid");
    spec.progress = crate::progress::Progress::watching(limit);
    watchdog(&spec.progress);
    let (lines, mut receiver) = super::stdout_lines(1024);
    let (started, cancel) = (StdInstant::now(), CancellationToken::new());
    let run = run_process_streaming(spec, lines, &cancel);
    let slow_reader = async {
        let mut read = Vec::new();
        // A line a second: the reader waits on its consumer for two seconds, ten limits.
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_millis(1000)).await;
            read.extend(receiver.recv().await.map(|line| line.text));
        }
        read
    };
    let (result, read) = tokio::join!(run, slow_reader);
    assert_eq!(read, ["line 1", "line 2", "line 3"]);
    // Then the child is silent, and stalls.
    assert!(
        matches!(result, Err(ProcessError::Stalled { .. })),
        "{result:?}"
    );
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_secs(2), "{elapsed:?}");
}

// On the multi-threaded runtime, as under napi.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivers_8_mib_of_stdin_to_a_child_that_writes_first() {
    let fx = Fixture::new();
    // 1 MiB to stdout before stdin is read: writing stdin first would deadlock.
    let script = fx.script(
        "chatty",
        "head -c 1048576 /dev/zero | tr '\\0' y; cat > \"$1\"; wc -c < \"$1\" >&2",
    );
    let copy = fx.path("copy");
    let mut spec = fx.spec(script);
    spec.args = vec![copy.clone().into_os_string()];
    let input = pattern(8 * MIB);
    spec.stdin = StdinSource::Bytes(input.clone());
    let output = ok(run(spec).await);
    assert_eq!(output.code, Some(0));
    assert_eq!(output.stdout.trimmed_len, MIB as u64);
    assert_eq!(output.stderr.text, (8 * MIB).to_string());
    assert!(
        std::fs::read(&copy).expect("copy") == input,
        "stdin arrived altered"
    );
}

#[tokio::test]
async fn a_child_that_ignores_stdin_is_not_an_error() {
    let fx = Fixture::new();
    let mut spec = fx.spec(fx.script("deaf", "echo done"));
    spec.stdin = StdinSource::Bytes(pattern(8 * MIB));
    let output = ok(run(spec).await);
    assert_eq!(output.code, Some(0));
    assert_eq!(output.stdout.text, "done");
}

#[tokio::test]
async fn counts_200_mb_of_stdout_without_keeping_it() {
    let fx = Fixture::new();
    let size: u64 = 200 * 1024 * 1024;
    let script = fx.script("flood", &format!("exec head -c {size} /dev/zero"));
    let started = StdInstant::now();
    let output = ok(run(fx.spec(script)).await);
    assert_eq!(output.code, Some(0));
    assert!(output.stdout.text.len() <= 8 * MIB);
    assert_eq!(output.stdout.trimmed_len, size);
    if let Some(peak) = peak_rss() {
        // Buffering the stream would need 200 MB on its own.
        assert!(peak < 150 * MIB as u64, "peak RSS {peak} bytes");
    }
    assert!(started.elapsed() < Duration::from_secs(15));
}

/// The process's peak resident memory, where the platform tells.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[tokio::test]
async fn times_out_a_sleeping_child() {
    let fx = Fixture::new();
    let mut spec = fx.spec(fx.script("sleepy", "sleep 30"));
    spec.timeout = Duration::from_millis(300);
    let started = StdInstant::now();
    let result = run(spec).await;
    let elapsed = started.elapsed();
    assert!(
        matches!(result, Err(ProcessError::TimedOut { .. })),
        "{result:?}"
    );
    assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
}

#[tokio::test]
async fn a_timeout_hands_back_what_stderr_said() {
    let fx = Fixture::new();
    let script = "echo 'Reconnecting... 1/5' >&2; echo 'Reconnecting... 2/5' >&2; sleep 30";
    let mut spec = fx.spec(fx.script("retrying", script));
    spec.timeout = Duration::from_millis(500);
    match run(spec).await {
        Err(ProcessError::TimedOut { stderr }) => {
            assert_eq!(stderr.text, "Reconnecting... 1/5\nReconnecting... 2/5")
        }
        other => panic!("expected a time-out, got {other:?}"),
    }
}

#[tokio::test]
async fn timeout_kills_grandchildren() {
    let fx = Fixture::new();
    let script = fx.script("parent", "sleep 30 & echo $$ $! > \"$1\"; sleep 30");
    let (mut spec, pid_file) = fx.spec_with_pid_file(script);
    spec.timeout = Duration::from_millis(300);
    let result = run(spec).await;
    let pids = read_pids(&pid_file).await;
    let dead = dies_within(pids[1], Duration::from_secs(1)).await;
    cleanup(&pids);
    assert!(
        matches!(result, Err(ProcessError::TimedOut { .. })),
        "{result:?}"
    );
    assert!(dead, "grandchild {} survived the timeout", pids[1]);
}

// On the multi-threaded runtime, as under napi.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_kills_the_group_promptly() {
    let fx = Fixture::new();
    let script = fx.script("parent", "sleep 30 & echo $$ $! > \"$1\"; sleep 30");
    let (spec, pid_file) = fx.spec_with_pid_file(script);
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        async move {
            let pids = read_pids(&pid_file).await;
            cancel.cancel();
            (pids, StdInstant::now())
        }
    };
    let (result, (pids, cancelled_at)) = tokio::join!(run_with(spec, &cancel), canceller);
    let latency = cancelled_at.elapsed();
    let leader_dead = !is_alive(pids[0]);
    let grandchild_dead = dies_within(pids[1], Duration::from_secs(1)).await;
    cleanup(&pids);
    assert!(matches!(result, Err(ProcessError::Cancelled)), "{result:?}");
    // Both die on SIGTERM: the run ends before the grace period would have sent SIGKILL.
    assert!(latency < TERM_GRACE, "{latency:?}");
    assert!(leader_dead && grandchild_dead, "{pids:?} survived");
}

#[tokio::test]
async fn a_cancelled_token_starts_nothing() {
    let fx = Fixture::new();
    let marker = fx.path("ran");
    let mut spec = fx.spec(fx.script("touch", "touch \"$1\""));
    spec.args = vec![marker.clone().into_os_string()];
    let cancel = CancellationToken::new();
    cancel.cancel();
    let result = run_with(spec, &cancel).await;
    assert!(matches!(result, Err(ProcessError::Cancelled)), "{result:?}");
    assert!(!marker.exists());
}

#[tokio::test]
async fn sigkill_follows_an_ignored_sigterm_after_the_grace() {
    let fx = Fixture::new();
    let script = fx.script(
        "stubborn",
        "trap '' TERM; sleep 30 & echo $$ $! > \"$1\"; wait",
    );
    let (mut spec, pid_file) = fx.spec_with_pid_file(script);
    spec.timeout = Duration::from_millis(200);
    let started = StdInstant::now();
    let result = run(spec).await;
    let elapsed = started.elapsed();
    let pids = read_pids(&pid_file).await;
    let leader_dead = !is_alive(pids[0]);
    let grandchild_dead = dies_within(pids[1], Duration::from_secs(1)).await;
    cleanup(&pids);
    assert!(
        matches!(result, Err(ProcessError::TimedOut { .. })),
        "{result:?}"
    );
    assert!(
        elapsed >= Duration::from_millis(200) + TERM_GRACE,
        "{elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    assert!(leader_dead && grandchild_dead, "{pids:?} survived");
}

#[tokio::test]
async fn a_grandchild_holding_stdout_does_not_outlive_its_leader() {
    let fx = Fixture::new();
    let script = fx.script("leaver", "sleep 30 & echo $$ $! > \"$1\"; echo done");
    let (spec, pid_file) = fx.spec_with_pid_file(script);
    let (result, elapsed, dead) = run_leaving_a_grandchild(spec, &pid_file).await;
    let output = ok(result);
    assert_eq!(
        (output.code, output.stdout.text.as_str()),
        (Some(0), "done")
    );
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
    assert!(dead, "the grandchild survived");
}

/// A script whose `setsid` child (out of reach of any group kill) writes its pid to `$1`
/// and sleeps, keeping stdout open; the script then runs `then`.
fn escaper(fx: &Fixture, then: &str) -> (ProcessSpec, PathBuf) {
    let script = fx.script(
        "escaper",
        &format!(
            "setsid sh -c 'echo $$ > \"$1\"; exec sleep 30' sh \"$1\" &\n\
             while [ ! -s \"$1\" ]; do sleep 0.01; done; {then}"
        ),
    );
    fx.spec_with_pid_file(script)
}

#[tokio::test]
async fn a_descendant_in_a_new_session_dies_with_its_backend() {
    let fx = Fixture::new();
    let (spec, pid_file) = escaper(&fx, "echo done");
    let started = StdInstant::now();
    let result = run(spec).await;
    let elapsed = started.elapsed();
    let pids = read_pids(&pid_file).await;
    let dead = dies_within(pids[0], Duration::from_secs(1)).await;
    cleanup(&pids);
    let output = ok(result);
    assert_eq!(
        (output.code, output.stdout.text.as_str()),
        (Some(0), "done")
    );
    assert!(dead, "the setsid descendant {} survived", pids[0]);
    // No waiting out the drain: nothing holds the pipes once the tree is gone.
    assert!(elapsed < DRAIN_AFTER_EXIT, "{elapsed:?}");
}

#[tokio::test]
async fn a_descendant_in_a_new_session_dies_on_timeout_and_on_cancel() {
    for cancelled in [false, true] {
        let fx = Fixture::new();
        let (mut spec, pid_file) = escaper(&fx, "sleep 30");
        spec.timeout = Duration::from_millis(if cancelled { 20_000 } else { 300 });
        let cancel = CancellationToken::new();
        let canceller = async {
            let pids = read_pids(&pid_file).await;
            if cancelled {
                cancel.cancel();
            }
            pids
        };
        let (result, pids) = tokio::join!(run_with(spec, &cancel), canceller);
        let dead = dies_within(pids[0], Duration::from_secs(1)).await;
        cleanup(&pids);
        let expected = if cancelled { "Cancelled" } else { "TimedOut" };
        let stopped = match &result {
            Err(ProcessError::Cancelled) => "Cancelled",
            Err(ProcessError::TimedOut { .. }) => "TimedOut",
            _ => "neither",
        };
        assert_eq!(stopped, expected, "{:?}", result.map(|_| ()));
        assert!(dead, "the setsid descendant {} survived", pids[0]);
    }
}

#[tokio::test]
async fn dropping_the_future_kills_the_group() {
    let fx = Fixture::new();
    let script = fx.script("parent", "sleep 30 & echo $$ $! > \"$1\"; sleep 30");
    let (spec, pid_file) = fx.spec_with_pid_file(script);
    let cancel = CancellationToken::new();
    let pending = run_with(spec, &cancel);
    // The caller gives up on the future: it is dropped with the child still running.
    let gave_up = tokio::time::timeout(Duration::from_secs(5), async {
        tokio::select! {
            _ = pending => false,
            _ = read_pids(&pid_file) => true,
        }
    })
    .await;
    let pids = read_pids(&pid_file).await;
    let mut dead = true;
    for &pid in &pids {
        dead &= dies_within(pid, Duration::from_secs(1)).await;
    }
    cleanup(&pids);
    assert_eq!(gave_up, Ok(true));
    assert!(dead, "{pids:?} survived the drop");
}

/// `run_process_streaming` with ETXTBSY retried (see [`run_with`]); `consume` reads each
/// attempt's lines concurrently, and what it returns comes back with the result.
async fn stream_with<F, Fut, T>(
    spec: ProcessSpec,
    max_line: usize,
    cancel: &CancellationToken,
    consume: F,
) -> (Result<ProcessOutput, ProcessError>, T)
where
    F: Fn(mpsc::Receiver<StdoutLine>) -> Fut,
    Fut: Future<Output = T>,
{
    let (result, consumed, _) = stream_timed(spec, max_line, cancel, consume).await;
    (result, consumed)
}

/// [`stream_with`], also telling how long the run itself took (the consumer may go on).
async fn stream_timed<F, Fut, T>(
    spec: ProcessSpec,
    max_line: usize,
    cancel: &CancellationToken,
    consume: F,
) -> (Result<ProcessOutput, ProcessError>, T, Duration)
where
    F: Fn(mpsc::Receiver<StdoutLine>) -> Fut,
    Fut: Future<Output = T>,
{
    let mut attempts = 0;
    loop {
        let (lines, receiver) = stdout_lines(max_line);
        let started = StdInstant::now();
        let run = async {
            let result = run_process_streaming(spec.clone(), lines, cancel).await;
            (result, started.elapsed())
        };
        let ((result, took), consumed) = tokio::join!(run, consume(receiver));
        match result {
            Err(ProcessError::Spawn(e))
                if e.raw_os_error() == Some(libc::ETXTBSY) && attempts < 50 =>
            {
                attempts += 1;
                sleep(Duration::from_millis(10)).await;
            }
            other => return (other, consumed, took),
        }
    }
}

async fn all_lines(mut receiver: mpsc::Receiver<StdoutLine>) -> Vec<StdoutLine> {
    let mut lines = Vec::new();
    while let Some(line) = receiver.recv().await {
        lines.push(line);
    }
    lines
}

fn texts(lines: &[StdoutLine]) -> Vec<&str> {
    lines.iter().map(|line| line.text.as_str()).collect()
}

#[tokio::test]
async fn streams_stdout_lines_while_the_child_runs_and_keeps_its_text() {
    let fx = Fixture::new();
    // The child goes on only once the consumer has seen the first line.
    let script = fx.script(
        "chatty",
        "echo first; while [ ! -e \"$1\" ]; do sleep 0.01; done; printf 'second\\nthird'",
    );
    let marker = fx.path("seen-first");
    let mut spec = fx.spec(script);
    spec.args = vec![marker.clone().into_os_string()];
    let (result, lines) = stream_with(spec, 1000, &CancellationToken::new(), |mut rx| {
        let marker = marker.clone();
        async move {
            let first = rx.recv().await.expect("a first line");
            std::fs::write(&marker, "").expect("marker");
            let mut lines = vec![first];
            lines.extend(all_lines(rx).await);
            lines
        }
    })
    .await;
    let output = ok(result);
    assert_eq!(texts(&lines), ["first", "second", "third"]);
    assert!(lines.iter().all(|line| !line.cut));
    assert_eq!(output.code, Some(0));
    assert_eq!(output.stdout.text, "first\nsecond\nthird");
}

#[tokio::test]
async fn a_character_split_across_writes_arrives_whole() {
    let fx = Fixture::new();
    let script = fx.script(
        "split",
        "printf 'a\\360\\237'; sleep 0.2; printf '\\230\\200b\\n\\303'; sleep 0.2; printf '\\274\\n'",
    );
    let (result, lines) =
        stream_with(fx.spec(script), 1000, &CancellationToken::new(), all_lines).await;
    assert_eq!(texts(&lines), ["a😀b", "ü"]);
    assert_eq!(ok(result).stdout.text, "a😀b\nü");
}

#[tokio::test]
async fn a_line_past_the_limit_keeps_its_beginning_and_stdout_its_size() {
    let fx = Fixture::new();
    let script = fx.script(
        "long",
        "head -c 300000 /dev/zero | tr '\\0' x; echo; echo next",
    );
    let (result, lines) =
        stream_with(fx.spec(script), 1000, &CancellationToken::new(), all_lines).await;
    assert_eq!(
        lines,
        [
            StdoutLine {
                text: "x".repeat(1000),
                len: 300_000,
                cut: true
            },
            StdoutLine {
                text: "next".into(),
                len: 4,
                cut: false
            }
        ]
    );
    assert_eq!(ok(result).stdout.trimmed_len, 300_005);
}

#[tokio::test]
async fn a_consumer_that_takes_no_line_pauses_the_child() {
    let fx = Fixture::new();
    // 1.2 MB of lines: far more than a pipe and the reader hold.
    let script = fx.script("many", "yes line | head -n 200000; touch \"$1\"");
    let done = fx.path("done");
    let mut spec = fx.spec(script);
    spec.args = vec![done.clone().into_os_string()];
    let (result, (finished_early, lines)) =
        stream_with(spec, 1000, &CancellationToken::new(), |rx| {
            let done = done.clone();
            async move {
                sleep(Duration::from_millis(500)).await;
                let finished_early = done.exists();
                (finished_early, all_lines(rx).await)
            }
        })
        .await;
    assert!(
        !finished_early,
        "the child wrote everything to a consumer that read nothing"
    );
    assert_eq!(lines.len(), 200_000);
    assert!(lines.iter().all(|line| line.text == "line"));
    let output = ok(result);
    assert_eq!(output.stdout.trimmed_len, 200_000 * 5 - 1);
    assert!(done.exists());
}

#[tokio::test]
async fn a_larger_pipe_takes_what_the_child_writes_while_the_consumer_waits() {
    let max = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
        .ok()
        .and_then(|text| text.trim().parse::<usize>().ok());
    if max.is_none_or(|max| max < MIB) {
        return; // This system allows no 1 MiB pipe.
    }
    let fx = Fixture::new();
    // 750 kB of lines: too much for a default pipe, not for a 1 MiB one.
    let script = fx.script("many", "yes line | head -n 150000; touch \"$1\"");
    let done = fx.path("done");
    let mut spec = fx.spec(script);
    spec.args = vec![done.clone().into_os_string()];
    let (lines, rx) = stdout_lines(1000);
    let cancel = CancellationToken::new();
    let consume = async {
        sleep(Duration::from_millis(500)).await;
        let finished = done.exists();
        (finished, all_lines(rx).await.len())
    };
    let (result, (finished, count)) = tokio::join!(
        run_process_streaming(spec, lines.with_pipe_capacity(MIB), &cancel),
        consume
    );
    assert!(finished, "the child waited although the pipe had room");
    assert_eq!(count, 150_000);
    assert_eq!(ok(result).stdout.trimmed_len, 150_000 * 5 - 1);
}

#[tokio::test]
async fn a_slow_consumer_still_gets_every_line_the_child_wrote_before_exiting() {
    let fx = Fixture::new();
    // 30 kB: the pipe holds it all, so the child exits at once.
    let script = fx.script("quick", "yes line | head -n 6000");
    let started = StdInstant::now();
    let (result, lines) = stream_with(
        fx.spec(script),
        1000,
        &CancellationToken::new(),
        |rx| async {
            // Several times the drain after the exit.
            sleep(DRAIN_AFTER_EXIT * 3).await;
            all_lines(rx).await
        },
    )
    .await;
    assert!(started.elapsed() >= DRAIN_AFTER_EXIT * 3);
    assert_eq!(lines.len(), 6000);
    let output = ok(result);
    assert_eq!(
        (output.code, output.stdout.trimmed_len),
        (Some(0), 6000 * 5 - 1)
    );
}

#[tokio::test]
async fn a_consumer_that_leaves_early_stops_only_the_lines() {
    let fx = Fixture::new();
    let script = fx.script("many", "yes line | head -n 200000");
    let (result, first) = stream_with(
        fx.spec(script),
        1000,
        &CancellationToken::new(),
        |mut rx| async move { rx.recv().await },
    )
    .await;
    assert_eq!(first.map(|line| line.text), Some("line".into()));
    let output = ok(result);
    assert_eq!(
        (output.code, output.stdout.trimmed_len),
        (Some(0), 200_000 * 5 - 1)
    );
}

#[tokio::test]
async fn a_full_consumer_does_not_hold_off_a_timeout_or_a_cancel() {
    for cancelled in [false, true] {
        let fx = Fixture::new();
        let mut spec = fx.spec(fx.script("endless", "exec yes line"));
        spec.timeout = Duration::from_millis(if cancelled { 20_000 } else { 300 });
        let cancel = CancellationToken::new();
        let (result, (), took) = stream_timed(spec, 1000, &cancel, |rx| {
            let cancel = cancel.clone();
            async move {
                sleep(Duration::from_millis(300)).await;
                if cancelled {
                    cancel.cancel();
                }
                // Never reads: the reader waits on a full channel until the end.
                sleep(Duration::from_secs(3)).await;
                drop(rx);
            }
        })
        .await;
        let expected = if cancelled { "Cancelled" } else { "TimedOut" };
        let stopped = match &result {
            Err(ProcessError::Cancelled) => "Cancelled",
            Err(ProcessError::TimedOut { .. }) => "TimedOut",
            _ => "neither",
        };
        assert_eq!(stopped, expected, "{:?}", result.map(|_| ()));
        // The consumer holds its full channel for 3 s; the run does not wait for it.
        assert!(took < Duration::from_millis(1500), "{took:?}");
    }
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_not_found() {
    let fx = Fixture::new();
    let result = run(fx.spec(fx.path("no-such-cli"))).await;
    match result {
        Err(ProcessError::Spawn(e)) => assert_eq!(e.kind(), io::ErrorKind::NotFound),
        other => panic!("expected Spawn(NotFound), got {other:?}"),
    }
}

#[tokio::test]
async fn reads_a_file_with_the_bounded_reader_within_the_deadline() {
    let fx = Fixture::new();
    let seconds = |s| crate::deadline::Timeout::from_seconds(s).expect("valid timeout");
    let deadline = Deadline::starting_now(seconds(60.0), CancellationToken::new());
    let answer = fx.path("answer");
    std::fs::write(&answer, "\n  the answer \n").expect("write");
    let read = read_bounded_file(&answer, 100, &deadline)
        .await
        .expect("read");
    assert_eq!((read.text.as_str(), read.trimmed_len), ("the answer", 10));
    let big = fx.path("big");
    std::fs::write(&big, pattern(300_000)).expect("write");
    let read = read_bounded_file(&big, 1000, &deadline)
        .await
        .expect("read");
    assert_eq!((read.text.len(), read.trimmed_len), (1000, 300_000));
    let missing = read_bounded_file(&fx.path("missing"), 100, &deadline).await;
    assert!(
        matches!(&missing, Err(ReadStopped::Io(e)) if e.kind() == io::ErrorKind::NotFound),
        "{missing:?}"
    );
    // A FIFO in the answer's place is refused at once, never waited on.
    let fifo = fx.path("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let refused = tokio::time::timeout(
        Duration::from_secs(2),
        read_bounded_file(&fifo, 100, &deadline),
    )
    .await
    .expect("a FIFO does not block the read");
    assert!(matches!(refused, Err(ReadStopped::Io(_))), "{refused:?}");
    // An answer file that never ends (a sparse 64 GiB file) stops at the deadline.
    let sparse = fx.path("sparse");
    std::fs::File::create(&sparse)
        .and_then(|f| f.set_len(64 << 30))
        .expect("sparse file");
    let short = Deadline::starting_now(seconds(0.3), CancellationToken::new());
    let started = StdInstant::now();
    let stopped = read_bounded_file(&sparse, 1000, &short).await;
    assert!(
        matches!(
            stopped,
            Err(ReadStopped::Deadline(crate::deadline::Stop::TimedOut))
        ),
        "{stopped:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn takes_relative_path_entries_from_the_working_directory() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.path("bin")).expect("mkdir");
    let tool = fx.script("bin/tool", "exit 0");
    let cwd = std::env::current_dir().expect("cwd");
    // The fixture's folder, relative to the working directory cargo runs tests in.
    let up = "../".repeat(cwd.components().count() - 1);
    let bin = fx.path("bin");
    let relative = format!("{up}{}", bin.display().to_string().trim_start_matches('/'));
    let env = BTreeMap::from([("PATH".to_string(), format!("/no/such/dir:{relative}"))]);
    let found = find_executable("tool", &env).expect("found through the relative entry");
    assert!(found.is_absolute(), "{found:?}");
    assert_eq!(found.canonicalize().ok(), tool.canonicalize().ok());
}

#[test]
fn does_not_expand_a_tilde_in_path_as_exec_does_not() {
    // A tool under this process's home, named through `~/…`: exec would not find it there.
    let home = std::env::home_dir().expect("a home directory");
    let dir = tempfile::tempdir_in(&home).expect("a folder in the home directory");
    let tool = dir.path().join("tool");
    std::fs::write(&tool, "#!/bin/sh\nexit 0\n").expect("write");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let name = dir.path().file_name().expect("a name").to_string_lossy();
    let env = BTreeMap::from([("PATH".to_string(), format!("~/{name}"))]);
    assert_eq!(find_executable("tool", &env), None);
    let env = BTreeMap::from([("PATH".to_string(), dir.path().display().to_string())]);
    assert_eq!(find_executable("tool", &env), Some(tool));
}

#[test]
fn finds_executables_in_the_given_path_only() {
    let fx = Fixture::new();
    let first = fx.path("first");
    let second = fx.path("second");
    std::fs::create_dir_all(first.join("tool-dir")).expect("mkdir");
    std::fs::write(first.join("tool"), "not executable").expect("write");
    std::fs::create_dir_all(&second).expect("mkdir");
    let tool = fx.script("second/tool", "exit 0");
    let env = |path: String| BTreeMap::from([("PATH".to_string(), path)]);
    let path = format!(
        "relative::/no/such/dir:{}:{}",
        first.display(),
        second.display()
    );
    assert_eq!(find_executable("tool", &env(path.clone())), Some(tool));
    assert_eq!(find_executable("tool-dir", &env(path.clone())), None);
    assert_eq!(find_executable("missing", &env(path.clone())), None);
    assert_eq!(
        find_executable("second/tool", &env(fx.path("").display().to_string())),
        None
    );
    assert_eq!(find_executable("tool", &BTreeMap::new()), None);
    assert_eq!(
        find_executable("sh", &env("/usr/bin:/bin".into())).map(|p| p.is_absolute()),
        Some(true)
    );
}
