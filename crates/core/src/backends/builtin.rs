//! The built-in backends, written once: the registry, `doctor` (the MCP `backends` tool and,
//! through the addon, the CLI's), the MCP server's instructions and tool schemas, and the
//! messages that say how to install a backend all read this table. Text that cannot read it
//! (package.json, README and docs/, the option doc comments, the CLI's help) is checked against it
//! by `__test__/builtin-backends.spec.ts`.

use crate::limits::SANDBOX_MODES;

/// How a relay reaches a built-in backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Runs its CLI, found on the `PATH` of the call's environment.
    Cli,
    /// Talks HTTP to its server; its CLI need not be here.
    Server,
}

#[derive(Debug)]
pub struct Builtin {
    /// The name a relay asks for.
    pub name: &'static str,
    /// The executable of its CLI, found on the `PATH` (antigravity's is `agy`).
    pub executable: &'static str,
    /// What it is, for people.
    pub what: &'static str,
    pub reach: Reach,
    /// The npm package of its CLI; `None`: not from npm.
    pub npm_package: Option<&'static str>,
    /// How to get it: the command, or where to download it.
    pub install: &'static str,
    /// The sandbox modes it accepts.
    pub sandboxes: &'static [&'static str],
    /// What to do to sign its CLI in, said by `doctor` and by a failed relay whose CLI asked for
    /// it (docs/BACKENDS.md, "Signing in"); empty for a backend without sign-in.
    pub sign_in: &'static str,
    /// The version of its CLI the code was checked against (the devDependency the end-to-end
    /// tests run); `None`: checked against a fake server only. The range a relay trusts is this
    /// version's minor series from it up ([`Builtin::verified_range`]): the CLIs change flags
    /// between minor versions (docs/BACKENDS.md, "Versions").
    pub verified_version: Option<&'static str>,
    /// The version of its CLI whose documentation the code was checked against, for a CLI
    /// never run here (antigravity: docs/BACKENDS.md, "antigravity"); `None` for the others.
    pub documented_version: Option<&'static str>,
    /// Who makes the model behind it: the MCP server's default friend is of another maker than
    /// the agent that called it (docs/MCP.md, "The default friend").
    pub maker: &'static str,
    /// How its own agent names itself to an MCP server (`clientInfo.name`, a prefix), as the real
    /// hosts sent it (docs/MCP.md, "The default friend"); empty for a backend that is no MCP client.
    pub mcp_client_names: &'static [&'static str],
    /// The environment variables its CLI, or the relay for it, reads: sign-in keys, config
    /// homes, its server's address. A host that starts the MCP server with only the variables it
    /// is told of (codex's `env_vars`) is told these ([`friend_environment`]).
    pub environment: &'static [&'static str],
}

impl Builtin {
    /// The versions of its CLI taken as verified: `~<verified_version>`, i.e. from it up to the
    /// next minor version. `None` for a backend without a verified version (or a table entry
    /// that is not a version, which a test rules out).
    pub fn verified_range(&self) -> Option<semver::VersionReq> {
        semver::VersionReq::parse(&format!("~{}", self.verified_version?)).ok()
    }

    pub fn sandboxes(&self) -> Vec<String> {
        self.sandboxes.iter().map(|mode| mode.to_string()).collect()
    }
}

pub const CODEX: Builtin = Builtin {
    name: "codex",
    executable: "codex",
    what: "OpenAI's Codex CLI",
    reach: Reach::Cli,
    npm_package: Some("@openai/codex"),
    install: "npm install -g @openai/codex",
    sandboxes: &SANDBOX_MODES,
    sign_in: "run `codex login`, or export CODEX_API_KEY=…",
    verified_version: Some("0.169.0"),
    documented_version: None,
    maker: "OpenAI",
    mcp_client_names: &["codex-mcp-client"],
    environment: &[
        "OPENAI_API_KEY",
        "CODEX_API_KEY",
        "CODEX_ACCESS_TOKEN",
        "CODEX_HOME",
    ],
};

pub const GEMINI: Builtin = Builtin {
    name: "gemini",
    executable: "gemini",
    what: "Google's Gemini CLI",
    reach: Reach::Cli,
    npm_package: Some("@google/gemini-cli"),
    install: "npm install -g @google/gemini-cli",
    sandboxes: &SANDBOX_MODES,
    sign_in: "export GEMINI_API_KEY=… (with \"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}} in ~/.gemini/settings.json), or run `gemini` once and sign in with Google",
    verified_version: Some("0.61.0"),
    documented_version: None,
    maker: "Google",
    mcp_client_names: &["gemini-cli-mcp-client"],
    environment: &[
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_GENAI_USE_GCA",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GEMINI_CLI_HOME",
    ],
};

pub const CLAUDE: Builtin = Builtin {
    name: "claude",
    executable: "claude",
    what: "Anthropic's Claude Code CLI",
    reach: Reach::Cli,
    npm_package: Some("@anthropic-ai/claude-code"),
    install: "npm install -g @anthropic-ai/claude-code",
    sandboxes: &SANDBOX_MODES,
    sign_in: "export ANTHROPIC_API_KEY=…, or run `claude` and sign in with /login",
    verified_version: Some("2.1.330"),
    documented_version: None,
    maker: "Anthropic",
    mcp_client_names: &["claude-code"],
    environment: &["ANTHROPIC_API_KEY"],
};

pub const OPENCODE: Builtin = Builtin {
    name: "opencode",
    executable: "opencode",
    what: "the opencode CLI",
    reach: Reach::Cli,
    npm_package: Some("opencode-ai"),
    install: "npm install -g opencode-ai",
    sandboxes: &SANDBOX_MODES,
    sign_in: "run `opencode auth login`, or export a provider's key (e.g. ANTHROPIC_API_KEY=…)",
    verified_version: Some("1.18.33"),
    documented_version: None,
    maker: "opencode",
    mcp_client_names: &["opencode"],
    environment: &["XDG_CONFIG_HOME", "XDG_DATA_HOME"],
};

pub const OLLAMA: Builtin = Builtin {
    name: "ollama",
    executable: "ollama",
    what: "an Ollama server",
    reach: Reach::Server,
    npm_package: None,
    install: "https://ollama.com/download",
    sandboxes: &SANDBOX_MODES,
    sign_in: "",
    verified_version: None,
    documented_version: None,
    maker: "Ollama",
    mcp_client_names: &[],
    environment: &["OLLAMA_HOST", "OLLAMA_MODEL"],
};

/// Google's Antigravity CLI: built from its documentation and upstream's code, never run here
/// (no registry this project reaches has it); its install is a script, so the install text is
/// the documentation's page that gives it.
pub const ANTIGRAVITY: Builtin = Builtin {
    name: "antigravity",
    executable: "agy",
    what: "Google's Antigravity CLI (agy)",
    reach: Reach::Cli,
    npm_package: None,
    install: "https://antigravity.google/docs/cli/install",
    sandboxes: &["read-only"],
    sign_in: "run `agy` once in a terminal and sign in with Google",
    verified_version: None,
    documented_version: Some("1.1.23"),
    maker: "Google",
    mcp_client_names: &[],
    environment: &[],
};

/// Every built-in backend, in the order the documentation and `doctor` name them.
pub const BUILTINS: [&Builtin; 6] = [&CODEX, &GEMINI, &CLAUDE, &OPENCODE, &ANTIGRAVITY, &OLLAMA];

/// The environment variables the relay itself reads: the session store's folder, the depth
/// guard, the MCP server's default friend.
pub const RELAY_ENVIRONMENT: [&str; 3] = [
    crate::limits::STORE_HOME_ENV_VAR,
    crate::limits::DEPTH_ENV_VAR,
    crate::limits::BACKEND_ENV_VAR,
];

/// Every variable a friend or the relay reads (each backend's [`Builtin::environment`], then
/// [`RELAY_ENVIRONMENT`]), each once, in the table's order: what the CLI's `install` tells a
/// host to pass the MCP server (docs/HOSTS.md).
pub fn friend_environment() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    let all = BUILTINS
        .iter()
        .flat_map(|backend| backend.environment.iter().copied())
        .chain(RELAY_ENVIRONMENT);
    for name in all {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The names of `backends` in a sentence: `a, b and c` (`conjunction` = "and").
pub fn listed<'a>(backends: impl IntoIterator<Item = &'a Builtin>, conjunction: &str) -> String {
    let names: Vec<&str> = backends.into_iter().map(|backend| backend.name).collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} {conjunction} {last}", rest.join(", ")),
    }
}

/// The built-ins a relay reaches through their CLI.
pub fn clis() -> impl Iterator<Item = &'static Builtin> {
    BUILTINS
        .into_iter()
        .filter(|backend| backend.reach == Reach::Cli)
}

/// The built-ins a relay reaches through their server.
pub fn servers() -> impl Iterator<Item = &'static Builtin> {
    BUILTINS
        .into_iter()
        .filter(|backend| backend.reach == Reach::Server)
}

/// What the `backend` option says, in the MCP tools' schemas.
pub fn backend_option_description() -> String {
    format!(
        "The backend to ask: {}. Default: {}, unless the calling agent is one of these: then an installed backend of another maker (the server's PHONE_A_FRIEND_BACKEND, when set, decides instead).",
        listed(BUILTINS, "or"),
        crate::limits::DEFAULT_BACKEND
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::builtins;

    #[test]
    fn the_friend_environment_is_every_backends_then_the_relays_each_once() {
        let names = friend_environment();
        for backend in BUILTINS {
            for name in backend.environment {
                assert!(names.contains(name), "{} reads {name}", backend.name);
            }
        }
        assert!(names.ends_with(&RELAY_ENVIRONMENT), "{names:?}");
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        // The doctor's sign-in variables and the default model's are among them.
        for name in [
            "CODEX_API_KEY",
            "GEMINI_API_KEY",
            "ANTHROPIC_API_KEY",
            "OLLAMA_MODEL",
        ] {
            assert!(names.contains(&name), "{name}");
        }
    }

    #[test]
    fn the_registry_holds_exactly_the_table_with_its_sandboxes() {
        let mut registered: Vec<(String, Vec<String>)> = builtins()
            .iter()
            .map(|backend| {
                (
                    backend.name().to_string(),
                    backend.allowed_sandboxes().to_vec(),
                )
            })
            .collect();
        registered.sort();
        let mut table: Vec<(String, Vec<String>)> = BUILTINS
            .iter()
            .map(|backend| (backend.name.to_string(), backend.sandboxes()))
            .collect();
        table.sort();
        assert_eq!(registered, table);
    }

    #[test]
    fn an_npm_cli_installs_with_npm() {
        for backend in BUILTINS {
            match backend.npm_package {
                Some(package) => {
                    assert_eq!(backend.install, format!("npm install -g {package}"));
                    assert!(backend.verified_version.is_some(), "{}", backend.name);
                    assert!(backend.verified_range().is_some(), "{}", backend.name);
                }
                // Not from npm: where to get it, a page people read (never a command to pipe
                // into a shell).
                None => assert!(
                    backend.install.starts_with("https://") && !backend.install.contains(' '),
                    "{}",
                    backend.name
                ),
            }
            // A CLI never run here says which documentation it was checked against instead.
            if backend.reach == Reach::Cli && backend.verified_version.is_none() {
                assert!(backend.documented_version.is_some(), "{}", backend.name);
            }
        }
    }

    #[test]
    fn lists_names_in_a_sentence() {
        assert_eq!(
            listed(BUILTINS, "or"),
            "codex, gemini, claude, opencode, antigravity or ollama"
        );
        assert_eq!(
            listed(clis(), "and"),
            "codex, gemini, claude, opencode and antigravity"
        );
        assert_eq!(listed([&OLLAMA], "or"), "ollama");
        assert_eq!(listed([], "or"), "");
    }
}
