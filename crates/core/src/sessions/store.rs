//! The session store: `sessions.json`, a JSON array in the format of upstream, the phone-a-friend
//! v4.1.1 CLI (docs/CONTRACT.md §12), in `PHONE_A_FRIEND_HOME`, else
//! `$XDG_CONFIG_HOME/phone-a-friend` (empty counts as unset), else `~/.config/phone-a-friend`, all
//! read from the call's environment.
//!
//! No update is ever lost: every change takes an exclusive lock (`File::try_lock`: `flock` on
//! Unix, `LockFileEx` on Windows) on `sessions.lock` beside it, reads the file, changes it and writes it back atomically (a temp file, fsync, rename,
//! fsync of the folder), so a reader never sees half a file and a writer never overwrites
//! another's change. Waiting for the lock never blocks a thread: a non-blocking attempt, then a
//! short async sleep, bounded by the caller's deadline, as is every read. The store is a file
//! anyone with the account can edit, so nothing in it may make a call wait: every file is
//! opened without blocking (`O_NONBLOCK`: a FIFO would wait for a writer) and used only if it is
//! a regular file; the lock is never followed through a symbolic link (Windows: the reparse
//! point itself is opened, not its target). A file that cannot be
//! parsed (invalid JSON or UTF-8) is moved aside (`sessions.json.corrupt-<time>`) with a
//! warning, never silently emptied.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::bounded_text::open_regular;
use crate::deadline::{Deadline, Stop};
use crate::env::Env;

const FILE_NAME: &str = "sessions.json";
const LOCK_NAME: &str = "sessions.lock";
/// The prefix of a write's temp file; one left behind by a killed writer is removed by the next
/// writer (which holds the lock, so no write is under way).
const TEMP_PREFIX: &str = ".sessions-";
/// Largest store read: far more than any real one (each session's history is bounded).
const MAX_STORE_BYTES: usize = 256 * 1024 * 1024;
const READ_CHUNK: usize = 64 * 1024;
const LOCK_RETRY: Duration = Duration::from_millis(5);
/// The store's folder holds conversations: only its owner may look inside (on Windows, the
/// folder in the user's profile is private by its ACL).
#[cfg(unix)]
const FOLDER_MODE: u32 = 0o700;

/// One turn of a conversation kept for replay (Ollama, a JS backend that replays).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub role: String,
    pub content: String,
}

/// One labelled session, as upstream writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    /// The caller's label.
    pub id: String,
    pub backend: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_session_id: Option<String>,
    pub repo_path: String,
    #[serde(default)]
    pub history: Vec<Turn>,
    /// RFC 3339, UTC, milliseconds.
    pub created_at: String,
    pub last_used_at: String,
}

impl Session {
    /// Whether its next turn continues a conversation: the backend's own session, or turns to
    /// replay. A backend that reported no session id leaves neither.
    pub fn continuable(&self) -> bool {
        self.backend_session_id.is_some() || !self.history.is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no folder for the session store: set PHONE_A_FRIEND_HOME, XDG_CONFIG_HOME or HOME")]
    NoHome,
    #[error("session store {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("session store {0} is not a regular file")]
    NotAFile(PathBuf),
    #[error("session store folder {0} is not a folder")]
    NotAFolder(PathBuf),
    #[error("session store {0} is larger than {MAX_STORE_BYTES} bytes")]
    TooLarge(PathBuf),
    #[error("session store {}: {}", .0.display(), stopped(*.1))]
    Stopped(PathBuf, Stop),
}

fn stopped(stop: Stop) -> &'static str {
    match stop {
        Stop::TimedOut => {
            "the call's time ran out (its lock held by another call, or the file slow to read)"
        }
        Stop::Cancelled => "the call was aborted",
    }
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Where the store lives, from the call's environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Store {
    folder: PathBuf,
}

/// What reading the store found.
#[derive(Debug, Default)]
pub struct Loaded {
    pub sessions: Vec<Session>,
    /// Why the file could not be parsed (it then counts as empty); only [`Store::update`],
    /// holding the lock, moves such a file aside.
    pub corrupt: Option<String>,
}

/// Windows's home folder (`USERPROFILE`, as Node's `os.homedir()` reads it there), where `HOME`
/// is seldom set.
fn windows_home(env: &Env) -> Option<&str> {
    if cfg!(windows) {
        non_empty(env, "USERPROFILE")
    } else {
        None
    }
}

fn non_empty<'a>(env: &'a Env, name: &str) -> Option<&'a str> {
    crate::env::var(env, name).filter(|v| !v.is_empty())
}

impl Store {
    pub fn from_env(env: &Env) -> Result<Store, StoreError> {
        let folder = if let Some(home) = non_empty(env, crate::limits::STORE_HOME_ENV_VAR) {
            PathBuf::from(home)
        } else if let Some(config) = non_empty(env, "XDG_CONFIG_HOME") {
            Path::new(config).join("phone-a-friend")
        } else if let Some(home) = non_empty(env, "HOME").or_else(|| windows_home(env)) {
            Path::new(home).join(".config").join("phone-a-friend")
        } else {
            return Err(StoreError::NoHome);
        };
        Ok(Store { folder })
    }

    pub fn path(&self) -> PathBuf {
        self.folder.join(FILE_NAME)
    }

    /// Every session, as the last completed write left them (no lock needed: writes are
    /// atomic renames). A corrupt file reads as empty, with the reason.
    pub async fn read(&self, deadline: &Deadline) -> Result<Loaded, StoreError> {
        let path = self.path();
        let file = match open_regular(&path) {
            Ok(Some(file)) => file,
            Ok(None) => return Err(StoreError::NotAFile(path)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Loaded::default()),
            Err(e) => return Err(io_error(&path)(e)),
        };
        let bytes = read_to_limit(file, &path, deadline).await?;
        Ok(match serde_json::from_slice::<Vec<Session>>(&bytes) {
            Ok(sessions) => Loaded {
                sessions,
                corrupt: None,
            },
            Err(parse) => Loaded {
                sessions: Vec::new(),
                corrupt: Some(parse.to_string()),
            },
        })
    }

    /// Moves a corrupt store aside; the warning that says so.
    fn move_aside(&self, why: &str) -> Result<String, StoreError> {
        let millis = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        let aside = self.folder.join(format!("{FILE_NAME}.corrupt-{millis}"));
        std::fs::rename(self.path(), &aside).map_err(io_error(&self.path()))?;
        Ok(format!(
            "[phone-a-friend] session store {} could not be read ({why}); moved it to {} and started an empty one",
            self.path().display(),
            aside.display()
        ))
    }

    /// Runs `change` on the sessions under the store's lock and writes the result back
    /// atomically; what `change` returns comes back with any warning reading produced.
    pub async fn update<T>(
        &self,
        deadline: &Deadline,
        change: impl FnOnce(&mut Vec<Session>) -> T,
    ) -> Result<(T, Option<String>), StoreError> {
        self.make_folder()?;
        let _lock = self.lock(deadline).await?;
        // First, under the lock (no writer is mid-write then): an update that fails later (a
        // store it cannot read in time, a deadline) still clears what killed writers left.
        self.remove_stale_temps();
        let Loaded {
            mut sessions,
            corrupt,
        } = self.read(deadline).await?;
        let warning = corrupt.map(|why| self.move_aside(&why)).transpose()?;
        let result = change(&mut sessions);
        self.write(&sessions)?;
        Ok((result, warning))
    }

    /// The folder, made private: created `0700`, or narrowed to it when it is ours and others
    /// may look inside.
    fn make_folder(&self) -> Result<(), StoreError> {
        let folder = &self.folder;
        let metadata = match std::fs::metadata(folder) {
            Ok(metadata) => metadata,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let mut builder = std::fs::DirBuilder::new();
                builder.recursive(true);
                #[cfg(unix)]
                {
                    use std::os::unix::fs::DirBuilderExt;
                    builder.mode(FOLDER_MODE);
                }
                return builder.create(folder).map_err(io_error(folder));
            }
            Err(e) => return Err(io_error(folder)(e)),
        };
        if !metadata.is_dir() {
            return Err(StoreError::NotAFolder(folder.clone()));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            // SAFETY: geteuid has no preconditions and cannot fail.
            let ours = metadata.uid() == unsafe { libc::geteuid() };
            if ours && metadata.mode() & 0o077 != 0 {
                std::fs::set_permissions(folder, std::fs::Permissions::from_mode(FOLDER_MODE))
                    .map_err(io_error(folder))?;
            }
        }
        Ok(())
    }

    /// The exclusive lock, held until the returned file is dropped (closing it releases it).
    /// Opened without following a symbolic link (a dangling one would create its target) and
    /// without blocking; anything but a regular file is refused.
    async fn lock(&self, deadline: &Deadline) -> Result<File, StoreError> {
        let path = self.folder.join(LOCK_NAME);
        let not_a_file = || StoreError::NotAFile(path.clone());
        match std::fs::symlink_metadata(&path) {
            Ok(metadata) if !metadata.is_file() => return Err(not_a_file()),
            _ => {}
        }
        let mut options = OpenOptions::new();
        options.create(true).truncate(false).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
        }
        #[cfg(windows)]
        {
            use std::os::windows::fs::OpenOptionsExt;
            // A symbolic link or junction is opened as itself, and refused below as not a file.
            options.custom_flags(
                windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT,
            );
        }
        let file = options.open(&path).map_err(|e| {
            #[cfg(unix)]
            // A symbolic link, or a FIFO put in place since the look above.
            if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENXIO)) {
                return not_a_file();
            }
            io_error(&path)(e)
        })?;
        if !file.metadata().map_err(io_error(&path))?.is_file() {
            return Err(not_a_file());
        }
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(file),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(error)) => return Err(io_error(&path)(error)),
            }
            deadline
                .bound(tokio::time::sleep(LOCK_RETRY))
                .await
                .map_err(|stop| StoreError::Stopped(path.clone(), stop))?;
        }
    }

    /// Removes the temp files of writers killed mid-write (best effort: they only waste space).
    fn remove_stale_temps(&self) {
        let Ok(entries) = std::fs::read_dir(&self.folder) else {
            return;
        };
        for entry in entries.flatten() {
            let stale = entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX)
                && entry.file_type().is_ok_and(|t| t.is_file());
            if stale {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    /// A temp file in the same folder (so the rename is atomic), fsynced, renamed over the
    /// store, then the folder fsynced so the rename survives a crash.
    fn write(&self, sessions: &[Session]) -> Result<(), StoreError> {
        let path = self.path();
        let text = serde_json::to_string_pretty(sessions).map_err(|e| io_error(&path)(e.into()))?;
        let mut temp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .tempfile_in(&self.folder)
            .map_err(io_error(&self.folder))?;
        temp.write_all(text.as_bytes())
            .and_then(|()| temp.as_file().sync_all())
            .map_err(io_error(temp.path()))?;
        temp.persist(&path).map_err(|e| io_error(&path)(e.error))?;
        // Windows has no fsync of a folder: its rename is journaled by NTFS.
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let folder = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK)
                .open(&self.folder);
            if let Ok(folder) = folder {
                // Best effort: the data is already safe in the file.
                let _ = folder.sync_all();
            }
        }
        Ok(())
    }
}

/// A regular file's bytes, up to [`MAX_STORE_BYTES`], read in chunks between which the
/// deadline is checked and other tasks run.
async fn read_to_limit(
    mut file: File,
    path: &Path,
    deadline: &Deadline,
) -> Result<Vec<u8>, StoreError> {
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        deadline
            .check()
            .map_err(|stop| StoreError::Stopped(path.to_path_buf(), stop))?;
        match file.read(&mut chunk) {
            Ok(0) => return Ok(bytes),
            Ok(n) if bytes.len() + n > MAX_STORE_BYTES => {
                return Err(StoreError::TooLarge(path.to_path_buf()))
            }
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_error(path)(e)),
        }
        tokio::task::yield_now().await;
    }
}

/// Now, as the store writes times (`2026-11-23T16:30:00.123Z`).
pub fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deadline::Timeout;
    use tokio_util::sync::CancellationToken;

    fn deadline() -> Deadline {
        Deadline::starting_now(
            Timeout::from_seconds(10.0).expect("timeout"),
            CancellationToken::new(),
        )
    }

    fn session(label: &str) -> Session {
        Session {
            id: label.into(),
            backend: "ollama".into(),
            backend_session_id: None,
            repo_path: "/repo".into(),
            history: vec![],
            created_at: now(),
            last_used_at: now(),
        }
    }

    fn store_in(dir: &Path) -> Store {
        let env = Env::from([("PHONE_A_FRIEND_HOME".into(), dir.display().to_string())]);
        Store::from_env(&env).expect("store")
    }

    #[test]
    fn finds_its_folder_as_the_spec_says() {
        let env = |pairs: &[(&str, &str)]| -> Env {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let folder = |pairs: &[(&str, &str)]| Store::from_env(&env(pairs)).map(|s| s.folder);
        assert_eq!(
            folder(&[("PHONE_A_FRIEND_HOME", "/p"), ("XDG_CONFIG_HOME", "/x")]).ok(),
            Some(PathBuf::from("/p"))
        );
        assert_eq!(
            folder(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")]).ok(),
            Some(PathBuf::from("/x/phone-a-friend"))
        );
        assert_eq!(
            folder(&[("XDG_CONFIG_HOME", ""), ("HOME", "/h")]).ok(),
            Some(PathBuf::from("/h/.config/phone-a-friend"))
        );
        assert!(matches!(folder(&[]), Err(StoreError::NoHome)));
        // Windows: its home folder where HOME is unset, and names in any case.
        let profile = folder(&[("UserProfile", "/u")]).ok();
        let expected = cfg!(windows).then(|| PathBuf::from("/u/.config/phone-a-friend"));
        assert_eq!(profile, expected);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_updates_all_land() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store_in(dir.path());
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..50 {
            let store = store.clone();
            tasks.spawn(async move {
                store
                    .update(&deadline(), |sessions| {
                        sessions.push(session(&format!("s{i}")))
                    })
                    .await
                    .map(|_| ())
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.expect("task").expect("update");
        }
        assert_eq!(
            store.read(&deadline()).await.expect("read").sessions.len(),
            50
        );
    }

    #[tokio::test]
    async fn a_corrupt_store_is_moved_aside_with_a_warning() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store_in(dir.path());
        std::fs::write(store.path(), "{ not json").expect("write");
        let ((), warning) = store
            .update(&deadline(), |sessions| sessions.push(session("fresh")))
            .await
            .expect("update");
        assert!(warning.is_some_and(|w| w.contains("could not be read")));
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("list")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        assert!(
            names
                .iter()
                .any(|n| n.starts_with("sessions.json.corrupt-")),
            "{names:?}"
        );
        assert_eq!(
            store.read(&deadline()).await.expect("read").sessions[0].id,
            "fresh"
        );
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("list")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        names.sort();
        names
    }

    #[cfg(unix)]
    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo");
        assert!(status.success());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_fifo_in_the_store_is_refused_without_waiting() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store_in(dir.path());
        mkfifo(&store.path());
        let read = store.read(&deadline()).await;
        assert!(
            matches!(&read, Err(StoreError::NotAFile(p)) if *p == store.path()),
            "{read:?}"
        );
        let update = store.update(&deadline(), |_| ()).await;
        assert!(matches!(update, Err(StoreError::NotAFile(_))), "{update:?}");

        let dir = tempfile::tempdir().expect("dir");
        let store = store_in(dir.path());
        let lock = dir.path().join(LOCK_NAME);
        mkfifo(&lock);
        let update = store.update(&deadline(), |_| ()).await;
        assert!(
            matches!(&update, Err(StoreError::NotAFile(p)) if *p == lock),
            "{update:?}"
        );
    }

    #[cfg_attr(
        windows,
        ignore = "wine makes Unix symbolic links, which it does not report as reparse points"
    )]
    #[tokio::test]
    async fn the_lock_is_never_followed_through_a_symbolic_link() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store_in(dir.path());
        let target = dir.path().join("elsewhere");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&target, dir.path().join(LOCK_NAME)).expect("symlink");
        #[cfg(windows)]
        std::os::windows::fs::symlink_file(&target, dir.path().join(LOCK_NAME)).expect("symlink");
        let update = store.update(&deadline(), |_| ()).await;
        assert!(matches!(update, Err(StoreError::NotAFile(_))), "{update:?}");
        assert!(!target.exists(), "a dangling link's target was created");
    }

    #[tokio::test]
    async fn errors_name_the_file_or_folder_at_fault() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store_in(dir.path());
        std::fs::create_dir(dir.path().join(LOCK_NAME)).expect("mkdir");
        let update = store.update(&deadline(), |_| ()).await.map(|_| ());
        assert_eq!(
            update.map_err(|e| e.to_string()),
            Err(format!(
                "session store {} is not a regular file",
                dir.path().join(LOCK_NAME).display()
            ))
        );
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").expect("write");
        let store = store_in(&file);
        let update = store.update(&deadline(), |_| ()).await.map(|_| ());
        assert_eq!(
            update.map_err(|e| e.to_string()),
            Err(format!(
                "session store folder {} is not a folder",
                file.display()
            ))
        );
    }

    #[tokio::test]
    async fn a_store_of_invalid_utf8_is_moved_aside() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store_in(dir.path());
        std::fs::write(store.path(), b"[{\"id\": \"\xff\xfe\"}]").expect("write");
        let loaded = store.read(&deadline()).await.expect("read");
        assert!(loaded.sessions.is_empty());
        assert!(loaded.corrupt.is_some());
        let ((), warning) = store
            .update(&deadline(), |sessions| sessions.push(session("fresh")))
            .await
            .expect("update");
        assert!(warning.is_some_and(|w| w.contains("could not be read")));
        assert_eq!(
            store.read(&deadline()).await.expect("read").sessions[0].id,
            "fresh"
        );
    }

    #[tokio::test]
    async fn killed_writers_temp_files_are_removed_by_the_next_write() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store_in(dir.path());
        for name in [".sessions-AbCdEf", ".sessions-123456"] {
            std::fs::write(dir.path().join(name), "half a store").expect("write");
        }
        store
            .update(&deadline(), |sessions| sessions.push(session("s")))
            .await
            .expect("update");
        assert_eq!(names_in(dir.path()), ["sessions.json", "sessions.lock"]);
    }

    /// A killed writer's 28 MiB temp file used to stay when the updates after it failed before
    /// writing (a store they could not read in time): any update that takes the lock clears it.
    #[tokio::test]
    async fn killed_writers_temp_files_are_removed_by_an_update_that_then_fails() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store_in(dir.path());
        std::fs::write(dir.path().join(".sessions-AbCdEf"), "half a store").expect("write");
        std::fs::create_dir(dir.path().join("sessions.json")).expect("mkdir");
        let update = store.update(&deadline(), |_| ()).await;
        assert!(matches!(update, Err(StoreError::NotAFile(_))), "{update:?}");
        assert_eq!(names_in(dir.path()), ["sessions.json", "sessions.lock"]);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn the_folder_is_made_private() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().expect("dir");
        let folder = dir.path().join("home");
        std::fs::create_dir(&folder).expect("mkdir");
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let store = store_in(&folder);
        store.update(&deadline(), |_| ()).await.expect("update");
        let mode = std::fs::metadata(&folder).expect("stat").mode() & 0o777;
        assert_eq!(mode, 0o700);
        let fresh = dir.path().join("new").join("home");
        store_in(&fresh)
            .update(&deadline(), |_| ())
            .await
            .expect("update");
        assert_eq!(
            std::fs::metadata(&fresh).expect("stat").mode() & 0o777,
            0o700
        );
    }

    #[tokio::test]
    async fn a_held_lock_waits_no_longer_than_the_deadline_or_the_abort() {
        let dir = tempfile::tempdir().expect("dir");
        let store = store_in(dir.path());
        store.update(&deadline(), |_| ()).await.expect("update");
        let held = File::open(dir.path().join(LOCK_NAME)).expect("open");
        held.lock().expect("the lock, held by another open file");
        let short = Deadline::starting_now(
            Timeout::from_seconds(0.2).expect("timeout"),
            CancellationToken::new(),
        );
        let update = store.update(&short, |_| ()).await;
        assert!(
            matches!(update, Err(StoreError::Stopped(_, Stop::TimedOut))),
            "{update:?}"
        );
        let cancel = CancellationToken::new();
        let aborted = Deadline::starting_now(
            Timeout::from_seconds(60.0).expect("timeout"),
            cancel.clone(),
        );
        let waiting = tokio::spawn({
            let store = store.clone();
            async move { store.update(&aborted, |_| ()).await.map(|_| ()) }
        });
        tokio::task::yield_now().await;
        cancel.cancel();
        let update = waiting.await.expect("task");
        assert!(
            matches!(update, Err(StoreError::Stopped(_, Stop::Cancelled))),
            "{update:?}"
        );
        drop(held);
        store.update(&deadline(), |_| ()).await.expect("free again");
    }
}
