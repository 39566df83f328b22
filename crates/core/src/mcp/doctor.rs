//! The `backends` tool: what `phone-a-friend doctor` knows, short of the CLIs' versions.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::backends::builtin::{self, Builtin, Reach};
use crate::backends::ollama_host;
use crate::env::Env;
use crate::subprocess::find_executable;

/// How long the Ollama server has to answer `GET /api/tags`, as in `doctor`.
const PROBE: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BackendsReport {
    pub backends: Vec<BackendReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackendReport {
    pub name: String,
    /// A relay to it can run: a CLI backend when its CLI is on PATH, ollama when its
    /// server answers.
    pub ready: bool,
    /// Its CLI is on PATH (ollama needs only its server).
    pub found: bool,
    /// Where its CLI is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// How to get it, when it is not ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install: Option<String>,
    /// ollama: the server probed (from OLLAMA_HOST).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// ollama: the model a relay would ask for (OLLAMA_MODEL), when one is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// ollama: the models the server has, when it said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<String>>,
}

fn cli(backend: &Builtin, env: &Env) -> BackendReport {
    let path = find_executable(backend.name, env).map(|path| path.to_string_lossy().into_owned());
    BackendReport {
        name: backend.name.into(),
        ready: path.is_some(),
        found: path.is_some(),
        install: path.is_none().then(|| backend.install.into()),
        path,
        host: None,
        model: None,
        models: None,
    }
}

#[derive(Deserialize)]
struct Tags {
    models: Vec<Tag>,
}

#[derive(Deserialize)]
struct Tag {
    name: String,
}

/// `Some(models)` when a server answers `GET /api/tags` (the list, when it gave one).
async fn probe_ollama(host: &str) -> Option<Option<Vec<String>>> {
    let client = reqwest::Client::builder().timeout(PROBE).build().ok()?;
    let response = client.get(format!("{host}/api/tags")).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let tags = response.json::<Tags>().await.ok();
    Some(tags.map(|tags| tags.models.into_iter().map(|tag| tag.name).collect()))
}

/// Every built-in backend, in the table's order.
pub async fn report(env: &Env) -> BackendsReport {
    let mut backends = Vec::with_capacity(builtin::BUILTINS.len());
    for backend in builtin::BUILTINS {
        backends.push(match backend.reach {
            Reach::Cli => cli(backend, env),
            Reach::Server => server(backend, env).await,
        });
    }
    BackendsReport { backends }
}

/// Ollama: ready when its server answers, found or not.
async fn server(backend: &Builtin, env: &Env) -> BackendReport {
    let host = ollama_host::base_url(crate::env::var(env, "OLLAMA_HOST"));
    let probed = probe_ollama(&host).await;
    let mut report = cli(backend, env);
    report.ready = probed.is_some();
    report.install = (!report.ready).then(|| backend.install.into());
    report.models = probed.flatten();
    report.model = crate::env::var(env, "OLLAMA_MODEL")
        .filter(|m| !m.is_empty())
        .map(str::to_owned);
    report.host = Some(host);
    report
}
