//! MCP 2026-07-28 asks a server to name itself on every result
//! (`_meta["io.modelcontextprotocol/serverInfo"]`), since a stateless client never saw an
//! `initialize` result; rmcp 3.11 does so only on `server/discover` and `subscriptions/listen`.
//! The transport knows a response, not the revision of its request, so the rerouting
//! ([`super::task_transport::reroute`]) notes the ids of the requests of that revision and the
//! outgoing side stamps their results (docs/MCP.md, "MCP 2026-07-28").

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{CustomResult, Implementation, ProtocolVersion, RequestId, ServerResult};
use serde_json::Value;

/// The key the revision names the server under.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// Requests in flight noted at most: a client that never waits for its answers cannot grow the
/// set; past it, results go unstamped (the revision says SHOULD).
const MOST_NOTED: usize = 1024;

/// The ids of the requests of MCP 2026-07-28 or later still unanswered, and the server's name.
#[derive(Clone)]
pub struct ServerInfoStamp {
    noted: Arc<Mutex<HashSet<RequestId>>>,
    server: Value,
    answered: Arc<AtomicBool>,
}

impl ServerInfoStamp {
    pub fn new(server: &Implementation) -> Self {
        ServerInfoStamp {
            noted: Arc::default(),
            server: serde_json::to_value(server).unwrap_or(Value::Null),
            answered: Arc::default(),
        }
    }

    /// Notes request `id` when `revision` (its `_meta`'s protocol version) is 2026-07-28 or later.
    pub fn note(&self, id: RequestId, revision: Option<&str>) {
        // Revisions are dates, compared as text, as rmcp compares them.
        let stateless = revision.is_some_and(|revision| {
            let a_date = revision.len() == 10
                && revision
                    .bytes()
                    .all(|byte| byte.is_ascii_digit() || byte == b'-');
            a_date && revision >= ProtocolVersion::V_2026_07_28.as_str()
        });
        if !stateless {
            return;
        }
        let mut noted = self.noted.lock().unwrap_or_else(PoisonError::into_inner);
        if noted.len() < MOST_NOTED {
            noted.insert(id);
        }
    }

    /// Forgets request `id`, answered; whether it was noted.
    pub fn take(&self, id: &RequestId) -> bool {
        let noted = self
            .noted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        if noted {
            self.answered.store(true, Ordering::Relaxed);
        }
        noted
    }

    /// Whether a request of the revision was answered: a client that sent only `server/discover`
    /// (the v2 SDK's probe) and left was served, though it never chose a lifecycle.
    pub fn answered_the_revision(&self) -> bool {
        self.answered.load(Ordering::Relaxed)
    }

    /// `result` with the server's name in its `_meta`.
    pub fn stamp(&self, result: ServerResult) -> ServerResult {
        let Ok(mut value) = serde_json::to_value(&result) else {
            return result;
        };
        let Some(object) = value.as_object_mut() else {
            return result;
        };
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(Default::default()));
        match meta.as_object_mut() {
            Some(meta) => {
                meta.insert(SERVER_INFO_KEY.into(), self.server.clone());
                ServerResult::CustomResult(CustomResult(value))
            }
            None => result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stamps_only_the_results_of_noted_requests_of_the_revision() {
        let stamp = ServerInfoStamp::new(&Implementation::new("phone-a-friend", "1.2.3"));
        stamp.note(RequestId::Number(1), Some("2026-07-28"));
        stamp.note(RequestId::Number(2), Some("2025-11-25"));
        stamp.note(RequestId::Number(3), None);
        stamp.note(RequestId::Number(4), Some("not a version"));
        assert!(!stamp.answered_the_revision());
        assert!(stamp.take(&RequestId::Number(1)));
        assert!(stamp.answered_the_revision());
        assert!(!stamp.take(&RequestId::Number(1)), "taken once");
        for id in 2..=4 {
            assert!(!stamp.take(&RequestId::Number(id)), "{id}");
        }
        let stamped = serde_json::to_value(stamp.stamp(ServerResult::CustomResult(CustomResult(
            json!({ "tools": [], "_meta": { "other": 1 } }),
        ))))
        .expect("json");
        assert_eq!(stamped["_meta"]["other"], 1);
        assert_eq!(stamped["_meta"][SERVER_INFO_KEY]["name"], "phone-a-friend");
        assert_eq!(stamped["_meta"][SERVER_INFO_KEY]["version"], "1.2.3");
        assert_eq!(stamped["tools"], json!([]));
    }

    #[test]
    fn notes_a_bounded_number_of_requests() {
        let stamp = ServerInfoStamp::new(&Implementation::new("p", "1"));
        for id in 0..(MOST_NOTED as i64 + 10) {
            stamp.note(RequestId::Number(id), Some("2026-07-28"));
        }
        assert_eq!(stamp.noted.lock().expect("lock").len(), MOST_NOTED);
    }
}
