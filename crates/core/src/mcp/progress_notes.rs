//! What a waiting MCP client hears of a relay (docs/MCP.md, "Progress"): with a progress token,
//! `notifications/progress` carrying the answer's text as it comes and, between pieces, the
//! relay's status on each change of phase and at least every [`STATUS_PACE`]; for a task, that
//! status as its status message. `progress` grows with every note: the answer's bytes so far
//! plus one for each status note. Each note's `_meta` says which it is.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{MetaObject, NotificationMetaObject, ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use serde_json::{json, Map};

use super::task_store::TaskStore;
use crate::activity::{Status, Watcher};
use crate::stream::ChunkSource;

/// How often a client hears the status without a change.
pub(super) const STATUS_PACE: Duration = Duration::from_secs(5);

/// The `_meta` key of a note: `{ kind: "text" | "status", backend, phase, tool, answerBytes,
/// elapsedMs }`.
const META_KEY: &str = "io.github.phone-a-friend/progress";

/// Where a relay's progress goes.
pub(super) struct Listeners {
    pub peer: Peer<RoleServer>,
    pub token: Option<ProgressToken>,
    /// The task the relay runs as: its store and id.
    pub task: Option<(Arc<TaskStore>, String)>,
}

/// Forwards the answer's text and the relay's status until both end (the relay is over).
pub(super) async fn forward_progress(
    listeners: Listeners,
    mut text: Option<ChunkSource>,
    mut status: Option<Watcher>,
) {
    let mut notes = Notes {
        listeners,
        answer_bytes: 0,
        statuses: 0,
    };
    while text.is_some() || status.is_some() {
        tokio::select! {
            chunk = next_chunk(&mut text) => match chunk {
                Some(text) => notes.text(text).await,
                None => text = None,
            },
            heard = next_status(&mut status) => match heard {
                Some(heard) => notes.status(&heard).await,
                None => status = None,
            },
        }
    }
}

async fn next_chunk(text: &mut Option<ChunkSource>) -> Option<String> {
    match text {
        Some(source) => source.next().await.map(|chunk| chunk.text),
        None => std::future::pending().await,
    }
}

async fn next_status(status: &mut Option<Watcher>) -> Option<Status> {
    match status {
        Some(watcher) => watcher.next().await,
        None => std::future::pending().await,
    }
}

struct Notes {
    listeners: Listeners,
    answer_bytes: usize,
    statuses: usize,
}

impl Notes {
    async fn text(&mut self, text: String) {
        self.answer_bytes += text.len();
        let meta = json!({ "kind": "text", "answerBytes": self.answer_bytes });
        self.notify(text, meta).await;
    }

    async fn status(&mut self, status: &Status) {
        self.statuses += 1;
        let described = status.describe();
        if let Some((tasks, id)) = &self.listeners.task {
            tasks.note_progress(id, described.clone(), Instant::now());
        }
        let meta = json!({
            "kind": "status",
            "backend": status.backend,
            "phase": status.phase,
            "tool": status.tool,
            "answerBytes": status.answer_bytes,
            "elapsedMs": u64::try_from(status.elapsed.as_millis()).unwrap_or(u64::MAX),
        });
        self.notify(described, meta).await;
    }

    async fn notify(&self, message: String, meta: serde_json::Value) {
        let Some(token) = &self.listeners.token else {
            return;
        };
        #[allow(clippy::cast_precision_loss)]
        let progress = (self.answer_bytes + self.statuses) as f64;
        let mut object = Map::new();
        object.insert(META_KEY.into(), meta);
        let mut note =
            ProgressNotificationParam::new(token.clone(), progress).with_message(message);
        note.meta = Some(NotificationMetaObject(MetaObject(object)));
        // A client that went away cannot be told; the relay goes on to its end or its cancel.
        let _ = self.listeners.peer.notify_progress(note).await;
    }
}
