//! Finds the supervisor executable (`supervisor/src/main.rs`) that every CLI
//! backend runs under. It ships beside the addon's `.node` file; under `cargo test` it is the
//! binary cargo built beside the test executable.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use phone_a_friend_supervisor::protocol::SUPERVISOR_FILE_NAME;
use thiserror::Error;

/// The supervisor is in none of the folders it may be in (a broken installation).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("the process supervisor {SUPERVISOR_FILE_NAME} is missing (looked in {}); reinstall @phone-a-friend/relay", .looked_in.join(", "))]
pub struct SupervisorMissing {
    looked_in: Vec<String>,
}

/// The supervisor's path, looked up once per process.
pub fn executable() -> io::Result<&'static Path> {
    static FOUND: OnceLock<Result<PathBuf, SupervisorMissing>> = OnceLock::new();
    FOUND
        .get_or_init(locate)
        .as_deref()
        .map_err(|missing| io::Error::new(io::ErrorKind::NotFound, missing.clone()))
}

fn locate() -> Result<PathBuf, SupervisorMissing> {
    let mut folders = Vec::new();
    if let Some(library) = this_shared_object() {
        folders.extend(library.parent().map(Path::to_path_buf));
    }
    if let Ok(exe) = std::env::current_exe() {
        // `target/<profile>/deps/<test>` for cargo's test executables.
        folders.extend(exe.ancestors().skip(1).take(2).map(Path::to_path_buf));
    }
    find_in(&folders)
}

fn find_in(folders: &[PathBuf]) -> Result<PathBuf, SupervisorMissing> {
    folders
        .iter()
        .map(|folder| folder.join(SUPERVISOR_FILE_NAME))
        .find(|candidate| is_executable_file(candidate))
        .ok_or_else(|| SupervisorMissing {
            looked_in: folders.iter().map(|f| f.display().to_string()).collect(),
        })
}

/// Whether `path` is a file this process may execute (also used to search the `PATH`).
pub(crate) fn is_executable_file(path: &Path) -> bool {
    // `metadata` follows symlinks, as exec does.
    if !path.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c_path` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::access(c_path.as_ptr(), libc::X_OK) == 0 }
}

/// The file this code was loaded from: the addon's `.node` file when Node loaded it.
fn this_shared_object() -> Option<PathBuf> {
    use std::ffi::CStr;
    // SAFETY: `dladdr` fills `info` for an address inside a loaded object; `dli_fname` then
    // points at a string the loader keeps for as long as the object stays loaded.
    unsafe {
        let mut info = std::mem::zeroed::<libc::Dl_info>();
        let address = this_shared_object as *const libc::c_void;
        if libc::dladdr(address, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let name = CStr::from_ptr(info.dli_fname).to_bytes();
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(name));
        path.extension()
            .is_some_and(|ext| ext == "node")
            .then_some(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_tests_find_the_built_supervisor() {
        let path = executable().expect("cargo builds the supervisor beside the tests");
        assert!(path.ends_with(SUPERVISOR_FILE_NAME), "{}", path.display());
    }

    #[test]
    fn a_missing_supervisor_says_where_it_was_looked_for() {
        let (one, two) = (
            tempfile::tempdir().expect("dir"),
            tempfile::tempdir().expect("dir"),
        );
        let folders = [one.path().to_path_buf(), two.path().to_path_buf()];
        let missing = find_in(&folders).expect_err("no supervisor there");
        let expected = format!(
            "the process supervisor {SUPERVISOR_FILE_NAME} is missing (looked in {}, {}); reinstall @phone-a-friend/relay",
            one.path().display(),
            two.path().display()
        );
        assert_eq!(missing.to_string(), expected);
        let as_io = io::Error::new(io::ErrorKind::NotFound, missing);
        assert_eq!(as_io.to_string(), expected);
    }
}
