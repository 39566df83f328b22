//! The contract's defaults and size limits (docs/CONTRACT.md §2), shared by the core and the
//! bindings.

pub const DEFAULT_TIMEOUT_SECONDS: u32 = 600;
/// The idle time-out (`idleTimeoutSeconds`) the CLI and the MCP server set; the library sets
/// none (docs/CONTRACT.md §14).
pub const DEFAULT_IDLE_TIMEOUT_SECONDS: u32 = 300;
pub const DEFAULT_BACKEND: &str = "codex";
pub const DEFAULT_SANDBOX: &str = "read-only";
/// Default limit of the synchronous git helpers (`gitDiffBase`, `detectDefaultBranch`).
pub const GIT_HELPER_TIMEOUT_SECONDS: u32 = 30;
pub const MAX_RELAY_DEPTH: u32 = 1;
pub const MAX_CONTEXT_FILE_BYTES: usize = 200_000;
pub const MAX_DIFF_BYTES: usize = 300_000;
pub const MAX_PROMPT_BYTES: usize = 500_000;
pub const MAX_OUTPUT_BYTES: usize = 8_388_608;
/// The longest error message any surface shows (the library, the CLI, the MCP server): a CLI's
/// 50 MB of stderr is its start and its end (docs/ERRORS.md).
pub const MAX_MESSAGE_BYTES: usize = 4_096;

/// The environment variable that counts nested relays.
pub const DEPTH_ENV_VAR: &str = "PHONE_A_FRIEND_DEPTH";
/// The environment variable that names the session store's folder (docs/CONTRACT.md §12).
pub const STORE_HOME_ENV_VAR: &str = "PHONE_A_FRIEND_HOME";
/// The environment variable that chooses the backend a call naming none asks, for the CLI and
/// the MCP server (docs/MCP.md, "The default friend").
pub const BACKEND_ENV_VAR: &str = "PHONE_A_FRIEND_BACKEND";

/// The three sandbox modes every built-in backend accepts.
pub const SANDBOX_MODES: [&str; 3] = ["read-only", "workspace-write", "danger-full-access"];
