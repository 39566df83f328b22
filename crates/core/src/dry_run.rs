//! `dryRun`: a call's checks, context, diff and envelope run as for real, then what the backend
//! would do is described instead of done. The description comes from the backend's own
//! [`Plan`], built by the code that builds the real invocation.

use crate::backend::{Plan, ReviewRequest, RunRequest, Terms};
use crate::env::Env;
use crate::fit::{Coverage, Fitted};
use crate::git::DiffSource;
use crate::secrets::{is_secret_name, mask_secrets, MASKED};

/// What a call would do.
#[derive(Debug, Clone, PartialEq)]
pub struct DryRun {
    pub backend: String,
    pub repo_path: String,
    pub sandbox: String,
    pub model: Option<String>,
    pub timeout_seconds: f64,
    /// The base a review compares against.
    pub base: Option<String>,
    /// What the backend would be sent; `None` for a native review (it reads the repository).
    pub envelope: Option<String>,
    /// The envelope's limit the call was held to: 500,000 bytes, `maxPromptBytes`, or what the
    /// model's context window holds.
    pub max_prompt_bytes: usize,
    pub action: Action,
    /// How the backend's environment would differ from the caller's.
    pub env: EnvChanges,
    /// Which diff the envelope holds, when the call asked for one (`includeDiff`).
    pub diff: Option<DiffSource>,
    /// How the diff was fitted (`fit`), file by file, when it did not fit whole.
    pub coverage: Option<Vec<Coverage>>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Command {
        name: String,
        /// Where it was found on `PATH`; `None`: not installed (a real call would fail).
        program: Option<String>,
        install_hint: String,
        args: Vec<String>,
        /// The program and its arguments quoted as a POSIX shell would need them, to read or
        /// paste (the relay itself never uses a shell).
        command_line: String,
        cwd: String,
        envelope_on_stdin: bool,
    },
    Http {
        method: String,
        url: String,
        /// The request's JSON text.
        body: String,
    },
    /// A JavaScript backend's `run()` would be called.
    JsRun,
    /// A JavaScript backend's `review()` would be called.
    JsReview,
}

/// Variables set (name, value: masked when the name looks secret) and removed, sorted by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EnvChanges {
    pub set: Vec<(String, String)>,
    pub removed: Vec<String>,
}

impl DryRun {
    /// The generic path: `request` carries the envelope.
    pub fn of_run(
        backend: &str,
        plan: Plan,
        request: &RunRequest,
        caller_env: &Env,
        base: Option<String>,
    ) -> DryRun {
        let envelope = Some(request.prompt.clone());
        DryRun::of(backend, plan, &request.terms, caller_env, base, envelope)
    }

    /// A native review: no envelope, the backend reads the repository itself.
    pub fn of_review(
        backend: &str,
        plan: Plan,
        request: &ReviewRequest,
        caller_env: &Env,
    ) -> DryRun {
        let base = Some(request.base.clone());
        DryRun::of(backend, plan, &request.terms, caller_env, base, None)
    }

    fn of(
        backend: &str,
        plan: Plan,
        terms: &Terms,
        caller_env: &Env,
        base: Option<String>,
        envelope: Option<String>,
    ) -> DryRun {
        DryRun {
            backend: backend.to_string(),
            repo_path: terms.repo_path.clone(),
            sandbox: terms.sandbox.clone(),
            model: terms.model.clone(),
            timeout_seconds: terms.timeout.seconds(),
            base,
            envelope,
            max_prompt_bytes: terms.prompt_limit,
            env: env_changes(caller_env, child_env(&plan, &terms.env)),
            diff: None,
            coverage: None,
            action: Action::from(plan),
        }
    }
}

impl DryRun {
    pub fn with_diff(self, diff: Option<DiffSource>) -> DryRun {
        DryRun { diff, ..self }
    }

    pub fn with_coverage(self, fitted: Option<Fitted>) -> DryRun {
        DryRun {
            coverage: fitted.map(|fitted| fitted.coverage),
            ..self
        }
    }

    /// What the backend would refuse that only its answer would tell, as warnings: a chat
    /// request (Ollama's, the one HTTP backend) without a model.
    pub fn refusals(&self) -> Vec<String> {
        match &self.action {
            Action::Http { body, .. } if !names_a_model(body) => vec![format!(
                "[phone-a-friend] dry run: no model set: {} refuses a chat without one, so a \
                 real relay would fail; pass --model <name> (the model option) or set OLLAMA_MODEL",
                self.backend
            )],
            _ => Vec::new(),
        }
    }
}

/// Whether a chat request's JSON body names a model.
fn names_a_model(body: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|body| body.get("model").cloned())
        .is_some_and(|model| model.as_str().is_some_and(|name| !name.is_empty()))
}

/// The environment the backend would get: a process's own, a JS backend's `env` option, none
/// for an HTTP request.
fn child_env<'a>(plan: &'a Plan, request_env: &'a Env) -> Option<&'a Env> {
    match plan {
        Plan::Command(command) => Some(&command.env),
        Plan::JsRun | Plan::JsReview => Some(request_env),
        Plan::Http { .. } => None,
    }
}

impl From<Plan> for Action {
    fn from(plan: Plan) -> Action {
        match plan {
            Plan::Command(command) => {
                let args: Vec<String> = command
                    .args
                    .iter()
                    .map(|arg| arg.to_string_lossy().into_owned())
                    .collect();
                let program = command.program.map(|p| p.to_string_lossy().into_owned());
                let shown = program.as_deref().unwrap_or(&command.name);
                Action::Command {
                    command_line: command_line(shown, &args),
                    name: command.name,
                    program,
                    install_hint: command.install_hint,
                    args,
                    cwd: command.cwd,
                    envelope_on_stdin: command.envelope_on_stdin,
                }
            }
            Plan::Http { method, url, body } => Action::Http {
                method: method.to_string(),
                url: mask_secrets(&url).into_owned(),
                body,
            },
            Plan::JsRun => Action::JsRun,
            Plan::JsReview => Action::JsReview,
        }
    }
}

fn command_line(program: &str, args: &[String]) -> String {
    std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .map(|word| match shlex::try_quote(word) {
            Ok(quoted) => quoted.into_owned(),
            // Only a NUL cannot be quoted; a real run would refuse it too.
            Err(_) => format!("{word:?}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn env_changes(caller: &Env, child: Option<&Env>) -> EnvChanges {
    let Some(child) = child else {
        return EnvChanges::default();
    };
    let set = child
        .iter()
        .filter(|(name, value)| caller.get(*name) != Some(value))
        .map(|(name, value)| (name.clone(), shown_value(name, value)))
        .collect();
    let removed = caller
        .keys()
        .filter(|name| !child.contains_key(*name))
        .cloned()
        .collect();
    EnvChanges { set, removed }
}

fn shown_value(name: &str, value: &str) -> String {
    if is_secret_name(name) {
        MASKED.to_string()
    } else {
        mask_secrets(value).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn lists_what_is_set_and_removed_masking_secret_values() {
        let caller = env(&[
            ("HOME", "/h"),
            ("CLAUDECODE", "1"),
            ("PHONE_A_FRIEND_DEPTH", "0"),
        ]);
        let child = env(&[
            ("HOME", "/h"),
            ("PHONE_A_FRIEND_DEPTH", "1"),
            ("ANTHROPIC_API_KEY", "sk-live"),
            ("my_auth_token", "t"),
        ]);
        let changes = env_changes(&caller, Some(&child));
        assert_eq!(
            changes.set,
            [
                ("ANTHROPIC_API_KEY".to_string(), MASKED.to_string()),
                ("PHONE_A_FRIEND_DEPTH".to_string(), "1".to_string()),
                ("my_auth_token".to_string(), MASKED.to_string()),
            ]
        );
        assert_eq!(changes.removed, ["CLAUDECODE"]);
        assert_eq!(env_changes(&caller, None), EnvChanges::default());
    }

    #[test]
    fn masks_the_userinfo_of_a_url_in_a_value() {
        let caller = env(&[]);
        let child = env(&[("OLLAMA_HOST", "http://u:pw@h:1")]);
        assert_eq!(
            env_changes(&caller, Some(&child)).set,
            [("OLLAMA_HOST".to_string(), "http://********@h:1".to_string())]
        );
    }

    #[test]
    fn a_chat_without_a_model_is_a_refusal() {
        let http = |body: &str| DryRun {
            backend: "ollama".into(),
            repo_path: "/r".into(),
            sandbox: "read-only".into(),
            model: None,
            timeout_seconds: 1.0,
            base: None,
            envelope: Some("e".into()),
            max_prompt_bytes: crate::limits::MAX_PROMPT_BYTES,
            action: Action::Http {
                method: "POST".into(),
                url: "http://localhost:11434/api/chat".into(),
                body: body.into(),
            },
            env: EnvChanges::default(),
            diff: None,
            coverage: None,
        };
        let refusals = http(r#"{"messages":[],"stream":true}"#).refusals();
        assert_eq!(refusals.len(), 1);
        assert!(refusals[0].contains("no model set"), "{refusals:?}");
        assert_eq!(
            http(r#"{"model":"llama3.2","messages":[]}"#).refusals(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn quotes_the_command_line_as_a_shell_would_need() {
        let args = ["exec", "-C", "/my repo", "it's", "", "-"].map(String::from);
        assert_eq!(
            command_line("/usr/bin/codex", &args),
            r#"/usr/bin/codex exec -C '/my repo' "it's" '' -"#
        );
    }
}
