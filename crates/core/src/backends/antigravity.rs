//! Google's Antigravity CLI, `agy` (docs/BACKENDS.md, "antigravity"): read-only and one-shot,
//! as upstream phone-a-friend v4.1.1 drives it, checked against agy's documentation, never run
//! here (no registry this project reaches has it).
//!
//! The one CLI whose prompt goes in argv: in print mode agy reads it from `--prompt` only
//! (release notes of 1.1.1: "no longer reading stdin when a prompt is provided via a flag"), so
//! the envelope is bounded to one argument's size and refused past it before agy is looked for.
//!
//! `--output-format json` (agy 1.1.8 and later) prints one JSON object when agy is done:
//! `status`, `response` (the answer), `usage`. Stdout that holds no such object is taken as the
//! answer in plain text, as `--output-format text` prints it.

use std::ffi::OsString;
use std::time::Duration;

use serde_json::{Map, Value};

use super::builtin::{self, Builtin};
use super::cli::{counting_unread, EventParser};
use super::cli_runner::{Cli, CliEvents, Ending};
use crate::backend::{named_model, BackendFailure, RunRequest};
use crate::bounded_text::BoundedText;
use crate::errors::BackendFailureKind;
use crate::limits::MAX_OUTPUT_BYTES;
use crate::lines::StdoutLine;
use crate::sessions::ResumeStrategy;
use crate::text::is_js_whitespace;
use crate::usage::{count, Reported, Usage};

/// The largest envelope passed as agy's `--prompt`: Linux takes at most 131,072 bytes in one
/// argument, its closing NUL included (MAX_ARG_STRLEN); the rest is margin.
pub const MAX_PROMPT_ARGUMENT_BYTES: usize = 130_000;

/// Seconds added to agy's own `--print-timeout` beyond what the call has left: the relay's
/// deadline stops agy first, with the contract's time-out.
const PRINT_TIMEOUT_GRACE_SECONDS: u64 = 5;

/// What `agy` said last when it printed nothing: the headless pitfall of its early versions.
const NO_OUTPUT_NOTE: &str = "agy before 1.1.8 printed nothing in print mode when its stdout \
     was not a terminal (google-antigravity/antigravity-cli#76, #408): update it with `agy update`";

/// A time-out under another agent's sandbox, as upstream found it.
const TIMEOUT_NOTE: &str = "if agy runs inside another agent's sandbox, that sandbox may block \
     its Google sign-in (OAuth, keychain): check that `agy --prompt test` answers in a terminal";

/// `agy --print-timeout`: what the call has left, in whole seconds up, and the grace.
fn print_timeout(remaining: Duration) -> String {
    let seconds = remaining.as_secs() + u64::from(remaining.subsec_nanos() > 0);
    format!("{}s", seconds.saturating_add(PRINT_TIMEOUT_GRACE_SECONDS))
}

/// What agy's stdout said, read line by line.
#[derive(Debug)]
pub(crate) struct AntigravityEvents {
    /// Whether a line was agy's JSON result (else stdout is plain text).
    saw_result: bool,
    /// The result's `response`, as much as the output limit keeps, and measured.
    answer: BoundedText,
    /// Bytes of a result too long to read: an answer past the limit.
    unread: u64,
    /// The result's status and its words, when it was not `SUCCESS`.
    failed: Option<String>,
    /// The result's `usage`.
    reported: Reported,
}

impl Default for AntigravityEvents {
    fn default() -> Self {
        AntigravityEvents {
            saw_result: false,
            answer: BoundedText::new(MAX_OUTPUT_BYTES),
            unread: 0,
            failed: None,
            reported: Reported::default(),
        }
    }
}

impl EventParser for AntigravityEvents {
    fn line(&mut self, line: StdoutLine) -> Option<String> {
        if line.cut {
            // Too long to parse: a result holding a whole answer is the one line this long.
            let head = line.head(4096);
            if head.starts_with('{') && head.contains("\"status\"") {
                self.saw_result = true;
                self.unread += line.len;
            }
            return None;
        }
        let Ok(Value::Object(result)) = serde_json::from_str::<Value>(&line.text) else {
            return None;
        };
        let status = result.get("status").and_then(Value::as_str)?;
        self.saw_result = true;
        self.reported = reported(result.get("usage"));
        if status != "SUCCESS" {
            self.failed = Some(failure_words(status, &result));
            return None;
        }
        let response = result.get("response").and_then(Value::as_str)?;
        self.answer.push(response.as_bytes());
        // The whole answer at once: json prints nothing before agy is done.
        let text = response.trim_start_matches(is_js_whitespace);
        (!text.is_empty()).then(|| text.to_string())
    }
}

/// A result that did not succeed: its status and the first words it gave.
fn failure_words(status: &str, result: &Map<String, Value>) -> String {
    let said = ["error", "message", "response"]
        .iter()
        .filter_map(|field| match result.get(*field) {
            Some(Value::String(text)) => Some(text.trim().to_string()),
            Some(Value::Object(error)) => error
                .get("message")
                .and_then(Value::as_str)
                .map(|text| text.trim().to_string()),
            _ => None,
        })
        .find(|text| !text.is_empty());
    match said {
        Some(words) => format!("agy reported status {status}: {words}"),
        None => format!("agy reported status {status}"),
    }
}

/// The result's `usage`, as agy 1.1.8 printed it (google-antigravity/antigravity-cli#408):
/// `input_tokens`, `output_tokens`, `thinking_tokens`, `cache_read_tokens`. It names no model.
fn reported(usage: Option<&Value>) -> Reported {
    let Some(usage) = usage.filter(|usage| usage.is_object()) else {
        return Reported::default();
    };
    Reported {
        usage: Some(Usage {
            input_tokens: count(usage.get("input_tokens")),
            output_tokens: count(usage.get("output_tokens")),
            cached_input_tokens: count(usage.get("cache_read_tokens")),
            reasoning_tokens: count(usage.get("thinking_tokens")),
            cost_usd: None,
        }),
        model: None,
    }
}

impl CliEvents for AntigravityEvents {
    fn end(self) -> Ending {
        let answer = counting_unread(self.answer.finish(), self.unread);
        Ending {
            session_id: None,
            reported: self.reported,
            failed: self.failed,
            // Without a result stdout is plain text, as `--output-format text` prints it.
            answer: self.saw_result.then_some(answer),
            exit_words: None,
            cut_short: None,
        }
    }
}

/// The antigravity CLI, run by [`super::cli_runner`].
pub struct Antigravity;

impl Cli for Antigravity {
    const BUILTIN: &'static Builtin = &builtin::ANTIGRAVITY;
    // One-shot, as upstream v4.1.1: `--conversation <id>` exists, but agy may start a new
    // conversation instead of the one named (upstream's later code checks for it).
    const RESUME: ResumeStrategy = ResumeStrategy::Unsupported;
    const ENVELOPE_ON_STDIN: bool = false;
    type Events = AntigravityEvents;

    /// Upstream v4.1.1's invocation, with `--output-format json`; the repository is both the
    /// working directory and the workspace. Read-only is the only sandbox the table accepts:
    /// `--sandbox` restricts agy's terminal commands, `--mode plan` keeps it from editing.
    fn args(request: &RunRequest) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            "--add-dir".into(),
            request.terms.repo_path.clone().into(),
            "--print-timeout".into(),
            print_timeout(request.terms.deadline.remaining()).into(),
            "--sandbox".into(),
            "--mode".into(),
            "plan".into(),
            "--output-format".into(),
            "json".into(),
        ];
        if let Some(model) = named_model(&request.terms.model) {
            args.extend(["--model".into(), model.into()]);
        }
        // Last, as agy's print mode wants it: the flag's value is the next argument whatever
        // it starts with, and the envelope starts with the relay's own heading.
        args.extend(["--prompt".into(), request.prompt.clone().into()]);
        args
    }

    fn refusal(request: &RunRequest) -> Option<BackendFailure> {
        let size = request.prompt.len();
        (size > MAX_PROMPT_ARGUMENT_BYTES).then(|| {
            BackendFailure::reported(
                BackendFailureKind::PromptTooLarge,
                format!(
                    "Relay prompt is too large for antigravity ({size} bytes; max \
                     {MAX_PROMPT_ARGUMENT_BYTES} bytes): agy takes its prompt as one argument. \
                     Shorten the prompt or the context, or pass maxPromptBytes: \
                     {MAX_PROMPT_ARGUMENT_BYTES} with fit: true"
                ),
            )
        })
    }

    fn explained(failure: BackendFailure) -> BackendFailure {
        let BackendFailure::Reported {
            kind: kind @ (BackendFailureKind::NoOutput | BackendFailureKind::Timeout),
            message,
            cause,
            output,
            partial,
        } = failure
        else {
            return failure;
        };
        let note = match kind {
            BackendFailureKind::NoOutput => NO_OUTPUT_NOTE,
            _ => TIMEOUT_NOTE,
        };
        BackendFailure::Reported {
            kind,
            message: format!("{}. {note}", message.trim_end_matches('.')),
            cause,
            output,
            partial,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::backend::{Backend, Plan, Terms};
    use crate::backends::cli::test_support::feed;
    use crate::backends::cli_runner::CliBackend;
    use crate::env::Env;

    /// What agy 1.1.8 printed with `--output-format json`, as its reporter quoted it
    /// (google-antigravity/antigravity-cli#408).
    const RESULT: &str = r#"{"conversation_id":"5f0c","status":"SUCCESS","response":"PONG\n","duration_seconds":1.34,"num_turns":1,"usage":{"input_tokens":16340,"output_tokens":95,"thinking_tokens":89,"cache_read_tokens":0,"total_tokens":16435}}"#;

    const REPO: &str = "/tmp";

    fn request(prompt: &str, model: Option<&str>) -> RunRequest {
        let terms = Terms::for_tests(REPO, 60.0, Env::new(), model);
        RunRequest {
            terms,
            prompt: prompt.into(),
            session: None,
        }
    }

    #[test]
    fn the_envelope_is_the_last_argument_after_upstreams_flags() {
        let args = Antigravity::args(&request("-- not a flag", Some("gemini-3-flash")));
        let args: Vec<&str> = args.iter().filter_map(|arg| arg.to_str()).collect();
        assert_eq!(args[..2], ["--add-dir", REPO]);
        assert_eq!(args[2], "--print-timeout");
        assert!(args[3].ends_with('s'));
        assert_eq!(
            args[4..],
            [
                "--sandbox",
                "--mode",
                "plan",
                "--output-format",
                "json",
                "--model",
                "gemini-3-flash",
                "--prompt",
                "-- not a flag"
            ]
        );
        // An empty model names none.
        let args = Antigravity::args(&request("p", Some("")));
        assert!(!args.iter().any(|arg| arg == "--model"));
    }

    #[test]
    fn the_print_timeout_outlasts_the_call() {
        assert_eq!(print_timeout(Duration::from_secs(60)), "65s");
        assert_eq!(print_timeout(Duration::from_millis(1500)), "7s");
        assert_eq!(print_timeout(Duration::ZERO), "5s");
    }

    #[test]
    fn a_prompt_past_one_arguments_size_is_refused_before_agy_is_looked_for() {
        assert!(
            Antigravity::refusal(&request(&"x".repeat(MAX_PROMPT_ARGUMENT_BYTES), None)).is_none()
        );
        let refusal =
            Antigravity::refusal(&request(&"x".repeat(MAX_PROMPT_ARGUMENT_BYTES + 1), None));
        let Some(BackendFailure::Reported { kind, message, .. }) = refusal else {
            panic!("refused: {refusal:?}");
        };
        assert_eq!(kind, BackendFailureKind::PromptTooLarge);
        assert_eq!(kind.code().as_str(), "ERR_TOO_LARGE");
        assert!(
            message.contains("130001 bytes; max 130000 bytes"),
            "{message}"
        );
    }

    #[test]
    fn the_plan_has_the_envelope_in_argv_and_stdin_empty() {
        let backend = CliBackend::<Antigravity>::default();
        assert_eq!(backend.allowed_sandboxes(), ["read-only"]);
        let Plan::Command(plan) = backend.plan(&request("the envelope", None)) else {
            panic!("a command");
        };
        assert_eq!(plan.name, "agy");
        assert!(!plan.envelope_on_stdin);
        assert_eq!(
            plan.args.last().and_then(|arg| arg.to_str()),
            Some("the envelope")
        );
    }

    #[test]
    fn a_json_result_gives_the_answer_and_the_usage() {
        let mut events = AntigravityEvents::default();
        assert_eq!(feed(&mut events, &[RESULT]), ["PONG\n"]);
        let ending = events.end();
        assert_eq!(
            ending.answer.map(|answer| answer.text).as_deref(),
            Some("PONG")
        );
        assert_eq!(ending.failed, None);
        assert_eq!(
            ending.reported.usage,
            Some(Usage {
                input_tokens: Some(16340),
                output_tokens: Some(95),
                cached_input_tokens: Some(0),
                reasoning_tokens: Some(89),
                cost_usd: None,
            })
        );
        assert_eq!(ending.reported.model, None);
    }

    #[test]
    fn a_result_that_did_not_succeed_is_a_failure_in_its_words() {
        let mut events = AntigravityEvents::default();
        let failed = r#"{"conversation_id":"5f0c","status":"ERROR","error":"RESOURCE_EXHAUSTED: quota exceeded"}"#;
        assert!(feed(&mut events, &[failed]).is_empty());
        assert_eq!(
            events.end().failed.as_deref(),
            Some("agy reported status ERROR: RESOURCE_EXHAUSTED: quota exceeded")
        );
        let mut events = AntigravityEvents::default();
        feed(
            &mut events,
            &[r#"{"status":"CANCELLED","error":{"message":"stopped"}}"#],
        );
        assert_eq!(
            events.end().failed.as_deref(),
            Some("agy reported status CANCELLED: stopped")
        );
    }

    #[test]
    fn stdout_without_a_result_is_the_plain_answer() {
        let mut events = AntigravityEvents::default();
        assert!(feed(&mut events, &["plain answer", "{\"no\":\"status\"}", "{"]).is_empty());
        assert_eq!(events.end().answer, None);
    }

    #[test]
    fn a_result_too_long_to_read_makes_the_answer_too_large() {
        let mut events = AntigravityEvents::default();
        let cut = StdoutLine {
            text: r#"{"conversation_id":"5f0c","status":"SUCCESS","response":"xxxx"#.into(),
            len: 20_000_000,
            cut: true,
        };
        assert_eq!(events.line(cut), None);
        let answer = events.end().answer.expect("an answer from the result");
        assert_eq!(answer.trimmed_len, 20_000_000);
    }

    #[test]
    fn no_output_and_time_outs_say_agys_known_pitfalls() {
        let empty = BackendFailure::reported(
            BackendFailureKind::NoOutput,
            "agy completed without producing output",
        );
        let BackendFailure::Reported { message, .. } = Antigravity::explained(empty) else {
            panic!("reported");
        };
        assert!(message.starts_with("agy completed without producing output. agy before 1.1.8"));
        assert!(message.contains("stdout was not a terminal") && message.contains("agy update"));
        let failed = BackendFailure::reported(BackendFailureKind::Failed, "exit 1");
        assert_eq!(Antigravity::explained(failed.clone()), failed);
    }
}
