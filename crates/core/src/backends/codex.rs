//! The codex CLI (docs/BACKENDS.md §1): `codex exec … -` with the envelope on stdin, and the native
//! `codex exec … review --base B`. The answer is the `--output-last-message` file.
//!
//! `--json` prints one JSON event per line on stdout; each assistant message arrives whole as
//! `{"type":"item.completed","item":{"type":"agent_message","text":…}}` and goes to the stream,
//! messages after the first preceded by a blank line. The answer file holds the last message.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::builtin;
use super::cli::{run_with_events, within_output_limit, CliLabel, EventParser};
use crate::activity::Doing;
use crate::backend::{
    named_model, Backend, BackendFailure, BackendFuture, BackendResult, Plan, ReviewRequest,
    RunRequest, Terms,
};
use crate::bounded_text::Measured;
use crate::bounded_text::ReadStopped;
use crate::deadline::Stop;
use crate::descriptors::when_available;
use crate::env::Env;
use crate::errors::BackendFailureKind;
use crate::git::check_base;
use crate::limits::MAX_OUTPUT_BYTES;
use crate::lines::StdoutLine;
use crate::sessions::{ResumeStrategy, SessionTurn};
use crate::subprocess::{read_bounded_file, ProcessError, ProcessSpec, StdinSource};
use crate::text::js_trim;
use crate::usage::{count, Usage};

const EXEC: CliLabel<'static> = CliLabel {
    program: builtin::CODEX.executable,
    command: "codex exec",
    backend: &builtin::CODEX,
};

const EXEC_REVIEW: CliLabel<'static> = CliLabel {
    program: builtin::CODEX.executable,
    command: "codex exec review",
    backend: &builtin::CODEX,
};

pub struct Codex {
    allowed_sandboxes: Vec<String>,
}

impl Default for Codex {
    fn default() -> Self {
        Codex {
            allowed_sandboxes: builtin::CODEX.sandboxes(),
        }
    }
}

/// One codex invocation: the options before the subcommand, then what follows them.
struct Invocation<'a> {
    label: &'a CliLabel<'a>,
    terms: &'a Terms,
    tail: Vec<OsString>,
    /// The session the run belongs to: its thread id is reported from `thread.started`.
    session: Option<&'a SessionTurn>,
}

/// `codex exec … -`: the envelope comes on stdin.
fn exec(request: &RunRequest) -> Invocation<'_> {
    Invocation {
        label: &EXEC,
        terms: &request.terms,
        // `-`: read the whole prompt from stdin (an argument is capped at 128 KiB). A session
        // is continued with `resume <id>` after the exec options, which the resumed thread
        // honours (verified with 0.169: the repository, the sandbox and the schema).
        tail: match request.session.as_ref().and_then(|s| s.resume.as_deref()) {
            Some(id) => vec!["resume".into(), id.into(), "-".into()],
            None => vec!["-".into()],
        },
        session: request.session.as_ref(),
    }
}

/// `codex exec … review --base B`: nothing on stdin. A review with a schema (`--output-schema`)
/// takes the generic path (`relay::review`), so its terms carry none.
fn review(request: &ReviewRequest) -> Invocation<'_> {
    Invocation {
        label: &EXEC_REVIEW,
        terms: &request.terms,
        tail: vec![
            "review".into(),
            "--base".into(),
            request.base.clone().into(),
        ],
        session: None,
    }
}

/// What codex's `--json` events said, read line by line.
#[derive(Debug, Default)]
struct CodexEvents {
    /// Whether any line was a JSON event (else stdout is plain text).
    saw_events: bool,
    /// The session's id, from `thread.started` (what a later `codex exec resume` needs).
    thread_id: Option<String>,
    /// Assistant messages streamed so far.
    messages: usize,
    /// The last assistant message, trimmed and measured (what `--output-last-message` holds).
    last_message: Option<Measured>,
    /// Why the turn failed: `turn.failed`'s error, else the last `error` event.
    turn_failed: Option<String>,
    last_error: Option<String>,
    /// Every `turn.completed`'s usage, added up (one a run, summed over its requests).
    usage: Option<Usage>,
    /// What the last event said codex is doing.
    doing: Option<Doing>,
}

impl EventParser for CodexEvents {
    fn take_doing(&mut self) -> Option<Doing> {
        self.doing.take()
    }

    fn line(&mut self, line: StdoutLine) -> Option<String> {
        if line.cut {
            // Too long to parse: if it is an assistant message, it is the last one so far, and
            // past any limit (its length, JSON included, bounds its text).
            let head = line.head(4096);
            if head.starts_with("{\"type\":\"item.completed\"")
                && head.contains("\"type\":\"agent_message\"")
            {
                self.saw_events = true;
                self.last_message = Some(Measured {
                    text: String::new(),
                    trimmed_len: line.len,
                });
            }
            return None;
        }
        let Ok(Value::Object(event)) = serde_json::from_str::<Value>(&line.text) else {
            return None;
        };
        let kind = event.get("type").and_then(Value::as_str)?;
        self.saw_events = true;
        let text_of = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_string);
        match kind {
            "thread.started" => {
                self.thread_id = text_of(event.get("thread_id"));
                None
            }
            "turn.started" => {
                self.doing = Some(Doing::Thinking);
                None
            }
            "item.started" => {
                self.doing = event.get("item").map(item_doing);
                None
            }
            "item.completed" => self.item_completed(event.get("item")?),
            "turn.completed" => {
                let turn = turn_usage(event.get("usage")?);
                self.usage = Some(self.usage.unwrap_or_default().plus(turn));
                None
            }
            "turn.failed" => {
                self.turn_failed =
                    text_of(event.get("error").and_then(|error| error.get("message")));
                None
            }
            "error" => {
                self.last_error = text_of(event.get("message"));
                None
            }
            _ => None,
        }
    }
}

impl CodexEvents {
    /// An item's end: an assistant message is streamed, a blank line after the one before.
    fn item_completed(&mut self, item: &Value) -> Option<String> {
        if item.get("type").and_then(Value::as_str) != Some("agent_message") {
            // A tool's or the reasoning's end: the model is at work again.
            self.doing = Some(Doing::Thinking);
            return None;
        }
        let text = js_trim(item.get("text").and_then(Value::as_str)?);
        if text.is_empty() {
            return None;
        }
        self.last_message = Some(crate::bounded_text::measure(
            text.as_bytes(),
            MAX_OUTPUT_BYTES,
        ));
        self.messages += 1;
        Some(if self.messages == 1 {
            text.to_string()
        } else {
            format!("\n\n{text}")
        })
    }
}

/// What an `item.started` says codex does: a tool by its kind (an MCP tool by its name), else
/// thinking.
fn item_doing(item: &Value) -> Doing {
    let tool = match item.get("type").and_then(Value::as_str) {
        Some("command_execution") => "shell",
        Some("file_change") => "apply_patch",
        Some("web_search") => "web_search",
        Some("mcp_tool_call") => item.get("tool").and_then(Value::as_str).unwrap_or("mcp"),
        _ => return Doing::Thinking,
    };
    Doing::Tool(tool.to_string())
}

/// A turn's tokens (docs/BACKENDS.md, "Usage"): OpenAI counts the cached within `input_tokens`
/// and the reasoning within `output_tokens`, as the relay does; codex reports no cost.
fn turn_usage(usage: &Value) -> Usage {
    Usage {
        input_tokens: count(usage.get("input_tokens")),
        output_tokens: count(usage.get("output_tokens")),
        cached_input_tokens: count(usage.get("cached_input_tokens")),
        reasoning_tokens: count(usage.get("reasoning_output_tokens")),
        cost_usd: None,
    }
}

/// The caller's `TMPDIR`, read from the relay's environment rather than the process's.
const ANSWER_FILE_NAME: &str = "last-message.md";
const ANSWER_DIR_PREFIX: &str = "phone-a-friend-codex-";
const SCHEMA_FILE_NAME: &str = "output-schema.json";

/// A new file only this user can read (0600), in the answer folder.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    create_private(path)?.write_all(text.as_bytes())
}

/// A new file only this user can read: 0600 on Unix; on Windows a file in the user's `%TEMP%`,
/// which its ACL keeps private to the user (docs/ARCHITECTURE.md §4).
fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// A folder only this user can enter (0700), in the relay env's TMPDIR, holding an empty answer
/// file only this user can read (0600): a review may be private. Removed when dropped.
struct AnswerDir {
    folder: PathBuf,
}

impl AnswerDir {
    fn create(env: &Env) -> std::io::Result<AnswerDir> {
        let mut builder = tempfile::Builder::new();
        builder.prefix(ANSWER_DIR_PREFIX);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o700));
        }
        let folder = builder.tempdir_in(temp_root(env))?.keep();
        let answer = AnswerDir { folder };
        create_private(&answer.file())?;
        Ok(answer)
    }

    fn file(&self) -> PathBuf {
        self.folder.join(ANSWER_FILE_NAME)
    }

    /// Where a schema goes (`--output-schema`), when there is one.
    fn schema_file(&self) -> PathBuf {
        self.folder.join(SCHEMA_FILE_NAME)
    }
}

impl Drop for AnswerDir {
    fn drop(&mut self) {
        // unlink and rmdir need no file descriptor, so this works when the process is out of
        // them (EMFILE), where `remove_dir_all` would fail and leave the folder behind.
        let _ = std::fs::remove_file(self.file());
        let _ = std::fs::remove_file(self.folder.join(SCHEMA_FILE_NAME));
        if std::fs::remove_dir(&self.folder).is_err() {
            // codex left something else in it.
            let _ = std::fs::remove_dir_all(&self.folder);
        }
    }
}

fn temp_root(env: &Env) -> PathBuf {
    // The variables the OS's own lookup reads, in its order (Windows: `GetTempPath2W`'s).
    let names: &[&str] = if cfg!(windows) {
        &["TMP", "TEMP"]
    } else {
        &["TMPDIR"]
    };
    names
        .iter()
        .filter_map(|name| crate::env::var(env, name))
        .find(|dir| !dir.is_empty())
        .map_or_else(std::env::temp_dir, PathBuf::from)
}

/// codex's arguments, the answer going to `answer_file` (the schema, if any, being in
/// `schema_file`).
fn arguments(invocation: &Invocation<'_>, answer_file: &Path, schema_file: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "exec".into(),
        "-C".into(),
        invocation.terms.repo_path.as_str().into(),
        "--skip-git-repo-check".into(),
        "--sandbox".into(),
        invocation.terms.sandbox.as_str().into(),
        "--output-last-message".into(),
        answer_file.into(),
        // Events on stdout, one JSON object a line: the stream's source.
        "--json".into(),
    ];
    if invocation.terms.schema.as_deref().is_some() {
        args.extend(["--output-schema".into(), schema_file.into()]);
    }
    if let Some(model) = named_model(&invocation.terms.model) {
        args.extend(["-m".into(), model.into()]);
    }
    args.extend(invocation.tail.iter().cloned());
    args
}

/// What [`invoke`] would run; the answer folder, made only for a real run, is shown by its
/// name pattern.
fn plan(invocation: &Invocation<'_>, envelope_on_stdin: bool) -> Plan {
    let folder = temp_root(&invocation.terms.env).join(format!("{ANSWER_DIR_PREFIX}XXXXXX"));
    let args = arguments(
        invocation,
        &folder.join(ANSWER_FILE_NAME),
        &folder.join(SCHEMA_FILE_NAME),
    );
    invocation.label.plan(
        args,
        invocation.terms.repo_path.as_str(),
        invocation.terms.env.clone(),
        envelope_on_stdin,
    )
}

async fn invoke(
    invocation: Invocation<'_>,
    stdin: StdinSource,
    cancel: &CancellationToken,
) -> BackendResult {
    let label = invocation.label;
    let program = label.locate(&invocation.terms.env)?;
    invoke_found(invocation, program.clone(), stdin, cancel)
        .await
        .map_err(|failure| label.explained(failure, &program))
}

/// [`invoke`], once codex is found at `program`.
async fn invoke_found(
    invocation: Invocation<'_>,
    program: std::path::PathBuf,
    stdin: StdinSource,
    cancel: &CancellationToken,
) -> BackendResult {
    let label = invocation.label;
    let answer_dir = answer_dir(&invocation, cancel).await?;
    let answer_file = answer_dir.file();
    let args = arguments(&invocation, &answer_file, &answer_dir.schema_file());
    let spec = ProcessSpec {
        program,
        args,
        cwd: invocation.terms.repo_path.as_str().into(),
        env: invocation.terms.env.clone(),
        stdin,
        timeout: invocation.terms.deadline.remaining(),
        output_limit: MAX_OUTPUT_BYTES,
        remove_on_stop: vec![answer_dir.folder.clone()],
        progress: invocation.terms.progress.clone(),
    };
    let mut events = CodexEvents::default();
    let terms = invocation.terms;
    let run = run_with_events(
        spec,
        &mut events,
        &terms.chunks,
        &terms.activity,
        None,
        cancel,
    )
    .await;
    if let Some(usage) = events.usage {
        invocation.terms.report.usage(usage);
    }
    // Stopped: its last error event (`Reconnecting... 2/5 (…)`) says why it did not finish.
    let mut output = run.map_err(|e| {
        label
            .process_failure(e, invocation.terms.timeout, events.last_error.as_deref())
            .with_partial(events.last_message.as_ref().map(|m| m.text.clone()))
    })?;
    if let (Some(session), Some(id)) = (invocation.session, &events.thread_id) {
        session.reported.set(id.as_str());
    }
    // Without events, stdout is plain text; with them, its text is the last message.
    let stdout = if events.saw_events {
        events.last_message.take().unwrap_or_default()
    } else {
        // Moved, not copied: it may hold 8 MiB.
        std::mem::take(&mut output.stdout)
    };
    // codex writes no file when it fails early: that is an empty answer, not an error.
    if output.code != Some(0) {
        return Err(exit_failure(label, &output, &events, &stdout));
    }
    let answer = read_answer(label, &answer_file, invocation.terms).await?;
    let best = [answer, stdout]
        .into_iter()
        .find(|text: &Measured| text.trimmed_len > 0);
    match best {
        Some(text) => within_output_limit(text),
        None => Err(BackendFailure::reported(
            BackendFailureKind::NoOutput,
            format!("{} completed without producing feedback", label.command),
        )),
    }
}

/// The run's private folder, holding its schema file when it has a schema; removed on every
/// path when dropped, cancellation included. Its files need descriptors: in a burst of relays,
/// it waits (within the deadline) for others to free theirs.
async fn answer_dir(
    invocation: &Invocation<'_>,
    cancel: &CancellationToken,
) -> Result<AnswerDir, BackendFailure> {
    let command = invocation.label.command;
    let until = tokio::time::Instant::now() + invocation.terms.deadline.remaining();
    let answer_dir = when_available(until, cancel, || AnswerDir::create(&invocation.terms.env))
        .await
        .ok_or(BackendFailure::Cancelled)?
        .map_err(|e| {
            BackendFailure::reported(
                BackendFailureKind::Failed,
                format!("{command} could not make a temp folder: {e}"),
            )
        })?;
    if let Some(schema) = invocation.terms.schema.as_deref() {
        let schema_file = answer_dir.schema_file();
        let written = when_available(until, cancel, || write_private(&schema_file, schema.text()))
            .await
            .ok_or(BackendFailure::Cancelled)?;
        written.map_err(|e| {
            BackendFailure::reported(
                BackendFailureKind::Failed,
                format!("{command} could not write its schema file: {e}"),
            )
        })?;
    }
    Ok(answer_dir)
}

/// A run that exited with a failure: its own words, else its exit code (the answer file of a
/// failed run is no reason). With `--json`, codex reports the failure in events on stdout, not
/// on stderr.
fn exit_failure(
    label: &CliLabel<'_>,
    output: &crate::subprocess::ProcessOutput,
    events: &CodexEvents,
    stdout: &Measured,
) -> BackendFailure {
    let failure = events
        .turn_failed
        .as_deref()
        .or(events.last_error.as_deref());
    // Its failure events first: stderr holds its log and start-up warnings (`WARNING:
    // proceeding, even though we could not create PATH aliases…`), seen to hide the reason.
    let words = [
        failure.unwrap_or_default(),
        output.stderr.text.as_str(),
        stdout.text.as_str(),
    ];
    label.exit_failure(output, &words)
}

/// The answer file (`--output-last-message`), read within the call's deadline; none is an
/// empty answer: codex writes none when it has nothing to say.
async fn read_answer(
    label: &CliLabel<'_>,
    answer_file: &Path,
    terms: &Terms,
) -> Result<Measured, BackendFailure> {
    match read_bounded_file(answer_file, MAX_OUTPUT_BYTES, &terms.deadline).await {
        Ok(answer) => Ok(answer),
        Err(ReadStopped::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            Ok(Measured::default())
        }
        // A read error is not an empty answer; the original's words (for review too), as it
        // printed Node's error (`String(err)`).
        Err(ReadStopped::Io(e)) => Err(BackendFailure::reported(
            BackendFailureKind::Failed,
            format!(
                "Failed reading Codex output file: Error: {}",
                crate::node_errors::read_file_error(&e, &answer_file.to_string_lossy())
            ),
        )),
        Err(ReadStopped::Deadline(Stop::Cancelled)) => Err(BackendFailure::Cancelled),
        Err(ReadStopped::Deadline(Stop::TimedOut)) => {
            let stopped = ProcessError::TimedOut {
                stderr: Measured::default(),
            };
            Err(label.process_failure(stopped, terms.timeout, None))
        }
    }
}

impl Backend for Codex {
    fn name(&self) -> &str {
        "codex"
    }

    fn allowed_sandboxes(&self) -> &[String] {
        &self.allowed_sandboxes
    }

    fn run(self: Arc<Self>, mut request: RunRequest, cancel: CancellationToken) -> BackendFuture {
        Box::pin(async move {
            let stdin = StdinSource::Bytes(std::mem::take(&mut request.prompt).into_bytes());
            invoke(exec(&request), stdin, &cancel).await
        })
    }

    /// codex cannot combine `review --base` with instructions: such a review takes the generic path.
    fn review(
        self: Arc<Self>,
        request: &ReviewRequest,
        cancel: CancellationToken,
    ) -> Option<BackendFuture> {
        if request.prompt.is_some() {
            return None;
        }
        let request = request.clone();
        Some(Box::pin(async move {
            check_base(&request.base)
                .map_err(|e| BackendFailure::reported(BackendFailureKind::Failed, e.to_string()))?;
            invoke(review(&request), StdinSource::Null, &cancel).await
        }))
    }

    fn resume_strategy(&self) -> ResumeStrategy {
        ResumeStrategy::NativeSession
    }

    fn plan(&self, request: &RunRequest) -> Plan {
        plan(&exec(request), true)
    }

    fn plan_review(&self, request: &ReviewRequest) -> Option<Plan> {
        request
            .prompt
            .is_none()
            .then(|| plan(&review(request), false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::backends::cli::test_support::feed;

    /// What codex 0.169 printed with `exec --json` for a model turn of three assistant messages
    /// (the fake model server, `parts: 3`); its `--output-last-message` file held the last.
    const REAL_STREAM: [&str; 6] = [
        r#"{"type":"thread.started","thread_id":"01a208b7-2ebb-73a3-bc79-91f311f26ffd"}"#,
        r#"{"type":"turn.started"}"#,
        r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"  Hello there, "}}"#,
        r#"{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"friend of mine!"}}"#,
        r#"{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":" ünïcødé 😀 end.\n"}}"#,
        r#"{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0}}"#,
    ];

    #[test]
    fn streams_each_assistant_message_a_blank_line_apart_and_keeps_the_last() {
        let mut events = CodexEvents::default();
        let chunks = feed(&mut events, &REAL_STREAM);
        assert_eq!(
            chunks,
            ["Hello there,", "\n\nfriend of mine!", "\n\nünïcødé 😀 end."]
        );
        assert!(events.saw_events);
        assert_eq!(events.messages, 3);
        assert_eq!(
            events.last_message.map(|m| m.text),
            Some("ünïcødé 😀 end.".to_string())
        );
        assert_eq!(
            events.thread_id.as_deref(),
            Some("01a208b7-2ebb-73a3-bc79-91f311f26ffd")
        );
        assert_eq!((events.turn_failed, events.last_error), (None, None));
    }

    #[test]
    fn turn_completed_gives_the_usage() {
        // codex 0.169's last event of a run with a tool call (two requests, summed by codex).
        let turn = r#"{"type":"turn.completed","usage":{"input_tokens":4234,"cached_input_tokens":500,"cache_write_input_tokens":0,"output_tokens":126,"reasoning_output_tokens":16}}"#;
        let mut events = CodexEvents::default();
        feed(&mut events, &[turn]);
        assert_eq!(
            events.usage,
            Some(Usage {
                input_tokens: Some(4234),
                output_tokens: Some(126),
                cached_input_tokens: Some(500),
                reasoning_tokens: Some(16),
                cost_usd: None,
            })
        );
    }

    #[test]
    fn other_items_and_empty_messages_are_not_streamed() {
        let mut events = CodexEvents::default();
        let chunks = feed(
            &mut events,
            &[
                r#"{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"ls","status":"in_progress"}}"#,
                r#"{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"ls","aggregated_output":"a.txt\n","exit_code":0,"status":"completed"}}"#,
                r#"{"type":"item.completed","item":{"id":"item_1","type":"reasoning","text":"thinking"}}"#,
                r#"{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":" \n "}}"#,
                r#"{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"only this"}}"#,
            ],
        );
        assert_eq!(chunks, ["only this"]);
        assert_eq!(events.messages, 1);
    }

    #[test]
    fn a_failed_turn_gives_its_error() {
        // codex 0.169 against a model server answering HTTP 400; stderr stayed empty.
        let mut events = CodexEvents::default();
        let chunks = feed(
            &mut events,
            &[
                r#"{"type":"thread.started","thread_id":"01a208b7-46de-7fc2-bb40-a493d0bae258"}"#,
                r#"{"type":"turn.started"}"#,
                r#"{"type":"error","message":"{\"error\":{\"message\":\"fake failure text\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}"}"#,
                r#"{"type":"turn.failed","error":{"message":"{\"error\":{\"message\":\"fake failure text\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}"}}"#,
            ],
        );
        assert!(chunks.is_empty());
        let expected = r#"{"error":{"message":"fake failure text","type":"invalid_request_error","param":null,"code":null}}"#;
        assert_eq!(events.turn_failed.as_deref(), Some(expected));
        assert_eq!(events.last_error.as_deref(), Some(expected));
        assert_eq!(events.last_message, None);
    }

    #[test]
    fn plain_lines_are_not_events_and_a_cut_message_is_too_large() {
        let mut events = CodexEvents::default();
        assert!(feed(&mut events, &["stdout answer", "{}", "null"]).is_empty());
        assert!(!events.saw_events);
        let cut = StdoutLine {
            text: r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"xx"#
                .into(),
            len: 20_000_000,
            cut: true,
        };
        assert_eq!(events.line(cut), None);
        let last = events.last_message.expect("a last message");
        assert_eq!(last.trimmed_len, 20_000_000);
        assert!(!last.is_complete());
    }
}
