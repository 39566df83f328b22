use proptest::prelude::*;

use super::*;

/// A file's section: its header, then `hunks` hunks of `lines` lines each.
fn section(path: &str, hunks: usize, lines: usize) -> String {
    let mut text = format!("diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n");
    for hunk in 0..hunks {
        text.push_str(&format!("@@ -{hunk},1 +{hunk},{lines} @@\n"));
        for line in 0..lines {
            text.push_str(&format!("+line {line} of hunk {hunk} in {path}\n"));
        }
    }
    text
}

fn file(path: &str, hunks: usize, lines: usize) -> FileDiff {
    let text = section(path, hunks, lines);
    FileDiff {
        path: path.into(),
        kind: Kind::of_path(path),
        bytes: text.len(),
        text: Some(text),
        complete: true,
        hunks,
    }
}

#[test]
fn a_diff_that_fits_is_whole_and_unchanged() {
    let files = vec![file("a.rs", 2, 3), file("Cargo.lock", 1, 2)];
    let text: String = files.iter().filter_map(|f| f.text.clone()).collect();
    let fitted = fit(files, 100_000);
    assert_eq!(fitted.text, text);
    assert!(fitted.is_whole());
}

#[test]
fn lock_files_and_generated_files_go_first_then_the_largest() {
    let mut generated = file("dist/bundle.js", 1, 5);
    generated.kind = Kind::Generated;
    let files = vec![
        file("package-lock.json", 3, 50),
        generated,
        file("src/big.rs", 10, 40),
        file("src/small.rs", 1, 3),
        file("src/mid.rs", 2, 10),
    ];
    let small = files[3].bytes + files[4].bytes;
    let fitted = fit(files, small + 200);
    let status: Vec<(&str, Status)> = fitted
        .coverage
        .iter()
        .map(|f| (f.path.as_str(), f.status))
        .collect();
    assert_eq!(
        status,
        [
            ("package-lock.json", Status::LeftOut),
            ("dist/bundle.js", Status::LeftOut),
            ("src/big.rs", Status::LeftOut),
            ("src/small.rs", Status::Whole),
            ("src/mid.rs", Status::Whole),
        ]
    );
    assert_eq!(fitted.coverage[0].reason.as_deref(), Some("a lock file"));
    assert!(fitted.text.len() <= small + 200);
}

#[test]
fn a_file_too_large_to_include_whole_is_cut_at_a_hunk_boundary() {
    let big = file("src/big.rs", 10, 40);
    let whole = big.text.clone().unwrap_or_default();
    let fitted = fit(vec![big], whole.len() / 2);
    let cut = &fitted.coverage[0];
    assert_eq!(cut.status, Status::Cut);
    assert!(fitted.text.len() <= whole.len() / 2);
    assert!(whole.starts_with(&fitted.text));
    // It ends where the next hunk begins: at a line, before "@@".
    assert!(whole[fitted.text.len()..].starts_with("@@ "));
    assert!(cut.reason.as_deref().unwrap_or("").starts_with("hunks 1-"));
    assert!(cut.reason.as_deref().unwrap_or("").contains(" of 10"));
}

#[test]
fn the_coverage_section_lists_what_is_not_whole_within_its_limit() {
    let files: Vec<FileDiff> = (0..2000)
        .map(|n| file(&format!("src/file{n:04}.rs"), 1, 20))
        .collect();
    let fitted = fit(files, 2_000);
    let section = coverage_section(&fitted, COVERAGE_LIMIT);
    assert!(section.len() <= COVERAGE_LIMIT, "{}", section.len());
    assert!(section.contains("- left-out: src/file"), "{section}");
    assert!(section.contains("more files cut or left out, not listed here"));
    assert!(section
        .starts_with("The diff above was fitted to a budget of 2000 bytes: of 2000 changed files"));
}

fn any_files() -> impl Strategy<Value = Vec<(u8, usize, usize)>> {
    prop::collection::vec((0u8..5, 0usize..6, 1usize..30), 0..40)
}

proptest! {
    /// Whatever the files and the budget: the fitted diff is within the budget, each file is
    /// listed once, in order, and what is shown of each is the start of its section.
    #[test]
    fn the_fitted_diff_never_exceeds_its_budget(files in any_files(), budget in 0usize..20_000) {
        let files: Vec<FileDiff> = files
            .into_iter()
            .enumerate()
            .map(|(n, (kind, hunks, lines))| {
                let mut diff = file(&format!("f{n}.rs"), hunks, lines);
                diff.kind = [Kind::Source, Kind::Source, Kind::LockFile, Kind::Generated, Kind::Binary][kind as usize];
                diff
            })
            .collect();
        let sections: Vec<(String, String)> = files
            .iter()
            .map(|f| (f.path.clone(), f.text.clone().unwrap_or_default()))
            .collect();
        let total: usize = files.iter().map(|f| f.bytes).sum();
        let fitted = fit(files, budget);
        prop_assert!(fitted.text.len() <= budget.max(total.min(budget)));
        prop_assert!(fitted.text.len() <= budget || fitted.is_whole() && total <= budget);
        let paths: Vec<&str> = fitted.coverage.iter().map(|f| f.path.as_str()).collect();
        let expected: Vec<&str> = sections.iter().map(|(path, _)| path.as_str()).collect();
        prop_assert_eq!(paths, expected);
        let mut rebuilt = String::new();
        for (coverage, (_, text)) in fitted.coverage.iter().zip(&sections) {
            prop_assert!(coverage.included_bytes <= coverage.bytes);
            rebuilt.push_str(&text[..coverage.included_bytes]);
        }
        prop_assert_eq!(rebuilt, fitted.text);
    }
}
