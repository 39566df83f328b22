//! The built-in backends: claude, codex, gemini, ollama and opencode.

use std::sync::Arc;

use crate::backend::Backend;
use crate::env::Env;
use crate::subprocess::find_executable;

pub mod claude;
mod cli;
pub mod codex;
pub mod gemini;
pub mod ollama;
pub mod ollama_host;
mod ollama_ndjson;
pub mod opencode;

/// One of each built-in backend, as a fresh registry holds them.
pub fn builtins() -> Vec<Arc<dyn Backend>> {
    vec![
        Arc::new(codex::Codex::default()),
        Arc::new(gemini::Gemini::default()),
        Arc::new(ollama::OllamaBackend::default()),
        Arc::new(claude::Claude::default()),
        Arc::new(opencode::Opencode::default()),
    ]
}

/// Whether each built-in backend's CLI is on the PATH of `env`.
pub fn installed_clis(env: &Env) -> [(&'static str, bool); 5] {
    ["codex", "gemini", "ollama", "claude", "opencode"]
        .map(|cli| (cli, find_executable(cli, env).is_some()))
}
