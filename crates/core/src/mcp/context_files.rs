//! Which files an agent may name as a relay's `contextFile` through the MCP server (docs/MCP.md,
//! "Context files"). An agent calling a tool is trusted less than the person who configured the
//! server: a file it names is read and sent to a model provider, so `~/.ssh/id_rsa` or the
//! server's own `/proc/self/environ` must not be nameable. By default only files inside the
//! call's repository are (symbolic links followed); `PHONE_A_FRIEND_MCP_CONTEXT_DIRS` names more
//! folders. `/proc`, `/dev` and `/sys` never are. The library and the CLI, whose caller is the
//! user, read any file but a process's environment or memory (`context.rs`).

use std::path::{Path, PathBuf};

use crate::env::Env;
use crate::errors::RelayError;
use crate::paths::resolve;

/// The server's environment variable naming further folders an agent may take context files
/// from, separated as `PATH` is (`:`, `;` on Windows).
pub const CONTEXT_DIRS_VAR: &str = "PHONE_A_FRIEND_MCP_CONTEXT_DIRS";

/// The kernel's views of processes, devices and itself: never context, whatever is allowed.
const SYSTEM_DIRS: [&str; 3] = ["/proc", "/dev", "/sys"];

/// The folders, besides a call's repository, that an agent may name files in.
#[derive(Debug, Clone, Default)]
pub struct ContextFiles {
    /// Canonical; a folder that does not exist is left out.
    extra_dirs: Vec<PathBuf>,
}

impl ContextFiles {
    /// The folders [`CONTEXT_DIRS_VAR`] names in the server's environment.
    pub fn from_env(env: &Env) -> ContextFiles {
        let extra_dirs = crate::env::var(env, CONTEXT_DIRS_VAR)
            .map(|dirs| {
                std::env::split_paths(dirs)
                    .filter(|dir| !dir.as_os_str().is_empty())
                    .filter_map(|dir| std::fs::canonicalize(dir).ok())
                    .collect()
            })
            .unwrap_or_default();
        ContextFiles { extra_dirs }
    }

    /// Whether an agent may name `context_file` in a call on `repo_path` (both resolved against
    /// `cwd`, as the relay resolves them). A file that does not exist is judged by its path, and
    /// then the relay says it is missing.
    pub fn check(&self, context_file: &str, repo_path: &str, cwd: &str) -> Result<(), RelayError> {
        let file = resolve(cwd, context_file);
        let repo = resolve(cwd, repo_path);
        let real_file = real_path(Path::new(&file));
        let real_repo = real_path(Path::new(&repo));
        let refused = |why: &str| {
            Err(RelayError::ContextFileRefused {
                path: file.clone(),
                why: why.into(),
            })
        };
        if SYSTEM_DIRS
            .iter()
            .any(|dir| real_file.starts_with(dir) || Path::new(&file).starts_with(dir))
        {
            return refused("an agent may not name a file under /proc, /dev or /sys");
        }
        let allowed = std::iter::once(&real_repo)
            .chain(&self.extra_dirs)
            .any(|dir| real_file.starts_with(dir));
        if !allowed {
            return refused(&format!(
                "an agent may name only files inside the call's repoPath ({CONTEXT_DIRS_VAR} in the server's environment names more folders)"
            ));
        }
        Ok(())
    }
}

/// `path` with its links resolved. A file that does not exist is its real folder and its name,
/// so it is judged where it would be (on macOS `/tmp` is `/private/tmp`); past that, as written.
fn real_path(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| {
        let in_real_folder = match (path.parent(), path.file_name()) {
            (Some(folder), Some(name)) => std::fs::canonicalize(folder).map(|f| f.join(name)).ok(),
            _ => None,
        };
        in_real_folder.unwrap_or_else(|| path.to_path_buf())
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    struct Folders {
        _root: tempfile::TempDir,
        repo: String,
        outside: String,
    }

    fn folders() -> Folders {
        let root = tempfile::tempdir().expect("temp dir");
        let repo = root.path().join("repo");
        let outside = root.path().join("outside");
        for dir in [&repo, &outside] {
            std::fs::create_dir(dir).expect("mkdir");
        }
        std::fs::write(repo.join("notes.md"), "notes").expect("write");
        std::fs::write(outside.join("id_rsa"), "secret").expect("write");
        // A link in the repository to a file outside it.
        std::os::unix::fs::symlink(outside.join("id_rsa"), repo.join("key.txt")).expect("link");
        std::os::unix::fs::symlink("/proc/self/environ", repo.join("env.txt")).expect("link");
        let text = |path: PathBuf| path.to_string_lossy().into_owned();
        Folders {
            repo: text(repo),
            outside: text(outside),
            _root: root,
        }
    }

    fn refusal(result: Result<(), RelayError>) -> String {
        match result {
            Err(err @ RelayError::ContextFileRefused { .. }) => {
                assert_eq!(err.code(), "ERR_CONTEXT_FILE");
                err.to_string()
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn takes_files_inside_the_repository_only() {
        let f = folders();
        let files = ContextFiles::default();
        assert_eq!(files.check("notes.md", "", &f.repo), Ok(()));
        assert_eq!(files.check("./sub/../notes.md", "", &f.repo), Ok(()));
        assert_eq!(
            files.check(&format!("{}/notes.md", f.repo), &f.repo, "/"),
            Ok(())
        );
        // Missing, but inside: the relay says it is missing; also named through a link to the
        // repository (as macOS's /tmp is a link to /private/tmp).
        assert_eq!(files.check("gone.md", &f.repo, &f.repo), Ok(()));
        let linked = format!("{}-link", f.outside);
        std::os::unix::fs::symlink(&f.repo, &linked).expect("link");
        assert_eq!(
            files.check(&format!("{linked}/gone.md"), &f.repo, "/"),
            Ok(())
        );
        let id_rsa = format!("{}/id_rsa", f.outside);
        let outside = refusal(files.check(&id_rsa, &f.repo, "/"));
        assert_eq!(
            outside,
            format!("Context file refused: an agent may name only files inside the call's repoPath (PHONE_A_FRIEND_MCP_CONTEXT_DIRS in the server's environment names more folders): {id_rsa}")
        );
        refusal(files.check("../outside/id_rsa", "", &f.repo));
        refusal(files.check("key.txt", &f.repo, &f.repo));
        refusal(files.check("/etc/passwd", &f.repo, "/"));
    }

    #[test]
    fn never_takes_system_files_even_with_the_root_as_repository() {
        let f = folders();
        let files = ContextFiles::default();
        for file in [
            "/proc/self/environ",
            "/proc/1/mem",
            "/dev/zero",
            "/sys/kernel/notes",
        ] {
            let why = refusal(files.check(file, "/", "/"));
            assert!(why.contains("/proc, /dev or /sys"), "{why}");
        }
        refusal(files.check("env.txt", &f.repo, &f.repo));
    }

    #[test]
    fn the_servers_environment_names_more_folders() {
        let f = folders();
        let mut env = Env::new();
        env.insert(
            CONTEXT_DIRS_VAR.into(),
            format!("/does/not/exist::{}", f.outside),
        );
        let files = ContextFiles::from_env(&env);
        assert_eq!(files.check("key.txt", &f.repo, &f.repo), Ok(()));
        assert_eq!(
            files.check(&format!("{}/id_rsa", f.outside), &f.repo, "/"),
            Ok(())
        );
        refusal(files.check("/etc/passwd", &f.repo, "/"));
    }
}
