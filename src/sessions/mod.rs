//! Sessions (SPEC 12): a caller's label for a conversation with one backend in one repository,
//! kept in the [`store`]. Before a run the label is looked up and checked (its backend and
//! repository must match, ids are validated before they reach any argv); after a successful
//! answer the session is saved, and a save that fails is a warning, never a lost answer.

pub mod store;

use std::ffi::OsString;
use std::sync::{Arc, Mutex, PoisonError};

use crate::errors::RelayError;
use crate::limits::MAX_PROMPT_BYTES;
use store::{Session, Store, Turn};

/// How a backend continues a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeStrategy {
    /// The backend keeps the conversation under its own id.
    NativeSession,
    /// The earlier turns are sent again with the new prompt.
    TranscriptReplay,
    /// It cannot: a `session` is refused with `ERR_SESSION`.
    Unsupported,
}

/// Longest label or backend session id accepted.
const MAX_ID_CHARS: usize = 256;

/// What a run in a session gets: the turns to replay, the backend's session to continue, and
/// where the backend reports the id of the session it used.
#[derive(Debug, Clone, Default)]
pub struct SessionTurn {
    /// Earlier turns, oldest first, trimmed to fit beside the new prompt (replaying backends).
    pub history: Vec<Turn>,
    /// The backend's own session id to continue (native backends); `None` starts one.
    pub resume: Option<String>,
    pub reported: ReportedId,
}

impl PartialEq for SessionTurn {
    fn eq(&self, other: &SessionTurn) -> bool {
        self.history == other.history && self.resume == other.resume
    }
}

/// The backend's session id as the backend reported it during the run.
#[derive(Debug, Clone, Default)]
pub struct ReportedId(Arc<Mutex<Option<String>>>);

impl ReportedId {
    pub fn set(&self, id: impl Into<String>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(id.into());
    }

    pub fn get(&self) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The flags of a CLI whose sessions are named by a UUID the caller picks (gemini, claude):
/// `<resume_flag> <id>` to continue, else `--session-id <new UUID>`, the new id reported.
pub fn uuid_session_flags(session: Option<&SessionTurn>, resume_flag: &str) -> Vec<OsString> {
    let Some(session) = session else {
        return Vec::new();
    };
    match &session.resume {
        Some(id) => vec![resume_flag.into(), id.into()],
        None => {
            let id = uuid::Uuid::new_v4().to_string();
            session.reported.set(id.as_str());
            vec!["--session-id".into(), id.into()]
        }
    }
}

/// A session about to be used, checked against the store.
#[derive(Debug, Clone)]
pub struct Pending {
    pub store: Store,
    pub label: String,
    pub backend: String,
    pub repo_path: String,
    pub strategy: ResumeStrategy,
    /// The session as the store had it; `None`: a new label.
    pub existing: Option<Session>,
    pub turn: SessionTurn,
}

fn session_error(message: String) -> RelayError {
    RelayError::Session(message)
}

/// A label or id that may reach an argv: printable, no leading `-` (it would read as a flag),
/// not too long.
pub fn check_id(what: &str, id: &str) -> Result<(), RelayError> {
    let bad = id.is_empty()
        || id.starts_with('-')
        || id.chars().count() > MAX_ID_CHARS
        || id.chars().any(|c| c.is_control() || c.is_whitespace());
    if bad {
        return Err(session_error(format!(
            "Invalid {what} {id:?}: expected 1 to {MAX_ID_CHARS} printable characters without spaces, not starting with '-'"
        )));
    }
    Ok(())
}

/// Looks `label` up and checks it may be used by `backend` in `repo_path` (SPEC 12).
pub fn prepare(
    store: Store,
    label: Option<&str>,
    adopted: Option<&str>,
    backend: &str,
    strategy: ResumeStrategy,
    repo_path: &str,
) -> Result<Option<Pending>, RelayError> {
    if let Some(id) = adopted {
        check_id("backend session id", id)?;
        if strategy != ResumeStrategy::NativeSession {
            return Err(session_error(format!(
                "Backend {backend} has no sessions of its own to attach to (backendSession)"
            )));
        }
    }
    let Some(label) = label else {
        return Ok(None);
    };
    check_id("session label", label)?;
    if strategy == ResumeStrategy::Unsupported {
        return Err(session_error(format!(
            "Backend {backend} cannot resume a session"
        )));
    }
    let loaded = store.read().map_err(|e| session_error(e.to_string()))?;
    let existing = loaded.sessions.into_iter().find(|s| s.id == label);
    if let Some(session) = &existing {
        if session.backend != backend || session.repo_path != repo_path {
            return Err(session_error(format!(
                "Session {label} belongs to backend {} in {}; it cannot be used with {backend} in {repo_path}",
                session.backend, session.repo_path
            )));
        }
        if let (Some(adopted), Some(known)) = (adopted, &session.backend_session_id) {
            if adopted != known {
                return Err(session_error(format!(
                    "Session {label} is already attached to {backend} session {known}, not {adopted}"
                )));
            }
        }
    }
    let resume = adopted
        .map(str::to_string)
        .or_else(|| existing.as_ref().and_then(|s| s.backend_session_id.clone()));
    // The store is a file anyone with the account can edit: its ids are checked like the caller's.
    if let Some(id) = &resume {
        check_id("backend session id", id)?;
    }
    let history = match strategy {
        ResumeStrategy::TranscriptReplay => existing
            .as_ref()
            .map(|s| s.history.clone())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let pending = Pending {
        store,
        label: label.to_string(),
        backend: backend.to_string(),
        repo_path: repo_path.to_string(),
        strategy,
        existing,
        turn: SessionTurn {
            history,
            resume,
            reported: ReportedId::default(),
        },
    };
    Ok(Some(pending))
}

/// The turns that fit beside a prompt of `prompt_bytes` within `MAX_PROMPT_BYTES`: the oldest go
/// first, a user turn with the answer that followed it.
pub fn fit_history(history: &[Turn], prompt_bytes: usize) -> Vec<Turn> {
    let room = MAX_PROMPT_BYTES.saturating_sub(prompt_bytes);
    let mut used = 0;
    let mut start = history.len();
    // Whole exchanges from the newest back.
    for (index, pair) in history.rchunks(2).enumerate() {
        let size: usize = pair.iter().map(|t| t.content.len()).sum();
        if used + size > room {
            break;
        }
        used += size;
        start = history.len().saturating_sub((index + 1) * 2).min(start);
    }
    history[start..].to_vec()
}

impl Pending {
    /// The session after a successful answer: the backend's id, the new exchange (for a replay,
    /// bounded as a replay would be), the time.
    fn updated(&self, prompt: &str, answer: &str) -> Session {
        let now = store::now();
        let mut history = self.turn.history.clone();
        if self.strategy == ResumeStrategy::TranscriptReplay {
            history.push(Turn {
                role: "user".into(),
                content: prompt.to_string(),
            });
            history.push(Turn {
                role: "assistant".into(),
                content: answer.to_string(),
            });
            history = fit_history(&history, 0);
        }
        Session {
            id: self.label.clone(),
            backend: self.backend.clone(),
            backend_session_id: self
                .turn
                .reported
                .get()
                .or_else(|| self.turn.resume.clone()),
            repo_path: self.repo_path.clone(),
            history,
            created_at: self
                .existing
                .as_ref()
                .map_or_else(|| now.clone(), |s| s.created_at.clone()),
            last_used_at: now,
        }
    }

    /// Saves the session; what to warn about (a new label, a store moved aside, a save that
    /// failed: the answer is returned regardless).
    pub async fn save(
        &self,
        prompt: &str,
        answer: &str,
        deadline: &crate::deadline::Deadline,
    ) -> Vec<String> {
        let session = self.updated(prompt, answer);
        let mut warnings = Vec::new();
        if self.existing.is_none() {
            warnings.push(format!(
                "[phone-a-friend] new session {} ({} in {})",
                self.label, self.backend, self.repo_path
            ));
        }
        let saved = self
            .store
            .update(deadline, |sessions| {
                sessions.retain(|s| s.id != session.id);
                sessions.push(session);
            })
            .await;
        match saved {
            Ok(((), warning)) => warnings.extend(warning),
            Err(e) => warnings.push(format!(
                "[phone-a-friend] the answer is returned, but session {} was not saved: {e}",
                self.label
            )),
        }
        warnings
    }
}

/// Every session in the store (a corrupt store reads as empty; the next save moves it aside).
pub fn list(store: &Store) -> Result<Vec<Session>, RelayError> {
    store
        .read()
        .map(|loaded| loaded.sessions)
        .map_err(|e| session_error(e.to_string()))
}

/// Removes the session `label`; whether there was one.
pub async fn delete(
    store: &Store,
    label: &str,
    deadline: &crate::deadline::Deadline,
) -> Result<bool, RelayError> {
    let (removed, _) = store
        .update(deadline, |sessions| {
            let before = sessions.len();
            sessions.retain(|s| s.id != label);
            sessions.len() != before
        })
        .await
        .map_err(|e| session_error(e.to_string()))?;
    Ok(removed)
}

/// Removes the sessions last used more than `days` ago; their labels. A session whose time
/// cannot be read is kept.
pub async fn prune(
    store: &Store,
    days: f64,
    deadline: &crate::deadline::Deadline,
) -> Result<Vec<String>, RelayError> {
    if !(days.is_finite() && days >= 0.0) {
        return Err(session_error(format!(
            "Invalid age {days}: expected a number of days, 0 or more"
        )));
    }
    let age = std::time::Duration::try_from_secs_f64(days * 86_400.0)
        .map_err(|e| session_error(format!("Invalid age {days}: {e}")))?;
    let cutoff = std::time::SystemTime::now()
        .checked_sub(age)
        .unwrap_or(std::time::UNIX_EPOCH);
    let (removed, _) = store
        .update(deadline, |sessions| {
            let mut removed = Vec::new();
            sessions.retain(|s| {
                let old =
                    humantime::parse_rfc3339_weak(&s.last_used_at).is_ok_and(|used| used < cutoff);
                if old {
                    removed.push(s.id.clone());
                }
                !old
            });
            removed
        })
        .await
        .map_err(|e| session_error(e.to_string()))?;
    Ok(removed)
}

/// After a resumed turn: the backend must have continued the session it was asked to. A CLI
/// that resumed another conversation, or silently started a fresh one, reports an id of its
/// own; its answer would be out of context, so it is refused and the session is not saved.
/// A backend that reports no id on a resumed turn cannot be checked, and is taken at its word.
pub fn check_resumed(label: &str, turn: &SessionTurn) -> Result<(), RelayError> {
    let (Some(asked), Some(reported)) = (&turn.resume, turn.reported.get()) else {
        return Ok(());
    };
    if *asked == reported {
        return Ok(());
    }
    Err(session_error(format!(
        "Session {label} continues backend session {asked}, but the backend reported session {reported}: its answer is not returned and the session is not saved"
    )))
}

#[cfg(test)]
mod check_resumed_tests {
    use super::*;

    fn resumed(asked: Option<&str>, reported: Option<&str>) -> SessionTurn {
        let turn = SessionTurn {
            resume: asked.map(str::to_string),
            ..SessionTurn::default()
        };
        if let Some(id) = reported {
            turn.reported.set(id);
        }
        turn
    }

    #[test]
    fn a_resumed_turn_must_report_the_session_it_was_asked_to_continue() {
        assert!(check_resumed("talk", &resumed(Some("thread-1"), Some("thread-1"))).is_ok());
        // A new session reports whatever id it got.
        assert!(check_resumed("talk", &resumed(None, Some("thread-9"))).is_ok());
        assert!(check_resumed("talk", &resumed(None, None)).is_ok());
        // Nothing reported: nothing to compare.
        assert!(check_resumed("talk", &resumed(Some("thread-1"), None)).is_ok());
        let err = check_resumed("talk", &resumed(Some("thread-1"), Some("thread-2")))
            .expect_err("another session");
        assert_eq!(err.code(), "ERR_SESSION");
        let message = err.to_string();
        for part in ["talk", "thread-1", "thread-2"] {
            assert!(message.contains(part), "{message}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(role: &str, size: usize) -> Turn {
        Turn {
            role: role.into(),
            content: "x".repeat(size),
        }
    }

    #[test]
    fn ids_that_could_be_flags_or_break_argv_are_refused() {
        for bad in [
            "",
            "-r",
            "--resume",
            "a b",
            "a\nb",
            "a\0b",
            &"x".repeat(257),
        ] {
            assert!(check_id("id", bad).is_err(), "{bad:?}");
        }
        for good in [
            "review-1",
            "ses_df6f71169ffefsa",
            "0b9c1e2a-7f0e-4c52-9a7e-1f0f3c6b8f21",
        ] {
            assert!(check_id("id", good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn the_oldest_exchanges_go_first_to_fit_the_prompt_limit() {
        let history = vec![
            turn("user", 200_000),
            turn("assistant", 100_000),
            turn("user", 100_000),
            turn("assistant", 50_000),
        ];
        assert_eq!(fit_history(&history, 10_000), history);
        assert_eq!(fit_history(&history, 300_000), history[2..].to_vec());
        assert!(fit_history(&history, 400_000).is_empty());
    }
}
