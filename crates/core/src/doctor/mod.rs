//! `doctor`: which built-in backends can answer, written once for the CLI's `doctor` (through the
//! addon), the library's `doctor()` and `checkBackends()`, and the MCP `backends` tool
//! (docs/CLI.md, "doctor"). A CLI backend is ready when its CLI is on PATH, prints its version and
//! is signed in as far as a cheap offline check can tell ([`sign_in`]); a version outside the
//! verified range is said ([`crate::backends::version`]). Every process it starts goes through
//! the one process runner, under the supervisor, within the doctor's deadline.

pub mod sign_in;

use crate::progress::Progress;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::future::join_all;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backends::builtin::{self, Builtin, Reach};
use crate::backends::{ollama_host, version};
use crate::env::Env;
use crate::subprocess::{find_executable, run_process, ProcessError, ProcessOutput, ProcessSpec};

pub use sign_in::{SignIn, SignInState};

/// How long the Ollama server has to answer `GET /api/tags`.
const PROBE: Duration = Duration::from_secs(3);
/// How long all of the doctor's checks may take together (each CLI's checks run at once).
/// A CLI starting under load (gemini is a large Node bundle) can take seconds.
pub const DOCTOR_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes kept of what a check's process prints: a version line or a short status.
const CHECK_OUTPUT: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DoctorReport {
    pub backends: Vec<BackendReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackendReport {
    pub name: String,
    /// A relay to it can be expected to run: a CLI backend when its CLI is on PATH, answers
    /// `--version` and is not known to be signed out; ollama when its server answers.
    pub ready: bool,
    /// Its CLI is on PATH (ollama needs only its server).
    pub found: bool,
    /// Where its CLI is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The version its CLI printed (`<cli> --version`, the version word of its last line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The version the relay was verified with (the end-to-end tests' devDependency).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified_version: Option<String>,
    /// Said when the installed version is outside the verified range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<String>,
    /// Said of a backend whose CLI was never run here: what it was checked against instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documented: Option<String>,
    /// Whether its CLI is signed in, as far as a cheap offline check tells.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sign_in: Option<SignIn>,
    /// What went wrong checking it (a `--version` that failed or timed out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// How to get it, when it is not found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install: Option<String>,
    /// ollama: the server probed (from OLLAMA_HOST).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// ollama: the model a relay would ask for (the caller's, else OLLAMA_MODEL), when one is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// ollama: the models the server has, when it said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<String>>,
}

impl BackendReport {
    fn named(backend: &Builtin) -> BackendReport {
        BackendReport {
            name: backend.name.into(),
            ready: false,
            found: false,
            path: None,
            version: None,
            verified_version: backend.verified_version.map(String::from),
            drift: None,
            documented: documented(backend),
            sign_in: None,
            problem: None,
            install: None,
            host: None,
            model: None,
            models: None,
        }
    }
}

/// What `backend` was checked against when its CLI was not (docs/BACKENDS.md, "antigravity").
fn documented(backend: &Builtin) -> Option<String> {
    let version = backend.documented_version?;
    Some(format!(
        "not verified against a real {cli}: checked against the documentation of {cli} {version} \
         and upstream phone-a-friend's code (docs/BACKENDS.md)",
        cli = backend.executable
    ))
}

impl BackendReport {
    /// The report with the secrets a CLI may have printed (a key in its status or version line)
    /// masked: every text in it comes from a process, a file or the environment.
    fn masked(self) -> BackendReport {
        let mask = |text: String| crate::secrets::mask_secrets(&text).into_owned();
        let mask_some = |text: Option<String>| text.map(mask);
        BackendReport {
            path: mask_some(self.path),
            version: mask_some(self.version),
            drift: mask_some(self.drift),
            sign_in: self.sign_in.map(|sign_in| SignIn {
                how: mask_some(sign_in.how),
                hint: mask_some(sign_in.hint),
                ..sign_in
            }),
            problem: mask_some(self.problem),
            host: mask_some(self.host),
            model: mask_some(self.model),
            models: self
                .models
                .map(|models| models.into_iter().map(mask).collect()),
            ..self
        }
    }
}

/// What the checks share: the caller's environment, a folder to run in, the deadline, and the
/// token that stops them (the CLI's Ctrl-C, an MCP cancellation).
pub struct Checks<'a> {
    pub env: &'a Env,
    pub cwd: &'a Path,
    until: Instant,
    pub cancel: &'a CancellationToken,
}

impl<'a> Checks<'a> {
    pub fn new(env: &'a Env, cwd: &'a Path, cancel: &'a CancellationToken) -> Checks<'a> {
        Checks {
            env,
            cwd,
            until: Instant::now() + DOCTOR_TIMEOUT,
            cancel,
        }
    }

    /// Runs `program args` with stdin empty, the caller's environment and what is left of the
    /// deadline.
    pub async fn run(&self, program: &Path, args: &[&str]) -> Result<ProcessOutput, ProcessError> {
        let spec = ProcessSpec {
            program: program.to_path_buf(),
            args: args.iter().map(Into::into).collect(),
            cwd: self.cwd.to_path_buf(),
            env: self.env.clone(),
            stdin: crate::subprocess::StdinSource::Null,
            timeout: self.until.saturating_duration_since(Instant::now()),
            output_limit: CHECK_OUTPUT,
            remove_on_stop: Vec::new(),
            progress: Progress::unwatched(),
        };
        run_process(spec, self.cancel).await
    }
}

/// Every built-in backend, in the table's order; `model` is the one a relay to ollama would ask
/// for (else OLLAMA_MODEL). The checks run at once; the whole takes at most [`DOCTOR_TIMEOUT`].
pub async fn report(
    env: &Env,
    cwd: &Path,
    model: Option<&str>,
    cancel: &CancellationToken,
) -> DoctorReport {
    let checks = Checks::new(env, cwd, cancel);
    let backends = join_all(builtin::BUILTINS.iter().map(|backend| {
        let checks = &checks;
        async move {
            match backend.reach {
                Reach::Cli => cli(backend, checks).await,
                Reach::Server => server(backend, checks, model).await,
            }
        }
    }))
    .await;
    DoctorReport {
        backends: backends.into_iter().map(BackendReport::masked).collect(),
    }
}

/// The last line of what a check printed, its stdout else its stderr.
fn last_line(output: &ProcessOutput) -> Option<&str> {
    [&output.stdout.text, &output.stderr.text]
        .into_iter()
        .find_map(|text| text.lines().map(str::trim).rfind(|line| !line.is_empty()))
}

/// Why a check's process gave no answer.
pub(crate) fn stopped(command: &str, error: &ProcessError) -> String {
    match error {
        ProcessError::TimedOut { .. } | ProcessError::Stalled { .. } => format!(
            "`{command}` did not answer within {}s",
            DOCTOR_TIMEOUT.as_secs()
        ),
        ProcessError::Cancelled => format!("`{command}` was stopped"),
        other => format!("`{command}` could not be run: {other}"),
    }
}

async fn cli(backend: &Builtin, checks: &Checks<'_>) -> BackendReport {
    let mut report = BackendReport::named(backend);
    let Some(program) = find_executable(backend.executable, checks.env) else {
        report.install = Some(backend.install.into());
        return report;
    };
    report.found = true;
    report.path = Some(program.to_string_lossy().into_owned());
    let command = format!("{} --version", backend.executable);
    let (version, sign_in) = tokio::join!(
        checks.run(&program, &["--version"]),
        sign_in::check(backend, &program, checks)
    );
    match version {
        Ok(output) if output.code == Some(0) => {
            let line = last_line(&output).unwrap_or_default();
            match version::parse(line) {
                Some(installed) => {
                    report.drift = version::drift(backend, &installed);
                    report.version = Some(installed.to_string());
                }
                None if line.is_empty() => {
                    report.problem = Some(format!("`{command}` printed nothing"))
                }
                None => report.problem = Some(format!("`{command}` printed no version: {line}")),
            }
        }
        Ok(output) => {
            let how = match (output.code, output.signal) {
                (_, Some(signal)) => format!("killed by signal {signal}"),
                (Some(code), None) => format!("exit code {code}"),
                (None, None) => "no exit status".to_string(),
            };
            report.problem = Some(match last_line(&output) {
                Some(words) => format!("`{command}` failed ({how}): {words}"),
                None => format!("`{command}` failed ({how}) with no output"),
            });
        }
        Err(error) => report.problem = Some(stopped(&command, &error)),
    }
    report.ready = report.problem.is_none()
        && sign_in
            .as_ref()
            .is_none_or(|sign_in| sign_in.state != SignInState::NotSignedIn);
    report.sign_in = sign_in;
    report
}

#[derive(Deserialize)]
struct Tags {
    models: Vec<Tag>,
}

#[derive(Deserialize)]
struct Tag {
    name: String,
}

/// `Some(models)` when a server answers `GET /api/tags` (the list, when it gave one).
async fn probe_ollama(host: &str, cancel: &CancellationToken) -> Option<Option<Vec<String>>> {
    let client = reqwest::Client::builder().timeout(PROBE).build().ok()?;
    let probe = async {
        let response = client.get(format!("{host}/api/tags")).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let tags = response.json::<Tags>().await.ok();
        Some(tags.map(|tags| tags.models.into_iter().map(|tag| tag.name).collect()))
    };
    tokio::select! {
        () = cancel.cancelled() => None,
        probed = probe => probed,
    }
}

/// Ollama: ready when its server answers, found or not.
async fn server(backend: &Builtin, checks: &Checks<'_>, model: Option<&str>) -> BackendReport {
    let ollama_host = crate::env::var(checks.env, "OLLAMA_HOST");
    let probed = probe_ollama(&ollama_host::request_url(ollama_host), checks.cancel).await;
    let mut report = BackendReport::named(backend);
    let path: Option<PathBuf> = find_executable(backend.executable, checks.env);
    report.found = path.is_some();
    report.path = path.map(|path| path.to_string_lossy().into_owned());
    report.ready = probed.is_some();
    report.install = (!report.ready && !report.found).then(|| backend.install.into());
    report.models = probed.flatten();
    report.model = model
        .filter(|m| !m.is_empty())
        .map(String::from)
        .or_else(|| {
            crate::env::var(checks.env, "OLLAMA_MODEL")
                .filter(|m| !m.is_empty())
                .map(String::from)
        });
    report.host = Some(ollama_host::shown_url(ollama_host));
    report
}
