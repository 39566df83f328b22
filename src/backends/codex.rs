//! The codex CLI (BACKENDS.md): `codex exec … -` with the envelope on stdin, and the native
//! `codex exec … review --base B`. The answer is the `--output-last-message` file.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::all_sandbox_modes;
use super::cli::{within_output_limit, CliLabel};
use crate::backend::{
    Backend, BackendFailure, BackendFuture, BackendResult, Env, ReviewRequest, RunRequest, Timeout,
};
use crate::bounded_text::Measured;
use crate::bounded_text::ReadStopped;
use crate::deadline::{Deadline, Stop};
use crate::errors::BackendFailureKind;
use crate::git::check_base;
use crate::limits::MAX_OUTPUT_BYTES;
use crate::subprocess::{read_bounded_file, run_process, ProcessError, ProcessSpec, StdinSource};

const INSTALL_HINT: &str = "npm install -g @openai/codex";

const EXEC: CliLabel<'static> = CliLabel {
    program: "codex",
    command: "codex exec",
    install_hint: INSTALL_HINT,
};

const EXEC_REVIEW: CliLabel<'static> = CliLabel {
    program: "codex",
    command: "codex exec review",
    install_hint: INSTALL_HINT,
};

pub struct Codex {
    allowed_sandboxes: Vec<String>,
}

impl Default for Codex {
    fn default() -> Self {
        Codex {
            allowed_sandboxes: all_sandbox_modes(),
        }
    }
}

/// One codex invocation: the options before the subcommand, then what follows them.
struct Invocation<'a> {
    label: &'a CliLabel<'a>,
    repo_path: &'a str,
    sandbox: &'a str,
    model: Option<&'a str>,
    env: &'a Env,
    timeout: Timeout,
    deadline: &'a Deadline,
    tail: Vec<OsString>,
    stdin: StdinSource,
}

/// The caller's `TMPDIR`, read from the relay's environment rather than the process's.
const ANSWER_FILE_NAME: &str = "last-message.md";

/// A folder only this user can enter (0700), in the relay env's TMPDIR, holding an empty answer
/// file only this user can read (0600): a review may be private. Removed when dropped.
struct AnswerDir {
    folder: PathBuf,
}

impl AnswerDir {
    fn create(env: &Env) -> std::io::Result<AnswerDir> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let folder = tempfile::Builder::new()
            .prefix("phone-a-friend-codex-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(temp_root(env))?
            .keep();
        let answer = AnswerDir { folder };
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(answer.file())?;
        Ok(answer)
    }

    fn file(&self) -> PathBuf {
        self.folder.join(ANSWER_FILE_NAME)
    }
}

impl Drop for AnswerDir {
    fn drop(&mut self) {
        // unlink and rmdir need no file descriptor, so this works when the process is out of
        // them (EMFILE), where `remove_dir_all` would fail and leave the folder behind.
        let _ = std::fs::remove_file(self.file());
        if std::fs::remove_dir(&self.folder).is_err() {
            // codex left something else in it.
            let _ = std::fs::remove_dir_all(&self.folder);
        }
    }
}

fn temp_root(env: &Env) -> PathBuf {
    match env.get("TMPDIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => std::env::temp_dir(),
    }
}

async fn invoke(invocation: Invocation<'_>, cancel: &CancellationToken) -> BackendResult {
    let label = invocation.label;
    let program = label.locate(invocation.env)?;
    // Removed on every path when dropped, cancellation included.
    let answer_dir = AnswerDir::create(invocation.env).map_err(|e| {
        BackendFailure::reported(
            BackendFailureKind::Failed,
            format!("{} could not make a temp folder: {e}", label.command),
        )
    })?;
    let answer_file = answer_dir.file();
    let mut args: Vec<OsString> = vec![
        "exec".into(),
        "-C".into(),
        invocation.repo_path.into(),
        "--skip-git-repo-check".into(),
        "--sandbox".into(),
        invocation.sandbox.into(),
        "--output-last-message".into(),
        answer_file.clone().into(),
    ];
    if let Some(model) = invocation.model {
        args.extend(["-m".into(), model.into()]);
    }
    args.extend(invocation.tail);
    let spec = ProcessSpec {
        program,
        args,
        cwd: invocation.repo_path.into(),
        env: invocation.env.clone(),
        stdin: invocation.stdin,
        timeout: invocation.deadline.remaining(),
        output_limit: MAX_OUTPUT_BYTES,
        remove_on_stop: vec![answer_dir.folder.clone()],
    };
    let output = run_process(spec, cancel)
        .await
        .map_err(|e| label.process_failure(e, invocation.timeout))?;
    // codex writes no file when it fails early: that is an empty answer, not an error.
    if output.code != Some(0) {
        // Its own words, else its exit code: the answer file of a failed run is no reason.
        return Err(label.exit_failure(&output, None));
    }
    let answer = match read_bounded_file(&answer_file, MAX_OUTPUT_BYTES, invocation.deadline).await
    {
        Ok(answer) => answer,
        // codex writes no file when it has nothing to say.
        Err(ReadStopped::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::bounded_text::measure(b"", 0)
        }
        Err(ReadStopped::Io(e)) => {
            return Err(BackendFailure::reported(
                BackendFailureKind::Failed,
                format!("{} answer could not be read: {e}", label.command),
            ))
        }
        Err(ReadStopped::Deadline(Stop::Cancelled)) => return Err(BackendFailure::Cancelled),
        Err(ReadStopped::Deadline(Stop::TimedOut)) => {
            return Err(label.process_failure(ProcessError::TimedOut, invocation.timeout))
        }
    };
    let best = [answer, output.stdout]
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

impl Backend for Codex {
    fn name(&self) -> &str {
        "codex"
    }

    fn allowed_sandboxes(&self) -> &[String] {
        &self.allowed_sandboxes
    }

    fn run(self: Arc<Self>, request: RunRequest, cancel: CancellationToken) -> BackendFuture {
        Box::pin(async move {
            let invocation = Invocation {
                label: &EXEC,
                repo_path: &request.repo_path,
                sandbox: &request.sandbox,
                model: request.model.as_deref(),
                env: &request.env,
                timeout: request.timeout,
                deadline: &request.deadline,
                // `-`: read the whole prompt from stdin (an argument is capped at 128 KiB).
                tail: vec!["-".into()],
                stdin: StdinSource::Bytes(request.prompt.into_bytes()),
            };
            invoke(invocation, &cancel).await
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
            let invocation = Invocation {
                label: &EXEC_REVIEW,
                repo_path: &request.repo_path,
                sandbox: &request.sandbox,
                model: request.model.as_deref(),
                env: &request.env,
                timeout: request.timeout,
                deadline: &request.deadline,
                tail: vec![
                    "review".into(),
                    "--base".into(),
                    request.base.clone().into(),
                ],
                stdin: StdinSource::Null,
            };
            invoke(invocation, &cancel).await
        }))
    }
}
