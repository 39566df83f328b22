//! The opencode CLI (docs/BACKENDS.md §4): `opencode run --format json` with the envelope on stdin,
//! cwd = the repository (also `--dir`), a fixed `--title` (without one opencode first asks the
//! model for a title), the sandbox mode as a permission policy in `OPENCODE_PERMISSION`. The
//! provider and model come from the user's opencode config, or `model` (`provider/model`).
//!
//! `--format json` prints one JSON event per line. opencode prints a `text` part only once it is
//! complete, so each part goes to the stream whole, parts after the first preceded by a blank
//! line. The answer is the text of the last assistant message (a run that uses tools has one
//! message per step): what the stream ended with. `error` events carry opencode's failures.

use std::ffi::OsString;
use std::time::Duration;

use serde_json::{Map, Value};

use super::builtin::{self, Builtin};
use super::cli::{counting_unread, EventParser};
use super::cli_runner::{Cli, CliEvents, Ending};
use crate::activity::Doing;
use crate::backend::{named_model, RunRequest};
use crate::bounded_text::BoundedText;
use crate::env::Env;
use crate::limits::MAX_OUTPUT_BYTES;
use crate::lines::StdoutLine;
use crate::sessions::ResumeStrategy;
use crate::text::js_trim;
use crate::usage::{count, Reported, Usage};

/// The session title: any fixed one spares the model call that would make one up.
const TITLE: &str = "phone-a-friend relay";

/// `OPENCODE_PERMISSION` for a sandbox mode (merged over the user's config; `deny` also stops
/// the tool being offered at all). `external_directory` covers any path outside the
/// repository, so `workspace-write` edits inside it only. `danger-full-access` sets no policy:
/// `--auto` approves what would otherwise be asked (and, in `run`, auto-rejected). Anything
/// unknown gets the safest mode.
fn permission(sandbox: &str) -> Option<&'static str> {
    match sandbox {
        "danger-full-access" => None,
        "workspace-write" => {
            Some(r#"{"bash":"deny","webfetch":"deny","external_directory":"deny"}"#)
        }
        _ => Some(r#"{"edit":"deny","bash":"deny","webfetch":"deny","external_directory":"deny"}"#),
    }
}

/// What opencode's events said, read line by line.
#[derive(Debug)]
pub(crate) struct OpencodeEvents {
    /// Whether any line was a JSON event (else stdout is plain text).
    saw_events: bool,
    /// Text parts streamed so far.
    parts: usize,
    /// The message the last text part belonged to.
    message_id: Option<String>,
    /// That message's text parts, a blank line apart, as much as the limit keeps.
    answer: BoundedText,
    /// Bytes of that message's text events too long to read: an answer past the limit.
    unread: u64,
    /// The last `error` event's message.
    error: Option<String>,
    /// The session the run used (every event carries `sessionID`): what `--session` continues.
    session_id: Option<String>,
    /// Every `step_finish` part's tokens and cost, added up.
    usage: Option<Usage>,
    /// What the last event said opencode is doing.
    doing: Option<Doing>,
}

impl Default for OpencodeEvents {
    fn default() -> Self {
        OpencodeEvents {
            saw_events: false,
            parts: 0,
            message_id: None,
            answer: BoundedText::new(MAX_OUTPUT_BYTES),
            unread: 0,
            error: None,
            session_id: None,
            usage: None,
            doing: None,
        }
    }
}

impl EventParser for OpencodeEvents {
    fn take_doing(&mut self) -> Option<Doing> {
        self.doing.take()
    }

    fn line(&mut self, line: StdoutLine) -> Option<String> {
        if line.cut {
            // Too long to parse; opencode writes `type` first.
            if line.head(4096).starts_with("{\"type\":\"text\"") {
                self.saw_events = true;
                // Its message is unknown: count it against the message the answer has.
                self.unread += line.len;
            }
            return None;
        }
        let Ok(Value::Object(event)) = serde_json::from_str::<Value>(&line.text) else {
            return None;
        };
        let kind = event.get("type").and_then(Value::as_str)?;
        self.saw_events = true;
        if self.session_id.is_none() {
            self.session_id = event
                .get("sessionID")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        match kind {
            "text" => self.text(event.get("part")?),
            "step_start" | "reasoning" => {
                self.doing = Some(Doing::Thinking);
                None
            }
            "tool_use" => {
                let part = event.get("part")?;
                let tool = part.get("tool").and_then(Value::as_str).unwrap_or("tool");
                self.doing = Some(Doing::Tool(tool.to_string()));
                None
            }
            "step_finish" => {
                let step = step_usage(event.get("part")?);
                self.usage = Some(self.usage.unwrap_or_default().plus(step));
                None
            }
            "error" => {
                self.error = Some(error_message(&event));
                None
            }
            _ => None,
        }
    }
}

impl OpencodeEvents {
    fn text(&mut self, part: &Value) -> Option<String> {
        let text = js_trim(part.get("text").and_then(Value::as_str)?);
        if text.is_empty() {
            return None;
        }
        let message_id = part.get("messageID").and_then(Value::as_str);
        let same_message = message_id.is_some() && message_id == self.message_id.as_deref();
        if same_message {
            self.answer.push(b"\n\n");
        } else {
            self.message_id = message_id.map(str::to_string);
            self.answer = BoundedText::new(MAX_OUTPUT_BYTES);
            self.unread = 0;
        }
        self.answer.push(text.as_bytes());
        self.parts += 1;
        Some(if self.parts == 1 {
            text.to_string()
        } else {
            format!("\n\n{text}")
        })
    }
}

/// One model request's tokens (docs/BACKENDS.md, "Usage"): opencode counts the cache read apart
/// from `input` and the reasoning apart from `output`, the relay within them. Its cost is 0
/// unless its config prices the model: then unknown.
fn step_usage(part: &Value) -> Usage {
    let tokens = part.get("tokens");
    let field = |name: &str| count(tokens.and_then(|tokens| tokens.get(name)));
    let read = count(tokens.and_then(|tokens| tokens.get("cache")?.get("read")));
    let reasoning = field("reasoning");
    Usage {
        input_tokens: field("input").map(|input| input + read.unwrap_or(0)),
        output_tokens: field("output").map(|output| output + reasoning.unwrap_or(0)),
        cached_input_tokens: read,
        reasoning_tokens: reasoning,
        cost_usd: part
            .get("cost")
            .and_then(Value::as_f64)
            .filter(|cost| *cost > 0.0),
    }
}

impl CliEvents for OpencodeEvents {
    /// The answer is the last message's text, trimmed and measured; past the limit when some
    /// was unread.
    fn end(self) -> Ending {
        let answer = counting_unread(self.answer.finish(), self.unread);
        Ending {
            session_id: self.session_id,
            reported: Reported {
                usage: self.usage,
                model: None,
            },
            // opencode exits 1 after an error event; its words say why.
            failed: self.error,
            // Without events stdout is plain text, as `--format default` prints it.
            answer: self.saw_events.then_some(answer),
            exit_words: None,
            cut_short: None,
        }
    }
}

/// `{"type":"error","error":{"name":"APIError","data":{"message":…}}}`: the message, else the
/// error's name.
fn error_message(event: &Map<String, Value>) -> String {
    let error = event.get("error");
    let text = |value: Option<&'_ Value>| -> Option<String> {
        value
            .and_then(Value::as_str)
            .map(js_trim)
            .filter(|text| !text.is_empty())
            .map(str::to_string)
    };
    let message = text(
        error
            .and_then(|e| e.get("data"))
            .and_then(|d| d.get("message")),
    )
    .or_else(|| text(error.and_then(|e| e.get("message"))))
    .or_else(|| text(error.and_then(|e| e.get("name"))));
    message.unwrap_or_else(|| "opencode reported an error".to_string())
}

/// The opencode CLI, run by [`super::cli_runner`].
pub struct Opencode;

impl Cli for Opencode {
    /// Each sandbox mode is enforced by opencode's permission policy (see `permission`).
    const BUILTIN: &'static Builtin = &builtin::OPENCODE;
    const RESUME: ResumeStrategy = ResumeStrategy::NativeSession;
    type Events = OpencodeEvents;

    fn args(request: &RunRequest) -> Vec<OsString> {
        // No message argument: `run` reads the prompt from stdin to its end (an argument would be
        // quote-wrapped by opencode, capped by argv, and read as a flag when it starts with `-`).
        let mut args: Vec<OsString> = ["run", "--format", "json", "--dir"]
            .map(OsString::from)
            .into();
        args.push(request.terms.repo_path.clone().into());
        args.extend(["--title".into(), TITLE.into()]);
        if let Some(model) = named_model(&request.terms.model) {
            // One argument: a model name starting with `-` stays a value.
            args.push(format!("--model={model}").into());
        }
        if permission(&request.terms.sandbox).is_none() {
            args.push("--auto".into());
        }
        // `--session <id>` continues a session (its id from the first run's events).
        if let Some(id) = request.session.as_ref().and_then(|s| s.resume.as_deref()) {
            args.extend(["--session".into(), id.into()]);
        }
        args
    }

    /// The child's environment: the relay's, with the sandbox's permission policy, and neither the
    /// models.dev catalogue fetch nor the self-update check (a relay makes no traffic of its own).
    fn child_env(mut env: Env, sandbox: &str, _remaining: Duration) -> Env {
        match permission(sandbox) {
            Some(policy) => env.insert("OPENCODE_PERMISSION".into(), policy.into()),
            None => None,
        };
        env.insert("OPENCODE_DISABLE_MODELS_FETCH".into(), "1".into());
        env.insert("OPENCODE_DISABLE_AUTOUPDATE".into(), "1".into());
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::backends::cli::test_support::feed;

    /// What opencode 1.18.33 printed with `--format json` for a run with one tool call (the
    /// fake model server: a text and a `glob` call, then the answer), ids and snapshots as printed.
    const REAL_RUN: [&str; 7] = [
        r#"{"type":"step_start","timestamp":1795447912844,"sessionID":"ses_df6f71169ffefsaUhjUSi2fHWY","part":{"id":"prt_20908f948001RdWSUh3336F5dC","messageID":"msg_20908f3b6001Hpj9fI88X8WU9m","sessionID":"ses_df6f71169ffefsaUhjUSi2fHWY","snapshot":"20e50a07feffafe7699bf38ff4027a606f406eaa","type":"step-start"}}"#,
        r#"{"type":"text","timestamp":1795447912845,"sessionID":"ses_df6f71169ffefsaUhjUSi2fHWY","part":{"id":"prt_20908f94f001eyUsqQNE2jfc8b","messageID":"msg_20908f3b6001Hpj9fI88X8WU9m","sessionID":"ses_df6f71169ffefsaUhjUSi2fHWY","type":"text","text":"Calling the tool.","time":{"start":1795447912783,"end":1795447912825}}}"#,
        r#"{"type":"tool_use","timestamp":1795447912896,"sessionID":"ses_df6f71169ffefsaUhjUSi2fHWY","part":{"type":"tool","tool":"glob","callID":"call_fake_3","state":{"status":"error","input":{"pattern":"*.txt"},"error":"ripgrep execution failed","time":{"start":1795447912816,"end":1795447912883}},"id":"prt_20908f957001dXk0YvEAeA3hW2","sessionID":"ses_df6f71169ffefsaUhjUSi2fHWY","messageID":"msg_20908f3b6001Hpj9fI88X8WU9m"}}"#,
        r#"{"type":"step_finish","timestamp":1795447913023,"sessionID":"ses_df6f71169ffefsaUhjUSi2fHWY","part":{"id":"prt_20908fa16001JUgoOPdtN7O4h0","reason":"tool-calls","snapshot":"20e50a07feffafe7699bf38ff4027a606f406eaa","messageID":"msg_20908f3b6001Hpj9fI88X8WU9m","sessionID":"ses_df6f71169ffefsaUhjUSi2fHWY","type":"step-finish","tokens":{"total":15,"input":10,"output":5,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}}"#,
        r#"{"type":"step_start","timestamp":1795447913341,"sessionID":"ses_df6f71169ffefsaUhjUSi2fHWY","part":{"id":"prt_20908fb76001WMcs4UQ5ATrmJo","messageID":"msg_20908fa93001SpuoZquxPYTGRm","sessionID":"ses_df6f71169ffefsaUhjUSi2fHWY","snapshot":"20e50a07feffafe7699bf38ff4027a606f406eaa","type":"step-start"}}"#,
        r#"{"type":"text","timestamp":1795447913637,"sessionID":"ses_df6f71169ffefsaUhjUSi2fHWY","part":{"id":"prt_20908fb7a001pYZFYsl4piXvKn","messageID":"msg_20908fa93001SpuoZquxPYTGRm","sessionID":"ses_df6f71169ffefsaUhjUSi2fHWY","type":"text","text":"FAKE_ANSWER\n","time":{"start":1795447913338,"end":1795447913622}}}"#,
        r#"{"type":"step_finish","timestamp":1795447913701,"sessionID":"ses_df6f71169ffefsaUhjUSi2fHWY","part":{"id":"prt_20908fcdd001ERysoCI9ARMh6a","reason":"stop","snapshot":"20e50a07feffafe7699bf38ff4027a606f406eaa","messageID":"msg_20908fa93001SpuoZquxPYTGRm","sessionID":"ses_df6f71169ffefsaUhjUSi2fHWY","type":"step-finish","tokens":{"total":15,"input":10,"output":5,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}}"#,
    ];

    #[test]
    fn streams_each_text_part_and_answers_the_last_message() {
        let mut events = OpencodeEvents::default();
        let chunks = feed(&mut events, &REAL_RUN);
        assert_eq!(chunks, ["Calling the tool.", "\n\nFAKE_ANSWER"]);
        assert!(events.saw_events);
        let ending = events.end();
        assert_eq!(
            ending.session_id.as_deref(),
            Some("ses_df6f71169ffefsaUhjUSi2fHWY")
        );
        assert_eq!(ending.failed, None);
        let answer = ending.answer.expect("an answer from the events");
        assert_eq!(answer.text, "FAKE_ANSWER");
        assert_eq!(answer.trimmed_len, 11);
    }

    #[test]
    fn step_finish_parts_add_up_with_cache_and_reasoning_counted_in() {
        let mut events = OpencodeEvents::default();
        feed(&mut events, &REAL_RUN);
        let step = r#"{"type":"step_finish","part":{"type":"step-finish","tokens":{"total":3070,"input":2700,"output":61,"reasoning":9,"cache":{"write":0,"read":300}},"cost":0.00924}}"#;
        feed(&mut events, &[step]);
        let reported = events.end().reported;
        assert_eq!(reported.model, None);
        assert_eq!(
            reported.usage,
            Some(Usage {
                input_tokens: Some(10 + 10 + 2700 + 300),
                output_tokens: Some(5 + 5 + 61 + 9),
                cached_input_tokens: Some(300),
                reasoning_tokens: Some(9),
                // An unpriced step's 0 is not a price.
                cost_usd: Some(0.00924),
            })
        );
    }

    #[test]
    fn parts_of_one_message_are_joined_by_a_blank_line() {
        let part = |message: &str, text: &str| {
            format!(
                r#"{{"type":"text","part":{{"messageID":"{message}","type":"text","text":{}}}}}"#,
                Value::from(text)
            )
        };
        let (a, b, c, d) = (
            part("m1", "first"),
            part("m2", " second "),
            part("m2", "   "),
            part("m2", "third"),
        );
        let mut events = OpencodeEvents::default();
        let chunks = feed(&mut events, &[&a, &b, &c, &d]);
        assert_eq!(chunks, ["first", "\n\nsecond", "\n\nthird"]);
        assert_eq!(
            events.end().answer.map(|answer| answer.text).as_deref(),
            Some("second\n\nthird")
        );
    }

    #[test]
    fn an_error_event_gives_its_message() {
        let mut events = OpencodeEvents::default();
        feed(
            &mut events,
            &[
                r#"{"type":"error","timestamp":1,"sessionID":"ses_1","error":{"name":"APIError","data":{"message":"Cannot connect to API: Unable to connect. Is the computer able to access the url?","isRetryable":true}}}"#,
            ],
        );
        let ending = events.end();
        assert_eq!(ending.answer.map(|answer| answer.trimmed_len), Some(0));
        assert_eq!(
            ending.failed.as_deref(),
            Some(
                "Cannot connect to API: Unable to connect. Is the computer able to access the url?"
            )
        );
        let mut events = OpencodeEvents::default();
        feed(
            &mut events,
            &[r#"{"type":"error","error":{"name":"UnknownError","data":{}}}"#],
        );
        assert_eq!(events.end().failed.as_deref(), Some("UnknownError"));
    }

    #[test]
    fn a_text_part_too_long_to_read_makes_the_answer_too_large() {
        let mut events = OpencodeEvents::default();
        feed(&mut events, &[REAL_RUN[5]]);
        let cut = StdoutLine {
            text: r#"{"type":"text","timestamp":1795447913637,"sessionID":"ses_1","part":{"text":"xxxx"#
                .into(),
            len: 20_000_000,
            cut: true,
        };
        assert_eq!(events.line(cut), None);
        let tool = StdoutLine {
            text: r#"{"type":"tool_use","part":{"state":{"output":"xxxx"#.into(),
            len: 30_000_000,
            cut: true,
        };
        assert_eq!(events.line(tool), None);
        let answer = events.end().answer.expect("an answer from the events");
        assert_eq!(answer.trimmed_len, 11 + 20_000_000);
        assert!(!answer.is_complete());
    }

    #[test]
    fn sandbox_modes_map_to_permission_policies() {
        let env = |sandbox: &str| Opencode::child_env(Env::new(), sandbox, Duration::ZERO);
        let read_only = env("read-only");
        let policy: Value =
            serde_json::from_str(&read_only["OPENCODE_PERMISSION"]).expect("a JSON policy");
        assert_eq!(
            policy,
            serde_json::json!({"edit":"deny","bash":"deny","webfetch":"deny","external_directory":"deny"})
        );
        let policy: Value = serde_json::from_str(&env("workspace-write")["OPENCODE_PERMISSION"])
            .expect("a JSON policy");
        assert_eq!(
            policy,
            serde_json::json!({"bash":"deny","webfetch":"deny","external_directory":"deny"})
        );
        assert_eq!(env("danger-full-access").get("OPENCODE_PERMISSION"), None);
        assert_eq!(env("other"), read_only);
        assert_eq!(read_only["OPENCODE_DISABLE_MODELS_FETCH"], "1");
        assert_eq!(read_only["OPENCODE_DISABLE_AUTOUPDATE"], "1");
    }
}
