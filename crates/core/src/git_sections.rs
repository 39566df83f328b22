//! A diff too large for the envelope, read file by file for fitting (crate::fit): the changed
//! paths (`--name-only -z`), their attributes (`check-attr`: generated, vendored), then the diff
//! itself as a stream of sections, each kept only up to the budget, so memory is bounded by the
//! budget, not by the diff.

use std::collections::{BinaryHeap, HashMap};
use std::ffi::OsString;

use super::{run_git, DiffText, GitOutput, RawBytes, RunError, DIFF_OPTIONS};
use crate::deadline::Deadline;
use crate::fit::{fit, FileDiff, Kind};
use crate::subprocess::Sink;

use super::GitEnv;

/// How many bytes of changed paths are read: a diff of more files is not fitted.
const PATHS_LIMIT: usize = 4 * 1024 * 1024;
/// How many bytes of paths one `check-attr` run is given (Windows caps a command line at 32K
/// characters).
const ATTR_ARGS_BYTES: usize = 16 * 1024;

/// `git diff <args>` read as sections, each kept up to `budget` bytes (see [`Sections`]).
pub(super) async fn diff_sections(
    repo: &str,
    env: GitEnv<'_>,
    filters: &[OsString],
    args: &[&str],
    budget: usize,
    deadline: &Deadline,
) -> Result<GitOutput<Vec<Section>>, RunError> {
    let mut diff = vec!["diff"];
    diff.extend_from_slice(DIFF_OPTIONS);
    diff.extend_from_slice(args);
    run_git(repo, env, filters, &diff, Sections::new(budget), deadline).await
}

/// The diff of `sections` within `budget`: as git wrote it when all of it fits, else fitted
/// (crate::fit), with the changed paths (`--name-only -z`, the same `args`) and their
/// attributes. `None` when it cannot be fitted (git lists more paths than are read, or other
/// paths than it wrote sections for): then it is refused as it would be without `fit`.
pub(super) async fn fitted_text(
    sections: Vec<Section>,
    place: Place<'_>,
    args: &[&str],
    budget: usize,
    deadline: &Deadline,
) -> Result<Option<DiffText>, RunError> {
    let total: usize = sections.iter().map(|section| section.bytes).sum();
    if total <= budget && sections.iter().all(|section| section.complete) {
        let text = sections
            .iter()
            .map(|section| String::from_utf8_lossy(&section.kept))
            .collect();
        return Ok(Some(DiffText { text, fitted: None }));
    }
    let Some(paths) = changed_paths(place, args, deadline).await? else {
        return Ok(None);
    };
    // git writes the sections in the order it lists the names; a diff whose count differs is
    // not fitted rather than misnamed.
    if sections.len() != paths.len() {
        return Ok(None);
    }
    let kinds = kinds(place.repo, place.env, &paths, deadline).await?;
    let files = sections
        .into_iter()
        .zip(paths.into_iter().zip(kinds))
        .map(|(section, (path, kind))| section.into_file(path, kind))
        .collect();
    Ok(Some(DiffText::of(fit(files, budget))))
}

/// Where git runs: the repository, its environment and the filter overrides.
#[derive(Clone, Copy)]
pub(super) struct Place<'a> {
    pub repo: &'a str,
    pub env: GitEnv<'a>,
    pub filters: &'a [OsString],
}

/// The paths `git diff --name-only -z <args>` lists; `None` when git fails or lists more than
/// is read.
async fn changed_paths(
    place: Place<'_>,
    args: &[&str],
    deadline: &Deadline,
) -> Result<Option<Vec<String>>, RunError> {
    let mut names = vec!["diff", "--name-only", "-z"];
    names.extend_from_slice(DIFF_OPTIONS);
    names.extend_from_slice(args);
    let listing = RawBytes::new(PATHS_LIMIT);
    let listed = run_git(
        place.repo,
        place.env,
        place.filters,
        &names,
        listing,
        deadline,
    )
    .await?;
    let (true, Some(listing)) = (listed.success, listed.stdout) else {
        return Ok(None);
    };
    let paths = listing
        .split(|&b| b == 0)
        .filter(|path| !path.is_empty())
        .map(|path| String::from_utf8_lossy(path).into_owned())
        .collect();
    Ok(Some(paths))
}

/// Each path's kind: its name (a lock file) and its attributes (`linguist-generated`,
/// `linguist-vendored`; `check-attr` reads `.gitattributes` and runs no program).
async fn kinds(
    repo: &str,
    env: GitEnv<'_>,
    paths: &[String],
    deadline: &Deadline,
) -> Result<Vec<Kind>, RunError> {
    let mut kinds: Vec<Kind> = paths.iter().map(|path| Kind::of_path(path)).collect();
    let mut start = 0;
    while start < paths.len() {
        let mut end = start;
        let mut bytes = 0;
        while end < paths.len() && (end == start || bytes + paths[end].len() < ATTR_ARGS_BYTES) {
            bytes += paths[end].len() + 1;
            end += 1;
        }
        let mut args = vec![
            "check-attr",
            "-z",
            "linguist-generated",
            "linguist-vendored",
            "--",
        ];
        args.extend(paths[start..end].iter().map(String::as_str));
        let out = run_git(repo, env, &[], &args, RawBytes::new(PATHS_LIMIT), deadline).await?;
        if let (true, Some(listing)) = (out.success, out.stdout) {
            mark_attributes(&listing, &paths[start..end], &mut kinds[start..end]);
        }
        start = end;
    }
    Ok(kinds)
}

/// `check-attr -z` answers `path\0attribute\0value\0` per attribute asked.
fn mark_attributes(listing: &[u8], paths: &[String], kinds: &mut [Kind]) {
    // By name: a diff may change tens of thousands of files.
    let index: HashMap<&[u8], usize> = paths
        .iter()
        .enumerate()
        .map(|(i, path)| (path.as_bytes(), i))
        .collect();
    let fields: Vec<&[u8]> = listing.split(|&b| b == 0).collect();
    for triple in fields.chunks_exact(3) {
        let set = matches!(triple[2], b"set" | b"true");
        let Some(&i) = index.get(triple[0]) else {
            continue;
        };
        match triple[1] {
            b"linguist-generated" if set => kinds[i] = Kind::Generated,
            b"linguist-vendored" if set && kinds[i] != Kind::Generated => {
                kinds[i] = Kind::Vendored;
            }
            _ => {}
        }
    }
}

/// One file's section as read: its size, and its text up to the budget.
pub(super) struct Section {
    pub(super) bytes: usize,
    kept: Vec<u8>,
    /// Whether `kept` is the whole section.
    complete: bool,
    binary: bool,
    hunks: usize,
}

impl Section {
    fn into_file(self, path: String, kind: Kind) -> FileDiff {
        let kind = if self.binary { Kind::Binary } else { kind };
        let text = String::from_utf8_lossy(&self.kept).into_owned();
        // A file git shows as text need not be UTF-8: a whole section's size is that of the text
        // it becomes (each invalid byte a U+FFFD), so that what is included is measured in it.
        let bytes = if self.complete {
            text.len()
        } else {
            self.bytes
        };
        FileDiff {
            path,
            kind,
            bytes,
            text: Some(text),
            complete: self.complete,
            hunks: self.hunks,
        }
    }
}

/// git's diff split at each `diff --git ` line into sections, each kept up to `budget` bytes;
/// past three budgets kept in all, the text of the largest kept sections is dropped (they could
/// not be whole anyway), so memory follows the budget, not the diff.
struct Sections {
    budget: usize,
    done: Vec<Section>,
    line: Vec<u8>,
    /// Bytes of the line being read that were not held.
    dropped: usize,
    /// The text kept in all.
    kept: usize,
    /// The finished sections with text kept, largest first: the first to give it up.
    largest: BinaryHeap<(usize, usize)>,
}

impl Sections {
    fn new(budget: usize) -> Self {
        Sections {
            budget,
            done: Vec::new(),
            line: Vec::new(),
            dropped: 0,
            kept: 0,
            largest: BinaryHeap::new(),
        }
    }

    fn add_line(&mut self, line: &[u8]) {
        let starts = line.starts_with(b"diff --git ");
        if starts || self.done.is_empty() {
            if let Some(finished) = self.done.last() {
                self.largest
                    .push((finished.kept.len(), self.done.len() - 1));
            }
            self.bound_memory();
            self.done.push(Section {
                bytes: 0,
                kept: Vec::new(),
                complete: true,
                binary: false,
                hunks: 0,
            });
        }
        let budget = self.budget;
        let dropped = std::mem::take(&mut self.dropped);
        let Some(section) = self.done.last_mut() else {
            return;
        };
        section.bytes += line.len() + dropped;
        section.hunks += usize::from(line.starts_with(b"@@ "));
        section.binary |=
            line.starts_with(b"Binary files ") || line.starts_with(b"GIT binary patch");
        if section.complete && dropped == 0 && section.kept.len() + line.len() <= budget {
            section.kept.extend_from_slice(line);
            self.kept += line.len();
        } else {
            section.complete = false;
        }
    }

    /// Keeps at most three budgets of text (a fitted diff holds one), and the section being read.
    fn bound_memory(&mut self) {
        while self.kept > 3 * self.budget {
            let Some((_, i)) = self.largest.pop() else {
                return;
            };
            let section = &mut self.done[i];
            self.kept -= section.kept.len();
            section.kept = Vec::new();
            section.complete = false;
        }
    }
}

impl Sink for Sections {
    type Output = Vec<Section>;

    fn push(&mut self, mut bytes: &[u8]) {
        while let Some(end) = bytes.iter().position(|&b| b == b'\n') {
            let (line, rest) = bytes.split_at(end + 1);
            if self.line.is_empty() {
                self.add_line(line);
            } else {
                let mut whole = std::mem::take(&mut self.line);
                whole.extend_from_slice(line);
                self.add_line(&whole);
            }
            bytes = rest;
        }
        // A line longer than the budget is not kept whole anyway: only its start is held.
        let room = self.budget.saturating_sub(self.line.len());
        let held = bytes.len().min(room);
        self.line.extend_from_slice(&bytes[..held]);
        self.dropped += bytes.len() - held;
    }

    fn finish(mut self) -> Vec<Section> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.add_line(&line);
        }
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_repo::{commit_all, repo_with_commit};
    use super::super::{diff_against_base, diff_for_relay, GitEnv};
    use crate::deadline::{Deadline, Timeout};
    use crate::fit::Status;
    use crate::limits::MAX_DIFF_BYTES;
    use crate::subprocess::Sink;
    use tokio_util::sync::CancellationToken;

    fn minute() -> Deadline {
        let timeout = Timeout::from_seconds(60.0).expect("timeout");
        Deadline::starting_now(timeout, CancellationToken::new())
    }

    /// Lines of `n` bytes each (counting the newline).
    fn lines(count: usize, n: usize, tag: &str) -> String {
        (0..count)
            .map(|i| {
                format!(
                    "{tag} {i:0>width$}\n",
                    width = n.saturating_sub(tag.len() + 2)
                )
            })
            .collect()
    }

    /// A repository whose uncommitted diff is about 5 MB: a lock file, a generated file and a
    /// vendored one (.gitattributes), a binary, 40 small source files and one of 400 KB.
    fn large_repo() -> tempfile::TempDir {
        let dir = repo_with_commit("main");
        let root = dir.path();
        std::fs::write(
            root.join(".gitattributes"),
            "dist/** linguist-generated\nthird_party/** linguist-vendored\n",
        )
        .expect("write");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::create_dir_all(root.join("dist")).expect("mkdir");
        std::fs::create_dir_all(root.join("third_party")).expect("mkdir");
        for name in [
            "package-lock.json",
            "dist/bundle.js",
            "third_party/lib.js",
            "logo.png",
        ] {
            std::fs::write(root.join(name), "").expect("write");
        }
        // 400 KB in 100 blocks, each of which the change rewrites: 100 hunks.
        let block = |h: usize, tag: &str| {
            lines(40, 80, &format!("{tag}{h}")) + &lines(10, 80, &format!("keep{h}"))
        };
        let big = |tag: &str| (0..100).map(|h| block(h, tag)).collect::<String>();
        std::fs::write(root.join("src/big.rs"), big("old")).expect("write");
        for n in 0..40 {
            std::fs::write(root.join(format!("src/m{n:02}.rs")), "").expect("write");
        }
        commit_all(root, "empty files");
        std::fs::write(root.join("package-lock.json"), lines(30_000, 80, "lock")).expect("write");
        std::fs::write(root.join("dist/bundle.js"), lines(20_000, 80, "gen")).expect("write");
        std::fs::write(root.join("third_party/lib.js"), lines(10_000, 80, "vendor"))
            .expect("write");
        std::fs::write(root.join("logo.png"), [0u8, 159, 146, 150, 0, 1, 2, 3]).expect("write");
        std::fs::write(root.join("src/big.rs"), big("new")).expect("write");
        for n in 0..40 {
            std::fs::write(root.join(format!("src/m{n:02}.rs")), lines(20, 60, "src"))
                .expect("write");
        }
        dir
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[tokio::test]
    async fn a_5_mb_diff_is_fitted_with_every_file_accounted_for() {
        let dir = large_repo();
        let repo = dir.path().to_string_lossy().into_owned();
        // Without fit, refused as the contract says.
        let refused = diff_for_relay(&repo, GitEnv::Inherit, None, &minute()).await;
        assert!(matches!(
            refused,
            Err(super::super::GitError::Relay(
                crate::errors::RelayError::TooLarge { .. }
            ))
        ));
        let diff = diff_for_relay(&repo, GitEnv::Inherit, Some(MAX_DIFF_BYTES), &minute())
            .await
            .expect("a fitted diff");
        let fitted = diff.fitted.expect("fitted");
        assert!(diff.text.len() <= MAX_DIFF_BYTES);
        let status = |path: &str| {
            fitted
                .coverage
                .iter()
                .find(|file| file.path == path)
                .map(|file| (file.status, file.reason.clone().unwrap_or_default()))
        };
        assert_eq!(
            status("package-lock.json"),
            Some((Status::LeftOut, "a lock file".into()))
        );
        assert_eq!(status("dist/bundle.js").map(|s| s.0), Some(Status::LeftOut));
        assert!(status("dist/bundle.js").is_some_and(|s| s.1.contains("linguist-generated")));
        assert!(status("third_party/lib.js").is_some_and(|s| s.1.contains("linguist-vendored")));
        assert!(
            status("logo.png").is_some_and(|s| s.0 == Status::LeftOut && s.1.contains("binary"))
        );
        for n in 0..40 {
            assert_eq!(
                status(&format!("src/m{n:02}.rs")).map(|s| s.0),
                Some(Status::Whole)
            );
        }
        let (big, reason) = status("src/big.rs").expect("listed");
        assert_eq!(big, Status::Cut, "{reason}");
        assert!(
            reason.starts_with("hunks 1-")
                && reason.ends_with("of 100: the rest did not fit the budget"),
            "{reason}"
        );
        // Every changed file once, and the text holds each whole file and the big one's start.
        assert_eq!(fitted.coverage.len(), 45);
        assert!(diff.text.contains("diff --git a/src/m39.rs b/src/m39.rs"));
        assert!(!diff.text.contains("lock 0"));
        assert!(diff.text.contains("diff --git a/src/big.rs b/src/big.rs"));
        assert!(diff.text.ends_with('\n'));
    }

    #[test]
    fn a_section_that_is_not_utf_8_is_measured_as_the_text_it_becomes() {
        let mut sections = super::Sections::new(1_000);
        sections.push(b"diff --git a/l b/l\n@@ -1 +1 @@\n-caf\xe9\n+caf\xe8\n");
        let section = sections.finish().pop().expect("a section");
        let file = section.into_file("l".into(), crate::fit::Kind::Source);
        let text = file.text.clone().unwrap_or_default();
        assert_eq!(file.bytes, text.len());
        let fitted = crate::fit::fit(vec![file], 1_000);
        assert_eq!(fitted.text, text);
        assert!(fitted.text.contains("+caf\u{fffd}\n"));
    }

    #[cfg_attr(windows, ignore = "runs git: none under wine")]
    #[tokio::test]
    async fn a_review_diff_against_its_base_is_fitted_too() {
        let dir = large_repo();
        let root = dir.path();
        super::super::test_repo::git(root, &["checkout", "-q", "-b", "feature"]);
        commit_all(root, "the large change");
        let repo = root.to_string_lossy().into_owned();
        let diff = diff_against_base(&repo, "main", GitEnv::Inherit, Some(100_000), &minute())
            .await
            .expect("fitted");
        assert!(diff.text.len() <= 100_000);
        let fitted = diff.fitted.expect("fitted");
        assert_eq!(fitted.coverage.len(), 45);
        assert!(fitted
            .coverage
            .iter()
            .any(|file| file.status == Status::Whole));
    }
}
