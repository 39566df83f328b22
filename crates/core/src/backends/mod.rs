//! The built-in backends: codex, gemini, claude, opencode, antigravity and ollama (see
//! [`builtin`]).

use std::sync::Arc;

use crate::backend::Backend;
use crate::env::Env;
use crate::subprocess::find_executable;
use cli_runner::CliBackend;

pub mod antigravity;
pub mod builtin;
pub mod claude;
mod cli;
mod cli_runner;
pub mod codex;
pub mod gemini;
pub mod last_words;
pub mod ollama;
pub mod ollama_host;
mod ollama_http;
mod ollama_ndjson;
mod ollama_window;
pub mod opencode;
pub mod version;

/// One of each built-in backend, as a fresh registry holds them.
pub fn builtins() -> Vec<Arc<dyn Backend>> {
    vec![
        Arc::new(codex::Codex::default()),
        Arc::new(CliBackend::<gemini::Gemini>::default()),
        Arc::new(ollama::OllamaBackend::default()),
        Arc::new(CliBackend::<claude::Claude>::default()),
        Arc::new(CliBackend::<opencode::Opencode>::default()),
        Arc::new(CliBackend::<antigravity::Antigravity>::default()),
    ]
}

/// Whether each built-in backend's CLI is on the PATH of `env`, in the table's order.
pub fn installed_clis(env: &Env) -> [(&'static str, bool); builtin::BUILTINS.len()] {
    builtin::BUILTINS.map(|backend| {
        let found = find_executable(backend.executable, env).is_some();
        (backend.name, found)
    })
}
