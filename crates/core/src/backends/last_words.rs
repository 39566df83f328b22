//! What a failed CLI said last, and whether it asked to be signed in (docs/ERRORS.md,
//! "backendOutput"): a failure, a time-out included, carries the end of the CLI's own words, so
//! a relay that gave up says why the CLI did not answer.

/// At most this many bytes of a CLI's words ride on a failure.
pub const LAST_WORDS_BYTES: usize = 2 * 1024;

/// The end of `text`, trimmed, at most [`LAST_WORDS_BYTES`] bytes (cut at a character
/// boundary, `…` first when cut); `None` when there are no words.
pub fn tail(text: &str) -> Option<String> {
    let words = without_stack_frames(text);
    let text = words.trim();
    if text.is_empty() {
        return None;
    }
    if text.len() <= LAST_WORDS_BYTES {
        return Some(text.to_string());
    }
    let mut start = text.len() - LAST_WORDS_BYTES + '…'.len_utf8();
    while !text.is_char_boundary(start) {
        start += 1;
    }
    Some(format!("…{}", text[start..].trim_start()))
}

/// `text` without the stack frames a Node CLI prints under an error (gemini: `    at async
/// GeminiChat.streamWithRetries (file:///…/chunk.js:332079:29)`): they fill the tail and say
/// nothing of why.
fn without_stack_frames(text: &str) -> String {
    let frame = |line: &str| {
        let line = line.trim_start();
        line.starts_with("at ")
            && (line.ends_with(')') || line.contains("file://") || line.contains("node:"))
    };
    text.lines()
        .filter(|line| !frame(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the four CLIs say when they have no credentials (seen with a fresh HOME, docs/BACKENDS.md,
/// "Signing in"), or when the server refused the ones they have.
const ASKS_TO_SIGN_IN: [&str; 12] = [
    // claude
    "Not logged in",
    "Please run /login",
    "Failed to authenticate",
    // gemini
    "Invalid auth method selected",
    "Please set an Auth method",
    "you must specify the GEMINI_API_KEY",
    "Manual authorization is required",
    "GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION",
    // codex, opencode and the providers' own texts
    "401 Unauthorized",
    "Incorrect API key",
    "Invalid API key",
    "invalid_api_key",
];

/// Whether `words` say the CLI needs signing in.
pub fn ask_to_sign_in(words: &str) -> bool {
    ASKS_TO_SIGN_IN.iter().any(|text| words.contains(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_end_within_the_bound_at_a_character_boundary() {
        assert_eq!(tail("  \n"), None);
        assert_eq!(tail(" short words \n").as_deref(), Some("short words"));
        let long = format!("{}the end", "é".repeat(3000));
        let cut = tail(&long).unwrap_or_default();
        assert!(cut.len() <= LAST_WORDS_BYTES, "{}", cut.len());
        assert!(cut.starts_with('…') && cut.ends_with("the end"));
    }

    #[test]
    fn leaves_out_node_stack_frames() {
        let said = "Retrying with backoff... Error: fetch failed\n    at file:///x/chunk.js:1:2\n    at async Turn.run (file:///x/chunk.js:3:4)\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)";
        assert_eq!(
            tail(said).as_deref(),
            Some("Retrying with backoff... Error: fetch failed")
        );
    }

    #[test]
    fn knows_the_clis_words_for_no_credentials() {
        assert!(ask_to_sign_in("Not logged in · Please run /login"));
        assert!(ask_to_sign_in("Invalid auth method selected."));
        assert!(!ask_to_sign_in("Reconnecting... 2/5"));
    }
}
