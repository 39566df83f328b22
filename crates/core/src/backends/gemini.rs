//! The gemini CLI (docs/BACKENDS.md §2): the envelope on stdin, cwd = the repository (its
//! workspace, never named in argv), the sandbox mode as an approval mode. Never `--sandbox`: it
//! needs a container runtime most machines lack.
//!
//! `--output-format stream-json` prints one JSON event per line; the assistant's text comes in
//! `{"type":"message","role":"assistant","content":…,"delta":true}` events, streamed as they
//! arrive. The answer is their text joined and trimmed: what `--output-format text` prints.

use std::ffi::OsString;

use serde_json::Value;

use super::builtin::{self, Builtin};
use super::cli::{counting_unread, EventParser};
use super::cli_runner::{Cli, CliEvents, Ending};
use crate::activity::Doing;
use crate::backend::{named_model, RunRequest};
use crate::bounded_text::BoundedText;
use crate::limits::MAX_OUTPUT_BYTES;
use crate::lines::StdoutLine;
use crate::sessions::{uuid_session_flags, ResumeStrategy};
use crate::text::is_js_whitespace;
use crate::usage::{count, Reported, Usage};

/// gemini (Node) drops what it has not yet written to stdout when it exits, and writes a whole
/// event at once: the first event echoes the prompt (up to 500,000 bytes and its JSON escapes),
/// more than a default 64 KiB pipe takes. With a pipe this large, such a write goes in whole
/// (observed with a 300,000-byte prompt: gemini exited with 100 kB of the echo, its answer and
/// its result still unwritten).
const STDOUT_PIPE_BYTES: usize = 1024 * 1024;

/// `read-only` → `plan` (no shell tool, no writes); anything unknown gets the safest mode.
fn approval_mode(sandbox: &str) -> &'static str {
    match sandbox {
        "workspace-write" => "auto_edit",
        "danger-full-access" => "yolo",
        _ => "plan",
    }
}

/// What gemini's stream-json events said, read line by line.
#[derive(Debug)]
pub(crate) struct GeminiEvents {
    /// Whether any line was a stream-json event (else stdout is plain text, as `text` prints).
    saw_events: bool,
    /// The assistant's text, joined, as much as the output limit keeps, and measured.
    answer: BoundedText,
    /// Bytes of assistant events too long to read (see `MAX_EVENT_LINE`): an answer past the limit.
    unread: u64,
    /// Whether the stream has had text that is not whitespace (the stream skips leading whitespace,
    /// as the answer does).
    streaming: bool,
    /// The error of a `result` event that did not succeed.
    error: Option<String>,
    /// Whether the `result` event, gemini's last, came.
    ended: bool,
    /// The session gemini used, from its `init` event: on a resumed turn, the one it really
    /// continued.
    session_id: Option<String>,
    /// The `result` event's `stats`.
    reported: Reported,
    /// What the last event said gemini is doing.
    doing: Option<Doing>,
}

impl Default for GeminiEvents {
    fn default() -> Self {
        GeminiEvents {
            saw_events: false,
            answer: BoundedText::new(MAX_OUTPUT_BYTES),
            unread: 0,
            streaming: false,
            error: None,
            ended: false,
            session_id: None,
            reported: Reported::default(),
            doing: None,
        }
    }
}

impl EventParser for GeminiEvents {
    fn take_doing(&mut self) -> Option<Doing> {
        self.doing.take()
    }

    fn line(&mut self, line: StdoutLine) -> Option<String> {
        if line.cut {
            // Too long to parse; its beginning tells what it is (gemini writes `type` and
            // `role` first).
            let head = line.head(4096);
            if head.starts_with("{\"type\":\"message\"") && head.contains("\"role\":\"assistant\"")
            {
                self.saw_events = true;
                self.unread += line.len;
            }
            return None;
        }
        let Ok(Value::Object(event)) = serde_json::from_str::<Value>(&line.text) else {
            return None;
        };
        let kind = event.get("type").and_then(Value::as_str)?;
        self.saw_events = true;
        match kind {
            "tool_use" => {
                let tool = event
                    .get("tool_name")
                    .and_then(Value::as_str)
                    .unwrap_or("tool");
                self.doing = Some(Doing::Tool(tool.to_string()));
                None
            }
            "tool_result" => {
                self.doing = Some(Doing::Thinking);
                None
            }
            "init" => {
                self.doing = Some(Doing::Thinking);
                self.session_id = event
                    .get("session_id")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                None
            }
            "message" if event.get("role").and_then(Value::as_str) == Some("assistant") => {
                let text = event.get("content").and_then(Value::as_str)?;
                self.answer.push(text.as_bytes());
                let text = if self.streaming {
                    text
                } else {
                    text.trim_start_matches(is_js_whitespace)
                };
                self.streaming |= !text.is_empty();
                (!text.is_empty()).then(|| text.to_string())
            }
            "result" => {
                self.result(&event);
                None
            }
            _ => None,
        }
    }
}

impl GeminiEvents {
    /// gemini's last event: its usage, and its error when it did not succeed.
    fn result(&mut self, event: &serde_json::Map<String, Value>) {
        self.ended = true;
        self.reported = reported(event.get("stats"));
        if event.get("status").and_then(Value::as_str) == Some("success") {
            return;
        }
        let message = event
            .get("error")
            .and_then(|error| error.get("message"))
            .and_then(Value::as_str);
        self.error = message.map(str::to_string);
    }
}

/// The `result` event's `stats`, summed over the run's requests (docs/BACKENDS.md, "Usage"):
/// `input_tokens` holds the `cached` ones; gemini reports no thoughts nor cost. The model is the
/// one `stats.models` names when it names one (`init` names the one asked, `auto` by default).
fn reported(stats: Option<&Value>) -> Reported {
    let Some(stats) = stats else {
        return Reported::default();
    };
    let model = match stats.get("models") {
        Some(Value::Object(models)) if models.len() == 1 => models.keys().next().cloned(),
        _ => None,
    };
    Reported {
        usage: Some(Usage {
            input_tokens: count(stats.get("input_tokens")),
            output_tokens: count(stats.get("output_tokens")),
            cached_input_tokens: count(stats.get("cached")),
            ..Usage::default()
        }),
        model,
    }
}

impl CliEvents for GeminiEvents {
    /// The answer is the assistant's text, trimmed and measured; past the output limit when
    /// some was unread.
    fn end(self) -> Ending {
        let answer = counting_unread(self.answer.finish(), self.unread);
        Ending {
            session_id: self.session_id,
            reported: self.reported,
            failed: None,
            // Without events stdout is plain text, as `--output-format text` prints it.
            answer: self.saw_events.then_some(answer),
            exit_words: self.error,
            // gemini loses what it has not written when it exits: never a cut answer.
            cut_short: (self.saw_events && !self.ended)
                .then_some("gemini exited before writing all its output (no result event)"),
        }
    }
}

/// The gemini CLI, run by [`super::cli_runner`].
pub struct Gemini;

impl Cli for Gemini {
    const BUILTIN: &'static Builtin = &builtin::GEMINI;
    const RESUME: ResumeStrategy = ResumeStrategy::NativeSession;
    const STDOUT_PIPE_BYTES: Option<usize> = Some(STDOUT_PIPE_BYTES);
    type Events = GeminiEvents;

    /// The repository is the working directory.
    fn args(request: &RunRequest) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            "--approval-mode".into(),
            approval_mode(&request.terms.sandbox).into(),
            // The caller chose this repository; headless gemini refuses untrusted folders.
            "--skip-trust".into(),
            // No `--include-directories`: the cwd (the repository) is already gemini's
            // workspace, and that flag splits its value on commas (`proj,/etc` is two folders).
            "--output-format".into(),
            "stream-json".into(),
        ];
        if let Some(model) = named_model(&request.terms.model) {
            args.extend(["-m".into(), model.into()]);
        }
        // Sessions are gemini's own, per project folder (the repository): `--session-id <uuid>`
        // starts one, `--resume <uuid>` continues it (verified with 0.61: the next request holds
        // the earlier turn).
        args.extend(uuid_session_flags(request.session.as_ref(), "--resume"));
        // gemini reads stdin first and appends `--prompt`: an empty one adds nothing.
        args.extend(["--prompt".into(), OsString::new()]);
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::backends::cli::test_support::feed;

    /// What gemini 0.61 printed with `--output-format stream-json` for a model answer sent in
    /// three parts (the fake model server, `parts: 3`); `text` printed the parts joined.
    const REAL_STREAM: [&str; 6] = [
        r#"{"type":"init","timestamp":"2026-11-23T14:01:27.690Z","session_id":"efea5438-1289-48e1-ba8d-708c9cf90a89","model":"auto"}"#,
        r#"{"type":"message","timestamp":"2026-11-23T14:01:27.748Z","role":"user","content":"Say hi\n"}"#,
        r#"{"type":"message","timestamp":"2026-11-23T14:01:27.847Z","role":"assistant","content":"  Hello there, ","delta":true}"#,
        r#"{"type":"message","timestamp":"2026-11-23T14:01:28.149Z","role":"assistant","content":"friend of mine!","delta":true}"#,
        r#"{"type":"message","timestamp":"2026-11-23T14:01:28.443Z","role":"assistant","content":" ünïcødé 😀 end.\n","delta":true}"#,
        r#"{"type":"result","timestamp":"2026-11-23T14:01:28.822Z","status":"success","stats":{"total_tokens":15,"input_tokens":10,"output_tokens":5,"cached":0,"input":10,"duration_ms":1132,"tool_calls":0}}"#,
    ];

    #[test]
    fn streams_each_assistant_delta_and_answers_their_text_trimmed() {
        let mut events = GeminiEvents::default();
        let chunks = feed(&mut events, &REAL_STREAM);
        // The stream starts where the answer does: its leading whitespace is skipped.
        assert_eq!(
            chunks,
            ["Hello there, ", "friend of mine!", " ünïcødé 😀 end.\n"]
        );
        assert!(events.saw_events && events.ended);
        let ending = events.end();
        assert_eq!(
            ending.session_id.as_deref(),
            Some("efea5438-1289-48e1-ba8d-708c9cf90a89")
        );
        let answer = ending.answer.expect("an answer from the events");
        assert_eq!(answer.text, "Hello there, friend of mine! ünïcødé 😀 end.");
        assert_eq!(answer.trimmed_len, answer.text.len() as u64);
        assert_eq!((ending.exit_words, ending.cut_short), (None, None));
    }

    #[test]
    fn the_result_events_stats_give_the_usage_and_the_model_called() {
        // gemini 0.61's `result` of a run with a tool call, as printed with the fake model
        // server's counts: `init` named `auto`, `stats.models` the model called.
        let result = r#"{"type":"result","timestamp":"2026-11-29T08:37:24.348Z","status":"success","stats":{"total_tokens":4376,"input_tokens":4234,"output_tokens":126,"cached":500,"input":3734,"duration_ms":253,"tool_calls":1,"models":{"gemini-3.1-pro-preview-customtools":{"total_tokens":4376,"input_tokens":4234,"output_tokens":126,"cached":500,"input":3734}}}}"#;
        let mut events = GeminiEvents::default();
        feed(&mut events, &[result]);
        let reported = events.end().reported;
        assert_eq!(
            reported.model.as_deref(),
            Some("gemini-3.1-pro-preview-customtools")
        );
        assert_eq!(
            reported.usage,
            Some(Usage {
                input_tokens: Some(4234),
                output_tokens: Some(126),
                cached_input_tokens: Some(500),
                reasoning_tokens: None,
                cost_usd: None,
            })
        );
    }

    #[test]
    fn output_cut_short_has_no_result_event() {
        let mut events = GeminiEvents::default();
        feed(&mut events, &REAL_STREAM[..4]);
        assert!(events.saw_events && !events.ended);
        assert_eq!(
            events.end().cut_short,
            Some("gemini exited before writing all its output (no result event)")
        );
    }

    #[test]
    fn whitespace_before_the_first_text_is_not_streamed() {
        let mut events = GeminiEvents::default();
        let chunks = feed(
            &mut events,
            &[
                r#"{"type":"message","role":"assistant","content":"\n  ","delta":true}"#,
                r#"{"type":"message","role":"assistant","content":"","delta":true}"#,
                r#"{"type":"message","role":"assistant","content":" a","delta":true}"#,
                r#"{"type":"message","role":"assistant","content":" ","delta":true}"#,
                r#"{"type":"message","role":"assistant","content":"b ","delta":true}"#,
            ],
        );
        assert_eq!(chunks, ["a", " ", "b "]);
        assert_eq!(
            events.end().answer.map(|answer| answer.text).as_deref(),
            Some("a b")
        );
    }

    #[test]
    fn a_failed_result_gives_its_error_and_other_events_add_nothing() {
        let mut events = GeminiEvents::default();
        let chunks = feed(
            &mut events,
            &[
                REAL_STREAM[0],
                r#"{"type":"tool_use","tool_name":"read_file","tool_id":"t1","parameters":{"content":"not an answer"}}"#,
                r#"{"type":"tool_result","tool_id":"t1","status":"success","output":"file text"}"#,
                r#"{"type":"message","role":"user","content":"the prompt"}"#,
                r#"{"type":"result","timestamp":"2026-11-23T14:01:50.499Z","status":"error","error":{"type":"unknown","message":"[API Error: fake failure text]"},"stats":{}}"#,
            ],
        );
        assert!(chunks.is_empty());
        assert!(events.ended);
        let ending = events.end();
        assert_eq!(ending.answer.map(|answer| answer.trimmed_len), Some(0));
        assert_eq!(
            ending.exit_words.as_deref(),
            Some("[API Error: fake failure text]")
        );
    }

    #[test]
    fn lines_that_are_not_events_are_left_to_plain_stdout() {
        let mut events = GeminiEvents::default();
        let chunks = feed(
            &mut events,
            &["plain answer", "[1,2]", "{\"no\":\"type\"}", "{"],
        );
        assert!(chunks.is_empty());
        assert!(!events.saw_events);
        assert_eq!(events.end().answer, None);
    }

    #[test]
    fn an_assistant_event_too_long_to_read_makes_the_answer_too_large() {
        let mut events = GeminiEvents::default();
        feed(&mut events, &[REAL_STREAM[2]]);
        let cut = StdoutLine {
            text: r#"{"type":"message","timestamp":"2026-11-23T14:01:28.149Z","role":"assistant","content":"xxxx"#.into(),
            len: 20_000_000,
            cut: true,
        };
        assert_eq!(events.line(cut), None);
        // A long line of anything else is not the answer's business.
        let other = StdoutLine {
            text: r#"{"type":"tool_result","tool_id":"t1","output":"xxxx"#.into(),
            len: 30_000_000,
            cut: true,
        };
        assert_eq!(events.line(other), None);
        let answer = events.end().answer.expect("an answer from the events");
        assert_eq!(answer.trimmed_len, "Hello there,".len() as u64 + 20_000_000);
        assert!(!answer.is_complete());
    }

    #[test]
    fn sandbox_modes_map_to_approval_modes() {
        assert_eq!(approval_mode("read-only"), "plan");
        assert_eq!(approval_mode("workspace-write"), "auto_edit");
        assert_eq!(approval_mode("danger-full-access"), "yolo");
    }
}
