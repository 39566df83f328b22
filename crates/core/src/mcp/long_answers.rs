//! Answers too long for a tool result (docs/MCP.md, "Long answers"). MCP clients warn about, or
//! cut, tool results past about 25 000 tokens; an answer may be up to 8 MiB. A result carries
//! the first [`INLINE_ANSWER_BYTES`] and says so, with the full length and the URI of a
//! resource that holds the whole answer (read with `resources/read`), kept for a bounded time
//! and size.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The most of an answer a tool result carries: about 25 000 tokens of English.
pub const INLINE_ANSWER_BYTES: usize = 100_000;
/// Where the whole answers are, as resources.
pub const ANSWER_URI_PREFIX: &str = "phone-a-friend://answers/";

/// The bounds of the answers kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerLimits {
    pub kept: usize,
    pub kept_bytes: usize,
    pub ttl: Duration,
}

/// The server's bounds: four answers of the largest size (8 MiB) fit.
pub const ANSWER_LIMITS: AnswerLimits = AnswerLimits {
    kept: 16,
    kept_bytes: 32 * 1024 * 1024,
    ttl: Duration::from_secs(60 * 60),
};

/// The whole answers of one connection, newest last.
pub struct LongAnswers {
    limits: AnswerLimits,
    answers: Mutex<VecDeque<(String, Instant, Arc<str>)>>,
}

impl LongAnswers {
    pub fn new(limits: AnswerLimits) -> Self {
        LongAnswers {
            limits,
            answers: Mutex::new(VecDeque::new()),
        }
    }

    pub fn limits(&self) -> &AnswerLimits {
        &self.limits
    }

    /// The answers, expired ones dropped. Every update is one push or pop, so a poisoned lock
    /// is taken as is.
    fn answers(&self, now: Instant) -> MutexGuard<'_, VecDeque<(String, Instant, Arc<str>)>> {
        let mut answers = self
            .answers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let ttl = self.limits.ttl;
        answers.retain(|(_, kept, _)| now.saturating_duration_since(*kept) < ttl);
        answers
    }

    /// Keeps `answer`, dropping the oldest ones past the bounds (never this one); returns its URI.
    pub fn keep(&self, answer: &str, now: Instant) -> String {
        let uri = format!("{ANSWER_URI_PREFIX}{}", uuid::Uuid::new_v4());
        let mut answers = self.answers(now);
        answers.push_back((uri.clone(), now, Arc::from(answer)));
        loop {
            let bytes: usize = answers.iter().map(|(_, _, text)| text.len()).sum();
            if answers.len() <= 1
                || (answers.len() <= self.limits.kept && bytes <= self.limits.kept_bytes)
            {
                break;
            }
            answers.pop_front();
        }
        uri
    }

    pub fn read(&self, uri: &str, now: Instant) -> Option<Arc<str>> {
        let answers = self.answers(now);
        answers
            .iter()
            .find(|(kept, _, _)| kept == uri)
            .map(|(_, _, text)| text.clone())
    }
}

/// The first `bytes` of `text` at most, ending on a character boundary.
pub fn cut(text: &str, bytes: usize) -> &str {
    if text.len() <= bytes {
        return text;
    }
    let mut end = bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_a_character_boundary() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("héllo", 3), "hé");
        assert_eq!(cut("héllo", 100), "héllo");
        assert_eq!(cut("😀", 3), "");
    }

    #[test]
    fn keeps_answers_within_count_bytes_and_time() {
        let limits = AnswerLimits {
            kept: 2,
            kept_bytes: 10,
            ttl: Duration::from_secs(60),
        };
        let answers = LongAnswers::new(limits);
        let now = Instant::now();
        let a = answers.keep("aaaa", now);
        let b = answers.keep("bbbb", now);
        assert!(a.starts_with(ANSWER_URI_PREFIX));
        assert_eq!(answers.read(&a, now).as_deref(), Some("aaaa"));
        // A third: past the count, the oldest goes.
        let c = answers.keep("cc", now);
        assert_eq!(answers.read(&a, now), None);
        assert_eq!(answers.read(&b, now).as_deref(), Some("bbbb"));
        // Past the bytes, the oldest go; one alone past them is kept.
        let d = answers.keep(&"d".repeat(20), now);
        assert_eq!(answers.read(&b, now), None);
        assert_eq!(answers.read(&c, now), None);
        assert_eq!(answers.read(&d, now).map(|text| text.len()), Some(20));
        // Past its time it is gone.
        assert!(answers.read(&d, now + Duration::from_secs(59)).is_some());
        assert_eq!(answers.read(&d, now + Duration::from_secs(60)), None);
        assert_eq!(answers.read("phone-a-friend://answers/nope", now), None);
    }
}
