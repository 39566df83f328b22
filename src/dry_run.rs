//! `dryRun` results as JS objects; the wrapper shapes them into the public `DryRun` type.

use napi_derive::napi;

use relay_core::dry_run::{Action, DryRun};
use relay_core::fit::{Coverage, Status};
use relay_core::git::DiffSource;

/// What a dry run would do.
#[napi(string_enum = "lowercase")]
pub enum DryRunKind {
    /// Run a command (`command`).
    Command,
    /// Send an HTTP request (`request`).
    Http,
    /// Call a JS backend's `run()`.
    Run,
    /// Call a JS backend's `review()`.
    Review,
}

#[napi(object, object_from_js = false)]
pub struct NativeDryRun {
    pub backend: String,
    pub repo_path: String,
    pub sandbox: String,
    pub model: Option<String>,
    pub timeout_seconds: f64,
    pub base: Option<String>,
    pub envelope: Option<String>,
    /// The envelope's limit the call was held to.
    pub max_prompt_bytes: u32,
    pub kind: DryRunKind,
    pub command: Option<NativeDryRunCommand>,
    pub request: Option<NativeDryRunRequest>,
    /// `[name, value]` pairs, sorted by name.
    pub env_set: Vec<Vec<String>>,
    pub env_removed: Vec<String>,
    /// Which diff the envelope holds, when the call asked for one.
    pub diff: Option<NativeDryRunDiff>,
    /// How a diff that did not fit whole was fitted (`fit`), file by file.
    pub coverage: Option<Vec<NativeCoverage>>,
}

/// How a fitted diff holds a changed file.
#[napi(string_enum = "kebab-case")]
pub enum CoverageStatus {
    Whole,
    Cut,
    LeftOut,
}

/// A changed file of a fitted diff (docs/CONTRACT.md §6a).
#[napi(object, object_from_js = false)]
pub struct NativeCoverage {
    pub path: String,
    pub status: CoverageStatus,
    /// Its section of the diff, in bytes.
    pub bytes: f64,
    /// How much of that the envelope holds.
    pub included_bytes: f64,
    /// Why it is cut or left out.
    pub reason: Option<String>,
}

impl From<Coverage> for NativeCoverage {
    fn from(file: Coverage) -> Self {
        NativeCoverage {
            path: file.path,
            status: match file.status {
                Status::Whole => CoverageStatus::Whole,
                Status::Cut => CoverageStatus::Cut,
                Status::LeftOut => CoverageStatus::LeftOut,
            },
            // Sizes of at most a few hundred MB: exact as f64.
            bytes: file.bytes as f64,
            included_bytes: file.included_bytes as f64,
            reason: file.reason,
        }
    }
}

#[napi(object, object_from_js = false)]
pub struct NativeDryRunDiff {
    /// `uncommitted`, `last-commit` or `none`.
    pub source: String,
    /// Which diff it is and, unless it is the uncommitted changes, why.
    pub description: String,
}

impl From<DiffSource> for NativeDryRunDiff {
    fn from(source: DiffSource) -> Self {
        let name = match source {
            DiffSource::Uncommitted => "uncommitted",
            DiffSource::LastCommit => "last-commit",
            DiffSource::Unavailable | DiffSource::Nothing => "none",
        };
        NativeDryRunDiff {
            source: name.to_string(),
            description: source.described().to_string(),
        }
    }
}

#[napi(object, object_from_js = false)]
pub struct NativeDryRunCommand {
    pub name: String,
    pub program: Option<String>,
    pub install_hint: String,
    pub args: Vec<String>,
    pub command_line: String,
    pub cwd: String,
    pub envelope_on_stdin: bool,
}

#[napi(object, object_from_js = false)]
pub struct NativeDryRunRequest {
    pub method: String,
    pub url: String,
    pub body: String,
}

impl From<DryRun> for NativeDryRun {
    fn from(dry_run: DryRun) -> Self {
        let (kind, command, request) = match dry_run.action {
            Action::Command {
                name,
                program,
                install_hint,
                args,
                command_line,
                cwd,
                envelope_on_stdin,
            } => (
                DryRunKind::Command,
                Some(NativeDryRunCommand {
                    name,
                    program,
                    install_hint,
                    args,
                    command_line,
                    cwd,
                    envelope_on_stdin,
                }),
                None,
            ),
            Action::Http { method, url, body } => (
                DryRunKind::Http,
                None,
                Some(NativeDryRunRequest { method, url, body }),
            ),
            Action::JsRun => (DryRunKind::Run, None, None),
            Action::JsReview => (DryRunKind::Review, None, None),
        };
        NativeDryRun {
            backend: dry_run.backend,
            repo_path: dry_run.repo_path,
            sandbox: dry_run.sandbox,
            model: dry_run.model,
            timeout_seconds: dry_run.timeout_seconds,
            base: dry_run.base,
            envelope: dry_run.envelope,
            // At most the contract's 500,000.
            max_prompt_bytes: u32::try_from(dry_run.max_prompt_bytes).unwrap_or(u32::MAX),
            kind,
            command,
            request,
            env_set: dry_run
                .env
                .set
                .into_iter()
                .map(|(name, value)| vec![name, value])
                .collect(),
            env_removed: dry_run.env.removed,
            diff: dry_run.diff.map(NativeDryRunDiff::from),
            coverage: dry_run
                .coverage
                .map(|files| files.into_iter().map(NativeCoverage::from).collect()),
        }
    }
}
