//! `dryRun` results as JS objects; the wrapper shapes them into the public `DryRun` type.

use napi::bindgen_prelude::PromiseRaw;
use napi::Result;
use napi_derive::napi;

use super::{spawn_call, NativeCaller, NativeRelayOptions, NativeReviewOptions};
use crate::dry_run::{Action, DryRun};
use crate::relay;

#[napi(object)]
pub struct NativeDryRun {
    pub backend: String,
    pub repo_path: String,
    pub sandbox: String,
    pub model: Option<String>,
    pub timeout_seconds: f64,
    pub base: Option<String>,
    pub envelope: Option<String>,
    /// `command`, `http`, `run` or `review`.
    pub kind: String,
    pub command: Option<NativeDryRunCommand>,
    pub request: Option<NativeDryRunRequest>,
    /// `[name, value]` pairs, sorted by name.
    pub env_set: Vec<Vec<String>>,
    pub env_removed: Vec<String>,
}

#[napi(object)]
pub struct NativeDryRunCommand {
    pub name: String,
    pub program: Option<String>,
    pub install_hint: String,
    pub args: Vec<String>,
    pub command_line: String,
    pub cwd: String,
    pub envelope_on_stdin: bool,
}

#[napi(object)]
pub struct NativeDryRunRequest {
    pub method: String,
    pub url: String,
    pub body: String,
}

impl From<DryRun> for NativeDryRun {
    fn from(dry_run: DryRun) -> Self {
        let (kind, command, request) = match dry_run.action {
            Action::Command {
                name,
                program,
                install_hint,
                args,
                command_line,
                cwd,
                envelope_on_stdin,
            } => (
                "command",
                Some(NativeDryRunCommand {
                    name,
                    program,
                    install_hint,
                    args,
                    command_line,
                    cwd,
                    envelope_on_stdin,
                }),
                None,
            ),
            Action::Http { method, url, body } => (
                "http",
                None,
                Some(NativeDryRunRequest { method, url, body }),
            ),
            Action::JsRun => ("run", None, None),
            Action::JsReview => ("review", None, None),
        };
        NativeDryRun {
            backend: dry_run.backend,
            repo_path: dry_run.repo_path,
            sandbox: dry_run.sandbox,
            model: dry_run.model,
            timeout_seconds: dry_run.timeout_seconds,
            base: dry_run.base,
            envelope: dry_run.envelope,
            kind: kind.to_string(),
            command,
            request,
            env_set: dry_run
                .env
                .set
                .into_iter()
                .map(|(name, value)| vec![name, value])
                .collect(),
            env_removed: dry_run.env.removed,
        }
    }
}

#[napi(ts_return_type = "Promise<NativeDryRun>")]
pub fn dry_run_relay(
    env: &napi::Env,
    options: NativeRelayOptions,
    caller: NativeCaller,
) -> Result<PromiseRaw<'_, NativeDryRun>> {
    spawn_call(env, caller, |registry, context| async move {
        relay::dry_run_relay(registry, options.into(), context)
            .await
            .map(NativeDryRun::from)
    })
}

#[napi(ts_return_type = "Promise<NativeDryRun>")]
pub fn dry_run_review(
    env: &napi::Env,
    options: NativeReviewOptions,
    caller: NativeCaller,
) -> Result<PromiseRaw<'_, NativeDryRun>> {
    spawn_call(env, caller, |registry, context| async move {
        relay::dry_run_review(registry, options.into(), context)
            .await
            .map(NativeDryRun::from)
    })
}
