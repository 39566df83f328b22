//! The git helpers (SPEC 5). git runs as a subprocess, never through a shell; its output is read
//! through a bounded buffer, so a diff of any size ends in an exact `ERR_TOO_LARGE`.

use std::io::Read;
use std::process::{Command, Stdio};

use crate::backend::Env;
use crate::bounded_text::{read_bounded, BoundedText, Measured};
use crate::errors::{RelayError, Subject};
use crate::limits::MAX_DIFF_BYTES;

/// How much of git's stderr is kept for an error message.
const STDERR_LIMIT: usize = 64 * 1024;

/// The environment git runs with: the caller's snapshot, or the process's own.
#[derive(Debug, Clone, Copy)]
pub enum GitEnv<'a> {
    Inherit,
    Exactly(&'a Env),
}

struct GitOutput {
    success: bool,
    stdout: Measured,
    stderr: Measured,
}

fn run_git(repo: &str, args: &[&str], env: GitEnv<'_>, limit: usize) -> std::io::Result<GitOutput> {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(repo)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let GitEnv::Exactly(vars) = env {
        command.env_clear().envs(vars);
    }
    let mut child = command.spawn()?;
    let stderr = child
        .stderr
        .take()
        .map(|pipe| std::thread::spawn(move || read_pipe(pipe, STDERR_LIMIT)));
    let stdout = match child.stdout.take() {
        Some(pipe) => read_pipe(pipe, limit),
        None => BoundedText::new(0).finish(),
    };
    let stderr = match stderr.map(std::thread::JoinHandle::join) {
        Some(Ok(text)) => text,
        _ => BoundedText::new(0).finish(),
    };
    let status = child.wait()?;
    Ok(GitOutput {
        success: status.success(),
        stdout,
        stderr,
    })
}

/// A pipe read to its end; a read error counts as no output, which git's exit status explains.
fn read_pipe(pipe: impl Read, limit: usize) -> Measured {
    read_bounded(pipe, limit).unwrap_or_else(|_| BoundedText::new(0).finish())
}

/// `git diff` for `relay({ includeDiff })`: uncommitted changes, else the last commit; a git
/// failure counts as no diff, a diff over the limit does not.
pub fn diff_for_relay(repo: &str, env: GitEnv<'_>) -> Result<String, RelayError> {
    let uncommitted = try_diff(repo, &["diff", "HEAD", "--"], env)?;
    if !uncommitted.is_empty() {
        return Ok(uncommitted);
    }
    try_diff(repo, &["diff", "HEAD~1", "HEAD", "--"], env)
}

fn try_diff(repo: &str, args: &[&str], env: GitEnv<'_>) -> Result<String, RelayError> {
    match run_git(repo, args, env, MAX_DIFF_BYTES) {
        Ok(out) if out.success => out.stdout.within(Subject::GitDiff, MAX_DIFF_BYTES),
        _ => Ok(String::new()),
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

/// `git diff <base>...HEAD --`; a failure is `ERR_GIT_DIFF` with git's own words.
pub fn diff_against_base(repo: &str, base: &str, env: GitEnv<'_>) -> Result<String, RelayError> {
    check_base(base)?;
    let range = format!("{base}...HEAD");
    let failure = |detail: String| RelayError::GitDiff {
        base: base.to_string(),
        detail,
    };
    let out = run_git(repo, &["diff", &range, "--"], env, MAX_DIFF_BYTES)
        .map_err(|_| failure("git diff failed".into()))?;
    if !out.success {
        let detail = [out.stderr.text, out.stdout.text]
            .into_iter()
            .find(|text| !text.is_empty())
            .unwrap_or_else(|| "git diff failed".into());
        return Err(failure(detail));
    }
    out.stdout.within(Subject::GitDiff, MAX_DIFF_BYTES)
}

/// `main` or `master`, whichever git knows first, else `HEAD~1`.
pub fn detect_default_branch(repo: &str, env: GitEnv<'_>) -> String {
    for branch in ["main", "master"] {
        if matches!(run_git(repo, &["rev-parse", "--verify", branch], env, 0), Ok(out) if out.success)
        {
            return branch.to_string();
        }
    }
    "HEAD~1".to_string()
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
    use super::test_repo::*;
    use super::*;

    fn path(dir: &tempfile::TempDir) -> String {
        dir.path().to_string_lossy().into_owned()
    }

    #[test]
    fn two_phase_diff_prefers_uncommitted_changes() {
        let dir = repo_with_commit("main");
        std::fs::write(dir.path().join("a.txt"), "two\n").expect("write");
        commit_all(dir.path(), "second");
        let last_commit = diff_for_relay(&path(&dir), GitEnv::Inherit).expect("diff");
        assert!(last_commit.contains("-one\n+two"), "{last_commit}");
        std::fs::write(dir.path().join("a.txt"), "three\n").expect("write");
        let uncommitted = diff_for_relay(&path(&dir), GitEnv::Inherit).expect("diff");
        assert!(uncommitted.contains("-two\n+three"), "{uncommitted}");
    }

    #[test]
    fn git_failures_count_as_no_diff() {
        let not_a_repo = tempfile::tempdir().expect("temp dir");
        assert_eq!(
            diff_for_relay(&path(&not_a_repo), GitEnv::Inherit),
            Ok(String::new())
        );
        // One commit: `HEAD~1` does not exist.
        let single = repo_with_commit("main");
        assert_eq!(
            diff_for_relay(&path(&single), GitEnv::Inherit),
            Ok(String::new())
        );
    }

    #[test]
    fn a_huge_diff_is_refused_with_its_exact_trimmed_size() {
        let dir = repo_with_commit("main");
        let big = "x".repeat(99) + "\n";
        std::fs::write(dir.path().join("a.txt"), big.repeat(5_000)).expect("write");
        let err = diff_for_relay(&path(&dir), GitEnv::Inherit).unwrap_err();
        let RelayError::TooLarge { subject, size, max } = err else {
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

    #[test]
    fn diff_against_base_and_default_branch() {
        let dir = repo_with_commit("master");
        git(dir.path(), &["checkout", "-q", "-b", "feature"]);
        std::fs::write(dir.path().join("b.txt"), "new\n").expect("write");
        commit_all(dir.path(), "feature");
        assert_eq!(
            detect_default_branch(&path(&dir), GitEnv::Inherit),
            "master"
        );
        let diff = diff_against_base(&path(&dir), "master", GitEnv::Inherit).expect("diff");
        assert!(diff.contains("+new"), "{diff}");
        let err = diff_against_base(&path(&dir), "nope", GitEnv::Inherit).unwrap_err();
        assert_eq!(err.code(), "ERR_GIT_DIFF");
        assert!(
            err.to_string()
                .starts_with("Failed to collect git diff against nope: fatal:"),
            "{err}"
        );
    }

    #[test]
    fn default_branch_falls_back_to_the_previous_commit() {
        let dir = repo_with_commit("trunk");
        assert_eq!(
            detect_default_branch(&path(&dir), GitEnv::Inherit),
            "HEAD~1"
        );
        let main = repo_with_commit("main");
        assert_eq!(detect_default_branch(&path(&main), GitEnv::Inherit), "main");
    }

    #[test]
    fn an_option_like_base_never_reaches_git() {
        let dir = repo_with_commit("main");
        let target = dir.path().join("clobbered");
        let base = format!("--output={}", target.display());
        let err = diff_against_base(&path(&dir), &base, GitEnv::Inherit).unwrap_err();
        assert_eq!(err.code(), "ERR_GIT_DIFF");
        assert!(!target.exists());
    }
}
