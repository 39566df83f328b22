//! What a caller waiting on a relay is told while it waits (docs/CONTRACT.md §10a): which backend
//! is at work, in which phase, running which tool, how much of the answer has come. The backends
//! say what they do from their own events ([`Activity::doing`], [`Activity::wrote`]); a watcher
//! ([`Watcher::next`]: `onProgress`, the MCP server's notifications) hears each change of phase
//! and, between changes, the same status again at a steady pace with its elapsed time. None of
//! this is the stall watchdog's [`crate::progress::Progress`]: a heartbeat made here never
//! counts as the backend's progress.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::watch;
use tokio::time::Instant;

/// What the call is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The checks, the context, the diff and the envelope: no backend yet.
    Preparing,
    /// The backend was started and has said nothing yet.
    Starting,
    /// The model is at work: a request sent, reasoning, between tool calls.
    Thinking,
    /// The backend runs a tool (`tool` names it).
    Tool,
    /// The answer's text is coming.
    Writing,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Preparing => "preparing",
            Phase::Starting => "starting",
            Phase::Thinking => "thinking",
            Phase::Tool => "tool",
            Phase::Writing => "writing",
        }
    }
}

/// What a backend's event says it is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Doing {
    Thinking,
    /// A tool, by the name the backend gives it.
    Tool(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    backend: Option<Arc<str>>,
    phase: Phase,
    tool: Option<String>,
    answer_bytes: u64,
}

/// The call's status as a watcher hears it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The backend at work; `None` while preparing.
    pub backend: Option<String>,
    pub phase: Phase,
    /// The tool being run, in the `tool` phase.
    pub tool: Option<String>,
    /// Bytes of answer text so far (every message of it, as streamed).
    pub answer_bytes: u64,
    /// Since the call began.
    pub elapsed: Duration,
}

impl Status {
    /// `codex: running Read (12s, 340 bytes of the answer so far)`: for people.
    pub fn describe(&self) -> String {
        let who = self.backend.as_deref().unwrap_or("phone-a-friend");
        let what = match (self.phase, self.tool.as_deref()) {
            (Phase::Preparing, _) => "preparing the request".to_string(),
            (Phase::Starting, _) => "starting".to_string(),
            (Phase::Thinking, _) => "thinking".to_string(),
            (Phase::Tool, Some(tool)) => format!("running {tool}"),
            (Phase::Tool, None) => "running a tool".to_string(),
            (Phase::Writing, _) => "writing the answer".to_string(),
        };
        format!(
            "{who}: {what} ({}s, {} bytes of the answer so far)",
            self.elapsed.as_secs(),
            self.answer_bytes
        )
    }
}

/// Where a call's backends say what they do; cheap to clone. Nobody watching: every report costs
/// a branch.
#[derive(Debug, Clone, Default)]
pub struct Activity(Option<watch::Sender<State>>);

impl Activity {
    pub fn unwatched() -> Activity {
        Activity(None)
    }

    /// An activity and the watcher that hears it at most every `pace` without a change; its
    /// clock starts now.
    pub fn watched(pace: Duration) -> (Activity, Watcher) {
        let preparing = State {
            backend: None,
            phase: Phase::Preparing,
            tool: None,
            answer_bytes: 0,
        };
        let (sender, receiver) = watch::channel(preparing.clone());
        let now = Instant::now();
        let watcher = Watcher {
            receiver,
            started: now,
            pace,
            last: now,
            seen: preparing,
        };
        (Activity(Some(sender)), watcher)
    }

    pub fn is_watched(&self) -> bool {
        self.0.is_some()
    }

    /// `backend` was started (the first, or the next after a fallback).
    pub fn started(&self, backend: &str) {
        self.change(|state| {
            state.backend = Some(Arc::from(backend));
            state.phase = Phase::Starting;
            state.tool = None;
            true
        });
    }

    /// What the backend's last event said it does.
    pub fn doing(&self, doing: Doing) {
        let (phase, tool) = match doing {
            Doing::Thinking => (Phase::Thinking, None),
            Doing::Tool(name) => (Phase::Tool, Some(name)),
        };
        self.change(|state| {
            let changed = state.phase != phase || state.tool != tool;
            state.phase = phase;
            state.tool = tool;
            changed
        });
    }

    /// `bytes` more of the answer's text came: its first is a change of phase, the rest are
    /// heard with the next heartbeat.
    pub fn wrote(&self, bytes: usize) {
        self.change(|state| {
            state.answer_bytes += bytes as u64;
            let changed = state.phase != Phase::Writing;
            state.phase = Phase::Writing;
            state.tool = None;
            changed
        });
    }

    fn change(&self, change: impl FnOnce(&mut State) -> bool) {
        if let Some(sender) = &self.0 {
            sender.send_if_modified(change);
        }
    }
}

/// Hears a call's [`Activity`].
#[derive(Debug)]
pub struct Watcher {
    receiver: watch::Receiver<State>,
    started: Instant,
    pace: Duration,
    /// When the last status was heard.
    last: Instant,
    /// The last status heard.
    seen: State,
}

impl Watcher {
    /// The status, when it changed since it was last heard (the last change of a call that
    /// ended, say: its activity gone, the change is still there).
    pub fn changed(&mut self) -> Option<Status> {
        let changed = *self.receiver.borrow() != self.seen;
        changed.then(|| self.heard())
    }

    /// The status, once it changed or `pace` passed since the last one heard; `None` once the
    /// call is over (every [`Activity`] of it dropped).
    pub async fn next(&mut self) -> Option<Status> {
        tokio::select! {
            changed = self.receiver.changed() => changed.ok()?,
            () = tokio::time::sleep_until(self.last + self.pace) => {
                if self.receiver.has_changed().is_err() {
                    return None;
                }
            }
        }
        Some(self.heard())
    }

    fn heard(&mut self) -> Status {
        self.last = Instant::now();
        let state = self.receiver.borrow_and_update().clone();
        self.seen = state.clone();
        Status {
            backend: state.backend.as_deref().map(str::to_string),
            phase: state.phase,
            tool: state.tool,
            answer_bytes: state.answer_bytes,
            elapsed: self.started.elapsed(),
        }
    }
}

/// Equal when both are the same activity, or both unwatched, so requests stay comparable.
impl PartialEq for Activity {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => a.same_channel(b),
            (None, None) => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PACE: Duration = Duration::from_secs(5);

    #[tokio::test(start_paused = true)]
    async fn each_change_of_phase_is_heard_at_once_and_heartbeats_keep_the_pace() {
        let (activity, mut watcher) = Activity::watched(PACE);
        let start = Instant::now();
        // Nothing happens: a heartbeat of the first status after the pace.
        let first = watcher.next().await.expect("a status");
        assert_eq!(
            (first.phase, first.backend.as_deref()),
            (Phase::Preparing, None)
        );
        assert_eq!(start.elapsed(), PACE);
        activity.started("codex");
        activity.doing(Doing::Tool("Read".into()));
        let tool = watcher.next().await.expect("a status");
        assert_eq!(start.elapsed(), PACE, "heard at once");
        assert_eq!(tool.phase, Phase::Tool);
        assert_eq!(tool.tool.as_deref(), Some("Read"));
        assert_eq!(
            tool.describe(),
            "codex: running Read (5s, 0 bytes of the answer so far)"
        );
        // The same thing again is no change; more text is heard with the heartbeat.
        activity.doing(Doing::Tool("Read".into()));
        activity.wrote(3);
        let writing = watcher.next().await.expect("a status");
        assert_eq!((writing.phase, writing.answer_bytes), (Phase::Writing, 3));
        activity.wrote(4);
        let beat = watcher.next().await.expect("a status");
        assert_eq!((beat.phase, beat.answer_bytes), (Phase::Writing, 7));
        assert_eq!(start.elapsed(), PACE * 2);
        // A change just before the call's end is still heard after it.
        activity.doing(Doing::Thinking);
        drop(activity);
        assert_eq!(
            watcher.changed().map(|status| status.phase),
            Some(Phase::Thinking)
        );
        assert_eq!(watcher.changed(), None);
        assert_eq!(watcher.next().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn an_unwatched_activity_costs_nothing_and_says_nothing() {
        let activity = Activity::unwatched();
        activity.started("codex");
        activity.wrote(10);
        assert_eq!(activity, Activity::default());
    }
}
