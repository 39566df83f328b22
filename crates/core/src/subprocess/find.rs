//! Resolving a CLI's name on the call's `PATH`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The first executable file named `name` in the `PATH` of `env` (the child's environment, not
/// the relay's own), like `which`: a relative entry (an empty one is `.`) is taken from the
/// relay's working directory, as `which` and `execvp` take it. The result is absolute, so
/// where the backend then runs (the repository) does not change which program that is. On
/// Windows the name takes the endings of `PATHEXT` (`codex` finds `codex.cmd`, which the runner
/// then starts as what the npm shim runs: `cmd_shim.rs`).
pub fn find_executable(name: &str, env: &BTreeMap<String, String>) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') || (cfg!(windows) && name.contains('\\')) {
        return None;
    }
    let path = env.get("PATH")?;
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
    config.all_results().ok()?.find(|found| found.is_absolute())
}
