//! The session store (SPEC 12): `sessions.json`, a JSON array in upstream's format, in
//! `PHONE_A_FRIEND_HOME`, else `$XDG_CONFIG_HOME/phone-a-friend` (empty counts as unset), else
//! `~/.config/phone-a-friend`, all read from the call's environment.
//!
//! No update is ever lost: every change takes an exclusive `flock` on `sessions.lock` beside
//! it, reads the file, changes it and writes it back atomically (a temp file, fsync, rename,
//! fsync of the folder), so a reader never sees half a file and a writer never overwrites
//! another's change. Waiting for the lock never blocks a thread: a non-blocking attempt, then a
//! short async sleep, bounded by the caller's deadline. A file that cannot be parsed is moved
//! aside (`sessions.json.corrupt-<time>`) with a warning, never silently emptied.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::backend::Env;
use crate::deadline::{Deadline, Stop};

const FILE_NAME: &str = "sessions.json";
const LOCK_NAME: &str = "sessions.lock";
/// Largest store read: far more than any real one (each session's history is bounded).
const MAX_STORE_BYTES: u64 = 256 * 1024 * 1024;
const LOCK_RETRY: Duration = Duration::from_millis(5);

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
    #[error("session store {0} is larger than {MAX_STORE_BYTES} bytes")]
    TooLarge(PathBuf),
    #[error("waiting for the session store's lock: {0:?}")]
    Stopped(Stop),
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

fn non_empty<'a>(env: &'a Env, name: &str) -> Option<&'a str> {
    env.get(name).map(String::as_str).filter(|v| !v.is_empty())
}

impl Store {
    pub fn from_env(env: &Env) -> Result<Store, StoreError> {
        let folder = if let Some(home) = non_empty(env, "PHONE_A_FRIEND_HOME") {
            PathBuf::from(home)
        } else if let Some(config) = non_empty(env, "XDG_CONFIG_HOME") {
            Path::new(config).join("phone-a-friend")
        } else if let Some(home) = non_empty(env, "HOME") {
            Path::new(home).join(".config").join("phone-a-friend")
        } else {
            return Err(StoreError::NoHome);
        };
        Ok(Store { folder })
    }

    pub fn path(&self) -> PathBuf {
        self.folder.join(FILE_NAME)
    }

    fn io(&self, source: io::Error) -> StoreError {
        StoreError::Io {
            path: self.path(),
            source,
        }
    }

    /// Every session, as the last completed write left them (no lock needed: writes are
    /// atomic renames). A corrupt file is moved aside.
    pub fn read(&self) -> Result<Loaded, StoreError> {
        let mut text = String::new();
        match File::open(self.path()) {
            Ok(file) => {
                let read = file
                    .take(MAX_STORE_BYTES + 1)
                    .read_to_string(&mut text)
                    .map_err(|e| self.io(e))?;
                if read as u64 > MAX_STORE_BYTES {
                    return Err(StoreError::TooLarge(self.path()));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Loaded::default()),
            Err(e) => return Err(self.io(e)),
        }
        Ok(match serde_json::from_str::<Vec<Session>>(&text) {
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
        std::fs::rename(self.path(), &aside).map_err(|e| self.io(e))?;
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
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.folder)
            .map_err(|e| self.io(e))?;
        let _lock = self.lock(deadline).await?;
        let Loaded {
            mut sessions,
            corrupt,
        } = self.read()?;
        let warning = corrupt.map(|why| self.move_aside(&why)).transpose()?;
        let result = change(&mut sessions);
        self.write(&sessions)?;
        Ok((result, warning))
    }

    /// The exclusive lock, held until the returned file is dropped (closing it releases it).
    async fn lock(&self, deadline: &Deadline) -> Result<File, StoreError> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(self.folder.join(LOCK_NAME))
            .map_err(|e| self.io(e))?;
        loop {
            // SAFETY: flock on a descriptor this function owns; it does not wait (LOCK_NB).
            let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if locked == 0 {
                return Ok(file);
            }
            let error = io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(self.io(error));
            }
            deadline
                .bound(tokio::time::sleep(LOCK_RETRY))
                .await
                .map_err(StoreError::Stopped)?;
        }
    }

    /// A temp file in the same folder (so the rename is atomic), fsynced, renamed over the
    /// store, then the folder fsynced so the rename survives a crash.
    fn write(&self, sessions: &[Session]) -> Result<(), StoreError> {
        let text = serde_json::to_string_pretty(sessions).map_err(|e| self.io(e.into()))?;
        let mut temp = tempfile::Builder::new()
            .prefix(".sessions-")
            .tempfile_in(&self.folder)
            .map_err(|e| self.io(e))?;
        temp.write_all(text.as_bytes())
            .and_then(|()| temp.as_file().sync_all())
            .map_err(|e| self.io(e))?;
        temp.persist(self.path()).map_err(|e| self.io(e.error))?;
        if let Ok(folder) = File::open(&self.folder) {
            // Best effort: the data is already safe in the file.
            let _ = folder.sync_all();
        }
        Ok(())
    }
}

/// Now, as the store writes times (`2026-11-23T16:30:00.123Z`).
pub fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Timeout;
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
        assert_eq!(store.read().expect("read").sessions.len(), 50);
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
        assert_eq!(store.read().expect("read").sessions[0].id, "fresh");
    }
}
