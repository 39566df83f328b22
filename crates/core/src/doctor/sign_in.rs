//! Whether a CLI is signed in, as far as a cheap offline check tells (docs/BACKENDS.md,
//! "Signing in"): codex `login status` and its API-key variables, claude `auth status` (JSON),
//! opencode `auth list`, gemini its settings file, variables and stored Google credentials. No
//! check talks to a server: "signed in" means credentials are there, not that they are valid.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{stopped, Checks};
use crate::backends::builtin::Builtin;
use crate::env::Env;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SignInState {
    /// Credentials are there (a key variable, a stored login).
    SignedIn,
    /// None found: a relay would fail asking for them.
    NotSignedIn,
    /// The check could not tell (a configuration it does not read, a check that failed).
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignIn {
    pub state: SignInState,
    /// How: `CODEX_API_KEY`, `stored login`, `api_key (ANTHROPIC_API_KEY)`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub how: Option<String>,
    /// What to do when not signed in (or why the check could not tell).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl SignIn {
    fn signed_in(how: impl Into<String>) -> SignIn {
        SignIn {
            state: SignInState::SignedIn,
            how: Some(how.into()),
            hint: None,
        }
    }

    fn not_signed_in(hint: impl Into<String>) -> SignIn {
        SignIn {
            state: SignInState::NotSignedIn,
            how: None,
            hint: Some(hint.into()),
        }
    }

    fn unknown(hint: impl Into<String>) -> SignIn {
        SignIn {
            state: SignInState::Unknown,
            how: None,
            hint: Some(hint.into()),
        }
    }
}

/// The sign-in state of `backend`'s CLI at `program`; `None` for a CLI with no check.
pub(super) async fn check(
    backend: &Builtin,
    program: &Path,
    checks: &Checks<'_>,
) -> Option<SignIn> {
    let hint = backend.sign_in;
    match backend.name {
        "codex" => Some(codex(program, checks, hint).await),
        "claude" => Some(claude(program, checks, hint).await),
        "opencode" => Some(opencode(program, checks, hint).await),
        "gemini" => Some(gemini(checks.env, hint)),
        // Its sign-in lives in the OS keyring, which no offline check reads.
        "antigravity" => Some(SignIn::unknown(hint)),
        _ => None,
    }
}

fn set<'e>(env: &'e Env, name: &str) -> Option<&'e str> {
    crate::env::var(env, name).filter(|value| !value.is_empty())
}

/// codex honours these variables as well as a stored login (its own `codex doctor` names them
/// "supported auth env vars"; `codex doctor` itself probes the network, so it is not used).
const CODEX_KEY_VARS: [&str; 3] = ["CODEX_API_KEY", "OPENAI_API_KEY", "CODEX_ACCESS_TOKEN"];

/// `codex login status`: exit 0 when a login is stored, 1 and `Not logged in` when not; it does
/// not look at the variables, so they are checked first.
async fn codex(program: &Path, checks: &Checks<'_>, hint: &str) -> SignIn {
    if let Some(var) = CODEX_KEY_VARS
        .iter()
        .find(|var| set(checks.env, var).is_some())
    {
        return SignIn::signed_in(*var);
    }
    match checks.run(program, &["login", "status"]).await {
        Ok(output) if output.code == Some(0) => {
            let words = output.stdout.text.lines().chain(output.stderr.text.lines());
            // Its first words (`API key configured - ***`), past its start-up warnings.
            let said = words
                .map(str::trim)
                .find(|line| !line.is_empty() && !line.starts_with("WARNING"))
                .unwrap_or("stored login");
            SignIn::signed_in(said)
        }
        Ok(output) if output.code == Some(1) => SignIn::not_signed_in(hint),
        Ok(output) => SignIn::unknown(format!(
            "`codex login status` exited with {:?}",
            output.code
        )),
        Err(error) => SignIn::unknown(stopped("codex login status", &error)),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClaudeStatus {
    logged_in: bool,
    auth_method: Option<String>,
    api_key_source: Option<String>,
}

/// `claude auth status` prints JSON (`loggedIn`, `authMethod`, `apiKeySource`); an
/// ANTHROPIC_API_KEY counts, as claude counts it.
async fn claude(program: &Path, checks: &Checks<'_>, hint: &str) -> SignIn {
    let output = match checks.run(program, &["auth", "status"]).await {
        Ok(output) => output,
        Err(error) => return SignIn::unknown(stopped("claude auth status", &error)),
    };
    match serde_json::from_str::<ClaudeStatus>(&output.stdout.text) {
        Ok(status) if status.logged_in => {
            let method = status.auth_method.unwrap_or_else(|| "logged in".into());
            SignIn::signed_in(match status.api_key_source {
                Some(source) => format!("{method} ({source})"),
                None => method,
            })
        }
        Ok(_) => SignIn::not_signed_in(hint),
        Err(_) => SignIn::unknown("`claude auth status` did not print its JSON status"),
    }
}

/// `opencode auth list` lists the stored credentials and the provider variables it sees, and
/// ends each list with a count (`0 credentials`, `1 environment variable`), among ANSI colour
/// codes. None of either is "unknown", not "not signed in": opencode has free models of its own.
async fn opencode(program: &Path, checks: &Checks<'_>, hint: &str) -> SignIn {
    let output = match checks.run(program, &["auth", "list"]).await {
        Ok(output) if output.code == Some(0) => output,
        Ok(output) => {
            return SignIn::unknown(format!(
                "`opencode auth list` exited with {:?}",
                output.code
            ))
        }
        Err(error) => return SignIn::unknown(stopped("opencode auth list", &error)),
    };
    let text = strip_ansi(&output.stdout.text);
    let credentials = count_before(&text, "credential");
    let variables = count_before(&text, "environment variable");
    match (credentials, variables) {
        (Some(stored), _) if stored > 0 => SignIn::signed_in(format!("{stored} stored credential(s)")),
        (_, Some(vars)) if vars > 0 => SignIn::signed_in(format!("{vars} provider variable(s)")),
        // Without any, opencode runs its own free models (opencode.ai/zen, verified: a run with
        // a fresh HOME calls https://opencode.ai/zen/v1/chat/completions), which need no key.
        (Some(_), _) => SignIn::unknown(format!(
            "no stored credentials or provider variables: opencode then uses its free models at opencode.ai (online); for others, {hint}"
        )),
        (None, _) => SignIn::unknown("`opencode auth list` printed no count of credentials"),
    }
}

/// Drops ANSI escape sequences (`ESC [ … letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// The number right before `noun` on a line that has it (`0 credentials` → 0).
fn count_before(text: &str, noun: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let at = line.find(noun)?;
        line[..at].split_whitespace().last()?.parse().ok()
    })
}

#[derive(Deserialize, Default)]
struct GeminiSettings {
    #[serde(default)]
    security: GeminiSecurity,
    /// The older place of the same setting.
    #[serde(rename = "selectedAuthType")]
    selected_auth_type: Option<String>,
}

#[derive(Deserialize, Default)]
struct GeminiSecurity {
    #[serde(default)]
    auth: GeminiAuth,
}

#[derive(Deserialize, Default)]
struct GeminiAuth {
    #[serde(rename = "selectedType")]
    selected_type: Option<String>,
}

/// gemini's folder: `$GEMINI_CLI_HOME/.gemini`, else `$HOME/.gemini`.
fn gemini_dir(env: &Env) -> Option<PathBuf> {
    let home = set(env, "GEMINI_CLI_HOME").or_else(|| set(env, "HOME"))?;
    Some(Path::new(home).join(".gemini"))
}

/// At most this much of settings.json is read.
const SETTINGS_LIMIT: u64 = 1024 * 1024;

fn read_settings(dir: &Path) -> Option<GeminiSettings> {
    use std::io::Read;
    let file = crate::bounded_text::open_regular(&dir.join("settings.json")).ok()??;
    let mut text = String::new();
    file.take(SETTINGS_LIMIT).read_to_string(&mut text).ok()?;
    // gemini's settings file is JSON with comments; a file this cannot read is "unknown".
    serde_json::from_str(&text).ok()
}

/// gemini has no status command. It takes the auth type from settings.json
/// (`security.auth.selectedType`), else from the variables (GOOGLE_GENAI_USE_GCA,
/// GOOGLE_GENAI_USE_VERTEXAI, GEMINI_API_KEY), then needs that type's credentials; run headless
/// without them it fails (docs/BACKENDS.md, "gemini"). Workspace settings (`<repo>/.gemini`) are
/// not read.
fn gemini(env: &Env, hint: &str) -> SignIn {
    let dir = gemini_dir(env);
    let settings_path = dir.as_ref().map(|dir| dir.join("settings.json"));
    let settings = match (&dir, &settings_path) {
        (Some(dir), Some(path)) if path.exists() => match read_settings(dir) {
            Some(settings) => settings,
            None => {
                return SignIn::unknown(format!("{} could not be read as JSON", path.display()))
            }
        },
        _ => GeminiSettings::default(),
    };
    let selected = settings
        .security
        .auth
        .selected_type
        .or(settings.selected_auth_type)
        .or_else(|| gemini_auth_from_env(env));
    match selected.as_deref() {
        None => SignIn::not_signed_in(hint),
        Some("gemini-api-key") => match set(env, "GEMINI_API_KEY") {
            Some(_) => SignIn::signed_in("gemini-api-key (GEMINI_API_KEY)"),
            None => SignIn::not_signed_in(
                "export GEMINI_API_KEY=… (settings.json selects gemini-api-key)",
            ),
        },
        Some("oauth-personal") => {
            let creds = dir.map(|dir| dir.join("oauth_creds.json"));
            match creds.filter(|path| path.is_file()) {
                Some(path) => SignIn::signed_in(format!("oauth-personal ({})", path.display())),
                None => SignIn::not_signed_in(
                    "run `gemini` once and sign in with Google (a relay cannot: it is not interactive), or use GEMINI_API_KEY",
                ),
            }
        }
        Some("vertex-ai") => {
            if set(env, "GOOGLE_API_KEY").is_some() {
                SignIn::signed_in("vertex-ai (GOOGLE_API_KEY)")
            } else if set(env, "GOOGLE_CLOUD_PROJECT").is_some()
                && set(env, "GOOGLE_CLOUD_LOCATION").is_some()
            {
                SignIn::signed_in("vertex-ai (GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION)")
            } else {
                SignIn::not_signed_in(
                    "export GOOGLE_CLOUD_PROJECT=… and GOOGLE_CLOUD_LOCATION=…, or GOOGLE_API_KEY=… (settings.json selects vertex-ai)",
                )
            }
        }
        Some(other) => SignIn::unknown(format!(
            "settings.json selects {other}, which this check does not read"
        )),
    }
}

/// The auth type gemini takes from the variables when settings.json selects none.
fn gemini_auth_from_env(env: &Env) -> Option<String> {
    [
        ("GOOGLE_GENAI_USE_GCA", "oauth-personal"),
        ("GOOGLE_GENAI_USE_VERTEXAI", "vertex-ai"),
        ("GEMINI_API_KEY", "gemini-api-key"),
    ]
    .into_iter()
    .find(|(variable, _)| set(env, variable).is_some())
    .map(|(_, auth)| auth.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Env {
        vars.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn gemini_test(env: &Env) -> SignIn {
        gemini(env, crate::backends::builtin::GEMINI.sign_in)
    }

    #[test]
    fn reads_opencode_counts_among_ansi_codes() {
        let text = strip_ansi("\u{1b}[0m\n┌  Credentials \u{1b}[90m~/.local/share/opencode/auth.json\n│\n└  0 credentials\n\n┌  Environment\n│\n●  OpenAI \u{1b}[90mOPENAI_API_KEY\n│\n└  1 environment variable\n");
        assert_eq!(count_before(&text, "credential"), Some(0));
        assert_eq!(count_before(&text, "environment variable"), Some(1));
    }

    #[test]
    fn gemini_needs_the_selected_types_credentials() {
        let home = tempfile::tempdir().unwrap();
        let home_str = home.path().to_string_lossy().to_string();
        assert_eq!(
            gemini_test(&env(&[("HOME", &home_str)])).state,
            SignInState::NotSignedIn
        );
        let keyed = gemini_test(&env(&[("HOME", &home_str), ("GEMINI_API_KEY", "k")]));
        assert_eq!(keyed.state, SignInState::SignedIn);
        let dir = home.path().join(".gemini");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(
            dir.join("settings.json"),
            r#"{"security":{"auth":{"selectedType":"oauth-personal"}}}"#,
        )
        .unwrap();
        let oauth = gemini_test(&env(&[("HOME", &home_str), ("GEMINI_API_KEY", "k")]));
        assert_eq!(oauth.state, SignInState::NotSignedIn);
        std::fs::write(dir.join("oauth_creds.json"), "{}").unwrap();
        assert_eq!(
            gemini_test(&env(&[("HOME", &home_str)])).state,
            SignInState::SignedIn
        );
    }
}
