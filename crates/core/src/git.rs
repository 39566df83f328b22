//! The git helpers (docs/CONTRACT.md §5). git runs through the process runner
//! ([`crate::subprocess::run_child`]), without the supervisor: never through a shell, in its own
//! process group, bounded by the call's deadline: killed (the whole group) and reaped when the
//! deadline passes or the call is cancelled or dropped. Its output is read through a bounded
//! buffer, so a diff of any size ends in an exact `ERR_TOO_LARGE`.
//!
//! A repository's own configuration must not run programs (relaying an untrusted checkout would
//! execute it), so every run neutralises what could: see [`NEUTRAL_OPTIONS`], [`DIFF_OPTIONS`],
//! [`filter_overrides`] and `GIT_NO_LAZY_FETCH`.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::future::Future;
use std::io;

use tokio_util::sync::CancellationToken;

use crate::bounded_text::{BoundedText, Measured};
use crate::deadline::{Deadline, Stop, Timeout};
use crate::env::Env;
use crate::errors::{RelayError, Subject};
use crate::fit::Fitted;
use crate::limits::{GIT_HELPER_TIMEOUT_SECONDS, MAX_DIFF_BYTES};
use crate::subprocess::{run_child, Launch, ProcessError, Sink, StdinSource, Supervision};

#[path = "git_sections.rs"]
mod sections;

/// How much of git's stderr is kept for an error message.
const STDERR_LIMIT: usize = 64 * 1024;
/// How much of the list of filter settings is read; a config that defines more is refused.
const FILTER_NAMES_LIMIT: usize = 64 * 1024;

/// Options for every git run: no pager, no fsmonitor program (`core.fsmonitor` may name one),
/// no hooks (`post-index-change` runs when a command writes the index).
const NEUTRAL_OPTIONS: &[&str] = &[
    "--no-pager",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
];
/// Options for every diff: no `diff.external` / `GIT_EXTERNAL_DIFF` / `diff.<driver>.command`,
/// no `diff.<driver>.textconv`. Nor does git look inside submodules: finding a submodule's
/// modified content runs `git status` in it, and `diff.submodule=diff` runs `git diff` in it,
/// each with the submodule's own config (its filters, drivers, fsmonitor), which the overrides
/// here do not cover. A changed submodule commit still shows, as `Subproject commit <id>`.
const DIFF_OPTIONS: &[&str] = &[
    "--no-ext-diff",
    "--no-textconv",
    "--ignore-submodules=dirty",
    "--submodule=short",
];
/// Environment variables `--config-env` reads the overriding values from: `-c key=value` splits
/// at the first `=`, so it cannot name a driver whose name holds one; `--config-env` can.
const EMPTY_VAR: &str = "PHONE_A_FRIEND_GIT_EMPTY";
const FALSE_VAR: &str = "PHONE_A_FRIEND_GIT_FALSE";
/// Lists the filter settings with their scope, NUL-separated; runs no program.
const FILTER_LOOKUP: &[&str] = &[
    "config",
    "--show-scope",
    "--null",
    "--name-only",
    "--get-regexp",
    "^filter\\.",
];

/// The environment git runs with: the caller's snapshot, or the process's own.
#[derive(Debug, Clone, Copy)]
pub enum GitEnv<'a> {
    Inherit,
    Exactly(&'a Env),
}

/// Why a git helper gave no result.
#[derive(Debug, Clone, PartialEq)]
pub enum GitError {
    /// A coded error: a diff over the limit, git's own failure where it counts, or git that could
    /// not be started for want of a resource.
    Relay(RelayError),
    /// The deadline passed or the call was cancelled while git ran; git was killed.
    Stopped(Stop),
}

impl From<RelayError> for GitError {
    fn from(err: RelayError) -> Self {
        GitError::Relay(err)
    }
}

/// Why one git run gave no output.
#[derive(Debug)]
enum RunError {
    /// git could not be run (not installed, not executable): a git failure like any other.
    NotRun,
    /// git could not be started for want of a resource (EMFILE, ENFILE, EAGAIN, ENOMEM): not a
    /// git failure, the caller must hear of it.
    Resource(io::Error),
    Stopped(Stop),
    /// git ran, and what it gave is refused (a diff over the limit).
    Refused(RelayError),
}

impl RunError {
    /// The error a run of git that gave no output is.
    fn from_process(e: ProcessError) -> RunError {
        match e {
            ProcessError::Spawn(e) => RunError::from_spawn(e),
            ProcessError::TimedOut { .. } | ProcessError::Stalled { .. } => {
                RunError::Stopped(Stop::TimedOut)
            }
            ProcessError::Cancelled => RunError::Stopped(Stop::Cancelled),
            // git's pipes or its exit could not be read: a git failure like any other.
            ProcessError::Io(_) | ProcessError::Supervisor(_) => RunError::NotRun,
        }
    }

    /// The error a failure to start git is.
    fn from_spawn(e: io::Error) -> RunError {
        if crate::descriptors::out_of_resources(&e) {
            RunError::Resource(e)
        } else {
            RunError::NotRun
        }
    }
}

/// `ERR_GIT_DIFF` for git that could not be started: "could not run git: <the OS's words>".
fn resource_error(base: &str, e: &io::Error) -> RelayError {
    RelayError::GitDiff {
        base: base.to_string(),
        detail: format!("could not run git: {e}"),
    }
}

struct GitOutput<T> {
    success: bool,
    code: Option<i32>,
    stdout: T,
    stderr: Measured,
}

/// Raw bytes, up to a limit (filter names are bytes: a lossy decoding would miss a driver).
struct RawBytes {
    kept: Vec<u8>,
    limit: usize,
    complete: bool,
}

impl RawBytes {
    fn new(limit: usize) -> Self {
        RawBytes {
            kept: Vec::new(),
            limit,
            complete: true,
        }
    }
}

impl Sink for RawBytes {
    type Output = Option<Vec<u8>>;
    fn push(&mut self, bytes: &[u8]) {
        let room = self.limit - self.kept.len();
        if bytes.len() > room {
            self.complete = false;
        }
        self.kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
    /// `None` when the output did not fit.
    fn finish(self) -> Option<Vec<u8>> {
        self.complete.then_some(self.kept)
    }
}

/// One git run: `git <neutral options> <extra> -C <repo> <args>`, stdin null, stdout into
/// `stdout`, stderr kept up to [`STDERR_LIMIT`], bounded by `deadline`; through the process
/// runner, without the supervisor (git must stay cheap), killed with its group at the deadline,
/// on cancel or drop, and when the host dies.
async fn run_git<S: Sink>(
    repo: &str,
    env: GitEnv<'_>,
    extra: &[OsString],
    args: &[&str],
    stdout: S,
    deadline: &Deadline,
) -> Result<GitOutput<S::Output>, RunError> {
    let mut all: Vec<OsString> = NEUTRAL_OPTIONS.iter().map(OsString::from).collect();
    all.extend_from_slice(extra);
    all.extend([OsString::from("-C"), OsString::from(repo)]);
    all.extend(args.iter().map(OsString::from));
    let launch = Launch {
        program: OsStr::new("git"),
        args: &all,
        cwd: None,
        env: match env {
            GitEnv::Inherit => None,
            GitEnv::Exactly(vars) => Some(std::borrow::Cow::Borrowed(vars)),
        },
        progress: crate::progress::Progress::unwatched(),
        extra_env: &[
            // A partial clone fetches missing objects from its promisor remote on demand,
            // running whatever the repository's config says (`core.sshCommand`, an `ext::`
            // URL...).
            ("GIT_NO_LAZY_FETCH", "1"),
            (EMPTY_VAR, ""),
            (FALSE_VAR, "false"),
        ],
        stdin: StdinSource::Null,
        supervision: Supervision::Unsupervised,
    };
    let until = tokio::time::Instant::now() + deadline.remaining();
    let cancel = deadline.cancel_token();
    let done = run_child(launch, stdout, STDERR_LIMIT, None, until, cancel)
        .await
        .map_err(RunError::from_process)?;
    Ok(GitOutput {
        success: done.status.success(),
        code: done.status.code(),
        stdout: done.stdout,
        stderr: done.stderr,
    })
}

/// `--config-env` options that empty the `clean`, `smudge` and `process` commands of every
/// filter driver the repository's config (or the caller's `-c` / `GIT_CONFIG_*`) defines, and
/// make it not `required` (a required filter without a command makes git fail). Drivers from
/// the system and global config are the user's own (git-lfs) and stay. `None` when they cannot
/// all be emptied: the lookup failed, the config defines more than can be listed, or (Windows)
/// a driver's name is not UTF-8.
async fn filter_overrides(
    repo: &str,
    env: GitEnv<'_>,
    deadline: &Deadline,
) -> Result<Option<Vec<OsString>>, RunError> {
    let lookup = run_git(
        repo,
        env,
        &[],
        FILTER_LOOKUP,
        RawBytes::new(FILTER_NAMES_LIMIT),
        deadline,
    )
    .await?;
    Ok(match (lookup.code, lookup.stdout) {
        // 1: no such setting.
        (Some(1), _) => Some(Vec::new()),
        (Some(0), Some(listing)) => overrides_for(&listing),
        _ => None,
    })
}

/// The overrides for a `--show-scope --null --name-only` listing: `scope\0name\0...`; `None`
/// when a driver's name cannot be an argument (Windows: not UTF-8), so it cannot be emptied.
fn overrides_for(listing: &[u8]) -> Option<Vec<OsString>> {
    let mut fields = listing.split(|&b| b == 0);
    let mut drivers = BTreeSet::new();
    while let (Some(scope), Some(name)) = (fields.next(), fields.next()) {
        if scope == b"system" || scope == b"global" {
            continue;
        }
        // `filter.<driver>.<key>`; the driver name may itself hold dots.
        let Some(rest) = name.strip_prefix(b"filter.") else {
            continue;
        };
        if let Some(dot) = rest.iter().rposition(|&b| b == b'.') {
            drivers.insert(rest[..dot].to_vec());
        }
    }
    let mut options = Vec::new();
    for driver in drivers {
        for (key, var) in [
            ("clean", EMPTY_VAR),
            ("smudge", EMPTY_VAR),
            ("process", EMPTY_VAR),
            ("required", FALSE_VAR),
        ] {
            let mut option = b"--config-env=filter.".to_vec();
            option.extend_from_slice(&driver);
            option.extend_from_slice(format!(".{key}={var}").as_bytes());
            options.push(argument(option)?);
        }
    }
    Some(options)
}

/// `bytes` as a command-line argument, if the OS's arguments can hold them.
fn argument(bytes: Vec<u8>) -> Option<OsString> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        Some(OsString::from_vec(bytes))
    }
    #[cfg(windows)]
    {
        String::from_utf8(bytes).ok().map(OsString::from)
    }
}

/// `git diff <args>` with every program the config could run neutralised.
async fn run_diff(
    repo: &str,
    env: GitEnv<'_>,
    filters: &[OsString],
    args: &[&str],
    deadline: &Deadline,
) -> Result<GitOutput<Measured>, RunError> {
    let mut full = vec!["diff"];
    full.extend_from_slice(DIFF_OPTIONS);
    full.extend_from_slice(args);
    let stdout = BoundedText::new(MAX_DIFF_BYTES);
    run_git(repo, env, filters, &full, stdout, deadline).await
}

/// Which diff `relay({ includeDiff })` took, for its warning and its dry run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffSource {
    /// `git diff HEAD`: the uncommitted changes to tracked files.
    Uncommitted,
    /// No uncommitted change to a tracked file: the last commit's (`git diff HEAD~1 HEAD`).
    LastCommit,
    /// None: `git diff HEAD` failed (not a git repository, no commit yet, or no git).
    Unavailable,
    /// None: no uncommitted change to a tracked file, and no last commit to show.
    Nothing,
}

impl DiffSource {
    /// Which diff it is and, unless it is the uncommitted changes, why.
    pub fn described(self) -> &'static str {
        match self {
            DiffSource::Uncommitted => "the uncommitted changes (git diff HEAD)",
            DiffSource::LastCommit => {
                "the last commit's diff (git diff HEAD~1 HEAD): no tracked file has uncommitted \
                 changes (untracked files are never included)"
            }
            DiffSource::Unavailable => {
                "no diff: git diff HEAD failed (not a git repository, no commit yet, or no git)"
            }
            DiffSource::Nothing => {
                "no diff: no tracked file has uncommitted changes (untracked files are never \
                 included) and there is no last commit to show"
            }
        }
    }

    /// The warning of a call that asked for the diff and got another than the uncommitted
    /// changes: the contract's fallbacks, said rather than silent.
    pub fn warning(self) -> Option<String> {
        (self != DiffSource::Uncommitted).then(|| {
            format!(
                "[phone-a-friend] includeDiff: the envelope holds {}",
                self.described()
            )
        })
    }
}

/// What [`diff_for_relay`] found: the diff's text (empty for none) and which one it is.
#[derive(Debug, Clone, PartialEq)]
pub struct RelayDiff {
    pub text: String,
    pub source: DiffSource,
    /// How the diff was fitted to its budget, when it did not fit whole (its text is `text`).
    pub fitted: Option<Fitted>,
}

/// A diff's text, and how it was fitted when it was.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DiffText {
    pub text: String,
    pub fitted: Option<Fitted>,
}

impl DiffText {
    /// A diff over the limit, fitted: its text moves out of the fit.
    fn of(mut fitted: Fitted) -> DiffText {
        DiffText {
            text: std::mem::take(&mut fitted.text),
            fitted: Some(fitted),
        }
    }
}

/// `git diff` for `relay({ includeDiff })`: uncommitted changes, else the last commit; a git
/// failure counts as no diff, a diff over the limit does not, nor does git that cannot start
/// for want of a resource.
pub async fn diff_for_relay(
    repo: &str,
    env: GitEnv<'_>,
    fit: Option<usize>,
    deadline: &Deadline,
) -> Result<RelayDiff, GitError> {
    let none = |source| RelayDiff {
        text: String::new(),
        source,
        fitted: None,
    };
    let diff = |found: DiffText, source| RelayDiff {
        text: found.text,
        source,
        fitted: found.fitted,
    };
    let filters = match filter_overrides(repo, env, deadline).await {
        Ok(Some(filters)) => filters,
        Ok(None) => return Ok(none(DiffSource::Unavailable)),
        Err(e) => return no_diff("HEAD", e).map(|_| none(DiffSource::Unavailable)),
    };
    let diffs = Diffs {
        repo,
        env,
        filters: &filters,
        fit,
    };
    match diffs.try_diff(&["HEAD", "--"], "HEAD", deadline).await? {
        None => return Ok(none(DiffSource::Unavailable)),
        Some(found) if !found.text.is_empty() => return Ok(diff(found, DiffSource::Uncommitted)),
        Some(_) => {}
    }
    let args = ["HEAD~1", "HEAD", "--"];
    match diffs.try_diff(&args, "HEAD~1", deadline).await? {
        Some(found) if !found.text.is_empty() => Ok(diff(found, DiffSource::LastCommit)),
        _ => Ok(none(DiffSource::Nothing)),
    }
}

/// The diffs of one repository: how git runs there, and the budget to fit a diff over the limit
/// to (`None`: such a diff is refused, as the contract says without `fit`).
struct Diffs<'a> {
    repo: &'a str,
    env: GitEnv<'a>,
    filters: &'a [OsString],
    fit: Option<usize>,
}

impl Diffs<'_> {
    /// A diff's text, `None` when git failed; one over the limit is fitted when asked.
    async fn try_diff(
        &self,
        args: &[&str],
        base: &str,
        deadline: &Deadline,
    ) -> Result<Option<DiffText>, GitError> {
        match self.diff(args, deadline).await {
            Ok(found) => Ok(found),
            Err(e) => no_diff(base, e).map(|()| None),
        }
    }

    async fn diff(&self, args: &[&str], deadline: &Deadline) -> Result<Option<DiffText>, RunError> {
        let Diffs {
            repo,
            env,
            filters,
            fit,
        } = *self;
        let Some(budget) = fit else {
            let out = run_diff(repo, env, filters, args, deadline).await?;
            return match out.success {
                true => Ok(Some(DiffText {
                    text: out
                        .stdout
                        .within(Subject::GitDiff, MAX_DIFF_BYTES)
                        .map_err(RunError::Refused)?,
                    fitted: None,
                })),
                false => Ok(None),
            };
        };
        let out = sections::diff_sections(repo, env, filters, args, budget, deadline).await?;
        if !out.success {
            return Ok(None);
        }
        let place = sections::Place { repo, env, filters };
        fitted_or_refused(out.stdout, place, args, budget, deadline)
            .await
            .map(Some)
    }
}

/// [`sections::fitted_text`], or the contract's refusal of a diff over its budget when it cannot
/// be fitted.
async fn fitted_or_refused(
    sections: Vec<sections::Section>,
    place: sections::Place<'_>,
    args: &[&str],
    budget: usize,
    deadline: &Deadline,
) -> Result<DiffText, RunError> {
    let total: usize = sections.iter().map(|section| section.bytes).sum();
    let refused = RelayError::TooLarge {
        subject: Subject::GitDiff,
        size: total as u64,
        max: budget,
    };
    sections::fitted_text(sections, place, args, budget, deadline)
        .await?
        .ok_or(RunError::Refused(refused))
}

/// A run that gave no diff: none where git failed, else the error.
fn no_diff(base: &str, e: RunError) -> Result<(), GitError> {
    match e {
        RunError::NotRun => Ok(()),
        RunError::Refused(err) => Err(err.into()),
        RunError::Resource(e) => Err(resource_error(base, &e).into()),
        RunError::Stopped(stop) => Err(GitError::Stopped(stop)),
    }
}

/// Refuses a base git would read as an option (`--output=<file>` would write any file).
pub fn check_base(base: &str) -> Result<(), RelayError> {
    if base.starts_with('-') {
        return Err(RelayError::GitDiff {
            base: base.to_string(),
            detail: "a base must not begin with '-' (git would read it as an option)".into(),
        });
    }
    Ok(())
}

/// `git diff <base>...HEAD --`; a failure is `ERR_GIT_DIFF` with git's own words. A diff over
/// the limit is fitted to `fit` when there is one, else refused.
pub async fn diff_against_base(
    repo: &str,
    base: &str,
    env: GitEnv<'_>,
    fit: Option<usize>,
    deadline: &Deadline,
) -> Result<DiffText, GitError> {
    check_base(base)?;
    let failure = |detail: String| RelayError::GitDiff {
        base: base.to_string(),
        detail,
    };
    let run_failure = |e: RunError| match e {
        RunError::NotRun => GitError::Relay(failure("git diff failed".into())),
        RunError::Resource(e) => GitError::Relay(resource_error(base, &e)),
        RunError::Stopped(stop) => GitError::Stopped(stop),
        RunError::Refused(err) => GitError::Relay(err),
    };
    // Two commits, no working tree: no filter driver runs, so no lookup of them (one git
    // process less). docs/GUARANTEES.md ("A repository's own config runs no program") says why.
    let range = format!("{base}...HEAD");
    let args = [range.as_str(), "--"];
    let Some(budget) = fit else {
        let out = run_diff(repo, env, &[], &args, deadline)
            .await
            .map_err(run_failure)?;
        if !out.success {
            return Err(failure(git_words(out.stderr, out.stdout)).into());
        }
        let text = out.stdout.within(Subject::GitDiff, MAX_DIFF_BYTES)?;
        return Ok(DiffText { text, fitted: None });
    };
    let out = sections::diff_sections(repo, env, &[], &args, budget, deadline)
        .await
        .map_err(run_failure)?;
    if !out.success {
        return Err(failure(git_words(out.stderr, Measured::default())).into());
    }
    let place = sections::Place {
        repo,
        env,
        filters: &[],
    };
    fitted_or_refused(out.stdout, place, &args, budget, deadline)
        .await
        .map_err(run_failure)
}

/// Why git failed, in its own words: stderr, else what it printed, else that it failed.
fn git_words(stderr: Measured, stdout: Measured) -> String {
    [stderr.text, stdout.text]
        .into_iter()
        .find(|text| !text.is_empty())
        .unwrap_or_else(|| "git diff failed".into())
}

/// `main` or `master`, whichever git knows first, else `HEAD~1` (also when git cannot run).
/// `rev-parse --verify` reads refs only: no filter, diff driver or fsmonitor can run in it.
pub async fn detect_default_branch(
    repo: &str,
    env: GitEnv<'_>,
    deadline: &Deadline,
) -> Result<String, GitError> {
    for branch in ["main", "master"] {
        let args = ["rev-parse", "--verify", branch];
        match run_git(repo, env, &[], &args, BoundedText::new(0), deadline).await {
            Ok(out) if out.success => return Ok(branch.to_string()),
            Ok(_) | Err(RunError::NotRun) => {}
            Err(RunError::Resource(e)) => return Err(resource_error(branch, &e).into()),
            Err(RunError::Stopped(stop)) => return Err(GitError::Stopped(stop)),
            Err(RunError::Refused(err)) => return Err(err.into()),
        }
    }
    Ok("HEAD~1".to_string())
}

/// The files git reads as it starts in a repository, in its git folder.
const GIT_DIR_FILES: [&str; 5] = ["HEAD", "config", "commondir", "index", "packed-refs"];
/// Largest `.git` file (`gitdir: <path>`) read.
const GIT_FILE_LIMIT: usize = 4096;

/// The first file git would read as it starts in `repo` that is not a regular file (or folder):
/// git would wait on a FIFO for a writer, so a synchronous helper, which holds the JS thread,
/// refuses such a repository at once instead. Only looks (`stat`), never opens anything but a
/// regular `.git` file.
fn special_file_in_git_dir(repo: &str) -> Option<std::path::PathBuf> {
    let dot_git = std::path::Path::new(repo)
        .ancestors()
        .map(|folder| folder.join(".git"))
        .find(|candidate| candidate.symlink_metadata().is_ok())?;
    let metadata = std::fs::metadata(&dot_git).ok()?;
    let git_dir = if metadata.is_dir() {
        dot_git
    } else if metadata.is_file() {
        // A worktree or submodule: `gitdir: <path>`, relative to the `.git` file's folder.
        let file = crate::bounded_text::open_regular(&dot_git).ok()??;
        let mut text = String::new();
        io::Read::read_to_string(&mut io::Read::take(file, GIT_FILE_LIMIT as u64), &mut text)
            .ok()?;
        let target = text.strip_prefix("gitdir:")?.trim();
        dot_git.parent()?.join(target)
    } else {
        return Some(dot_git);
    };
    GIT_DIR_FILES
        .iter()
        .map(|name| git_dir.join(name))
        .find(|path| std::fs::metadata(path).is_ok_and(|m| !m.is_file()))
}

/// The limit of the synchronous helpers: `GIT_HELPER_TIMEOUT_SECONDS` unless one is given.
fn helper_timeout(timeout_seconds: Option<f64>) -> Result<Timeout, RelayError> {
    Timeout::from_seconds(timeout_seconds.unwrap_or(f64::from(GIT_HELPER_TIMEOUT_SECONDS)))
        .ok_or(RelayError::InvalidTimeout)
}

thread_local! {
    /// The synchronous helpers' runtime on this thread (the JS thread, or a worker's), built on
    /// its first call and kept: building one per call was a tenth of a `gitDiffBase()`.
    static HELPERS_RUNTIME: std::cell::RefCell<Option<tokio::runtime::Runtime>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `work` to its end on this thread's small runtime (for the synchronous helpers).
fn block_on<F: Future>(
    work: impl FnOnce(Deadline) -> F,
    timeout: Timeout,
) -> io::Result<F::Output> {
    let build = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
    };
    let run = |runtime: &tokio::runtime::Runtime| {
        runtime.block_on(async {
            work(Deadline::starting_now(timeout, CancellationToken::new())).await
        })
    };
    HELPERS_RUNTIME.with(|kept| match kept.try_borrow_mut() {
        Ok(mut kept) => {
            if kept.is_none() {
                *kept = Some(build()?);
            }
            match kept.as_ref() {
                Some(runtime) => Ok(run(runtime)),
                None => Ok(run(&build()?)),
            }
        }
        // In use further up this thread's stack (it cannot be today): one of its own.
        Err(_) => Ok(run(&build()?)),
    })
}

/// `gitDiffBase()`: synchronous, bounded by `timeout_seconds` (default 30 s); past it,
/// `ERR_GIT_DIFF` "git timed out after <n>s". A repository whose git files include a special one
/// is `ERR_GIT_DIFF` at once.
pub fn diff_against_base_blocking(
    repo: &str,
    base: &str,
    timeout_seconds: Option<f64>,
) -> Result<String, RelayError> {
    let timeout = helper_timeout(timeout_seconds)?;
    check_base(base)?;
    if let Some(special) = special_file_in_git_dir(repo) {
        return Err(RelayError::GitDiff {
            base: base.to_string(),
            detail: format!("{} is not a regular file", special.display()),
        });
    }
    let work = |deadline: Deadline| async move {
        diff_against_base(repo, base, GitEnv::Inherit, None, &deadline).await
    };
    match block_on(work, timeout) {
        Ok(Ok(diff)) => Ok(diff.text),
        Ok(Err(GitError::Relay(err))) => Err(err),
        Ok(Err(GitError::Stopped(_))) => Err(RelayError::GitDiff {
            base: base.to_string(),
            detail: format!("git timed out after {}s", timeout.display()),
        }),
        Err(e) => Err(resource_error(base, &e)),
    }
}

/// `detectDefaultBranch()`: synchronous, bounded by `timeout_seconds` (default 30 s); git that
/// does not answer in time counts as a git failure (`HEAD~1`), and so, at once, does a
/// repository whose git files include a special one.
pub fn detect_default_branch_blocking(
    repo: &str,
    timeout_seconds: Option<f64>,
) -> Result<String, RelayError> {
    let timeout = helper_timeout(timeout_seconds)?;
    if special_file_in_git_dir(repo).is_some() {
        return Ok("HEAD~1".to_string());
    }
    let work = |deadline: Deadline| async move {
        detect_default_branch(repo, GitEnv::Inherit, &deadline).await
    };
    match block_on(work, timeout) {
        Ok(Ok(branch)) => Ok(branch),
        Ok(Err(GitError::Stopped(_))) => Ok("HEAD~1".to_string()),
        Ok(Err(GitError::Relay(err))) => Err(err),
        Err(e) => Err(resource_error("main", &e)),
    }
}

#[cfg(test)]
pub(crate) mod test_repo {
    //! Real git repositories in temp folders, for the tests of this crate.
    use std::path::Path;
    use std::process::Command;

    pub fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .status()
            .expect("git runs");
        assert!(status.success(), "git {args:?}");
    }

    /// A repository on `branch` with one commit holding `a.txt`.
    pub fn repo_with_commit(branch: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        git(dir.path(), &["init", "-q", "-b", branch]);
        std::fs::write(dir.path().join("a.txt"), "one\n").expect("write");
        git(dir.path(), &["add", "."]);
        git(dir.path(), &["commit", "-q", "-m", "first"]);
        dir
    }

    pub fn commit_all(dir: &Path, message: &str) {
        git(dir, &["add", "."]);
        git(dir, &["commit", "-q", "-m", message]);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;
    use std::time::{Duration, Instant};

    use super::test_repo::*;
    use super::*;

    fn path(dir: &tempfile::TempDir) -> String {
        dir.path().to_string_lossy().into_owned()
    }

    fn deadline(seconds: f64) -> Deadline {
        let timeout = Timeout::from_seconds(seconds).expect("valid timeout");
        Deadline::starting_now(timeout, CancellationToken::new())
    }

    fn minute() -> Deadline {
        deadline(60.0)
    }

    async fn relay_diff(dir: &tempfile::TempDir) -> Result<String, GitError> {
        relay_diff_source(dir).await.map(|diff| diff.text)
    }

    async fn relay_diff_source(dir: &tempfile::TempDir) -> Result<RelayDiff, GitError> {
        diff_for_relay(&path(dir), GitEnv::Inherit, None, &minute()).await
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[tokio::test]
    async fn two_phase_diff_prefers_uncommitted_changes() {
        let dir = repo_with_commit("main");
        std::fs::write(dir.path().join("a.txt"), "two\n").expect("write");
        commit_all(dir.path(), "second");
        let last_commit = relay_diff(&dir).await.expect("diff");
        assert!(last_commit.contains("-one\n+two"), "{last_commit}");
        std::fs::write(dir.path().join("a.txt"), "three\n").expect("write");
        let uncommitted = relay_diff(&dir).await.expect("diff");
        assert!(uncommitted.contains("-two\n+three"), "{uncommitted}");
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[tokio::test]
    async fn git_failures_count_as_no_diff() {
        let not_a_repo = tempfile::tempdir().expect("temp dir");
        assert_eq!(relay_diff(&not_a_repo).await, Ok(String::new()));
        // One commit: `HEAD~1` does not exist.
        let single = repo_with_commit("main");
        assert_eq!(relay_diff(&single).await, Ok(String::new()));
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[tokio::test]
    async fn the_relay_diff_says_which_diff_it_is() {
        let source = |diff: Result<RelayDiff, GitError>| diff.expect("diff").source;
        let not_a_repo = tempfile::tempdir().expect("temp dir");
        let no_commit = tempfile::tempdir().expect("temp dir");
        git(no_commit.path(), &["init", "-q"]);
        let single = repo_with_commit("main");
        // Untracked files are never in the diff: only the last commit's (none here) could be.
        std::fs::write(single.path().join("untracked.txt"), "new\n").expect("write");
        assert_eq!(
            source(relay_diff_source(&not_a_repo).await),
            DiffSource::Unavailable
        );
        assert_eq!(
            source(relay_diff_source(&no_commit).await),
            DiffSource::Unavailable
        );
        assert_eq!(
            source(relay_diff_source(&single).await),
            DiffSource::Nothing
        );
        std::fs::write(single.path().join("a.txt"), "two\n").expect("write");
        assert_eq!(
            source(relay_diff_source(&single).await),
            DiffSource::Uncommitted
        );
        commit_all(single.path(), "second");
        let last = relay_diff_source(&single).await.expect("diff");
        assert_eq!(last.source, DiffSource::LastCommit);
        assert!(last.text.contains("+two"), "{}", last.text);
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[tokio::test]
    async fn a_missing_git_binary_is_a_git_failure() {
        let dir = repo_with_commit("main");
        std::fs::write(dir.path().join("a.txt"), "two\n").expect("write");
        let env = Env::from([("PATH".to_string(), "/nonexistent-paf-bin".to_string())]);
        let exactly = GitEnv::Exactly(&env);
        assert_eq!(
            diff_for_relay(&path(&dir), exactly, None, &minute()).await,
            Ok(RelayDiff {
                fitted: None,
                text: String::new(),
                source: DiffSource::Unavailable
            })
        );
        assert_eq!(
            diff_against_base(&path(&dir), "main", exactly, None, &minute()).await,
            Err(GitError::Relay(RelayError::GitDiff {
                base: "main".into(),
                detail: "git diff failed".into()
            }))
        );
        assert_eq!(
            detect_default_branch(&path(&dir), exactly, &minute()).await,
            Ok("HEAD~1".into())
        );
    }

    #[test]
    fn resource_exhaustion_is_not_a_git_failure() {
        use crate::descriptors::{OUT_OF_DESCRIPTORS, OUT_OF_RESOURCES};
        for code in OUT_OF_DESCRIPTORS.into_iter().chain(OUT_OF_RESOURCES) {
            let e = io::Error::from_raw_os_error(code);
            assert!(matches!(RunError::from_spawn(e), RunError::Resource(_)));
        }
        let missing = io::Error::from(io::ErrorKind::NotFound);
        assert!(matches!(RunError::from_spawn(missing), RunError::NotRun));
        let resource = RunError::Resource(io::Error::from_raw_os_error(OUT_OF_DESCRIPTORS[0]));
        let err = no_diff("HEAD", resource).unwrap_err();
        let GitError::Relay(err) = err else {
            panic!("expected a coded error, got {err:?}");
        };
        assert_eq!(err.code(), "ERR_GIT_DIFF");
        assert_eq!(
            err.to_string(),
            format!(
                "Failed to collect git diff against HEAD: could not run git: {}",
                io::Error::from_raw_os_error(OUT_OF_DESCRIPTORS[0])
            )
        );
        #[cfg(target_os = "linux")]
        assert!(err
            .to_string()
            .ends_with("Too many open files (os error 24)"));
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[tokio::test]
    async fn a_huge_diff_is_refused_with_its_exact_trimmed_size() {
        let dir = repo_with_commit("main");
        let big = "x".repeat(99) + "\n";
        std::fs::write(dir.path().join("a.txt"), big.repeat(5_000)).expect("write");
        let err = relay_diff(&dir).await.unwrap_err();
        let GitError::Relay(RelayError::TooLarge { subject, size, max }) = err else {
            panic!("expected TooLarge, got {err:?}");
        };
        assert_eq!((subject, max), (Subject::GitDiff, MAX_DIFF_BYTES));
        let out = Command::new("git")
            .args(["-C", &path(&dir), "diff", "HEAD", "--"])
            .output()
            .expect("git");
        let expected = crate::text::js_trim(&String::from_utf8_lossy(&out.stdout)).len() as u64;
        assert_eq!(size, expected);
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[tokio::test]
    async fn diff_against_base_and_default_branch() {
        let dir = repo_with_commit("master");
        git(dir.path(), &["checkout", "-q", "-b", "feature"]);
        std::fs::write(dir.path().join("b.txt"), "new\n").expect("write");
        commit_all(dir.path(), "feature");
        let repo = path(&dir);
        assert_eq!(
            detect_default_branch(&repo, GitEnv::Inherit, &minute()).await,
            Ok("master".into())
        );
        let diff = diff_against_base(&repo, "master", GitEnv::Inherit, None, &minute())
            .await
            .expect("diff")
            .text;
        assert!(diff.contains("+new"), "{diff}");
        let err = diff_against_base(&repo, "nope", GitEnv::Inherit, None, &minute())
            .await
            .unwrap_err();
        let GitError::Relay(err) = err else {
            panic!("expected ERR_GIT_DIFF, got {err:?}");
        };
        assert_eq!(err.code(), "ERR_GIT_DIFF");
        assert!(
            err.to_string()
                .starts_with("Failed to collect git diff against nope: fatal:"),
            "{err}"
        );
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[tokio::test]
    async fn default_branch_falls_back_to_the_previous_commit() {
        let dir = repo_with_commit("trunk");
        assert_eq!(
            detect_default_branch(&path(&dir), GitEnv::Inherit, &minute()).await,
            Ok("HEAD~1".into())
        );
        let main = repo_with_commit("main");
        assert_eq!(
            detect_default_branch(&path(&main), GitEnv::Inherit, &minute()).await,
            Ok("main".into())
        );
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[test]
    fn an_option_like_base_never_reaches_git() {
        let dir = repo_with_commit("main");
        let target = dir.path().join("clobbered");
        let base = format!("--output={}", target.display());
        let err = diff_against_base_blocking(&path(&dir), &base, None).unwrap_err();
        assert_eq!(err.code(), "ERR_GIT_DIFF");
        assert!(!target.exists());
    }

    /// A repository whose `.git/HEAD` is a FIFO: every git command blocks opening it.
    fn fifo_head_repo() -> tempfile::TempDir {
        let dir = repo_with_commit("main");
        let head = dir.path().join(".git/HEAD");
        std::fs::remove_file(&head).expect("remove HEAD");
        let status = Command::new("mkfifo").arg(&head).status().expect("mkfifo");
        assert!(status.success());
        dir
    }

    /// Processes whose command line names `needle` (git run by these tests names its repo).
    fn processes_naming(needle: &str) -> Vec<String> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(needle) {
                found.push(format!("{:?}: {cmdline}", entry.file_name()));
            }
        }
        found
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[tokio::test]
    async fn a_git_that_never_ends_is_killed_at_the_deadline() {
        let dir = fifo_head_repo();
        let repo = path(&dir);
        let started = Instant::now();
        let stopped = Err(GitError::Stopped(Stop::TimedOut));
        assert_eq!(
            diff_for_relay(&repo, GitEnv::Inherit, None, &deadline(0.3))
                .await
                .map(|diff| diff.text),
            stopped
        );
        // The fitted road runs its own git: bounded and stopped the same way.
        assert_eq!(
            diff_for_relay(&repo, GitEnv::Inherit, Some(1_000), &deadline(0.3))
                .await
                .map(|diff| diff.text),
            stopped
        );
        assert_eq!(
            diff_against_base(&repo, "main", GitEnv::Inherit, None, &deadline(0.3))
                .await
                .map(|diff| diff.text),
            stopped
        );
        assert_eq!(
            detect_default_branch(&repo, GitEnv::Inherit, &deadline(0.3)).await,
            stopped
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(processes_naming(&repo), Vec::<String>::new());
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[tokio::test]
    async fn a_cancelled_call_kills_git_at_once() {
        let dir = fifo_head_repo();
        let repo = path(&dir);
        let cancel = CancellationToken::new();
        let timeout = Timeout::from_seconds(60.0).expect("valid timeout");
        let deadline = Deadline::starting_now(timeout, cancel.clone());
        let canceller = async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cancel.cancel();
        };
        let (result, ()) = tokio::join!(
            diff_for_relay(&repo, GitEnv::Inherit, None, &deadline),
            canceller
        );
        assert_eq!(result, Err(GitError::Stopped(Stop::Cancelled)));
        assert_eq!(processes_naming(&repo), Vec::<String>::new());
        // Dropping a run (the caller gave up on the future) kills git too.
        let dropped = tokio::time::timeout(
            Duration::from_millis(200),
            diff_for_relay(&repo, GitEnv::Inherit, None, &minute()),
        )
        .await;
        assert!(dropped.is_err());
        for _ in 0..50 {
            if processes_naming(&repo).is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(processes_naming(&repo), Vec::<String>::new());
    }

    /// A repository whose branch `main` is a FIFO: git waits on it, past any check of the files
    /// git reads as it starts.
    fn fifo_branch_repo() -> tempfile::TempDir {
        let dir = repo_with_commit("main");
        let branch = dir.path().join(".git/refs/heads/main");
        std::fs::remove_file(&branch).expect("remove the branch");
        let status = Command::new("mkfifo")
            .arg(&branch)
            .status()
            .expect("mkfifo");
        assert!(status.success());
        dir
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[test]
    fn the_synchronous_helpers_are_bounded() {
        let dir = fifo_branch_repo();
        let repo = path(&dir);
        let started = Instant::now();
        assert_eq!(
            diff_against_base_blocking(&repo, "main", Some(0.5))
                .unwrap_err()
                .to_string(),
            "Failed to collect git diff against main: git timed out after 0.5s"
        );
        assert_eq!(
            detect_default_branch_blocking(&repo, Some(0.5)),
            Ok("HEAD~1".into())
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(processes_naming(&repo), Vec::<String>::new());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = RelayError::InvalidTimeout;
            assert_eq!(
                diff_against_base_blocking(&repo, "main", Some(bad)),
                Err(err.clone())
            );
            assert_eq!(detect_default_branch_blocking(&repo, Some(bad)), Err(err));
        }
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[test]
    fn the_synchronous_helpers_answer_as_before() {
        let dir = repo_with_commit("main");
        git(dir.path(), &["checkout", "-q", "-b", "feature"]);
        std::fs::write(dir.path().join("b.txt"), "new\n").expect("write");
        commit_all(dir.path(), "feature");
        let repo = path(&dir);
        assert_eq!(
            detect_default_branch_blocking(&repo, None),
            Ok("main".into())
        );
        let out = Command::new("git")
            .args(["-C", &repo, "diff", "main...HEAD", "--"])
            .output()
            .expect("git");
        let expected = crate::text::js_trim(&String::from_utf8_lossy(&out.stdout)).to_string();
        assert_eq!(
            diff_against_base_blocking(&repo, "main", None),
            Ok(expected)
        );
    }

    /// The programs of [`hostile_repo`] that a plain `git diff` runs (each `touch`es the marker
    /// of its name); its `post-index-change` hook is set too, though no diff writes the index.
    const PROGRAMS_GIT_DIFF_RUNS: [&str; 8] = [
        "clean",
        "command",
        "eq",
        "external",
        "fsmonitor",
        "included",
        "process",
        "textconv",
    ];

    fn touch(markers: &Path, name: &str) -> String {
        format!("touch {}/{name}", markers.display())
    }

    /// A checkout whose config runs a program in every way `git diff` allows: fsmonitor, a
    /// `post-index-change` hook, `diff.external`, a diff driver's command and textconv, filter
    /// drivers' clean and process (one named with an `=`, one from an included file). Every file
    /// changed in the last commit and again in the work tree (its mtime moved, so git must
    /// re-read it through the filters).
    fn hostile_repo(markers: &Path) -> tempfile::TempDir {
        let dir = repo_with_commit("main");
        let root = dir.path();
        let files = ["a.clean", "b.proc", "c.eq", "d.conv", "e.cmd", "f.inc"];
        let attributes = "*.clean filter=evil\n*.proc filter=proc\n*.eq filter=a=b\n\
            *.conv diff=conv\n*.cmd diff=cmd\n*.inc filter=inc\n";
        std::fs::write(root.join(".gitattributes"), attributes).expect("write");
        for file in files {
            std::fs::write(root.join(file), "one\n").expect("write");
        }
        commit_all(root, "files");
        git(root, &["checkout", "-q", "-b", "feature"]);
        for file in files {
            std::fs::write(root.join(file), "two\n").expect("write");
        }
        commit_all(root, "two");
        let included = root.join(".git/evil.inc");
        let inc = format!(
            "[filter \"inc\"]\n\tclean = {}; cat\n",
            touch(markers, "included")
        );
        std::fs::write(&included, inc).expect("write");
        let mut settings = program_settings(markers, &root.join(".git"));
        settings.extend([
            ("filter.evil.required", "true".into()),
            ("filter.proc.required", "true".into()),
            ("filter.a=b.clean", format!("{}; cat", touch(markers, "eq"))),
            ("include.path", included.display().to_string()),
        ]);
        for (key, value) in settings {
            git(root, &["config", key, &value]);
        }
        for file in files {
            std::fs::write(root.join(file), "three\n").expect("write");
        }
        dir
    }

    /// Settings that each make git run a program touching the marker of its name: fsmonitor, a
    /// `post-index-change` hook (in `git_dir`), `diff.external`, the `cmd` driver's command, the
    /// `conv` driver's textconv, the `evil` filter's clean and the `proc` filter's process.
    fn program_settings(markers: &Path, git_dir: &Path) -> Vec<(&'static str, String)> {
        let hooks = git_dir.join("evil-hooks");
        std::fs::create_dir(&hooks).expect("mkdir");
        let hook = hooks.join("post-index-change");
        std::fs::write(&hook, format!("#!/bin/sh\n{}\n", touch(markers, "hook"))).expect("write");
        Command::new("chmod")
            .arg("+x")
            .arg(&hook)
            .status()
            .expect("chmod");
        vec![
            (
                "core.fsmonitor",
                format!("{}; true", touch(markers, "fsmonitor")),
            ),
            ("core.hooksPath", hooks.display().to_string()),
            ("diff.external", touch(markers, "external")),
            ("diff.cmd.command", touch(markers, "command")),
            (
                "diff.conv.textconv",
                format!("{}; cat", touch(markers, "textconv")),
            ),
            (
                "filter.evil.clean",
                format!("{}; cat", touch(markers, "clean")),
            ),
            ("filter.proc.process", touch(markers, "process")),
        ]
    }

    /// Asserts that each of `expected` left its marker (plain git ran it), then removes them all.
    fn assert_ran_then_clear(markers: &Path, expected: &[&str]) {
        let ran = markers_in(markers);
        for program in expected {
            assert!(
                ran.contains(&program.to_string()),
                "{program} not in {ran:?}"
            );
        }
        for marker in ran {
            std::fs::remove_file(markers.join(marker)).expect("remove");
        }
    }

    fn markers_in(markers: &Path) -> Vec<String> {
        let mut found: Vec<String> = std::fs::read_dir(markers)
            .expect("markers")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        found.sort();
        found
    }

    /// Options that make none of the hostile repository's filters required: a failing
    /// required filter makes git stop.
    const LENIENT: [&str; 6] = [
        "-c",
        "filter.proc.process=",
        "-c",
        "filter.proc.required=false",
        "-c",
        "filter.evil.required=false",
    ];

    /// Git's own diffs of `repo`, as a user would run them, with and without external diffs.
    fn plain_git_diffs(repo: &str) {
        for args in [&["HEAD", "--"], &["main...HEAD", "--"]] {
            let _ = Command::new("git")
                .arg("-C")
                .arg(repo)
                .arg("diff")
                .args(args)
                .output();
            // textconv runs where no external diff takes over.
            for external in ["--ext-diff", "--no-ext-diff"] {
                let _ = Command::new("git")
                    .arg("-C")
                    .arg(repo)
                    .args(LENIENT)
                    .args(["diff", external])
                    .args(args)
                    .output();
            }
        }
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[tokio::test]
    async fn a_repository_config_runs_no_program() {
        let markers = tempfile::tempdir().expect("temp dir");
        let dir = hostile_repo(markers.path());
        let repo = path(&dir);
        // The checkout really is hostile: plain git runs its programs.
        plain_git_diffs(&repo);
        assert_ran_then_clear(markers.path(), &PROGRAMS_GIT_DIFF_RUNS);
        // Through the helpers, nothing runs and the diffs are git's plain ones.
        let uncommitted = relay_diff(&dir).await.expect("diff");
        for file in ["a.clean", "b.proc", "c.eq", "d.conv", "e.cmd", "f.inc"] {
            assert!(
                uncommitted.contains(&format!(
                    "--- a/{file}\n+++ b/{file}\n@@ -1 +1 @@\n-two\n+three"
                )),
                "{file}: {uncommitted}"
            );
        }
        let against_main = diff_against_base(&repo, "main", GitEnv::Inherit, None, &minute())
            .await
            .expect("diff")
            .text;
        assert!(against_main.contains("--- a/c.eq\n+++ b/c.eq\n@@ -1 +1 @@\n-one\n+two"));
        assert_eq!(
            detect_default_branch(&repo, GitEnv::Inherit, &minute()).await,
            Ok("main".into())
        );
        // Back to the committed text (git sees the stat change): the last commit's diff.
        for file in ["a.clean", "b.proc", "c.eq", "d.conv", "e.cmd", "f.inc"] {
            std::fs::write(dir.path().join(file), "two\n").expect("write");
        }
        let last_commit = relay_diff(&dir).await.expect("diff");
        assert!(last_commit.contains("-one\n+two"), "{last_commit}");
        assert_eq!(markers_in(markers.path()), Vec::<String>::new());
        // The work tree at HEAD's content and the index fresh (refreshed with every filter
        // emptied): a diff between two commits could read these files in place of their blobs,
        // but only through the filters, so git does not, and the lookup it skips is not missed.
        let refreshed = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(NEUTRAL_OPTIONS)
            .args(["-c", "filter.evil.clean=", "-c", "filter.inc.clean="])
            .args(LENIENT)
            .arg(format!("--config-env=filter.a=b.clean={EMPTY_VAR}"))
            .env(EMPTY_VAR, "")
            .args(["update-index", "--refresh"])
            .status()
            .expect("git runs");
        assert!(refreshed.success());
        assert_eq!(markers_in(markers.path()), Vec::<String>::new());
        let against_main = diff_against_base(&repo, "main", GitEnv::Inherit, None, &minute())
            .await
            .expect("diff")
            .text;
        for file in ["a.clean", "b.proc", "c.eq", "d.conv", "e.cmd", "f.inc"] {
            assert!(
                against_main.contains(&format!(
                    "--- a/{file}\n+++ b/{file}\n@@ -1 +1 @@\n-one\n+two"
                )),
                "{file}: {against_main}"
            );
        }
        assert_eq!(markers_in(markers.path()), Vec::<String>::new());
    }

    /// A checkout with a submodule `sub` whose own config (`.git/modules/sub/config`, which the
    /// top repository's overrides do not reach) runs a program in every way a submodule allows
    /// while git looks into it: filter drivers' clean and process, fsmonitor, a
    /// `post-index-change` hook, and (with the top's `diff.submodule=diff`, which diffs inside the
    /// submodule) `diff.external`, a diff driver's command and textconv. The submodule's files
    /// are modified and their timestamps moved, so git must re-read them through its filters.
    fn repo_with_hostile_submodule(markers: &Path) -> (tempfile::TempDir, tempfile::TempDir) {
        let sub = repo_with_commit("main");
        let files = ["a.clean", "b.proc", "c.conv", "d.cmd"];
        let attributes =
            "*.clean filter=evil\n*.proc filter=proc\n*.conv diff=conv\n*.cmd diff=cmd\n";
        std::fs::write(sub.path().join(".gitattributes"), attributes).expect("write");
        for file in files {
            std::fs::write(sub.path().join(file), "one\n").expect("write");
        }
        commit_all(sub.path(), "files");
        let top = repo_with_commit("main");
        let source = sub.path().display().to_string();
        git(
            top.path(),
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                &source,
                "sub",
            ],
        );
        commit_all(top.path(), "submodule");
        let checkout = top.path().join("sub");
        let settings = program_settings(markers, &top.path().join(".git/modules/sub"));
        for (key, value) in settings {
            git(&checkout, &["config", key, &value]);
        }
        git(top.path(), &["config", "diff.submodule", "diff"]);
        for file in files {
            std::fs::write(checkout.join(file), "two\n").expect("write");
            let stale = std::fs::File::options()
                .write(true)
                .open(checkout.join(file))
                .expect("open");
            stale
                .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000))
                .expect("set mtime");
        }
        (top, sub)
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[tokio::test]
    async fn a_submodules_config_runs_no_program() {
        let markers = tempfile::tempdir().expect("temp dir");
        let (top, _sub) = repo_with_hostile_submodule(markers.path());
        let repo = path(&top);
        // It is hostile: plain git, even with the top repository's programs neutralised, runs
        // the submodule's.
        // (A failing process filter keeps git from diffing inside, so the second run has none.)
        for lenient in [&[][..], &["-c", "filter.proc.process="][..]] {
            let _ = Command::new("git")
                .arg("-C")
                .arg(&repo)
                .args(NEUTRAL_OPTIONS)
                .args(lenient)
                .arg("diff")
                .args(["--no-ext-diff", "--no-textconv"])
                .args(["HEAD", "--"])
                .output();
        }
        assert_ran_then_clear(markers.path(), &["clean", "external", "process"]);
        let uncommitted = relay_diff(&top).await.expect("diff");
        let against_main =
            diff_against_base(&repo, "HEAD~1", GitEnv::Inherit, None, &minute()).await;
        let branch = detect_default_branch(&repo, GitEnv::Inherit, &minute()).await;
        assert_eq!(markers_in(markers.path()), Vec::<String>::new());
        // A changed submodule commit is still shown, as a one-line summary.
        assert!(uncommitted.contains("+Subproject commit "), "{uncommitted}");
        assert!(against_main.is_ok_and(|d| d.text.contains("+Subproject commit ")));
        assert_eq!(branch, Ok("main".into()));
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[test]
    fn the_synchronous_helpers_wait_on_no_special_file() {
        for name in ["HEAD", "config", "index", "packed-refs"] {
            let dir = repo_with_commit("main");
            let file = dir.path().join(".git").join(name);
            let _ = std::fs::remove_file(&file);
            let status = Command::new("mkfifo").arg(&file).status().expect("mkfifo");
            assert!(status.success());
            // In a folder of the repository too: git looks for `.git` upwards.
            let inner = dir.path().join("inner");
            std::fs::create_dir(&inner).expect("mkdir");
            for repo in [path(&dir), inner.to_string_lossy().into_owned()] {
                // The default bound is 30 s: an answer at once is the refusal, not the timeout.
                let started = Instant::now();
                assert_eq!(
                    diff_against_base_blocking(&repo, "main", None),
                    Err(RelayError::GitDiff {
                        base: "main".into(),
                        detail: format!("{} is not a regular file", file.display()),
                    })
                );
                assert_eq!(
                    detect_default_branch_blocking(&repo, None),
                    Ok("HEAD~1".into())
                );
                assert!(started.elapsed() < Duration::from_secs(10), "{name}");
            }
        }
        // A linked worktree's `.git` file leads to its own git folder.
        let dir = repo_with_commit("main");
        let linked = tempfile::tempdir().expect("dir");
        let tree = linked.path().join("tree");
        git(
            dir.path(),
            &[
                "worktree",
                "add",
                "-q",
                &tree.to_string_lossy(),
                "-b",
                "other",
            ],
        );
        assert_eq!(special_file_in_git_dir(&tree.to_string_lossy()), None);
        let head = dir.path().join(".git/worktrees/tree/HEAD");
        std::fs::remove_file(&head).expect("rm");
        let status = Command::new("mkfifo").arg(&head).status().expect("mkfifo");
        assert!(status.success());
        assert_eq!(special_file_in_git_dir(&tree.to_string_lossy()), Some(head));
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[tokio::test]
    async fn a_partial_clone_fetches_nothing() {
        let markers = tempfile::tempdir().expect("temp dir");
        let server = repo_with_commit("main");
        std::fs::write(server.path().join("a.txt"), "two\n").expect("write");
        commit_all(server.path(), "second");
        git(server.path(), &["config", "uploadpack.allowFilter", "true"]);
        let clones = tempfile::tempdir().expect("temp dir");
        let clone = clones.path().join("clone");
        let url = format!("file://{}", server.path().display());
        let status = Command::new("git")
            .args(["clone", "-q", "--filter=blob:none", "--no-checkout", &url])
            .arg(&clone)
            .status()
            .expect("git clone");
        assert!(status.success());
        // The promisor remote now runs a program when git fetches a missing blob.
        let ext = format!("ext::sh -c touch% {}/lazy", markers.path().display());
        git(&clone, &["config", "remote.origin.url", &ext]);
        git(&clone, &["config", "protocol.ext.allow", "always"]);
        let repo = clone.to_string_lossy().into_owned();
        let diff = diff_for_relay(&repo, GitEnv::Inherit, None, &minute())
            .await
            .map(|diff| diff.text);
        assert_eq!(diff, Ok(String::new()), "a missing blob is a git failure");
        assert_eq!(markers_in(markers.path()), Vec::<String>::new());
        let _ = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["diff", "HEAD~1", "HEAD"])
            .output();
        assert_eq!(markers_in(markers.path()), ["lazy"], "plain git does fetch");
    }

    #[test]
    fn filter_overrides_cover_every_driver_but_the_users_own() {
        let listing =
            b"global\0filter.lfs.clean\0local\0filter.evil.clean\0local\0filter.evil.process\0\
            worktree\0filter.a.b=c.smudge\0command\0filter.cmd.clean\0local\0filter.nodriver\0";
        let options: Vec<String> = overrides_for(listing)
            .expect("UTF-8 names")
            .into_iter()
            .map(|o| o.to_string_lossy().into_owned())
            .collect();
        let mut expected = Vec::new();
        for driver in ["a.b=c", "cmd", "evil"] {
            for (key, var) in [
                ("clean", EMPTY_VAR),
                ("smudge", EMPTY_VAR),
                ("process", EMPTY_VAR),
                ("required", FALSE_VAR),
            ] {
                expected.push(format!("--config-env=filter.{driver}.{key}={var}"));
            }
        }
        assert_eq!(options, expected);
        // A name that is not UTF-8: an argument on Unix; on Windows none, so git is not run.
        let listing = b"local\0filter.\xff.clean\0";
        let overrides = overrides_for(listing).map(|options| options.len());
        assert_eq!(overrides, if cfg!(unix) { Some(4) } else { None });
    }
}
