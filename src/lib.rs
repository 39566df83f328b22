#![deny(clippy::all)]
// napi registers the exports only outside `cfg(test)`, so a test build of the addon (clippy
// --all-targets) sees them unused; the addon is tested from JS (__test__/).
#![cfg_attr(test, allow(dead_code))]
//! The napi addon of `@phone-a-friend/relay`. It only converts: JS values to the core's types
//! (`relay_core`, crates/core), the core's results and failures to typed JS data. The public API
//! (option types, error classes, AbortSignal) is the TS wrapper in `lib/`.

mod call;
mod doctor;
mod dry_run;
mod failure;
mod invocation;
mod js_backend;
mod mcp;
mod program;
mod relay_all;
mod scope;
mod sessions;
mod usage;

use napi_derive::napi;

use napi::bindgen_prelude::Either;

use crate::failure::{outcome, NativeFailure};
use relay_core::env::Env;
use relay_core::git;
use relay_core::limits;

#[napi]
pub const DEFAULT_TIMEOUT_SECONDS: u32 = limits::DEFAULT_TIMEOUT_SECONDS;
#[napi]
pub const DEFAULT_IDLE_TIMEOUT_SECONDS: u32 = limits::DEFAULT_IDLE_TIMEOUT_SECONDS;
#[napi]
pub const DEFAULT_BACKEND: &str = limits::DEFAULT_BACKEND;
#[napi]
pub const DEFAULT_SANDBOX: &str = limits::DEFAULT_SANDBOX;
#[napi]
pub const BACKEND_ENV_VAR: &str = limits::BACKEND_ENV_VAR;
#[napi]
pub const MAX_RELAY_DEPTH: u32 = limits::MAX_RELAY_DEPTH;
#[napi]
pub const MAX_CONTEXT_FILE_BYTES: u32 = limits::MAX_CONTEXT_FILE_BYTES as u32;
#[napi]
pub const MAX_DIFF_BYTES: u32 = limits::MAX_DIFF_BYTES as u32;
#[napi]
pub const MAX_PROMPT_BYTES: u32 = limits::MAX_PROMPT_BYTES as u32;
#[napi]
pub const MAX_OUTPUT_BYTES: u32 = limits::MAX_OUTPUT_BYTES as u32;

/// Snapshotted on the JS thread when the call is made, so nothing reads the process's
/// environment from another thread.
#[napi(object)]
pub struct NativeCaller {
    /// The environment as `key=value` entries, each ended by NUL (a value never holds NUL, a key
    /// never holds `=`): from a worker, whose `process.env` is its own copy. Absent on the main
    /// thread, where `process.env` is the process's environment: it is read here, on the JS
    /// thread, far faster than JS can copy `process.env`.
    pub env: Option<String>,
    /// The depth of the JS backend making this call, when it is one (docs/CONTRACT.md §3, step 8).
    pub depth: Option<u32>,
    pub cwd: String,
}

/// Whether the calling JS thread is the process's main thread (its thread id is the process
/// id): there `process.env` is the process's environment, which native code can read itself.
/// Asked once per module instance; `node:worker_threads` would cost milliseconds to load.
#[napi]
pub fn on_process_main_thread() -> bool {
    #[cfg(target_os = "linux")]
    {
        // The system call, not glibc's gettid(): that wrapper is new in glibc 2.30, and the
        // linux-gnu addon loads on glibc 2.17 (docs/DEVELOPMENT.md, "Every target").
        // SAFETY: gettid takes no arguments and cannot fail.
        let thread = unsafe { libc::syscall(libc::SYS_gettid) };
        thread == libc::c_long::from(std::process::id())
    }
    // macOS thread ids are not pids: ask pthread whether this is the main thread.
    #[cfg(target_os = "macos")]
    // SAFETY: pthread_main_np takes no arguments and cannot fail.
    unsafe {
        libc::pthread_main_np() != 0
    }
    // Windows has no cheap test for the main thread: "no" only costs JS passing the
    // environment in.
    #[cfg(windows)]
    {
        false
    }
}

/// The call's environment snapshot. Must run on the JS thread: Node writes `process.env` there.
fn caller_env(entries: Option<&str>, depth: Option<u32>) -> Env {
    let mut env = match entries {
        Some(entries) => parse_env(entries),
        // What JS cannot see (a name or value that is not UTF-8) is left out or replaced, as
        // Node decodes it.
        None => relay_core::env::process(),
    };
    if let Some(depth) = depth {
        relay_core::depth::raise_to(&mut env, u64::from(depth));
    }
    env
}

fn parse_env(entries: &str) -> Env {
    relay_core::env::decode(entries)
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

/// Synchronous, as in the original: `main`, `master`, else `HEAD~1`; git is given
/// `timeout_seconds` (default 30), after which it counts as failed (`HEAD~1`).
#[napi]
pub fn detect_default_branch(
    repo_path: String,
    timeout_seconds: Option<f64>,
) -> Either<String, NativeFailure> {
    outcome(git::detect_default_branch_blocking(
        &repo_path,
        timeout_seconds,
    ))
}

/// Synchronous, as in the original: `git diff <base>...HEAD --`, trimmed; git is given
/// `timeout_seconds` (default 30), after which it is `ERR_GIT_DIFF`.
#[napi]
pub fn git_diff_base(
    repo_path: String,
    base: String,
    timeout_seconds: Option<f64>,
) -> Either<String, NativeFailure> {
    outcome(git::diff_against_base_blocking(
        &repo_path,
        &base,
        timeout_seconds,
    ))
}

/// A verdict envelope checked as the `parseVerdict` of upstream, the phone-a-friend v4.1.1 CLI,
/// does (docs/CONTRACT.md §13), written back as compact JSON (the wrapper parses it); `ERR_SCHEMA`
/// says what is wrong.
#[napi]
pub fn parse_verdict(text: String) -> Either<String, NativeFailure> {
    outcome(
        relay_core::verdict::parse(&text)
            .map(|verdict| verdict.to_json())
            .map_err(relay_core::errors::RelayError::from),
    )
}

/// Whether each built-in backend's CLI is on the PATH.
#[napi(object)]
pub struct InstalledBackends {
    pub codex: bool,
    pub gemini: bool,
    pub ollama: bool,
    pub claude: bool,
    pub opencode: bool,
    /// Its CLI is `agy`.
    pub antigravity: bool,
}

/// Synchronous: looks the CLIs up on this process's PATH.
#[napi]
pub fn check_backends() -> InstalledBackends {
    let env = caller_env(None, None);
    let installed = relay_core::backends::installed_clis(&env);
    let found = |name: &str| {
        installed
            .iter()
            .any(|&(cli, on_path)| cli == name && on_path)
    };
    InstalledBackends {
        codex: found("codex"),
        gemini: found("gemini"),
        ollama: found("ollama"),
        claude: found("claude"),
        opencode: found("opencode"),
        antigravity: found("antigravity"),
    }
}

/// Every environment variable a friend or the relay reads, each once
/// (`relay_core::backends::builtin::friend_environment`): what `install` tells a host to pass
/// the MCP server.
#[napi]
pub fn friend_environment() -> Vec<String> {
    relay_core::backends::builtin::friend_environment()
        .into_iter()
        .map(String::from)
        .collect()
}

/// `text` with the secrets the relay recognises masked (`crates/core/src/secrets.rs`, the one
/// function for it), for what the CLI shows that it read from elsewhere (a host's config).
#[napi]
pub fn mask_secrets(text: String) -> String {
    relay_core::secrets::mask_secrets(&text).into_owned()
}

/// The command line that starts the program `name`, looked up on the `PATH` of `env` (entries as
/// `NativeCaller.env`'s; absent: this process's) as a relay looks a CLI up: the program, then
/// the arguments that go before the caller's (an npm `.cmd` shim on Windows is the script it
/// runs). `null` when none is found; an error for a program that cannot be run without a
/// shell. For the CLI's `install`, which runs the hosts' own CLIs. Synchronous: a `PATH` walk.
#[napi]
pub fn program_command_line(
    name: String,
    env: Option<String>,
) -> napi::Result<Option<Vec<String>>> {
    let env = caller_env(env.as_deref(), None);
    let line = relay_core::subprocess::command_line(&name, &env).map_err(|error| {
        napi::Error::from_reason(relay_core::secrets::mask_secrets(&error.to_string()).into_owned())
    })?;
    Ok(line.map(|parts| {
        parts
            .into_iter()
            .map(|part| part.to_string_lossy().into_owned())
            .collect()
    }))
}

/// How the relay reaches a built-in backend.
#[napi(string_enum = "lowercase")]
pub enum BackendReach {
    /// Runs its CLI, found on PATH.
    Cli,
    /// Talks HTTP to its server.
    Server,
}

/// A built-in backend, as the Rust table has it.
#[napi(object, object_from_js = false)]
pub struct BuiltinBackend {
    pub name: String,
    /// The executable of its CLI (antigravity's is `agy`).
    pub executable: String,
    /// What it is, for people.
    pub what: String,
    pub reach: BackendReach,
    /// The npm package of its CLI, when it comes from npm.
    pub npm_package: Option<String>,
    /// How to get it: the command, or where to download it.
    pub install: String,
    /// The sandbox modes it accepts.
    pub sandboxes: Vec<String>,
    /// The version of its CLI the relay was checked against.
    pub verified_version: Option<String>,
    /// The version of its CLI whose documentation the relay was checked against, for a CLI
    /// never run here (antigravity).
    pub documented_version: Option<String>,
}

/// The built-in backends, in the order `doctor` lists them.
#[napi]
pub fn builtin_backends() -> Vec<BuiltinBackend> {
    use relay_core::backends::builtin::{Reach, BUILTINS};
    BUILTINS
        .iter()
        .map(|backend| BuiltinBackend {
            name: backend.name.into(),
            executable: backend.executable.into(),
            what: backend.what.into(),
            reach: match backend.reach {
                Reach::Cli => BackendReach::Cli,
                Reach::Server => BackendReach::Server,
            },
            npm_package: backend.npm_package.map(String::from),
            install: backend.install.into(),
            sandboxes: backend.sandboxes(),
            verified_version: backend.verified_version.map(String::from),
            documented_version: backend.documented_version.map(String::from),
        })
        .collect()
}

/// The Ollama server URL `OLLAMA_HOST` names, read as the Ollama CLI reads it (for `doctor`).
#[napi]
pub fn ollama_base_url(ollama_host: Option<String>) -> String {
    relay_core::backends::ollama_host::base_url(ollama_host.as_deref())
}

/// The runtime every call runs on: one worker thread, whatever the machine. napi's default has a
/// worker per core (16 threads idle in every Node process that loads the addon on a 16-core
/// machine); a relay's work there is waiting on pipes, sockets and timers, and the little CPU
/// work (envelopes, answers) is not worth a thread per core (BENCHMARKS.md, "Side by side with upstream").
#[napi_derive::module_init]
fn init_runtime() {
    // Without a runtime of our own napi builds its default one on first use, which may then
    // fail the same way and say so.
    if let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        napi::bindgen_prelude::create_custom_tokio_runtime(runtime);
    }
}
