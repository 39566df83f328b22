//! Ollama's streamed `/api/chat` answer (`"stream": true`): NDJSON, one JSON object a line, as
//! a real Ollama writes it:
//!
//! ```text
//! {"model":"m","created_at":"…","message":{"role":"assistant","content":"Hel"},"done":false}
//! {"model":"m","created_at":"…","message":{"role":"assistant","content":"lo"},"done":false}
//! {"model":"m","created_at":"…","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":…}
//! ```
//!
//! and `{"error":"…"}` when generation fails part way. Lines are cut from the body as it
//! arrives, each at most [`MAX_LINE_BYTES`]: a longer one is refused, never buffered. Each
//! complete line is parsed with serde_json into the three fields the backend uses; everything
//! else in it is ignored.
//!
//! Read as `fetch` + `JSON.parse` would read each line, except where Ollama (Go's
//! `encoding/json`) never writes what JavaScript would tolerate: a lone UTF-16 surrogate escape
//! (`"\ud83d"`) or a repeated key is refused as invalid JSON, and so is a field of the wrong type.
//! A body that is not valid UTF-8 is decoded lossily (each bad sequence is U+FFFD), and a
//! byte-order mark before the first line is dropped, as `fetch` does.

use serde::Deserialize;

use crate::text::{js_string, js_truthy};
use crate::usage::{Reported, Usage};

/// The longest line read: a real Ollama line holds one token and its metadata (a few hundred
/// bytes; the last line adds timing statistics), so this only stops a server gone astray.
pub(crate) const MAX_LINE_BYTES: usize = 1024 * 1024;

const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// The fields of one line the backend uses.
#[derive(Debug, Deserialize)]
struct ChatLine {
    #[serde(default)]
    message: Option<ChatLineMessage>,
    #[serde(default)]
    done: Option<bool>,
    #[serde(default)]
    model: Option<String>,
    /// The prompt's tokens (the done line).
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    /// The answer's tokens (the done line).
    #[serde(default)]
    eval_count: Option<u64>,
    /// Any JSON value: the original reports whatever is truthy, as JavaScript's `String()`.
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct ChatLineMessage {
    #[serde(default)]
    content: Option<String>,
}

/// What one line says, in the order the lines came.
#[derive(Debug, PartialEq)]
pub(crate) enum ChatEvent {
    /// A non-empty piece of `message.content`.
    Content(String),
    /// A truthy `error` (JavaScript's sense), as `String()` prints it: the run failed (any
    /// content of that line is dropped).
    Error(String),
    /// The done line's counts (Ollama reports no cache, reasoning or cost) and its model.
    Counted(Reported),
    /// `"done": true`: the answer is complete.
    Done,
}

/// Why the body cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BadBody {
    /// A line that is not a JSON object of Ollama's shape.
    InvalidJson,
    /// A line longer than the limit.
    LineTooLong,
}

/// Cuts the body into lines as its bytes arrive and parses each.
#[derive(Debug)]
pub(crate) struct ChatStream {
    /// The start of a line whose end has not arrived; never more than `limit` bytes.
    partial: Vec<u8>,
    limit: usize,
    at_start: bool,
}

impl ChatStream {
    /// `limit`: bytes of one line, its `\n` not counted.
    pub(crate) fn new(limit: usize) -> Self {
        ChatStream {
            partial: Vec::new(),
            limit,
            at_start: true,
        }
    }

    /// Reads the next bytes of the body, adding what each line completed by them says to
    /// `events`. On an error, the events of the lines before the bad one are kept.
    pub(crate) fn push(
        &mut self,
        bytes: &[u8],
        events: &mut Vec<ChatEvent>,
    ) -> Result<(), BadBody> {
        let mut rest = bytes;
        while let Some(newline) = rest.iter().position(|&b| b == b'\n') {
            let line = &rest[..newline];
            rest = &rest[newline + 1..];
            if self.partial.is_empty() {
                self.line(line, events)?;
            } else {
                self.keep(line)?;
                let whole = std::mem::take(&mut self.partial);
                self.line(&whole, events)?;
                // Reuse the allocation for the next partial line.
                self.partial = whole;
                self.partial.clear();
            }
        }
        self.keep(rest)
    }

    /// The body ended: its last line needs no `\n`.
    pub(crate) fn finish(&mut self, events: &mut Vec<ChatEvent>) -> Result<(), BadBody> {
        let last = std::mem::take(&mut self.partial);
        self.line(&last, events)
    }

    fn keep(&mut self, bytes: &[u8]) -> Result<(), BadBody> {
        if self.partial.len() + bytes.len() > self.limit {
            return Err(BadBody::LineTooLong);
        }
        self.partial.extend_from_slice(bytes);
        Ok(())
    }

    fn line(&mut self, line: &[u8], events: &mut Vec<ChatEvent>) -> Result<(), BadBody> {
        if line.len() > self.limit {
            return Err(BadBody::LineTooLong);
        }
        let mut line = line;
        if std::mem::take(&mut self.at_start) {
            line = line.strip_prefix(BYTE_ORDER_MARK).unwrap_or(line);
        }
        // Blank lines (and the `\r` of a `\r\n` line end) separate nothing.
        if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            return Ok(());
        }
        // An object, not an array serde would read as the struct's fields in order.
        let starts_an_object = line
            .iter()
            .find(|b| !matches!(b, b' ' | b'\t' | b'\r'))
            .is_some_and(|&b| b == b'{');
        if !starts_an_object {
            return Err(BadBody::InvalidJson);
        }
        let text = String::from_utf8_lossy(line);
        let parsed: ChatLine = serde_json::from_str(&text).map_err(|_| BadBody::InvalidJson)?;
        if let Some(error) = parsed.error.filter(js_truthy) {
            events.push(ChatEvent::Error(js_string(&error)));
            return Ok(());
        }
        if let Some(content) = parsed
            .message
            .and_then(|message| message.content)
            .filter(|content| !content.is_empty())
        {
            events.push(ChatEvent::Content(content));
        }
        if parsed.done == Some(true) {
            if parsed.prompt_eval_count.is_some() || parsed.eval_count.is_some() {
                let usage = Usage {
                    input_tokens: parsed.prompt_eval_count,
                    output_tokens: parsed.eval_count,
                    ..Usage::default()
                };
                events.push(ChatEvent::Counted(Reported {
                    usage: Some(usage),
                    model: parsed.model,
                }));
            }
            events.push(ChatEvent::Done);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(body: &[u8], limit: usize) -> Result<Vec<ChatEvent>, BadBody> {
        let mut stream = ChatStream::new(limit);
        let mut events = Vec::new();
        stream.push(body, &mut events)?;
        stream.finish(&mut events)?;
        Ok(events)
    }

    /// Reads the body whole and split at every byte, and checks all agree.
    fn read_any_split(body: &str) -> Result<Vec<ChatEvent>, BadBody> {
        let whole = read(body.as_bytes(), 1000);
        for at in 1..body.len() {
            let mut stream = ChatStream::new(1000);
            let mut events = Vec::new();
            let split = stream
                .push(&body.as_bytes()[..at], &mut events)
                .and_then(|()| stream.push(&body.as_bytes()[at..], &mut events))
                .and_then(|()| stream.finish(&mut events))
                .map(|()| events);
            assert_eq!(split, whole, "{body:?} split at {at}");
        }
        whole
    }

    fn content(text: &str) -> ChatEvent {
        ChatEvent::Content(text.to_string())
    }

    #[test]
    fn reads_what_a_real_ollama_streams() {
        let body = concat!(
            r#"{"model":"llama3.2","created_at":"2024-07-01T10:00:00.1Z","message":{"role":"assistant","content":"The"},"done":false}"#,
            "\n",
            r#"{"model":"llama3.2","created_at":"2024-07-01T10:00:00.2Z","message":{"role":"assistant","content":" sky"},"done":false}"#,
            "\n",
            r#"{"model":"llama3.2","created_at":"2024-07-01T10:00:00.3Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":4883583458,"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":282,"eval_duration":4535599000}"#,
            "\n",
        );
        let counted = ChatEvent::Counted(Reported {
            usage: Some(Usage {
                input_tokens: Some(26),
                output_tokens: Some(282),
                ..Usage::default()
            }),
            model: Some("llama3.2".into()),
        });
        assert_eq!(
            read_any_split(body),
            Ok(vec![
                content("The"),
                content(" sky"),
                counted,
                ChatEvent::Done
            ])
        );
    }

    #[test]
    fn keeps_what_json_parse_would_keep() {
        let events = read_any_split(
            "\u{FEFF}{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\
             \"content\":\" a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00 \",\"images\":null,\
             \"thinking\":\"not this\",\"tool_calls\":[{\"function\":{\"content\":\"nor this\"}}]},\
             \"done\":false,\"x\":[[],{},false,-1.5e+3]}\r\n",
        )
        .expect("valid");
        assert_eq!(events, [content(" a\"\\/\u{8}\u{C}\n\r\t\u{E9}😀 ")]);
    }

    #[test]
    fn a_character_split_across_reads_arrives_whole() {
        // `read_any_split` cuts inside each of these multi-byte characters too.
        let events = read_any_split("{\"message\":{\"content\":\"é€😀\"}}\n").expect("valid");
        assert_eq!(events, [content("é€😀")]);
    }

    #[test]
    fn skips_blank_lines_empty_content_and_null_fields() {
        let events = read_any_split(
            "\n \r\n{}\n{\"message\":null,\"error\":null,\"done\":null}\n\
             {\"message\":{\"content\":\"\"}}\n{\"message\":{\"content\":null}}\n\
             {\"error\":\"\",\"message\":{\"content\":\"x\"}}\n",
        )
        .expect("valid");
        assert_eq!(events, [content("x")]);
    }

    #[test]
    fn an_error_field_wins_over_the_content_of_its_line() {
        let events = read_any_split(
            "{\"message\":{\"content\":\"a\"}}\n{\"error\":\"model \\\"nope\\\" not found\",\"message\":{\"content\":\"b\"}}\n",
        )
        .expect("valid");
        assert_eq!(
            events,
            [
                content("a"),
                ChatEvent::Error("model \"nope\" not found".into())
            ]
        );
    }

    #[test]
    fn an_error_that_is_not_a_string_is_printed_as_javascript_would() {
        assert_eq!(
            read_any_split("{\"error\":{\"code\":1}}\n"),
            Ok(vec![ChatEvent::Error("[object Object]".into())])
        );
        // Falsy values are no error, as the original's `if (data.error)`.
        assert_eq!(
            read_any_split("{\"error\":0,\"message\":{\"content\":\"a\"}}\n"),
            Ok(vec![content("a")])
        );
    }

    #[test]
    fn the_last_line_needs_no_newline() {
        assert_eq!(
            read_any_split("{\"message\":{\"content\":\"a\"},\"done\":true}"),
            Ok(vec![content("a"), ChatEvent::Done])
        );
        assert_eq!(read_any_split(""), Ok(vec![]));
    }

    #[test]
    fn replaces_bytes_that_are_not_utf8() {
        let mut body = br#"{"error":"bad "#.to_vec();
        body.extend_from_slice(b"\xFF\xE2\x82\"}\n");
        assert_eq!(
            read(&body, 1000),
            Ok(vec![ChatEvent::Error("bad \u{FFFD}\u{FFFD}".into())])
        );
    }

    #[test]
    fn refuses_what_is_not_a_json_object_of_ollamas_shape() {
        let invalid = [
            "{",
            "}",
            "{\"a\"}",
            "{\"a\":1,}",
            "<html>oops",
            "{'a':1}",
            "{} {}",
            "{}x",
            "NaN",
            "\"open",
            // Valid JSON, but not what Ollama writes.
            "null",
            "12",
            "[]",
            "[{\"content\":\"x\"}]",
            "{\"message\":{\"content\":7}}",
            "{\"message\":\"text\"}",
            "{\"done\":\"yes\"}",
            // Go never writes a lone surrogate or a repeated key.
            "{\"message\":{\"content\":\"\\ud83d\"}}",
            "{\"message\":{\"content\":\"a\",\"content\":\"b\"}}",
            "\u{FEFF}\u{FEFF}{}",
            // Cut short: the body ended inside the line.
            "{\"message\":{\"content\":\"half",
        ];
        for line in invalid {
            assert_eq!(
                read(line.as_bytes(), 1000),
                Err(BadBody::InvalidJson),
                "{line:?}"
            );
        }
        let deep = format!("{}{}", "[".repeat(2000), "]".repeat(2000));
        assert_eq!(read(deep.as_bytes(), 10_000), Err(BadBody::InvalidJson));
    }

    #[test]
    fn keeps_the_events_before_a_bad_line() {
        let mut stream = ChatStream::new(1000);
        let mut events = Vec::new();
        let result = stream.push(
            b"{\"message\":{\"content\":\"ok\"}}\nnot json\n{\"done\":true}\n",
            &mut events,
        );
        assert_eq!(result, Err(BadBody::InvalidJson));
        assert_eq!(events, [content("ok")]);
    }

    #[test]
    fn refuses_a_line_past_the_limit_without_holding_it() {
        let line = format!("{{\"message\":{{\"content\":\"{}\"}}}}", "x".repeat(100));
        // Exactly at the limit is fine, whole or in pieces.
        assert_eq!(
            read(format!("{line}\n").as_bytes(), line.len()).map(|e| e.len()),
            Ok(1)
        );
        assert_eq!(
            read(format!("{line}\n").as_bytes(), line.len() - 1),
            Err(BadBody::LineTooLong)
        );
        // A line that never ends is refused once it passes the limit, not at the end.
        let mut stream = ChatStream::new(64);
        let mut events = Vec::new();
        assert_eq!(stream.push(&[b' '; 64], &mut events), Ok(()));
        assert_eq!(stream.push(b" ", &mut events), Err(BadBody::LineTooLong));
        assert!(stream.partial.len() <= 64);
        // The limit is per line, not per body.
        let body = format!("{line}\n").repeat(50);
        assert_eq!(read(body.as_bytes(), line.len()).map(|e| e.len()), Ok(50));
    }
}
