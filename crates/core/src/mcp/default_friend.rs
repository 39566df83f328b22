//! Which backend a `relay` or `review` tool call asks when it names none (docs/MCP.md, "The
//! default friend"): an agent calling this server wants a second opinion, not its own model, so
//! a client that names itself as a built-in backend's agent (`clientInfo.name`) gets a ready
//! backend of another maker.

use crate::backends::builtin::{self, Builtin};
use crate::env::{self, Env};
use crate::limits::{BACKEND_ENV_VAR, DEFAULT_BACKEND};
use crate::subprocess::find_executable;

/// The backend a call from `client` (its `clientInfo.name`) asks when it names none:
/// `PHONE_A_FRIEND_BACKEND` when the server's environment sets it; for the agent of a built-in
/// backend, the first backend of another maker whose CLI is on the `PATH` (the default backend
/// first), or the first of them when none is; else the default backend.
pub fn default_friend(client: Option<&str>, env: &Env) -> String {
    if let Some(chosen) = env::var(env, BACKEND_ENV_VAR).filter(|name| !name.is_empty()) {
        return chosen.to_string();
    }
    let Some(caller) = client.and_then(caller_backend) else {
        return DEFAULT_BACKEND.to_string();
    };
    let mut others: Vec<&Builtin> = builtin::clis()
        .filter(|backend| backend.maker != caller.maker)
        .collect();
    // The default backend first, then the table's order.
    others.sort_by_key(|backend| backend.name != DEFAULT_BACKEND);
    let ready = others
        .iter()
        .find(|backend| find_executable(backend.executable, env).is_some());
    ready
        .or(others.first())
        .map_or(DEFAULT_BACKEND, |backend| backend.name)
        .to_string()
}

/// The built-in backend whose agent names itself `client`.
fn caller_backend(client: &str) -> Option<&'static Builtin> {
    builtin::BUILTINS.into_iter().find(|backend| {
        backend
            .mcp_client_names
            .iter()
            .any(|name| client.starts_with(name))
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// An environment whose `PATH` holds executables named `names`, and nothing else.
    fn path_with(names: &[&str]) -> (tempfile::TempDir, Env) {
        let folder = tempfile::tempdir().expect("temp dir");
        for name in names {
            let file = folder.path().join(name);
            std::fs::write(&file, "#!/bin/sh\n").expect("write");
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        let path = folder.path().to_string_lossy().into_owned();
        (folder, Env::from([("PATH".to_string(), path)]))
    }

    #[test]
    fn an_agent_gets_a_ready_friend_of_another_maker() {
        let (_all, everything) = path_with(&["codex", "gemini", "claude", "opencode"]);
        // The clientInfo names the real hosts send (docs/MCP.md, "The default friend").
        assert_eq!(default_friend(Some("claude-code"), &everything), "codex");
        assert_eq!(
            default_friend(Some("codex-mcp-client"), &everything),
            "gemini"
        );
        assert_eq!(
            default_friend(Some("gemini-cli-mcp-client"), &everything),
            "codex"
        );
        assert_eq!(default_friend(Some("opencode"), &everything), "codex");
        let (_some, no_codex) = path_with(&["claude", "opencode"]);
        assert_eq!(default_friend(Some("claude-code"), &no_codex), "opencode");
        assert_eq!(
            default_friend(Some("codex-mcp-client"), &no_codex),
            "claude"
        );
        // None ready: the first of another maker, whose absence the relay then reports.
        let (_none, nothing) = path_with(&[]);
        assert_eq!(default_friend(Some("codex-mcp-client"), &nothing), "gemini");
        assert_eq!(default_friend(Some("claude-code"), &nothing), "codex");
    }

    #[test]
    fn other_clients_get_the_default_and_the_environment_overrides() {
        let (_all, mut env) = path_with(&["codex", "gemini"]);
        assert_eq!(default_friend(None, &env), DEFAULT_BACKEND);
        assert_eq!(default_friend(Some("some-ide"), &env), DEFAULT_BACKEND);
        env.insert(BACKEND_ENV_VAR.into(), "ollama".into());
        assert_eq!(default_friend(Some("codex-mcp-client"), &env), "ollama");
        assert_eq!(default_friend(None, &env), "ollama");
        env.insert(BACKEND_ENV_VAR.into(), String::new());
        assert_eq!(default_friend(Some("codex-mcp-client"), &env), "gemini");
    }
}
