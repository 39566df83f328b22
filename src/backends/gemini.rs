//! The gemini CLI (BACKENDS.md): the envelope on stdin, cwd = the repository (its workspace, never
//! named in argv), the sandbox mode as an approval mode. Never `--sandbox`: it needs a container runtime most machines lack.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::all_sandbox_modes;
use super::cli::{within_output_limit, CliLabel};
use crate::backend::{Backend, BackendFailure, BackendFuture, ReviewRequest, RunRequest};
use crate::errors::BackendFailureKind;
use crate::limits::MAX_OUTPUT_BYTES;
use crate::subprocess::{run_process, ProcessSpec, StdinSource};

const GEMINI: CliLabel<'static> = CliLabel {
    program: "gemini",
    command: "gemini",
    install_hint: "npm install -g @google/gemini-cli",
};

/// `read-only` → `plan` (no shell tool, no writes); anything unknown gets the safest mode.
fn approval_mode(sandbox: &str) -> &'static str {
    match sandbox {
        "workspace-write" => "auto_edit",
        "danger-full-access" => "yolo",
        _ => "plan",
    }
}

pub struct Gemini {
    allowed_sandboxes: Vec<String>,
}

impl Default for Gemini {
    fn default() -> Self {
        Gemini {
            allowed_sandboxes: all_sandbox_modes(),
        }
    }
}

impl Backend for Gemini {
    fn name(&self) -> &str {
        "gemini"
    }

    fn allowed_sandboxes(&self) -> &[String] {
        &self.allowed_sandboxes
    }

    fn run(self: Arc<Self>, request: RunRequest, cancel: CancellationToken) -> BackendFuture {
        Box::pin(async move {
            let program = GEMINI.locate(&request.env)?;
            let mut args: Vec<String> = vec![
                "--approval-mode".into(),
                approval_mode(&request.sandbox).into(),
                // The caller chose this repository; headless gemini refuses untrusted folders.
                "--skip-trust".into(),
                // No `--include-directories`: the cwd (the repository) is already gemini's
                // workspace, and that flag splits its value on commas (`proj,/etc` is two folders).
                "--output-format".into(),
                "text".into(),
            ];
            if let Some(model) = &request.model {
                args.extend(["-m".into(), model.clone()]);
            }
            // gemini reads stdin first and appends `--prompt`: an empty one adds nothing.
            args.extend(["--prompt".into(), String::new()]);
            let spec = ProcessSpec {
                program,
                args: args.into_iter().map(Into::into).collect(),
                cwd: request.repo_path.into(),
                env: request.env,
                stdin: StdinSource::Bytes(request.prompt.into_bytes()),
                timeout: request.deadline.remaining(),
                output_limit: MAX_OUTPUT_BYTES,
                remove_on_stop: Vec::new(),
            };
            let output = run_process(spec, &cancel)
                .await
                .map_err(|e| GEMINI.process_failure(e, request.timeout))?;
            if output.code != Some(0) {
                return Err(GEMINI.exit_failure(&output, None));
            }
            if output.stdout.trimmed_len == 0 {
                return Err(BackendFailure::reported(
                    BackendFailureKind::NoOutput,
                    "gemini completed without producing output",
                ));
            }
            within_output_limit(output.stdout)
        })
    }

    fn review(self: Arc<Self>, _: &ReviewRequest, _: CancellationToken) -> Option<BackendFuture> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::approval_mode;

    #[test]
    fn sandbox_modes_map_to_approval_modes() {
        assert_eq!(approval_mode("read-only"), "plan");
        assert_eq!(approval_mode("workspace-write"), "auto_edit");
        assert_eq!(approval_mode("danger-full-access"), "yolo");
    }
}
