//! Sessions: a caller's label for a conversation with one backend in one repository, kept in
//! the [`store`]. Before a run the label is looked up and checked (its backend and repository
//! must match, ids are validated before they reach any argv); after a successful answer the
//! session is saved, and a save that fails is a warning, never a lost answer.
//!
//! Turns may overlap (two calls, or two processes, on one label): each is prepared from the
//! session as it was, and saved by changing the session as it is then, under the store's lock.
//! A replaying backend's exchange is appended to the history found at save time, so no turn is
//! lost. A native backend's conversation is the one the store names: a turn that began or
//! resumed another (its label was attached elsewhere while it ran) leaves the store as it is
//! and says so in a warning naming its own conversation, which `backendSession` can continue.

pub mod store;

use std::ffi::OsString;
use std::sync::{Arc, Mutex, PoisonError};

use unicode_general_category::{get_general_category, GeneralCategory};

use crate::deadline::Deadline;
use crate::errors::RelayError;
use crate::limits::MAX_PROMPT_BYTES;
use store::{Session, Store, StoreError, Turn};

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
    /// Said before the run: the label has nothing to continue, so this turn starts anew.
    pub notice: Option<String>,
    /// The backend the label belonged to, when another answered this turn (`fallback`).
    pub moved_from: Option<String>,
}

fn session_error(message: String) -> RelayError {
    RelayError::Session(message)
}

impl From<StoreError> for RelayError {
    fn from(error: StoreError) -> RelayError {
        session_error(error.to_string())
    }
}

/// Whether `c` prints as itself: not a control, format (bidi overrides, zero-width spaces, a
/// soft hyphen, a byte order mark), surrogate, private-use or unassigned character, nor a space
/// or separator. A label is shown to people (`sessions list`): it must read as what it is.
fn visible(c: char) -> bool {
    !c.is_whitespace()
        && !matches!(
            get_general_category(c),
            GeneralCategory::Control
                | GeneralCategory::Format
                | GeneralCategory::Surrogate
                | GeneralCategory::PrivateUse
                | GeneralCategory::Unassigned
                | GeneralCategory::SpaceSeparator
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
        )
}

/// `id` with every character that does not print as itself written as `\u{…}`.
fn escaped(id: &str) -> String {
    id.chars()
        .map(|c| match c {
            '"' | '\\' => c.escape_default().to_string(),
            c if visible(c) => c.to_string(),
            c => c.escape_unicode().to_string(),
        })
        .collect()
}

/// A label or id that may reach an argv: visible characters, no leading `-` (it would read as a
/// flag), not too long.
pub fn check_id(what: &str, id: &str) -> Result<(), RelayError> {
    let bad = id.is_empty()
        || id.starts_with('-')
        || id.chars().count() > MAX_ID_CHARS
        || !id.chars().all(visible);
    if bad {
        return Err(session_error(format!(
            "Invalid {what} \"{}\": expected 1 to {MAX_ID_CHARS} printable characters without spaces, not starting with '-'",
            escaped(id)
        )));
    }
    Ok(())
}

/// A session the store has may be used only by its backend in its repository, and attached to
/// no other backend session than its own.
fn check_existing(
    session: &Session,
    adopted: Option<&str>,
    user: User<'_>,
) -> Result<(), RelayError> {
    let User {
        backend, repo_path, ..
    } = user;
    let label = &session.id;
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
    Ok(())
}

/// Who would use a session: a backend, which continues conversations its own way, in a
/// repository.
#[derive(Debug, Clone, Copy)]
pub struct User<'a> {
    pub backend: &'a str,
    pub strategy: ResumeStrategy,
    pub repo_path: &'a str,
}

/// Looks `label` up and checks it may be used by `user` (and `adopted`, the backend's own
/// session id, with it); reading the store is bounded by `deadline`.
pub async fn prepare(
    deadline: &Deadline,
    store: Store,
    label: Option<&str>,
    adopted: Option<&str>,
    user: User<'_>,
) -> Result<Option<Pending>, RelayError> {
    let User {
        backend,
        strategy,
        repo_path,
    } = user;
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
    let loaded = store.read(deadline).await?;
    let existing = loaded.sessions.into_iter().find(|s| s.id == label);
    if let Some(session) = &existing {
        check_existing(session, adopted, user)?;
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
    Ok(Some(Pending {
        moved_from: None,
        notice: existing
            .as_ref()
            .filter(|_| adopted.is_none())
            .and_then(nothing_to_continue),
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
    }))
}

/// What a label's turn says before it runs when the session has nothing to continue.
fn nothing_to_continue(session: &Session) -> Option<String> {
    (!session.continuable()).then(|| {
        format!(
            "[phone-a-friend] session {} has nothing to continue ({} reported no session id of its \
             own when it was saved): this turn starts a new conversation",
            session.id, session.backend
        )
    })
}

/// The turns that fit beside a prompt of `prompt_bytes` within `limit` (the saved store keeps
/// `MAX_PROMPT_BYTES`; a call, its own limit): the oldest go
/// first, a user turn with the answer that followed it.
pub fn fit_history(history: &[Turn], prompt_bytes: usize, limit: usize) -> Vec<Turn> {
    let room = limit.saturating_sub(prompt_bytes);
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
    /// This turn as `backend` answered it, the label's own backend having failed (`fallback`):
    /// saved, the label moves to `backend`, whose conversation `turn` began.
    pub fn moved_to(self, backend: &str, strategy: ResumeStrategy, turn: SessionTurn) -> Pending {
        Pending {
            moved_from: Some(self.backend.clone()),
            backend: backend.to_string(),
            strategy,
            turn,
            ..self
        }
    }

    /// Saves this turn into the session as the store has it now, under its lock and within
    /// `deadline`; what to warn about (a new label, a store moved aside, a turn the store could
    /// not keep, a save that failed: the answer is returned regardless).
    pub async fn save(&self, prompt: &str, answer: &str, deadline: &Deadline) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.existing.is_none() {
            warnings.push(format!(
                "[phone-a-friend] new session {} ({} in {})",
                self.label, self.backend, self.repo_path
            ));
        }
        let used = self
            .turn
            .reported
            .get()
            .or_else(|| self.turn.resume.clone());
        if self.strategy == ResumeStrategy::NativeSession && used.is_none() {
            warnings.push(format!(
                "[phone-a-friend] {} reported no session id: session {} is kept, but its next turn \
                 cannot continue this conversation",
                self.backend, self.label
            ));
        }
        let exchange = match self.strategy {
            ResumeStrategy::TranscriptReplay => vec![
                Turn {
                    role: "user".into(),
                    content: prompt.to_string(),
                },
                Turn {
                    role: "assistant".into(),
                    content: answer.to_string(),
                },
            ],
            _ => Vec::new(),
        };
        let saved = self
            .store
            .update(deadline, |sessions| self.merge(sessions, exchange))
            .await;
        match saved {
            Ok((not_kept, moved_aside)) => warnings.extend(moved_aside.into_iter().chain(not_kept)),
            Err(e) => warnings.push(format!(
                "[phone-a-friend] the answer is returned, but session {} was not saved: {e}",
                self.label
            )),
        }
        warnings
    }

    /// This turn merged into `sessions` as they are now; a warning when the store cannot keep
    /// it as it is.
    fn merge(&self, sessions: &mut Vec<Session>, exchange: Vec<Turn>) -> Option<String> {
        let now = store::now();
        // The conversation this turn used: the one the backend reported, else the one resumed.
        let used = self
            .turn
            .reported
            .get()
            .or_else(|| self.turn.resume.clone());
        let Some(current) = sessions.iter_mut().find(|s| s.id == self.label) else {
            sessions.push(Session {
                id: self.label.clone(),
                backend: self.backend.clone(),
                backend_session_id: used,
                repo_path: self.repo_path.clone(),
                history: fit_history(&exchange, 0, MAX_PROMPT_BYTES),
                created_at: now.clone(),
                last_used_at: now,
            });
            return None;
        };
        if let Some(from) = self
            .moved_from
            .as_ref()
            .filter(|from| **from == current.backend)
        {
            current.backend = self.backend.clone();
            current.backend_session_id = used;
            current.history = fit_history(&exchange, 0, MAX_PROMPT_BYTES);
            current.last_used_at = now;
            return Some(format!(
                "[phone-a-friend] session {} moved from {from} to {} (fallback): {} did not see its earlier turns",
                self.label, self.backend, self.backend
            ));
        }
        if current.backend != self.backend || current.repo_path != self.repo_path {
            return Some(format!(
                "[phone-a-friend] session {} was given to {} in {} while this turn ran; this turn is not kept in it",
                self.label, current.backend, current.repo_path
            ));
        }
        let mut warning = None;
        match (current.backend_session_id.as_ref(), used) {
            (_, None) => {}
            (Some(stored), Some(used)) if *stored == used => {}
            // Unchanged since this turn began (or never attached): this turn's is the one.
            (stored, Some(used)) if stored.is_none() || stored == self.turn.resume.as_ref() => {
                current.backend_session_id = Some(used);
            }
            (Some(stored), Some(used)) => {
                warning = Some(format!(
                    "[phone-a-friend] session {} was attached to {} session {stored} while this turn ran; this turn's session {used} is not kept in it (continue it with backendSession: {used})",
                    self.label, self.backend
                ));
            }
            (None, Some(_)) => {}
        }
        current.history.extend(exchange);
        current.history = fit_history(&current.history, 0, MAX_PROMPT_BYTES);
        current.last_used_at = now;
        warning
    }
}

/// Every session in the store (a corrupt store reads as empty; the next save moves it aside).
pub async fn list(store: &Store, deadline: &Deadline) -> Result<Vec<Session>, RelayError> {
    Ok(store.read(deadline).await?.sessions)
}

/// Removes the session `label`; whether there was one.
pub async fn delete(store: &Store, label: &str, deadline: &Deadline) -> Result<bool, RelayError> {
    let (removed, _) = store
        .update(deadline, |sessions| {
            let before = sessions.len();
            sessions.retain(|s| s.id != label);
            sessions.len() != before
        })
        .await?;
    Ok(removed)
}
/// Removes the sessions last used more than `days` ago; their labels. A session whose time
/// cannot be read is kept.
pub async fn prune(
    store: &Store,
    days: f64,
    deadline: &Deadline,
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
        .await?;
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
        for invisible in [
            "a\u{202e}b",
            "a\u{200b}b",
            "\u{feff}a",
            "so\u{ad}ft",
            "\u{2066}a",
            "a\u{1b}[31m",
            "a\u{7}",
            "a\u{a0}b",
            "a\u{e000}",
        ] {
            let refused = check_id("session label", invisible);
            assert!(refused.is_err(), "{invisible:?}");
            // The message shows the label escaped, never raw.
            let message = format!("{refused:?}");
            assert!(!message.contains(invisible), "{message}");
        }
        for good in [
            "naïve-café",
            "レビュー",
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
        assert_eq!(fit_history(&history, 10_000, MAX_PROMPT_BYTES), history);
        assert_eq!(
            fit_history(&history, 300_000, MAX_PROMPT_BYTES),
            history[2..].to_vec()
        );
        assert!(fit_history(&history, 400_000, MAX_PROMPT_BYTES).is_empty());
    }

    fn deadline() -> Deadline {
        Deadline::starting_now(
            crate::deadline::Timeout::from_seconds(10.0).expect("timeout"),
            tokio_util::sync::CancellationToken::new(),
        )
    }

    async fn pending(home: &std::path::Path, strategy: ResumeStrategy) -> Pending {
        let env = crate::env::Env::from([(
            "PHONE_A_FRIEND_HOME".to_string(),
            home.display().to_string(),
        )]);
        let store = Store::from_env(&env).expect("store");
        prepare(
            &deadline(),
            store,
            Some("talk"),
            None,
            User {
                backend: "b",
                strategy,
                repo_path: "/repo",
            },
        )
        .await
        .expect("prepare")
        .expect("a session")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn overlapping_turns_of_a_replay_are_all_kept() {
        let home = tempfile::tempdir().expect("dir");
        let first = pending(home.path(), ResumeStrategy::TranscriptReplay).await;
        first.save("q0", "a0", &deadline()).await;
        // 20 turns prepared from the same one-exchange history, saved at once.
        let mut turns = Vec::new();
        for _ in 0..20 {
            turns.push(pending(home.path(), ResumeStrategy::TranscriptReplay).await);
        }
        assert!(turns.iter().all(|t| t.turn.history.len() == 2));
        let mut saves = tokio::task::JoinSet::new();
        for (i, turn) in turns.into_iter().enumerate() {
            saves.spawn(async move {
                turn.save(&format!("q{}", i + 1), &format!("a{}", i + 1), &deadline())
                    .await
            });
        }
        while let Some(warnings) = saves.join_next().await {
            assert_eq!(warnings.expect("task"), Vec::<String>::new());
        }
        let sessions = list(&first.store, &deadline()).await.expect("list");
        let history = &sessions[0].history;
        assert_eq!(history.len(), 42);
        let mut questions: Vec<&str> = history
            .iter()
            .filter(|t| t.role == "user")
            .map(|t| t.content.as_str())
            .collect();
        questions.sort_by_key(|q| q[1..].parse::<u32>().unwrap_or(u32::MAX));
        let expected: Vec<String> = (0..=20).map(|i| format!("q{i}")).collect();
        assert_eq!(questions, expected);
    }

    #[tokio::test]
    async fn a_native_turn_that_began_another_conversation_is_not_lost_silently() {
        let home = tempfile::tempdir().expect("dir");
        // Two first turns at once, each starting a conversation of its own.
        let one = pending(home.path(), ResumeStrategy::NativeSession).await;
        let two = pending(home.path(), ResumeStrategy::NativeSession).await;
        one.turn.reported.set("conv-1");
        two.turn.reported.set("conv-2");
        let new = "[phone-a-friend] new session talk (b in /repo)".to_string();
        assert_eq!(
            one.save("q1", "a1", &deadline()).await,
            std::slice::from_ref(&new)
        );
        assert_eq!(
            two.save("q2", "a2", &deadline()).await,
            [
                new,
                "[phone-a-friend] session talk was attached to b session conv-1 while this turn ran; this turn's session conv-2 is not kept in it (continue it with backendSession: conv-2)".to_string()
            ]
        );
        // The next turn resumes the kept one; the store follows the id the backend reports.
        let three = pending(home.path(), ResumeStrategy::NativeSession).await;
        assert_eq!(three.turn.resume.as_deref(), Some("conv-1"));
        three.turn.reported.set("conv-3");
        assert_eq!(
            three.save("q3", "a3", &deadline()).await,
            Vec::<String>::new()
        );
        let sessions = list(&three.store, &deadline()).await.expect("list");
        assert_eq!(sessions[0].backend_session_id.as_deref(), Some("conv-3"));
    }
}
