//! The built-in backends: codex, gemini and ollama.

use std::sync::Arc;

use crate::backend::{Backend, Env};
use crate::subprocess::find_executable;

mod cli;
pub mod codex;
pub mod gemini;
pub mod ollama;
pub mod ollama_host;
mod ollama_ndjson;

/// One of each built-in backend, as a fresh registry holds them.
pub fn builtins() -> Vec<Arc<dyn Backend>> {
    vec![
        Arc::new(codex::Codex::default()),
        Arc::new(gemini::Gemini::default()),
        Arc::new(ollama::OllamaBackend::default()),
    ]
}

/// The sandbox modes every built-in backend accepts.
fn all_sandbox_modes() -> Vec<String> {
    crate::limits::SANDBOX_MODES
        .iter()
        .map(|mode| mode.to_string())
        .collect()
}

/// Whether each built-in backend's CLI is on the PATH of `env`.
pub fn installed_clis(env: &Env) -> [(&'static str, bool); 3] {
    ["codex", "gemini", "ollama"].map(|cli| (cli, find_executable(cli, env).is_some()))
}
