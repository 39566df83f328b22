//! The tasks of one MCP connection (docs/MCP.md, "Tasks"): a relay or review run in the
//! background, polled by the client, kept for a bounded time and size once it ends.
//!
//! Pure bookkeeping: the caller passes the time (so the bounds can be tested without waiting)
//! and runs the work; the store hands out each task's cancellation token and says when it ends.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The bounds of a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    /// Tasks whose backend may still run; one more is refused.
    pub running: usize,
    /// Ended tasks kept for the client to fetch; past that the oldest is dropped.
    pub kept: usize,
    /// Bytes of results (their JSON) kept; past that the oldest ended task is dropped.
    pub kept_bytes: usize,
    /// Retention when the client asks none.
    pub default_ttl: Duration,
    /// The longest retention a client can ask.
    pub max_ttl: Duration,
    /// An ended task is kept at least this long after its end (or its ttl, if shorter), even
    /// when its ttl from creation has passed: a relay may outlast the ttl asked.
    pub keep_after_end: Duration,
    /// The polling interval suggested to clients.
    pub poll_interval: Duration,
}

/// The server's bounds (docs/MCP.md, "Tasks").
pub const TASK_LIMITS: TaskLimits = TaskLimits {
    running: 4,
    kept: 32,
    kept_bytes: 16 * 1024 * 1024,
    default_ttl: Duration::from_secs(15 * 60),
    max_ttl: Duration::from_secs(60 * 60),
    keep_after_end: Duration::from_secs(60),
    poll_interval: Duration::from_secs(1),
};

/// A task's state, as the 2025-11-25 specification names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    Working,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    pub fn is_terminal(self) -> bool {
        self != TaskStatus::Working
    }
}

/// How a task's work ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskOutcome {
    /// The request's result (a `CallToolResult`, `isError` or not).
    Completed(Value),
    /// The JSON-RPC error the request would have been answered with.
    Failed(Value),
}

impl TaskOutcome {
    fn bytes(&self) -> usize {
        match self {
            TaskOutcome::Completed(value) | TaskOutcome::Failed(value) => {
                serde_json::to_vec(value).map_or(0, |json| json.len())
            }
        }
    }
}

/// What a client is told about a task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSnapshot {
    pub id: String,
    pub status: TaskStatus,
    pub status_message: Option<String>,
    pub created_at: SystemTime,
    pub last_updated_at: SystemTime,
    /// Retention from creation.
    pub ttl: Duration,
    pub poll_interval: Duration,
}

impl TaskSnapshot {
    /// The `Task` object of the 2025-11-25 specification.
    pub fn to_json(&self) -> Value {
        let mut task = json!({
            "taskId": self.id,
            "status": self.status.as_str(),
            "createdAt": humantime::format_rfc3339_millis(self.created_at).to_string(),
            "lastUpdatedAt": humantime::format_rfc3339_millis(self.last_updated_at).to_string(),
            "ttl": millis(self.ttl),
            "pollInterval": millis(self.poll_interval),
        });
        if let (Some(message), Some(task)) = (&self.status_message, task.as_object_mut()) {
            task.insert("statusMessage".into(), Value::String(message.clone()));
        }
        task
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Why a task was not created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskRefused {
    #[error("{running} tasks are running, the server's limit: wait for one to end, or cancel one (tasks/cancel), then ask again")]
    Busy { running: usize },
}

/// Why a task was not cancelled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CancelRefused {
    #[error("no task {0} (unknown, or dropped after its ttl)")]
    Unknown(String),
    #[error("task {id} already ended ({})", status.as_str())]
    Ended { id: String, status: TaskStatus },
}

struct Entry {
    id: String,
    status: TaskStatus,
    status_message: Option<String>,
    created: Instant,
    created_at: SystemTime,
    updated: Instant,
    ttl: Duration,
    /// When its status became terminal.
    ended: Option<Instant>,
    /// Whether its work returned (its backend is gone): until then it counts as running.
    settled: bool,
    outcome: Option<TaskOutcome>,
    bytes: usize,
    cancel: CancellationToken,
    done: watch::Sender<bool>,
}

impl Entry {
    fn snapshot(&self, limits: &TaskLimits) -> TaskSnapshot {
        TaskSnapshot {
            id: self.id.clone(),
            status: self.status,
            status_message: self.status_message.clone(),
            created_at: self.created_at,
            last_updated_at: self.created_at + self.updated.saturating_duration_since(self.created),
            ttl: self.retention(limits),
            poll_interval: limits.poll_interval,
        }
    }

    /// How long after its creation it is kept.
    fn retention(&self, limits: &TaskLimits) -> Duration {
        match self.ended {
            None => self.ttl,
            Some(ended) => {
                let after_end = ended.saturating_duration_since(self.created)
                    + self.ttl.min(limits.keep_after_end);
                self.ttl.max(after_end)
            }
        }
    }

    /// Past its retention, and no `tasks/result` still waits to read it: a task asked with
    /// `ttl: 0` is kept until the requests already waiting for it are answered.
    fn expired(&self, now: Instant, limits: &TaskLimits) -> bool {
        self.settled
            && self.ended.is_some()
            && !self.awaited()
            && now.saturating_duration_since(self.created) >= self.retention(limits)
    }

    /// Whether a `tasks/result` request waits for it (it holds a watch of its end).
    fn awaited(&self) -> bool {
        self.done.receiver_count() > 0
    }
}

/// The tasks of one connection.
pub struct TaskStore {
    limits: TaskLimits,
    /// In creation order; a few dozen at most, so a scan is cheap.
    entries: Mutex<Vec<Entry>>,
}

impl TaskStore {
    pub fn new(limits: TaskLimits) -> Self {
        TaskStore {
            limits,
            entries: Mutex::new(Vec::new()),
        }
    }

    pub fn limits(&self) -> &TaskLimits {
        &self.limits
    }

    /// The entries, expired ones dropped. A panic elsewhere cannot leave them half-updated
    /// (every update is a few assignments), so a poisoned lock is taken as is.
    fn entries(&self, now: Instant) -> MutexGuard<'_, Vec<Entry>> {
        let mut entries = self
            .entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let limits = self.limits;
        entries.retain(|entry| !entry.expired(now, &limits));
        entries
    }

    /// Creates a working task kept `ttl_ms` (capped; the default when `None`), whose token is
    /// a child of `parent`. Refused when `limits.running` tasks have not settled.
    pub fn create(
        &self,
        ttl_ms: Option<u64>,
        parent: &CancellationToken,
        now: Instant,
    ) -> Result<(TaskSnapshot, CancellationToken), TaskRefused> {
        let mut entries = self.entries(now);
        let running = entries.iter().filter(|entry| !entry.settled).count();
        if running >= self.limits.running {
            return Err(TaskRefused::Busy { running });
        }
        let ttl = ttl_ms
            .map(Duration::from_millis)
            .unwrap_or(self.limits.default_ttl)
            .min(self.limits.max_ttl);
        let cancel = parent.child_token();
        let entry = Entry {
            id: uuid::Uuid::new_v4().to_string(),
            status: TaskStatus::Working,
            status_message: None,
            created: now,
            created_at: SystemTime::now(),
            updated: now,
            ttl,
            ended: None,
            settled: false,
            outcome: None,
            bytes: 0,
            cancel: cancel.clone(),
            done: watch::Sender::new(false),
        };
        let snapshot = entry.snapshot(&self.limits);
        entries.push(entry);
        Ok((snapshot, cancel))
    }

    pub fn get(&self, id: &str, now: Instant) -> Option<TaskSnapshot> {
        let entries = self.entries(now);
        let entry = entries.iter().find(|entry| entry.id == id)?;
        Some(entry.snapshot(&self.limits))
    }

    /// Every task kept, oldest first.
    pub fn list(&self, now: Instant) -> Vec<TaskSnapshot> {
        let entries = self.entries(now);
        entries
            .iter()
            .map(|entry| entry.snapshot(&self.limits))
            .collect()
    }

    /// Says how far a working task got.
    pub fn note_progress(&self, id: &str, message: String, now: Instant) {
        let mut entries = self.entries(now);
        if let Some(entry) = entries
            .iter_mut()
            .find(|entry| entry.id == id && entry.status == TaskStatus::Working)
        {
            entry.status_message = Some(message);
            entry.updated = now;
        }
    }

    /// Records how a task's work ended (its backend is gone), then drops the oldest ended tasks
    /// past the bounds (never this one). A task cancelled before keeps its status.
    pub fn finish(
        &self,
        id: &str,
        outcome: TaskOutcome,
        status_message: Option<String>,
        now: Instant,
    ) -> Option<TaskSnapshot> {
        let mut entries = self.entries(now);
        let entry = entries.iter_mut().find(|entry| entry.id == id)?;
        entry.settled = true;
        if entry.status == TaskStatus::Working {
            entry.status = match outcome {
                TaskOutcome::Completed(_) => TaskStatus::Completed,
                TaskOutcome::Failed(_) => TaskStatus::Failed,
            };
            entry.bytes = outcome.bytes();
            entry.outcome = Some(outcome);
            entry.status_message = status_message;
            entry.ended = Some(now);
            entry.updated = now;
        }
        entry.done.send_replace(true);
        let snapshot = entry.snapshot(&self.limits);
        self.enforce_bounds(&mut entries, id);
        Some(snapshot)
    }

    fn enforce_bounds(&self, entries: &mut Vec<Entry>, keep: &str) {
        loop {
            let ended = entries.iter().filter(|entry| entry.ended.is_some());
            let (count, bytes) = ended.fold((0, 0), |(count, bytes), entry| {
                (count + 1, bytes + entry.bytes)
            });
            if count <= self.limits.kept && bytes <= self.limits.kept_bytes {
                return;
            }
            let oldest = entries
                .iter()
                .enumerate()
                .filter(|(_, entry)| {
                    entry.ended.is_some() && entry.settled && !entry.awaited() && entry.id != keep
                })
                .min_by_key(|(_, entry)| entry.ended)
                .map(|(index, _)| index);
            match oldest {
                Some(index) => {
                    entries.remove(index);
                }
                None => return,
            }
        }
    }

    /// Cancels a working task: its status is `cancelled` at once and its token fires (its
    /// backend stops); it counts as running until its work returns ([`TaskStore::finish`]).
    pub fn cancel(&self, id: &str, now: Instant) -> Result<TaskSnapshot, CancelRefused> {
        let mut entries = self.entries(now);
        let Some(entry) = entries.iter_mut().find(|entry| entry.id == id) else {
            return Err(CancelRefused::Unknown(id.to_string()));
        };
        if entry.status.is_terminal() {
            return Err(CancelRefused::Ended {
                id: id.to_string(),
                status: entry.status,
            });
        }
        entry.status = TaskStatus::Cancelled;
        entry.status_message = Some("cancelled by the client".into());
        entry.ended = Some(now);
        entry.updated = now;
        entry.cancel.cancel();
        entry.done.send_replace(true);
        Ok(entry.snapshot(&self.limits))
    }

    /// A receiver that turns `true` once the task is terminal, or `None` for an unknown task.
    pub fn watch(&self, id: &str, now: Instant) -> Option<watch::Receiver<bool>> {
        let entries = self.entries(now);
        let entry = entries.iter().find(|entry| entry.id == id)?;
        Some(entry.done.subscribe())
    }

    /// A terminal task's state and outcome (`None` as the outcome when it was cancelled).
    pub fn ended(&self, id: &str, now: Instant) -> Option<(TaskSnapshot, Option<TaskOutcome>)> {
        let entries = self.entries(now);
        let entry = entries
            .iter()
            .find(|entry| entry.id == id && entry.status.is_terminal())?;
        Some((entry.snapshot(&self.limits), entry.outcome.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: TaskLimits = TaskLimits {
        running: 2,
        kept: 3,
        kept_bytes: 1000,
        default_ttl: Duration::from_secs(600),
        max_ttl: Duration::from_secs(3600),
        keep_after_end: Duration::from_secs(60),
        poll_interval: Duration::from_millis(500),
    };

    fn result(text: &str) -> TaskOutcome {
        TaskOutcome::Completed(json!({ "content": [{ "type": "text", "text": text }] }))
    }

    #[test]
    fn refuses_a_task_past_the_running_cap_until_one_settles() {
        let store = TaskStore::new(LIMITS);
        let parent = CancellationToken::new();
        let now = Instant::now();
        let (first, _) = store.create(None, &parent, now).expect("first");
        store.create(None, &parent, now).expect("second");
        let refused = store.create(None, &parent, now).expect_err("third");
        assert_eq!(refused, TaskRefused::Busy { running: 2 });
        assert!(refused.to_string().contains("tasks/cancel"), "{refused}");
        // Cancelled, it still counts until its work returns: its backend may still run.
        store.cancel(&first.id, now).expect("cancel");
        assert!(store.create(None, &parent, now).is_err());
        store.finish(&first.id, TaskOutcome::Failed(json!({})), None, now);
        store.create(None, &parent, now).expect("a slot freed");
    }

    #[test]
    fn a_task_ends_with_its_outcome_and_wakes_its_watchers() {
        let store = TaskStore::new(LIMITS);
        let now = Instant::now();
        let (task, _) = store
            .create(Some(5000), &CancellationToken::new(), now)
            .expect("task");
        assert_eq!(task.status, TaskStatus::Working);
        assert_eq!(task.ttl, Duration::from_secs(5));
        let watch = store.watch(&task.id, now).expect("watch");
        assert!(!*watch.borrow());
        assert!(store.ended(&task.id, now).is_none());
        store.note_progress(&task.id, "12 bytes".into(), now + Duration::from_secs(1));
        let working = store.get(&task.id, now).expect("kept");
        assert_eq!(working.status_message.as_deref(), Some("12 bytes"));
        assert_eq!(
            working.last_updated_at,
            working.created_at + Duration::from_secs(1)
        );
        let ended = store
            .finish(&task.id, result("hi"), None, now + Duration::from_secs(2))
            .expect("finished");
        assert_eq!(ended.status, TaskStatus::Completed);
        assert!(*watch.borrow());
        let (snapshot, outcome) = store.ended(&task.id, now).expect("ended");
        assert_eq!(snapshot.status, TaskStatus::Completed);
        assert_eq!(outcome, Some(result("hi")));
        let json = snapshot.to_json();
        assert_eq!(json["status"], "completed");
        assert_eq!(json["pollInterval"], 500);
        assert!(json["createdAt"]
            .as_str()
            .is_some_and(|at| at.ends_with('Z')));
    }

    #[test]
    fn cancelling_fires_the_token_and_keeps_the_status_against_a_late_outcome() {
        let store = TaskStore::new(LIMITS);
        let parent = CancellationToken::new();
        let now = Instant::now();
        let (task, token) = store.create(None, &parent, now).expect("task");
        let cancelled = store.cancel(&task.id, now).expect("cancel");
        assert_eq!(cancelled.status, TaskStatus::Cancelled);
        assert!(token.is_cancelled());
        assert!(!parent.is_cancelled());
        store.finish(&task.id, result("late"), None, now);
        let (snapshot, outcome) = store.ended(&task.id, now).expect("ended");
        assert_eq!(snapshot.status, TaskStatus::Cancelled);
        assert_eq!(outcome, None);
        assert_eq!(
            store.cancel(&task.id, now),
            Err(CancelRefused::Ended {
                id: task.id.clone(),
                status: TaskStatus::Cancelled
            })
        );
        assert_eq!(
            store.cancel("nope", now),
            Err(CancelRefused::Unknown("nope".into()))
        );
        // The parent (the connection) going away cancels every task's token.
        let (_, second) = store.create(None, &parent, now).expect("second");
        parent.cancel();
        assert!(second.is_cancelled());
    }

    #[test]
    fn a_task_with_no_ttl_is_kept_for_the_requests_waiting_on_it() {
        let store = TaskStore::new(LIMITS);
        let now = Instant::now();
        let parent = CancellationToken::new();
        let (task, _) = store.create(Some(0), &parent, now).expect("task");
        let waiting = store.watch(&task.id, now).expect("a watch");
        store.finish(&task.id, result("a"), None, now + Duration::from_secs(1));
        let later = now + Duration::from_secs(3600);
        let (_, outcome) = store.ended(&task.id, later).expect("kept while awaited");
        assert_eq!(outcome, Some(result("a")));
        drop(waiting);
        assert!(
            store.get(&task.id, later).is_none(),
            "dropped once answered"
        );
    }

    #[test]
    fn an_ended_task_is_dropped_after_its_ttl_and_a_grace_after_its_end() {
        let store = TaskStore::new(LIMITS);
        let now = Instant::now();
        let parent = CancellationToken::new();
        // Asked 100 s; ended at 2 s: kept to 100 s from creation.
        let (quick, _) = store.create(Some(100_000), &parent, now).expect("quick");
        store.finish(&quick.id, result("a"), None, now + Duration::from_secs(2));
        assert!(store
            .get(&quick.id, now + Duration::from_millis(99_999))
            .is_some());
        assert!(store
            .get(&quick.id, now + Duration::from_secs(100))
            .is_none());
        // Asked 10 s; ended at 2 s: kept its ttl after its end, to 12 s.
        let (short, _) = store.create(Some(10_000), &parent, now).expect("short");
        store.finish(&short.id, result("a"), None, now + Duration::from_secs(2));
        assert!(store
            .get(&short.id, now + Duration::from_millis(11_999))
            .is_some());
        assert!(store
            .get(&short.id, now + Duration::from_secs(12))
            .is_none());
        // Asked 10 s; ran 100 s: kept 10 s more (its ttl, under the 60 s grace).
        let (slow, _) = store.create(Some(10_000), &parent, now).expect("slow");
        assert!(
            store.get(&slow.id, now + Duration::from_secs(50)).is_some(),
            "a working task is never dropped"
        );
        let ended = store
            .finish(&slow.id, result("b"), None, now + Duration::from_secs(100))
            .expect("ended");
        assert_eq!(ended.ttl, Duration::from_secs(110));
        assert!(store
            .get(&slow.id, now + Duration::from_secs(109))
            .is_some());
        assert!(store
            .get(&slow.id, now + Duration::from_secs(110))
            .is_none());
        // A ttl past the cap is capped; none asked is the default.
        let (long, _) = store.create(Some(u64::MAX), &parent, now).expect("long");
        assert_eq!(long.ttl, LIMITS.max_ttl);
        let (default, _) = store.create(None, &parent, now).expect("default");
        assert_eq!(default.ttl, LIMITS.default_ttl);
    }

    #[test]
    fn past_the_count_or_the_bytes_kept_the_oldest_ended_task_is_dropped() {
        let store = TaskStore::new(LIMITS);
        let now = Instant::now();
        let parent = CancellationToken::new();
        let mut ids = Vec::new();
        for i in 0..4u64 {
            let (task, _) = store.create(None, &parent, now).expect("task");
            store.finish(&task.id, result("x"), None, now + Duration::from_secs(i));
            ids.push(task.id);
        }
        let kept: Vec<String> = store.list(now).into_iter().map(|task| task.id).collect();
        assert_eq!(kept, ids[1..]);
        // One result of 990 bytes: the others (41 bytes each) no longer fit in 1000 bytes.
        let (big, _) = store.create(None, &parent, now).expect("big");
        store.finish(
            &big.id,
            result(&"y".repeat(950)),
            None,
            now + Duration::from_secs(9),
        );
        let kept: Vec<String> = store.list(now).into_iter().map(|task| task.id).collect();
        assert_eq!(kept, std::slice::from_ref(&big.id));
        // A result past the bound alone is still kept: the client is polling for it.
        let (huge, _) = store.create(None, &parent, now).expect("huge");
        store.finish(
            &huge.id,
            result(&"z".repeat(5000)),
            None,
            now + Duration::from_secs(10),
        );
        let kept: Vec<String> = store.list(now).into_iter().map(|task| task.id).collect();
        assert_eq!(kept, [huge.id]);
    }
}
