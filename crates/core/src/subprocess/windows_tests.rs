//! The process runner on Windows, with real processes: the test executable itself, started
//! again as a helper ([`helper`]) that plays a CLI: exits with a code, copies stdin, starts a
//! grandchild that keeps beating, or writes its arguments down.

use super::*;
use std::time::Instant as StdInstant;

/// What the helper does, from the environment its runner gives it.
const MODE: &str = "RELAY_TEST_HELPER";
const FILE: &str = "RELAY_TEST_HELPER_FILE";

/// Not a test: the helper's body, run when the test executable is started by [`helper_spec`].
#[test]
fn helper() {
    let Ok(mode) = std::env::var(MODE) else {
        return;
    };
    let file = PathBuf::from(std::env::var_os(FILE).unwrap_or_default());
    match mode.as_str() {
        "exit-7" => std::process::exit(7),
        "copy-stdin" => {
            let mut input = Vec::new();
            io::Read::read_to_end(&mut io::stdin(), &mut input).expect("stdin");
            std::fs::write(&file, &input).expect("copy");
            eprintln!("read {}", input.len());
            std::process::exit(0)
        }
        "args" => {
            let args: Vec<String> = std::env::args().skip(1).collect();
            std::fs::write(&file, args.join("\n")).expect("args");
            std::process::exit(0)
        }
        // Beats (rewrites `file` with a growing count) until killed.
        "beat" => {
            for count in 0u64.. {
                let _ = std::fs::write(&file, count.to_string());
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        // Starts a beating grandchild, then sleeps (or exits at once: "tree-exit").
        "tree" | "tree-exit" => {
            let exe = std::env::current_exe().expect("exe");
            std::process::Command::new(exe)
                .args(helper_args())
                .env(MODE, "beat")
                .spawn()
                .expect("grandchild");
            if mode == "tree-exit" {
                println!("done");
                std::process::exit(0);
            }
            std::thread::sleep(Duration::from_secs(30));
            std::process::exit(0)
        }
        other => panic!("unknown helper mode {other}"),
    }
}

/// The harness's arguments that run [`helper`] alone, quietly.
fn helper_args() -> [&'static str; 4] {
    [
        "--exact",
        "subprocess::windows_tests::helper",
        "--nocapture",
        "-q",
    ]
}

struct Fixture {
    dir: tempfile::TempDir,
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

    /// The helper in `mode`, its file being `file`.
    fn helper_spec(&self, mode: &str, file: &Path) -> ProcessSpec {
        let mut env = crate::env::process();
        env.insert(MODE.into(), mode.into());
        env.insert(FILE.into(), file.display().to_string());
        ProcessSpec {
            program: std::env::current_exe().expect("exe"),
            args: helper_args().iter().map(OsString::from).collect(),
            cwd: self.dir.path().to_path_buf(),
            env,
            stdin: StdinSource::Null,
            timeout: Duration::from_secs(20),
            output_limit: 1 << 20,
            remove_on_stop: Vec::new(),
            progress: crate::progress::Progress::unwatched(),
        }
    }
}

/// An npm shim (cmd-shim 8) for `node_modules\\tool\\cli.js`.
const NPM_SHIM: &str = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\n\
         IF EXIST \"%dp0%\\node.exe\" (\r\n  SET \"_prog=%dp0%\\node.exe\"\r\n) ELSE (\r\n  SET \"_prog=node\"\r\n  SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\n\
         endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \"%dp0%\\node_modules\\tool\\cli.js\" %*\r\n";

async fn run(spec: ProcessSpec) -> Result<ProcessOutput, ProcessError> {
    run_process(spec, &CancellationToken::new()).await
}

/// Waits for the beating grandchild's first beat.
async fn first_beat(file: &Path) {
    for _ in 0..1000 {
        if std::fs::read_to_string(file).is_ok_and(|text| !text.is_empty()) {
            return;
        }
        sleep(Duration::from_millis(10)).await;
    }
    panic!("the grandchild never beat");
}

/// Whether the beats in `file` have stopped (the grandchild is dead), given time to stop.
async fn beats_stopped(file: &Path) -> bool {
    sleep(Duration::from_millis(300)).await;
    let before = std::fs::read_to_string(file).unwrap_or_default();
    sleep(Duration::from_millis(300)).await;
    let after = std::fs::read_to_string(file).unwrap_or_default();
    before == after
}

#[tokio::test]
async fn the_exit_code_comes_back() {
    let fx = Fixture::new();
    let output = run(fx.helper_spec("exit-7", &fx.path("unused")))
        .await
        .expect("ran");
    assert_eq!((output.code, output.signal), (Some(7), None));
}

#[tokio::test]
async fn stdin_is_delivered_whole() {
    let fx = Fixture::new();
    let copy = fx.path("copy");
    let mut spec = fx.helper_spec("copy-stdin", &copy);
    let input: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    spec.stdin = StdinSource::Bytes(input.clone());
    let output = run(spec).await.expect("ran");
    assert_eq!(output.code, Some(0));
    assert_eq!(output.stderr.text, format!("read {}", input.len()));
    assert!(
        std::fs::read(&copy).expect("copy") == input,
        "stdin arrived altered"
    );
}

#[tokio::test]
async fn a_timeout_kills_the_grandchild() {
    let fx = Fixture::new();
    let beats = fx.path("beats");
    let mut spec = fx.helper_spec("tree", &beats);
    // Long enough for the grandchild to start under wine on a loaded machine.
    spec.timeout = Duration::from_secs(8);
    let started = StdInstant::now();
    let result = run(spec).await;
    assert!(
        matches!(result, Err(ProcessError::TimedOut { .. })),
        "{result:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "{:?}",
        started.elapsed()
    );
    assert!(!std::fs::read_to_string(&beats)
        .unwrap_or_default()
        .is_empty());
    assert!(
        beats_stopped(&beats).await,
        "the grandchild outlived the timeout"
    );
}

#[tokio::test]
async fn a_cancel_kills_the_grandchild() {
    let fx = Fixture::new();
    let beats = fx.path("beats");
    let spec = fx.helper_spec("tree", &beats);
    let cancel = CancellationToken::new();
    let canceller = async {
        first_beat(&beats).await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(run_process(spec, &cancel), canceller);
    assert!(matches!(result, Err(ProcessError::Cancelled)), "{result:?}");
    assert!(
        beats_stopped(&beats).await,
        "the grandchild outlived the cancel"
    );
}

#[tokio::test]
async fn dropping_the_future_kills_the_grandchild() {
    let fx = Fixture::new();
    let beats = fx.path("beats");
    let spec = fx.helper_spec("tree", &beats);
    let cancel = CancellationToken::new();
    let gave_up = tokio::time::timeout(Duration::from_secs(20), async {
        tokio::select! {
            _ = run_process(spec, &cancel) => false,
            () = first_beat(&beats) => true,
        }
    })
    .await;
    assert_eq!(gave_up, Ok(true));
    assert!(
        beats_stopped(&beats).await,
        "the grandchild outlived the drop"
    );
}

#[tokio::test]
async fn what_the_child_left_running_dies_when_it_exits() {
    let fx = Fixture::new();
    let beats = fx.path("beats");
    let started = StdInstant::now();
    let output = run(fx.helper_spec("tree-exit", &beats)).await.expect("ran");
    assert_eq!(output.code, Some(0));
    assert!(
        output.stdout.text.ends_with("done"),
        "{:?}",
        output.stdout.text
    );
    // The grandchild held stdout: the run did not wait out the drain for it.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        beats_stopped(&beats).await,
        "the grandchild outlived its parent's exit"
    );
}

#[tokio::test]
async fn remove_on_stop_folders_are_removed_when_the_run_is_stopped() {
    let fx = Fixture::new();
    let beats = fx.path("beats");
    let folder = fx.path("answer");
    std::fs::create_dir(&folder).expect("mkdir");
    std::fs::write(folder.join("last-message.md"), "private").expect("write");
    let mut spec = fx.helper_spec("tree", &beats);
    spec.timeout = Duration::from_secs(2);
    spec.remove_on_stop = vec![folder.clone()];
    let result = run(spec).await;
    assert!(
        matches!(result, Err(ProcessError::TimedOut { .. })),
        "{result:?}"
    );
    assert!(!folder.exists(), "the folder outlived the stop");
}

#[tokio::test]
async fn an_npm_shim_runs_its_node_with_the_arguments_untouched() {
    let fx = Fixture::new();
    // The shim's own `node.exe` is the helper: it writes down the arguments it gets.
    let node = fx.path("node.exe");
    std::fs::copy(std::env::current_exe().expect("exe"), &node).expect("copy");
    let shim = fx.path("tool.cmd");
    std::fs::write(&shim, NPM_SHIM).expect("shim");
    let written = fx.path("args");
    let mut spec = fx.helper_spec("args", &written);
    spec.program = shim;
    // The script comes first, then what the caller passed, the harness's arguments among it.
    let tricky = "a & b | c ^ d %PATH% \"quoted\"";
    spec.args.push(tricky.into());
    let output = run(spec).await.expect("ran");
    assert_eq!(output.code, Some(0), "{:?}", output.stderr.text);
    let args = std::fs::read_to_string(&written).expect("args");
    let script = fx.path("node_modules\\tool\\cli.js");
    let mut expected = vec![script.display().to_string()];
    expected.extend(helper_args().iter().map(|arg| arg.to_string()));
    expected.push(tricky.into());
    assert_eq!(args, expected.join("\n"));
}

#[tokio::test]
async fn a_batch_file_that_is_no_shim_is_refused_by_name() {
    let fx = Fixture::new();
    let batch = fx.path("tool.cmd");
    std::fs::write(&batch, "@echo off\r\nnode \"%~dp0\\cli.js\" %*\r\n").expect("write");
    let mut spec = fx.helper_spec("exit-7", &fx.path("unused"));
    spec.program = batch.clone();
    match run(spec).await {
        Err(ProcessError::Spawn(e)) => {
            assert_eq!(e.kind(), io::ErrorKind::Unsupported);
            let message = e.to_string();
            assert!(
                message.starts_with(&format!("{} is a batch file", batch.display())),
                "{message}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A `PATHEXT` entry ending in a dot or a space (`.CMD.`) names the batch file as `tool.CMD.`:
/// judged by the name Windows opens, it is refused, never handed to `cmd.exe`.
#[tokio::test]
async fn a_batch_file_named_with_trailing_dots_or_spaces_is_still_a_batch_file() {
    let fx = Fixture::new();
    std::fs::write(
        fx.path("tool.CMD"),
        "@echo off\r\nnode \"%~dp0\\cli.js\" %*\r\n",
    )
    .expect("write");
    for written in ["tool.CMD.", "tool.CMD ", "tool.CMD. .", "tool.cmd.."] {
        let program = fx.path(written);
        let mut spec = fx.helper_spec("exit-7", &fx.path("unused"));
        spec.program = program.clone();
        match run(spec).await {
            Err(ProcessError::Spawn(e)) => {
                assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{written:?}");
                assert!(
                    e.to_string().contains("is a batch file"),
                    "{written:?}: {e}"
                );
            }
            other => panic!("{written:?}: expected a refusal, got {other:?}"),
        }
    }
}

#[test]
fn find_executable_finds_an_exe_through_pathext() {
    let fx = Fixture::new();
    std::fs::write(fx.path("tool.exe"), "MZ").expect("write");
    let env = BTreeMap::from([("PATH".to_string(), fx.dir.path().display().to_string())]);
    let found = find_executable("tool", &env).map(|path| path.file_name().map(|n| n.to_owned()));
    assert_eq!(found, Some(Some("tool.exe".into())));
    assert_eq!(find_executable("sub\\tool", &env), None);
}

/// Folders `first`, `second`, … of the fixture, made, joined as a `PATH`.
fn path_of(fx: &Fixture, folders: &[&str]) -> String {
    let dirs: Vec<PathBuf> = folders
        .iter()
        .map(|folder| {
            let dir = fx.path(folder);
            std::fs::create_dir_all(&dir).expect("mkdir");
            dir
        })
        .collect();
    std::env::join_paths(dirs)
        .expect("join")
        .into_string()
        .expect("utf-8")
}

/// The file name `find_executable` found, in lower case.
fn found_name(name: &str, env: &BTreeMap<String, String>) -> Option<String> {
    find_executable(name, env).map(|path| {
        path.file_name()
            .map(|n| n.to_string_lossy().to_lowercase())
            .unwrap_or_default()
    })
}

/// Windows never starts an extensionless file by name: one beside the npm shim is passed over
/// (the bare name used to be tried before `PATHEXT`'s endings), as `cmd` passes it over.
#[test]
fn an_extensionless_file_beside_a_shim_is_passed_over_for_the_shim() {
    let fx = Fixture::new();
    let env = BTreeMap::from([("PATH".to_string(), path_of(&fx, &["bin"]))]);
    std::fs::copy(std::env::current_exe().expect("exe"), fx.path("bin\\tool")).expect("copy");
    // Alone, it is not a program, and "not found" names it.
    assert_eq!(find_program("tool", &env), Err(vec![fx.path("bin\\tool")]));
    std::fs::write(fx.path("bin\\tool.cmd"), NPM_SHIM).expect("shim");
    assert_eq!(found_name("tool", &env).as_deref(), Some("tool.cmd"));
}

/// A `tool.js` earlier on the `PATH` (wine's and many machines' `PATHEXT` has `.JS`) is a document
/// for the script host, not a process: the `.exe` later on the `PATH` is the program, and with
/// none, "not found" says what was there.
#[test]
fn a_script_earlier_on_the_path_is_passed_over_for_the_program_after_it() {
    let pathext = std::env::var("PATHEXT").unwrap_or_default().to_uppercase();
    assert!(
        pathext.split(';').any(|ending| ending == ".JS"),
        "this test needs .JS in PATHEXT, as wine's default has it: {pathext}"
    );
    let fx = Fixture::new();
    let env = BTreeMap::from([("PATH".to_string(), path_of(&fx, &["first", "second"]))]);
    std::fs::write(fx.path("first\\tool.js"), "WScript.Echo('no')").expect("js");
    assert_eq!(found_name("tool", &env), None);
    assert_eq!(
        find_program("tool", &env),
        Err(vec![fx.path("first\\tool.js")])
    );
    std::fs::copy(
        std::env::current_exe().expect("exe"),
        fx.path("second\\tool.exe"),
    )
    .expect("copy");
    assert_eq!(
        find_executable("tool", &env),
        Some(fx.path("second\\tool.exe"))
    );
}

/// A shim without a `node.exe` of its own runs the first `node.exe` on the `PATH`, not the first
/// `node` of any ending: a `node.cmd` before it used to make the shim "need node.exe, found on no
/// PATH".
#[tokio::test]
async fn a_shim_runs_the_node_exe_on_the_path_past_a_node_cmd() {
    let fx = Fixture::new();
    let path = path_of(&fx, &["cmds", "node", "tool"]);
    std::fs::write(fx.path("cmds\\node.cmd"), "@echo off\r\necho not node\r\n").expect("cmd");
    std::fs::copy(
        std::env::current_exe().expect("exe"),
        fx.path("node\\node.exe"),
    )
    .expect("copy");
    let shim = fx.path("tool\\tool.cmd");
    std::fs::write(&shim, NPM_SHIM).expect("shim");
    let written = fx.path("args");
    let mut spec = fx.helper_spec("args", &written);
    spec.program = shim;
    spec.env.insert("PATH".into(), path);
    let output = run(spec).await.expect("ran");
    assert_eq!(output.code, Some(0), "{:?}", output.stderr.text);
    let args = std::fs::read_to_string(&written).expect("args");
    let script = fx.path("tool\\node_modules\\tool\\cli.js");
    assert!(args.starts_with(&script.display().to_string()), "{args}");
}
