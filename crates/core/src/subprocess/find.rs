//! Resolving a CLI's name on the call's `PATH`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The first program named `name` in the `PATH` of `env` (the child's environment, not the
/// relay's own) that this OS starts by name, like `which`: a relative entry (an empty one is `.`)
/// is taken from the relay's working directory, as `which` and `execvp` take it. The result is
/// absolute, so where the backend then runs (the repository) does not change which program that
/// is. On Windows the name takes the endings of `PATHEXT` (`codex` finds `codex.cmd`, which the
/// runner then starts as what the npm shim runs: `cmd_shim.rs`), and only what `CreateProcess`
/// or an npm shim can start counts ([`starts_by_name`]): an extensionless file or a `gemini.js`
/// earlier on the `PATH` is passed over, as `cmd` passes over it for an `.exe`.
pub fn find_executable(name: &str, env: &BTreeMap<String, String>) -> Option<PathBuf> {
    find_program(name, env).ok()
}

/// [`find_executable`], walking the `PATH` once: the program, or else the files named `name`
/// that were passed over, in `PATH` order (a few at most): what a "not found" says was there
/// instead. Off Windows nothing is passed over.
pub fn find_program(name: &str, env: &BTreeMap<String, String>) -> Result<PathBuf, Vec<PathBuf>> {
    let mut passed_over = Vec::new();
    for found in matches_on_path(name, env).into_iter().flatten() {
        if starts_by_name(&found) {
            return Ok(found);
        }
        if passed_over.len() < 3 {
            passed_over.push(found);
        }
    }
    Err(passed_over)
}

/// Every absolute file named `name` (or, on Windows, `name` and a `PATHEXT` ending) on the `PATH`.
fn matches_on_path(
    name: &str,
    env: &BTreeMap<String, String>,
) -> Option<impl Iterator<Item = PathBuf>> {
    if name.is_empty() || name.contains('/') || (cfg!(windows) && name.contains('\\')) {
        return None;
    }
    let path = crate::env::var(env, "PATH")?;
    // execvp does not expand a leading `~`; the crate would, with this process's HOME rather
    // than the child's: such an entry stays a relative directory named `~`.
    let entries = std::env::split_paths(path).map(|dir| {
        if dir.starts_with("~") {
            Path::new(".").join(dir)
        } else {
            dir
        }
    });
    let path = std::env::join_paths(entries).ok()?;
    let config = which::WhichConfig::new()
        .binary_name(name.into())
        .custom_path_list(path);
    let config = match std::env::current_dir() {
        Ok(cwd) => config.custom_cwd(cwd),
        // Without a working directory a relative entry names nothing.
        Err(_) => config.system_cwd(false),
    };
    Some(
        config
            .all_results()
            .ok()?
            .filter(|found| found.is_absolute()),
    )
}

/// Whether the OS starts `file` when asked for it by name. Off Windows, `which` found it
/// executable. On Windows, by its ending as Windows opens the name (trailing dots and spaces
/// dropped): a program (`.exe`, `.com`) or a batch file (`.cmd`, `.bat`; the runner starts an npm
/// shim's program and refuses any other batch file). Windows never starts an extensionless file
/// by name, and a `.js` or `.vbs` is a document for its associated program, not a process.
fn starts_by_name(file: &Path) -> bool {
    if !cfg!(windows) {
        return true;
    }
    windows_ending(file).is_some_and(|ending| {
        ["exe", "com", "cmd", "bat"]
            .iter()
            .any(|runnable| ending.eq_ignore_ascii_case(runnable))
    })
}

/// `file`'s extension as Windows opens the name: Win32 drops a file name's trailing dots and
/// spaces, so `gemini.CMD.` (from a `PATHEXT` entry `.CMD.`) is the batch file `gemini.CMD`.
pub(super) fn windows_ending(file: &Path) -> Option<String> {
    let name = file.file_name()?.to_str()?.trim_end_matches(['.', ' ']);
    Path::new(name)
        .extension()
        .and_then(|ending| ending.to_str())
        .map(str::to_owned)
}
