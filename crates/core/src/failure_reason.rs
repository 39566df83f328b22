//! Why a backend failed (docs/ERRORS.md, "Why: `reason`"), from the kind of failure and, for one
//! the backend reported, its own words: a CLI's error events or stderr, Ollama's HTTP status and
//! body, a JavaScript backend's `BackendError`. One list, the contract's; the words each real CLI
//! says for each are in docs/ERRORS.md's table.

use std::sync::LazyLock;

use regex::Regex;
use schemars::JsonSchema;
use serde::Serialize;

use crate::backends::last_words::ask_to_sign_in;
use crate::errors::{BackendFailureKind, RelayError};

/// In JSON (the MCP tools' results) and in JavaScript (`RelayErrorReason`, made from this list by
/// `src/failure.rs`), as [`Reason::as_str`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// No credentials, or the server refused them (401, 403, "Not logged in").
    Auth,
    /// The account's quota or plan is used up ("insufficient_quota", "usage limit").
    Quota,
    /// Too many requests for now, or the service is overloaded (429, 529).
    RateLimit,
    /// The server could not be reached, or the connection broke.
    Network,
    /// The model named is not one the server has (404).
    ModelNotFound,
    /// No progress for the idle time-out.
    Stalled,
    /// The call's time ran out.
    Timeout,
    /// The backend is not installed, or cannot be started.
    NotInstalled,
    /// It answered nothing, or more than the limit (or could not be given a prompt this large).
    Output,
    /// It failed for another reason (an exit status, an error of its own).
    Crashed,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Auth => "auth",
            Reason::Quota => "quota",
            Reason::RateLimit => "rate-limit",
            Reason::Network => "network",
            Reason::ModelNotFound => "model-not-found",
            Reason::Stalled => "stalled",
            Reason::Timeout => "timeout",
            Reason::NotInstalled => "not-installed",
            Reason::Output => "output",
            Reason::Crashed => "crashed",
        }
    }

    /// Whether it means "this friend cannot answer now", where asking another makes sense.
    pub fn is_unavailable_now(self) -> bool {
        matches!(
            self,
            Reason::Auth
                | Reason::Quota
                | Reason::RateLimit
                | Reason::Network
                | Reason::Stalled
                | Reason::NotInstalled
        )
    }
}

/// Why `err` happened, for a failure a backend reported.
pub fn reason_of_error(err: &RelayError) -> Option<Reason> {
    let (kind, words) = err.backend_failure()?;
    Some(reason_of(kind, &words))
}

/// Why another backend should be asked instead of `err`'s (`fallback`, docs/CONTRACT.md §8a): a
/// reason that means it cannot answer now ([`Reason::is_unavailable_now`]), or a prompt larger
/// than it can be given, refused before it ran (antigravity's one argument): nothing was spent.
pub fn reason_to_ask_another(err: &RelayError) -> Option<Reason> {
    let (kind, words) = err.backend_failure()?;
    let reason = reason_of(kind, &words);
    (reason.is_unavailable_now() || kind == BackendFailureKind::PromptTooLarge).then_some(reason)
}

/// Seconds `err`'s backend said to wait before asking again, when it said.
pub fn retry_after_of_error(err: &RelayError) -> Option<f64> {
    retry_after_seconds(&err.backend_failure()?.1)
}

/// At most this much of the words is read, from each end: what decides is near the start (a
/// status) or the end (the last error).
const READ_BYTES: usize = 8 * 1024;

/// Why a failure of `kind` happened, its backend having said `words`.
pub fn reason_of(kind: BackendFailureKind, words: &str) -> Reason {
    match kind {
        BackendFailureKind::Timeout => Reason::Timeout,
        BackendFailureKind::Stalled => Reason::Stalled,
        BackendFailureKind::NoOutput
        | BackendFailureKind::OutputTooLarge
        | BackendFailureKind::PromptTooLarge => Reason::Output,
        BackendFailureKind::Unavailable => match said(&words.to_ascii_lowercase(), NETWORK) {
            // Ollama's server not reachable.
            true => Reason::Network,
            false => Reason::NotInstalled,
        },
        BackendFailureKind::Failed => reason_of_words(&bounded(words)),
    }
}

/// Seconds the backend's words say to wait before asking again, when they say.
pub fn retry_after_seconds(words: &str) -> Option<f64> {
    static RETRY: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(
            r#"(?i)(?:retry[-_ ]?after|retry in|retrying in|try again in|retryDelay)["':= ]{0,4}(\d{1,6}(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)?\b"#,
        )
        .ok()
    });
    let words = bounded(words);
    let captures = RETRY.as_ref()?.captures(&words)?;
    let value: f64 = captures.get(1)?.as_str().parse().ok()?;
    let unit = captures
        .get(2)
        .map_or(String::new(), |unit| unit.as_str().to_ascii_lowercase());
    Some(if unit.starts_with("ms") || unit.starts_with("mil") {
        value / 1000.0
    } else if unit.starts_with('m') {
        value * 60.0
    } else {
        value
    })
}

/// The start and the end of `words`, each at most [`READ_BYTES`].
fn bounded(words: &str) -> String {
    if words.len() <= 2 * READ_BYTES {
        return words.to_string();
    }
    let mut head = READ_BYTES;
    while !words.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = words.len() - READ_BYTES;
    while !words.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}\n{}", &words[..head], &words[tail..])
}

const QUOTA: &[&str] = &[
    "insufficient_quota",
    "exceeded your current quota",
    "quota exceeded",
    "exceeded quota",
    "usage limit",
    "credit balance is too low",
    "billing",
];

const RATE_LIMIT: &[&str] = &[
    "429",
    "rate limit",
    "rate_limit",
    "ratelimit",
    "too many requests",
    "resource_exhausted",
    "overloaded",
    "529",
    // codex, for a 5xx: "We’re currently experiencing high demand, which may cause temporary
    // errors."
    "high demand",
];

const MODEL_NOT_FOUND: &[&str] = &[
    "model not found",
    "model_not_found",
    "not_found_error",
    "no such model",
    "does not exist or you do not have access",
    "unknown model",
    "is not found for api version",
    // claude: "There's an issue with the selected model (…). It may not exist …"
    "issue with the selected model",
];

const AUTH: &[&str] = &[
    "401",
    "403",
    "unauthorized",
    "unauthenticated",
    "authentication",
    "permission denied",
    "permission_denied",
    "forbidden",
    "api key not valid",
    "invalid x-api-key",
];

const NETWORK: &[&str] = &[
    "not reachable",
    "connection refused",
    "econnrefused",
    "econnreset",
    "connection reset",
    "enotfound",
    "fetch failed",
    "socket hang up",
    "stream disconnected",
    "error sending request",
    "connection error",
    "network error",
    "dns error",
    "timed out connecting",
    "connection dropped",
    "cannot connect",
    "socket connection was closed",
];

/// A CLI that stopped itself at its own time limit: agy's `--print-timeout` (the words
/// upstream phone-a-friend matches).
const OWN_TIMEOUT: &[&str] = &["print timeout after"];

/// Whether `lower` (words in lowercase) holds any of `texts` (all lowercase).
fn said(lower: &str, texts: &[&str]) -> bool {
    texts.iter().any(|text| lower.contains(text))
}

/// A model the server does not have: its own words, or "model" beside a 404 or "not found"
/// (Ollama: `model 'x' not found`).
fn model_not_found(lower: &str) -> bool {
    said(lower, MODEL_NOT_FOUND)
        || (lower.contains("model") && (lower.contains("not found") || lower.contains("404")))
}

fn reason_of_words(words: &str) -> Reason {
    let lower = words.to_ascii_lowercase();
    // Most specific first: a 429 that says quota is a quota, a 404 that names the model is one.
    if said(&lower, QUOTA) {
        Reason::Quota
    } else if model_not_found(&lower) {
        Reason::ModelNotFound
    } else if ask_to_sign_in(words) || said(&lower, AUTH) {
        Reason::Auth
    } else if said(&lower, RATE_LIMIT) {
        Reason::RateLimit
    } else if said(&lower, NETWORK) {
        Reason::Network
    } else if said(&lower, OWN_TIMEOUT) {
        Reason::Timeout
    } else {
        Reason::Crashed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(words: &str) -> &'static str {
        reason_of(BackendFailureKind::Failed, words).as_str()
    }

    fn backend_error(kind: BackendFailureKind, message: &str) -> RelayError {
        RelayError::Backend {
            kind,
            backend: "first".into(),
            message: message.into(),
            cause: None,
            output: None,
            partial: None,
        }
    }

    #[test]
    fn another_is_asked_when_this_one_cannot_answer_now_or_cannot_be_given_the_prompt() {
        let ask = |kind, message| reason_to_ask_another(&backend_error(kind, message));
        use BackendFailureKind::*;
        assert_eq!(
            ask(Failed, "429 Too Many Requests"),
            Some(Reason::RateLimit)
        );
        assert_eq!(ask(Stalled, "no output"), Some(Reason::Stalled));
        // Refused before it ran: nothing was spent, another may take it.
        assert_eq!(
            ask(PromptTooLarge, "Relay prompt is too large for antigravity"),
            Some(Reason::Output)
        );
        // It ran and answered too much or nothing, crashed, or the call's time ran out.
        assert_eq!(ask(OutputTooLarge, "Backend output is too large"), None);
        assert_eq!(ask(NoOutput, "completed without producing output"), None);
        assert_eq!(ask(Failed, "segfault in the model runner"), None);
        assert_eq!(ask(Timeout, "timed out"), None);
        assert_eq!(reason_to_ask_another(&RelayError::ContextConflict), None);
    }

    #[test]
    fn the_kind_decides_when_it_can() {
        assert_eq!(
            reason_of(BackendFailureKind::Timeout, "429").as_str(),
            "timeout"
        );
        assert_eq!(
            reason_of(BackendFailureKind::Stalled, "").as_str(),
            "stalled"
        );
        assert_eq!(
            reason_of(BackendFailureKind::NoOutput, "").as_str(),
            "output"
        );
        assert_eq!(
            reason_of(BackendFailureKind::OutputTooLarge, "").as_str(),
            "output"
        );
        assert_eq!(
            reason_of(
                BackendFailureKind::Unavailable,
                "codex CLI not found in PATH"
            )
            .as_str(),
            "not-installed"
        );
        assert_eq!(
            reason_of(
                BackendFailureKind::Unavailable,
                "Ollama server not reachable at http://127.0.0.1:9. Is Ollama running?"
            )
            .as_str(),
            "network"
        );
    }

    #[test]
    fn words_say_why_most_specific_first() {
        assert_eq!(failed("Ollama returned HTTP 401: unauthorized"), "auth");
        assert_eq!(failed("Not logged in · Please run /login"), "auth");
        assert_eq!(
            failed(
                r#"429 {"error":{"code":"insufficient_quota","message":"You exceeded your current quota"}}"#
            ),
            "quota"
        );
        assert_eq!(
            failed("You've hit your usage limit. Try again at 5pm."),
            "quota"
        );
        assert_eq!(
            failed(r#"{"status":"RESOURCE_EXHAUSTED","code":429}"#),
            "rate-limit"
        );
        assert_eq!(
            failed("Ollama returned HTTP 404: {\"error\":\"model 'x' not found\"}"),
            "model-not-found"
        );
        assert_eq!(failed("model not found"), "model-not-found");
        assert_eq!(failed("stream disconnected before completion"), "network");
        assert_eq!(failed("codex exec exited with code 3"), "crashed");
    }

    /// What the real CLIs said against the fake model server (docs/ERRORS.md's table).
    #[test]
    fn the_real_clis_words_say_why() {
        for (words, reason) in [
            ("unexpected status 401 Unauthorized: invalid api key, url: http://127.0.0.1:1/v1/responses", "auth"),
            ("unexpected status 403 Forbidden: permission denied, url: x", "auth"),
            ("unexpected status 404 Not Found: model not found, url: x", "model-not-found"),
            ("exceeded retry limit, last status: 429 Too Many Requests", "rate-limit"),
            ("Quota exceeded. Check your plan and billing details.", "quota"),
            ("We’re currently experiencing high demand, which may cause temporary errors.", "rate-limit"),
            ("stream disconnected before completion: error sending request", "network"),
            ("Failed to authenticate. API Error: 403 permission denied", "auth"),
            ("There's an issue with the selected model (m). It may not exist or you may not have access to it.", "model-not-found"),
            ("API Error: Request rejected (429) · rate limit exceeded", "rate-limit"),
            ("API Error: 529 Overloaded. This is a server-side issue, usually temporary", "rate-limit"),
            ("API Error: Connection dropped (ECONNRESET). Check the gateway", "network"),
            (r#"{"message":"invalid api key","statusCode":401,"isRetryable":false}"#, "auth"),
            (r#"{"message":"You exceeded your current quota, please check your plan and billing details.","statusCode":429}"#, "quota"),
            (r#"{"message":"rate limit exceeded","statusCode":429,"isRetryable":true}"#, "rate-limit"),
            ("Cannot connect to API: The socket connection was closed unexpectedly.", "network"),
            (r#"[API Error: {"error":{"code":401,"message":"invalid api key","status":"UNAUTHENTICATED"}}]"#, "auth"),
            (r#"Attempt 1 failed with status 429. Retrying with backoff... _ApiError: {"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}"#, "rate-limit"),
            ("[API Error: Quota exceeded for quota metric 'GenerateContent requests']", "quota"),
            ("[API Error: exception TypeError: fetch failed sending request]", "network"),
        ] {
            assert_eq!(failed(words), reason, "{words}");
        }
        assert_eq!(
            retry_after_seconds(
                r#""responseHeaders":{"content-type":"application/json","retry-after":"7"}"#
            ),
            Some(7.0)
        );
    }

    #[test]
    fn reads_when_to_come_back() {
        assert_eq!(retry_after_seconds("retry-after: 7"), Some(7.0));
        assert_eq!(retry_after_seconds("Please retry in 12.5s."), Some(12.5));
        assert_eq!(retry_after_seconds(r#""retryDelay": "30s""#), Some(30.0));
        assert_eq!(retry_after_seconds("try again in 2 minutes"), Some(120.0));
        assert_eq!(retry_after_seconds("retry after 1500ms"), Some(1.5));
        assert_eq!(retry_after_seconds("rate limit exceeded"), None);
    }
}
