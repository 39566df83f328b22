//! The claude CLI (Claude Code, docs/BACKENDS.md §3): `claude -p` with the envelope on stdin, cwd =
//! the repository (also named with `--add-dir`), the sandbox mode as a tool policy, no session
//! kept.
//!
//! When somebody streams, or the stall watchdog watches (`json` prints nothing until the end),
//! `--output-format stream-json --verbose --include-partial-messages`
//! prints one JSON event per line: the model's text arrives in `stream_event` lines holding the
//! raw Anthropic `content_block_delta` events, and goes to the stream as it comes, each assistant
//! message after the first preceded by a blank line. Otherwise `--output-format json` prints just
//! the last of those lines. Either way the answer is that last line, the `result` event: its
//! `result` text (the last assistant message), or a failure when `is_error` is set.

use std::ffi::OsString;
use std::time::Duration;

use serde_json::{Map, Value};

use super::builtin::{self, Builtin};
use super::cli::EventParser;
use super::cli_runner::{Cli, CliEvents, Ending};
use crate::activity::Doing;
use crate::backend::{named_model, RunRequest};
use crate::bounded_text::{measure, Measured};
use crate::env::Env;
use crate::limits::MAX_OUTPUT_BYTES;
use crate::lines::StdoutLine;
use crate::sessions::{uuid_session_flags, ResumeStrategy};
use crate::text::{is_js_whitespace, js_trim};
use crate::usage::{count, Reported, Usage};

/// The tools a read-only run is offered: reading and searching only (no shell, no writes, no
/// web). `--tools` decides what the model is offered at all; the same list in `--allowedTools`
/// lets them run without a permission prompt, which `-p` cannot answer.
const READ_TOOLS: &str = "Read,Grep,Glob";
/// `workspace-write` also offers the file-editing tools (no shell, no web).
const WRITE_TOOLS: &str = "Read,Grep,Glob,Edit,Write";

/// Variables that tell claude it runs inside another Claude Code session (the host guard of
/// upstream, the phone-a-friend v4.1.1 CLI; 2.1.330 no longer refuses to start on them, so removing
/// them only keeps the child clean).
const HOST_SESSION_VARS: [&str; 2] = ["CLAUDECODE", "CLAUDE_CODE_SESSION"];

/// Largest schema passed with `--json-schema` (Linux caps one argument at 128 KiB).
const MAX_SCHEMA_ARGUMENT_BYTES: usize = 64 * 1024;

/// claude's own default: 10 retries after the first attempt.
const DEFAULT_MAX_RETRIES: u32 = 10;

/// claude's flags for a sandbox mode. A tool policy, not an OS sandbox:
/// - `read-only`: only the read tools are offered.
/// - `workspace-write`: Edit and Write are offered too, under `acceptEdits`, which accepts an
///   edit inside the working folders (the cwd and `--add-dir`: the repository) and refuses one
///   outside (pre-approving Edit/Write through `--allowedTools` would let them write anywhere).
/// - `danger-full-access`: every tool, no permission checks. claude refuses this as root
///   ("--dangerously-skip-permissions cannot be used with root/sudo privileges …"): its own
///   error is passed on.
///
/// Anything unknown gets the safest mode.
fn sandbox_args(sandbox: &str) -> Vec<&'static str> {
    match sandbox {
        "danger-full-access" => vec!["--dangerously-skip-permissions"],
        "workspace-write" => vec![
            "--tools",
            WRITE_TOOLS,
            "--allowedTools",
            READ_TOOLS,
            "--permission-mode",
            "acceptEdits",
        ],
        _ => vec!["--tools", READ_TOOLS, "--allowedTools", READ_TOOLS],
    }
}

/// How many retries claude may make so that, against a dead or failing server, its backoff
/// (0.5 s doubling up to 32 s, plus up to 25 % jitter: measured 0.6, 1.2, 2.4, 4.5, 8.4, 19,
/// 39 … s) spends at most half of `remaining`: it then reports its own error (`Connection
/// refused`, `500 …`) before the deadline instead of being killed by it. Never more than
/// claude's default, nor than the caller's own `CLAUDE_CODE_MAX_RETRIES`.
fn max_retries(remaining: Duration, callers: Option<&str>) -> u32 {
    let budget = remaining.as_secs_f64() / 2.0;
    let mut spent = 0.0;
    let mut retries = 0;
    while retries < DEFAULT_MAX_RETRIES {
        let backoff = (0.5 * 2f64.powi(retries as i32)).min(32.0) * 1.25;
        if spent + backoff > budget {
            break;
        }
        spent += backoff;
        retries += 1;
    }
    match callers.and_then(|value| value.trim().parse::<u32>().ok()) {
        Some(theirs) => retries.min(theirs),
        None => retries,
    }
}

/// What the `result` event said.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// The answer: `result`, trimmed and measured.
    Answer(Measured),
    /// `is_error`: claude's own words for the failure.
    Failed(String),
}

/// What claude's events said, read line by line.
#[derive(Debug, Default)]
pub(crate) struct ClaudeEvents {
    /// Whether any line was a JSON event (else stdout is plain text).
    saw_events: bool,
    /// The `result` event, claude's last line.
    outcome: Option<Outcome>,
    /// The longest JSON line too long to read. If the `result` event never came whole, it was
    /// this one: an answer past the limit (its length, JSON included, bounds its text).
    longest_cut: u64,
    /// Assistant messages whose text has begun in the stream.
    messages: usize,
    /// Whether the current message has streamed text that is not whitespace (the stream skips
    /// each message's leading whitespace, as the answer is trimmed).
    message_has_text: bool,
    /// The session claude used, as its events name it (the `result` event last): on a resumed
    /// turn, the one it really continued.
    session_id: Option<String>,
    /// The `result` event's totals and the model its `init` event named.
    reported: Reported,
    /// What the last event said claude is doing.
    doing: Option<Doing>,
}

impl EventParser for ClaudeEvents {
    fn take_doing(&mut self) -> Option<Doing> {
        self.doing.take()
    }

    fn line(&mut self, line: StdoutLine) -> Option<String> {
        if line.cut {
            // claude does not write `type` first, so a cut line cannot be told by its start.
            if line.text.starts_with('{') {
                self.longest_cut = self.longest_cut.max(line.len);
            }
            return None;
        }
        let Ok(Value::Object(event)) = serde_json::from_str::<Value>(&line.text) else {
            return None;
        };
        let kind = event.get("type").and_then(Value::as_str)?;
        self.saw_events = true;
        if let Some(id) = event.get("session_id").and_then(Value::as_str) {
            self.session_id = Some(id.to_string());
        }
        match kind {
            "stream_event" => {
                // A subagent's messages carry the tool call that started it: not the answer.
                if !event.get("parent_tool_use_id").is_none_or(Value::is_null) {
                    return None;
                }
                self.stream_event(event.get("event")?)
            }
            "result" => {
                self.outcome = Some(outcome(&event));
                self.reported.usage = usage_of(&event);
                // `modelUsage` names each model that answered, `init` the one asked.
                if let Some(Value::Object(models)) = event.get("modelUsage") {
                    if let [(model, _)] = models.iter().collect::<Vec<_>>()[..] {
                        self.reported.model = Some(model.clone());
                    }
                }
                None
            }
            // A request under way, or tool results going back to the model.
            "system" if event.get("subtype").and_then(Value::as_str) == Some("status") => {
                self.doing = Some(Doing::Thinking);
                None
            }
            "user" => {
                self.doing = Some(Doing::Thinking);
                None
            }
            "system" if event.get("subtype").and_then(Value::as_str) == Some("init") => {
                let model = event.get("model").and_then(Value::as_str);
                self.reported.model = model.map(str::to_string);
                None
            }
            _ => None,
        }
    }
}

impl ClaudeEvents {
    /// One raw Anthropic SSE event: a new message, or a piece of its text.
    fn stream_event(&mut self, event: &Value) -> Option<String> {
        match event.get("type").and_then(Value::as_str)? {
            "message_start" => {
                self.message_has_text = false;
                self.doing = Some(Doing::Thinking);
                None
            }
            "content_block_start" => {
                let block = event.get("content_block")?;
                self.doing = match block.get("type").and_then(Value::as_str)? {
                    "tool_use" | "server_tool_use" => {
                        let name = block.get("name").and_then(Value::as_str).unwrap_or("tool");
                        Some(Doing::Tool(name.to_string()))
                    }
                    "thinking" | "redacted_thinking" => Some(Doing::Thinking),
                    _ => None,
                };
                None
            }
            "content_block_delta" => {
                let delta = event.get("delta")?;
                if delta.get("type").and_then(Value::as_str) != Some("text_delta") {
                    return None;
                }
                let text = delta.get("text").and_then(Value::as_str)?;
                if self.message_has_text {
                    return (!text.is_empty()).then(|| text.to_string());
                }
                let text = text.trim_start_matches(is_js_whitespace);
                if text.is_empty() {
                    return None;
                }
                self.message_has_text = true;
                self.messages += 1;
                Some(if self.messages == 1 {
                    text.to_string()
                } else {
                    format!("\n\n{text}")
                })
            }
            _ => None,
        }
    }
}

/// The `result` event's totals, summed over the run's requests (docs/BACKENDS.md, "Usage"):
/// Anthropic counts cache reads and writes apart from `input_tokens`, the relay within them.
fn usage_of(event: &Map<String, Value>) -> Option<Usage> {
    let usage = event.get("usage")?;
    let fresh = count(usage.get("input_tokens"));
    let read = count(usage.get("cache_read_input_tokens"));
    let written = count(usage.get("cache_creation_input_tokens"));
    let details = usage.get("output_tokens_details");
    Some(Usage {
        input_tokens: fresh.map(|fresh| fresh + read.unwrap_or(0) + written.unwrap_or(0)),
        output_tokens: count(usage.get("output_tokens")),
        cached_input_tokens: read,
        reasoning_tokens: count(details.and_then(|details| details.get("thinking_tokens"))),
        cost_usd: event.get("total_cost_usd").and_then(Value::as_f64),
    })
}

/// The `result` event's answer or failure.
fn outcome(event: &Map<String, Value>) -> Outcome {
    let result = event.get("result").and_then(Value::as_str).unwrap_or("");
    if event.get("is_error").and_then(Value::as_bool) != Some(true) {
        return Outcome::Answer(measure(result.as_bytes(), MAX_OUTPUT_BYTES));
    }
    let result = js_trim(result);
    if !result.is_empty() {
        return Outcome::Failed(result.to_string());
    }
    // e.g. `error_max_turns`: `errors: ["Reached maximum number of turns (1)"]`.
    let errors: Vec<&str> = event
        .get("errors")
        .and_then(Value::as_array)
        .map(|errors| errors.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !errors.is_empty() {
        return Outcome::Failed(errors.join("; "));
    }
    let subtype = event.get("subtype").and_then(Value::as_str).unwrap_or("");
    Outcome::Failed(format!("claude failed ({subtype})"))
}

impl CliEvents for ClaudeEvents {
    fn end(self) -> Ending {
        let ended = self.outcome.is_some() || self.longest_cut > 0;
        let (failed, answer) = match self.outcome {
            Some(Outcome::Failed(message)) => (Some(message), None),
            Some(Outcome::Answer(answer)) => (None, Some(answer)),
            None if self.longest_cut > 0 => (
                None,
                Some(Measured {
                    text: String::new(),
                    trimmed_len: self.longest_cut,
                }),
            ),
            // Without events stdout is plain text, as `--output-format text` prints it.
            None if !self.saw_events => (None, None),
            None => (None, Some(Measured::default())),
        };
        Ending {
            session_id: self.session_id,
            reported: self.reported,
            failed,
            answer,
            // Past stderr, where claude's refusals before any request are (a bad flag, root with
            // --dangerously-skip-permissions), and the answer: its exit code.
            exit_words: None,
            cut_short: (self.saw_events && !ended)
                .then_some("claude exited without a result event"),
        }
    }
}

/// The claude CLI, run by [`super::cli_runner`].
pub struct Claude;

impl Cli for Claude {
    /// Each sandbox mode is enforced by claude's tool policy (see `sandbox_args`).
    const BUILTIN: &'static Builtin = &builtin::CLAUDE;
    const RESUME: ResumeStrategy = ResumeStrategy::NativeSession;
    type Events = ClaudeEvents;

    fn args(request: &RunRequest) -> Vec<OsString> {
        // `-p` without a prompt reads the prompt from stdin to its end: no argv limit, and a
        // prompt starting with `-` cannot be taken for a flag.
        let mut args: Vec<OsString> = vec!["-p".into(), "--output-format".into()];
        if request.terms.wants_stream() {
            args.extend(
                ["stream-json", "--verbose", "--include-partial-messages"].map(OsString::from),
            );
        } else {
            args.push("json".into());
        }
        args.extend(["--add-dir".into(), request.terms.repo_path.clone().into()]);
        if let Some(model) = named_model(&request.terms.model) {
            // One argument: a model name starting with `-` stays a value.
            args.push(format!("--model={model}").into());
        }
        // claude's structured output (a `StructuredOutput` tool it makes the model call). In argv,
        // so only a schema well under the 128 KiB argument limit; the prompt carries it anyway.
        if let Some(schema) = request
            .terms
            .schema
            .as_deref()
            .filter(|schema| schema.text().len() <= MAX_SCHEMA_ARGUMENT_BYTES)
        {
            args.extend(["--json-schema".into(), schema.text().into()]);
        }
        args.extend(
            sandbox_args(&request.terms.sandbox)
                .into_iter()
                .map(OsString::from),
        );
        args.extend(
            [
                // The envelope is a prompt, never a command.
                "--disable-slash-commands",
                // No subagents: their tools would escape the policy above.
                "--disallowedTools",
                "Task",
            ]
            .map(OsString::from),
        );
        if request.session.is_some() {
            // `--session-id <uuid>` starts a session, `--resume <uuid>` continues it
            // (docs/BACKENDS.md §3).
            args.extend(uuid_session_flags(request.session.as_ref(), "--resume"));
        } else {
            // Nothing written to ~/.claude/projects for a one-off relay.
            args.push("--no-session-persistence".into());
        }
        args
    }

    /// The child's environment: the relay's, without the host-session variables, with claude's
    /// retries bounded by the deadline and its non-essential traffic (update checks, telemetry,
    /// error reports, the `HEAD /api/hello` probe and its DNS look-ups) turned off.
    fn child_env(mut env: Env, _sandbox: &str, remaining: Duration) -> Env {
        for name in HOST_SESSION_VARS {
            env.remove(name);
        }
        let retries = max_retries(
            remaining,
            env.get("CLAUDE_CODE_MAX_RETRIES").map(String::as_str),
        );
        env.insert("CLAUDE_CODE_MAX_RETRIES".into(), retries.to_string());
        env.insert(
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
            "1".into(),
        );
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::backends::cli::test_support::feed;

    /// What claude 2.1.330 printed with `stream-json --verbose --include-partial-messages` for a
    /// model answer sent in three parts (the fake model server), shortened: the `system` events
    /// and most of the `result` fields are left out, the rest is as printed.
    const REAL_STREAM: [&str; 10] = [
        r#"{"type":"system","subtype":"status","status":"requesting","session_id":"1787f175-85b1-49b2-aa21-7fded597e9ea","uuid":"56a4ce35-8861-4322-85be-aa7a63f559ed"}"#,
        r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_fake_2","type":"message","role":"assistant","model":"claude-opus-5-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}},"session_id":"1787f175-85b1-49b2-aa21-7fded597e9ea","parent_tool_use_id":null,"uuid":"717b9f28-f4b9-466c-a464-f476421ffe99","ttft_ms":27,"thinking_display":"updates","api_message_id":"msg_fake_2"}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}},"session_id":"1787f175-85b1-49b2-aa21-7fded597e9ea","parent_tool_use_id":null,"uuid":"5ec2eafb-d93b-4b72-87f4-a5bf1540edef","api_message_id":"msg_fake_2"}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" FAK"}},"session_id":"1787f175-85b1-49b2-aa21-7fded597e9ea","parent_tool_use_id":null,"uuid":"53f195e0-aeba-44db-862d-eaa575803b12","api_message_id":"msg_fake_2"}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"E_AN"}},"session_id":"1787f175-85b1-49b2-aa21-7fded597e9ea","parent_tool_use_id":null,"uuid":"90270f1a-7a14-49e3-acf5-dc63f88c7393","api_message_id":"msg_fake_2"}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"SWER"}},"session_id":"1787f175-85b1-49b2-aa21-7fded597e9ea","parent_tool_use_id":null,"uuid":"f832e5ab-974f-49d3-93bd-5ffd47ebfc90","api_message_id":"msg_fake_2"}"#,
        r#"{"type":"assistant","message":{"id":"msg_fake_2","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{"type":"text","text":" FAKE_ANSWER"}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5},"context_management":null},"parent_tool_use_id":null,"session_id":"1787f175-85b1-49b2-aa21-7fded597e9ea","uuid":"0d7252ab-f3ab-49b3-9dbc-18316fd6a37f","timestamp":"2026-11-23T15:31:47.431Z"}"#,
        r#"{"type":"stream_event","event":{"type":"content_block_stop","index":0},"session_id":"1787f175-85b1-49b2-aa21-7fded597e9ea","parent_tool_use_id":null,"uuid":"a4294cf3-eef8-4dc8-b90b-f9b84c2d92a3","api_message_id":"msg_fake_2"}"#,
        r#"{"type":"stream_event","event":{"type":"message_stop"},"session_id":"1787f175-85b1-49b2-aa21-7fded597e9ea","parent_tool_use_id":null,"uuid":"d02ec413-ba12-4705-96a7-443e287c31e3","api_message_id":"msg_fake_2"}"#,
        r#"{"duration_api_ms":341,"stop_reason":"end_turn","session_id":"1787f175-85b1-49b2-aa21-7fded597e9ea","permission_denials":[],"terminal_reason":"completed","is_error":false,"num_turns":1,"subtype":"success","api_error_status":null,"result":" FAKE_ANSWER","type":"result","duration_ms":197}"#,
    ];

    #[test]
    fn streams_each_text_delta_and_answers_the_result() {
        let mut events = ClaudeEvents::default();
        let chunks = feed(&mut events, &REAL_STREAM);
        assert_eq!(chunks, ["FAK", "E_AN", "SWER"]);
        assert!(events.saw_events);
        assert_eq!(
            events.session_id.as_deref(),
            Some("1787f175-85b1-49b2-aa21-7fded597e9ea")
        );
        let answer = Measured {
            text: "FAKE_ANSWER".into(),
            trimmed_len: 11,
        };
        assert_eq!(events.outcome, Some(Outcome::Answer(answer)));
    }

    #[test]
    fn the_result_event_gives_the_runs_usage_cost_and_model() {
        // claude 2.1.330's `result` of a run with a tool call (two requests), as printed with the
        // fake model server's counts, its other fields left out.
        let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"Hi there!","session_id":"b6eaf44b-b16b-4c02-a5b8-f567f385d21b","total_cost_usd":0.019906,"usage":{"input_tokens":4234,"cache_creation_input_tokens":70,"cache_read_input_tokens":500,"output_tokens":126,"output_tokens_details":{"thinking_tokens":0}},"modelUsage":{"claude-opus-5-5":{"inputTokens":4234,"outputTokens":126,"cacheReadInputTokens":500,"cacheCreationInputTokens":70,"costUSD":0.019906}},"num_turns":2}"#;
        let mut events = ClaudeEvents::default();
        feed(&mut events, &[result]);
        let reported = events.end().reported;
        assert_eq!(reported.model.as_deref(), Some("claude-opus-5-5"));
        assert_eq!(
            reported.usage,
            Some(Usage {
                // Anthropic's input_tokens leave out the cache: the relay counts it in.
                input_tokens: Some(4234 + 500 + 70),
                output_tokens: Some(126),
                cached_input_tokens: Some(500),
                reasoning_tokens: Some(0),
                cost_usd: Some(0.019906),
            })
        );
    }

    #[test]
    fn each_later_message_starts_after_a_blank_line() {
        let start = r#"{"type":"stream_event","event":{"type":"message_start","message":{}},"parent_tool_use_id":null}"#;
        let delta = |text: &str| {
            format!(
                r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":{}}}}},"parent_tool_use_id":null}}"#,
                Value::from(text)
            )
        };
        let tool_input = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}},"parent_tool_use_id":null}"#;
        let subagent = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"not ours"}},"parent_tool_use_id":"toolu_1"}"#;
        let (a, b, c, d) = (
            delta("\n Calling"),
            delta(" it."),
            delta("  "),
            delta("Done."),
        );
        let mut events = ClaudeEvents::default();
        let chunks = feed(
            &mut events,
            &[start, &a, &b, tool_input, subagent, start, &c, &d],
        );
        assert_eq!(chunks, ["Calling", " it.", "\n\nDone."]);
    }

    #[test]
    fn an_error_result_gives_claudes_words() {
        let mut events = ClaudeEvents::default();
        feed(
            &mut events,
            &[
                r#"{"is_error":true,"subtype":"success","result":"API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)","type":"result"}"#,
            ],
        );
        assert_eq!(
            events.outcome,
            Some(Outcome::Failed(
                "API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)".into()
            ))
        );
        let mut events = ClaudeEvents::default();
        feed(
            &mut events,
            &[
                r#"{"type":"result","subtype":"error_max_turns","is_error":true,"errors":["Reached maximum number of turns (1)"]}"#,
            ],
        );
        assert_eq!(
            events.outcome,
            Some(Outcome::Failed(
                "Reached maximum number of turns (1)".into()
            ))
        );
    }

    #[test]
    fn a_result_too_long_to_read_is_remembered_by_its_length() {
        let mut events = ClaudeEvents::default();
        let cut = StdoutLine {
            text: r#"{"duration_api_ms":1,"result":"xxxx"#.into(),
            len: 20_000_000,
            cut: true,
        };
        assert_eq!(events.line(cut), None);
        let plain = StdoutLine {
            text: "x".repeat(100),
            len: 30_000_000,
            cut: true,
        };
        assert_eq!(events.line(plain), None);
        assert_eq!(events.longest_cut, 20_000_000);
        assert_eq!(events.outcome, None);
    }

    #[test]
    fn sandbox_modes_map_to_tool_policies() {
        assert_eq!(
            sandbox_args("read-only"),
            [
                "--tools",
                "Read,Grep,Glob",
                "--allowedTools",
                "Read,Grep,Glob"
            ]
        );
        assert_eq!(
            sandbox_args("workspace-write"),
            [
                "--tools",
                "Read,Grep,Glob,Edit,Write",
                "--allowedTools",
                "Read,Grep,Glob",
                "--permission-mode",
                "acceptEdits"
            ]
        );
        assert_eq!(
            sandbox_args("danger-full-access"),
            ["--dangerously-skip-permissions"]
        );
        assert_eq!(sandbox_args("anything else"), sandbox_args("read-only"));
    }

    #[test]
    fn retries_fit_in_half_the_time_left() {
        let secs = Duration::from_secs;
        assert_eq!(max_retries(secs(1), None), 0);
        // 0.625 s of backoff fits in 1.5 s; 0.625 + 1.25 does not.
        assert_eq!(max_retries(secs(3), None), 1);
        assert_eq!(max_retries(secs(60), None), 5);
        assert_eq!(max_retries(secs(600), None), DEFAULT_MAX_RETRIES);
        assert_eq!(max_retries(secs(600), Some("2")), 2);
        assert_eq!(max_retries(secs(3), Some("8")), 1);
        assert_eq!(max_retries(secs(600), Some("lots")), DEFAULT_MAX_RETRIES);
    }

    #[test]
    fn the_child_loses_the_host_session_and_gets_quiet_bounded_retries() {
        let env: Env = [
            ("CLAUDECODE", "1"),
            ("CLAUDE_CODE_SESSION", "abc"),
            ("PATH", "/bin"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let env = Claude::child_env(env, "read-only", Duration::from_secs(3));
        assert_eq!(env.get("CLAUDECODE"), None);
        assert_eq!(env.get("CLAUDE_CODE_SESSION"), None);
        assert_eq!(env.get("PATH").map(String::as_str), Some("/bin"));
        assert_eq!(
            env.get("CLAUDE_CODE_MAX_RETRIES").map(String::as_str),
            Some("1")
        );
        assert_eq!(
            env.get("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")
                .map(String::as_str),
            Some("1")
        );
    }
}
