//! What the relay shows of text that may hold a secret (docs/GUARANTEES.md, "Secrets"): one
//! function, [`mask_secrets`], masks them in everything the relay itself prints or returns (its
//! error messages, a CLI's last words, doctor's report, a dry run, the addresses it names). A
//! friend's answer is its own words and is not masked.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};

/// Shown in place of a secret.
pub const MASKED: &str = "********";

/// Name parts of environment variables whose values are never shown (a dry run's environment).
const SECRET_NAME_PARTS: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
];

/// Name parts that mark `NAME=value` in free text as a secret: the first five of
/// [`SECRET_NAME_PARTS`], since a CLI's words say `credential`, `auth` and `cookie` about other
/// things.
const SECRET_TEXT_NAME_PARTS: &[&str] = SECRET_NAME_PARTS.split_at(5).0;

/// Whether an environment variable's name says it holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|part| upper.contains(part))
}

// Word boundaries are ASCII (`(?-u:\b)`): a Unicode one keeps the regex crate off its fast DFA,
// and every error message a caller sees goes through these.

/// The keys of the providers whose CLIs we run, and the common token shapes, as the providers
/// print them: OpenAI and Anthropic `sk-…` (`sk-proj-…`, `sk-ant-api03-…`), Google `AIza…`,
/// GitHub `ghp_…`/`github_pat_…`, Slack `xox?-…`, AWS access key ids, and a bearer token.
static KEY_SHAPES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?-u:\b)sk-[A-Za-z0-9][A-Za-z0-9_\-]{15,}",
        r"|(?-u:\b)AIza[0-9A-Za-z_\-]{30,}",
        r"|(?-u:\b)gh[pousr]_[A-Za-z0-9]{20,}",
        r"|(?-u:\b)github_pat_[A-Za-z0-9_]{20,}",
        r"|(?-u:\b)xox[abposr]-[A-Za-z0-9\-]{10,}",
        r"|(?-u:\b)AKIA[0-9A-Z]{16}(?-u:\b)",
        r"|(?i:(?-u:\b)bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*",
    ))
    .unwrap_or_else(|_| unreachable!("a constant pattern"))
});

/// `NAME=value`, `NAME: value` and `"name": "value"`, the value up to white space or its closing
/// quote; the name decides whether it is a secret.
static ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?-u:\b)([A-Za-z_][A-Za-z0-9_.\-]*)("?\s*[=:]\s*)("[^"\n]{1,256}"|'[^'\n]{1,256}'|[^\s"',;]+)"#)
        .unwrap_or_else(|_| unreachable!("a constant pattern"))
});

/// A URL's scheme, so that its user and password (`https://user:pw@host`) can be found.
static URL_START: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u:\b)[A-Za-z][A-Za-z0-9+.\-]*://\[?")
        .unwrap_or_else(|_| unreachable!("a constant pattern"))
});

/// `text` with every secret it can recognise replaced by [`MASKED`]: a URL's user and password,
/// the providers' key shapes, a bearer token, and the value of `NAME=value` whose name says
/// KEY, TOKEN, SECRET or PASSWORD (not a plain number: `max_tokens=4096` says nothing secret).
/// Borrowed when nothing was masked.
pub fn mask_secrets(text: &str) -> Cow<'_, str> {
    let text = mask_userinfo(text);
    let text = match KEY_SHAPES.replace_all(&text, |found: &Captures| {
        let whole = &found[0];
        // A bearer token keeps its word, so that the message still says what it was.
        match whole.get(..7) {
            Some(word) if word.eq_ignore_ascii_case("bearer ") => {
                let spaces = whole[6..].len() - whole[6..].trim_start().len();
                format!("{}{MASKED}", &whole[..6 + spaces])
            }
            _ => MASKED.to_string(),
        }
    }) {
        Cow::Borrowed(_) => text,
        Cow::Owned(masked) => Cow::Owned(masked),
    };
    match ASSIGNMENT.replace_all(&text, |found: &Captures| {
        let (name, between, value) = (&found[1], &found[2], &found[3]);
        let upper = name.to_ascii_uppercase();
        let secret = SECRET_TEXT_NAME_PARTS
            .iter()
            .any(|part| upper.contains(part));
        let bare = value.trim_matches(['"', '\'']);
        // A number, or a placeholder without a letter or digit (`KEY=…` in a hint), is no secret.
        let placeholder = !bare.bytes().any(|b| b.is_ascii_alphanumeric());
        if !secret || bare == MASKED || placeholder || bare.bytes().all(|b| b.is_ascii_digit()) {
            return found[0].to_string();
        }
        let quote = if value.starts_with(['"', '\'']) {
            &value[..1]
        } else {
            ""
        };
        format!("{name}{between}{quote}{MASKED}{quote}")
    }) {
        Cow::Borrowed(_) => text,
        Cow::Owned(masked) => Cow::Owned(masked),
    }
}

/// Every URL's user and password masked: `https://admin:secret@host` is shown
/// `https://********@host`. Up to the last `@` of the URL (before white space), so a password
/// holding `/` or `@` is masked whole; an `@` right after a `/` is a path's (`/@scope/pkg`).
fn mask_userinfo(text: &str) -> Cow<'_, str> {
    let mut masked = String::new();
    let mut copied = 0;
    for start in URL_START.find_iter(text) {
        if start.start() < copied {
            continue;
        }
        let rest = &text[start.end()..];
        let run = &rest[..rest.find(char::is_whitespace).unwrap_or(rest.len())];
        let at = run
            .match_indices('@')
            .map(|(at, _)| at)
            .rfind(|&at| at > 0 && !run[..at].ends_with('/'));
        if let Some(at) = at {
            masked.push_str(&text[copied..start.end()]);
            masked.push_str(MASKED);
            copied = start.end() + at;
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    masked.push_str(&text[copied..]);
    Cow::Owned(masked)
}

/// `text` cut to at most `max` bytes: its start and its end, at character boundaries, with
/// how much was left out between them. Borrowed when it fits.
pub fn bounded(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    // Room for the note; a quarter for the start (what failed), the rest for the end (why).
    let note_room = 48;
    let keep = max.saturating_sub(note_room);
    let mut head_end = keep / 4;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - (keep - head_end);
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let left_out = tail_start - head_end;
    Cow::Owned(format!(
        "{} … [{left_out} bytes left out] … {}",
        &text[..head_end],
        &text[tail_start..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_the_userinfo_of_urls_and_keeps_the_rest() {
        let cases = [
            (
                "https://admin:secret@example.com:8443/ollama/api/chat",
                "https://********@example.com:8443/ollama/api/chat",
            ),
            (
                "https://[admin:secret@example.com:8443]:443/api/chat",
                "https://[********@example.com:8443]:443/api/chat",
            ),
            ("http://a:p/w@d@h:1/x", "http://********@h:1/x"),
            ("http://TOKEN@h:1", "http://********@h:1"),
            ("https://:PW@[::1]:9/x", "https://********@[::1]:9/x"),
            (
                "not reachable at http://u:p@h:1. Then http://v:q@g:2 too",
                "not reachable at http://********@h:1. Then http://********@g:2 too",
            ),
            (
                "http://localhost:11434/api/chat",
                "http://localhost:11434/api/chat",
            ),
            (
                "https://registry.npmjs.org/@scope/pkg",
                "https://registry.npmjs.org/@scope/pkg",
            ),
            ("git@github.com:o/r", "git@github.com:o/r"),
            ("mail me: a@b.c", "mail me: a@b.c"),
            ("plain", "plain"),
        ];
        for (text, shown) in cases {
            assert_eq!(mask_secrets(text), shown, "{text}");
        }
    }

    #[test]
    fn masks_the_key_shapes_a_cli_may_echo() {
        let keys = [
            "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123",
            "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx-0123_abc",
            "AIzaSyA1234567890abcdefghijklmnopqrstu",
            "ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
            "xoxb-1234567890-abcdefghij",
            "AKIAIOSFODNN7EXAMPLE",
        ];
        for key in keys {
            let said = format!("Error: invalid key {key} (check it)");
            assert_eq!(
                mask_secrets(&said),
                format!("Error: invalid key {MASKED} (check it)"),
                "{key}"
            );
        }
        assert_eq!(
            mask_secrets("Authorization: Bearer abc.DEF-123_xyz="),
            format!("Authorization: Bearer {MASKED}")
        );
        // Words that merely look alike stay.
        for text in ["task-force", "sk-short", "skip this", "a bearer of news"] {
            assert_eq!(mask_secrets(text), text);
        }
    }

    #[test]
    fn masks_values_of_secret_names() {
        let cases = [
            (
                "OPENAI_API_KEY=sk-x1 set",
                format!("OPENAI_API_KEY={MASKED} set"),
            ),
            (
                "export GITHUB_TOKEN='abc def'",
                format!("export GITHUB_TOKEN='{MASKED}'"),
            ),
            (
                "export GITHUB_TOKEN='abcdef'",
                format!("export GITHUB_TOKEN='{MASKED}'"),
            ),
            (
                r#"{"apiKey": "abc123"}"#,
                format!(r#"{{"apiKey": "{MASKED}"}}"#),
            ),
            ("password: hunter2", format!("password: {MASKED}")),
            ("max_tokens=4096", "max_tokens=4096".into()),
            ("mode=auto", "mode=auto".into()),
            (
                "export GEMINI_API_KEY=… (in settings)",
                "export GEMINI_API_KEY=… (in settings)".into(),
            ),
            (
                "authMethod: oauth-personal",
                "authMethod: oauth-personal".into(),
            ),
        ];
        for (text, shown) in cases {
            assert_eq!(mask_secrets(text), shown, "{text}");
        }
    }

    #[test]
    fn borrows_text_with_nothing_to_mask() {
        assert!(matches!(
            mask_secrets("codex exited with code 1"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn bounds_text_keeping_its_start_and_end_at_character_boundaries() {
        assert_eq!(bounded("short", 10), "short");
        let long = format!("start {} end", "é".repeat(10_000));
        let cut = bounded(&long, 4096);
        assert!(cut.len() <= 4096, "{}", cut.len());
        assert!(cut.starts_with("start ") && cut.ends_with(" end"), "{cut}");
        assert!(cut.contains("bytes left out"));
    }

    #[test]
    fn names_secret_variables() {
        assert!(is_secret_name("ANTHROPIC_API_KEY"));
        assert!(is_secret_name("my_auth_token"));
        assert!(!is_secret_name("HOME"));
    }
}
