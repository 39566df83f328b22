//! A model's context window as its Ollama server reports it: `POST {host}/api/show` with the
//! model's name answers `model_info` (whose `<architecture>.context_length` is the most tokens
//! the model takes) and `parameters` (the Modelfile's, `num_ctx` among them: the context it gets
//! by default). Ollama cuts a prompt longer than the context it runs with, silently, so a fitted
//! call fits its envelope to the window and asks for a context that holds it (docs/CONTRACT.md
//! §6a, "Budgets"). Anything that goes wrong (no server, no such model, a body past its limit)
//! means the window is not known: the call goes on as it would have, and the chat reports what
//! is wrong.

use std::time::Duration;

use serde_json::Value;

use crate::backend::WindowQuery;
use crate::model_window::ModelWindow;

use super::ollama_host;

/// How long the question may take, within the call's deadline.
const SHOW_TIMEOUT: Duration = Duration::from_secs(5);

/// The most of the answer read: its model information, Modelfile and license (tensors are
/// listed only when asked `verbose`).
const SHOW_BODY_BYTES: usize = 1024 * 1024;

/// The window of the model `query` names (else `OLLAMA_MODEL`), or `None` when it is not known.
pub(super) async fn model_window(query: WindowQuery) -> Option<ModelWindow> {
    let model = query
        .model
        .as_deref()
        .or_else(|| crate::env::var(&query.env, "OLLAMA_MODEL"))
        .filter(|model| !model.is_empty())?;
    let base = ollama_host::request_url(crate::env::var(&query.env, "OLLAMA_HOST"));
    let client = super::ollama_http::client().ok()?;
    let show = async {
        let mut response = client
            .post(format!("{base}/api/show"))
            .json(&serde_json::json!({ "model": model }))
            .send()
            .await
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body = super::ollama_http::read_head(&mut response, SHOW_BODY_BYTES + 1)
            .await
            .ok()?;
        (body.len() <= SHOW_BODY_BYTES).then_some(body)
    };
    let body = query
        .deadline
        .bound(tokio::time::timeout(SHOW_TIMEOUT, show))
        .await
        .ok()?
        .ok()??;
    window_of(&serde_json::from_slice(&body).ok()?)
}

/// The window an `/api/show` answer describes.
fn window_of(show: &Value) -> Option<ModelWindow> {
    let info = show.get("model_info")?.as_object()?;
    let architecture = info.get("general.architecture").and_then(Value::as_str);
    let tokens = architecture
        .and_then(|architecture| info.get(&format!("{architecture}.context_length")))
        .or_else(|| {
            info.iter()
                .find(|(key, _)| key.ends_with(".context_length"))
                .map(|(_, value)| value)
        })?
        .as_u64()
        .filter(|&tokens| tokens > 0)?;
    let configured = show
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(modelfile_num_ctx);
    Some(ModelWindow { tokens, configured })
}

/// `num_ctx` among a Modelfile's parameters, one `name value` a line.
fn modelfile_num_ctx(parameters: &str) -> Option<u64> {
    parameters.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx"))
            .then(|| words.next()?.parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_architectures_context_length_and_the_modelfiles_num_ctx() {
        let show = json!({
            "parameters": "stop                           \"<|eot_id|>\"\nnum_ctx                        8192",
            "model_info": {
                "general.architecture": "llama",
                "general.parameter_count": 8030261248u64,
                "llama.context_length": 131072,
                "llama.embedding_length": 4096,
            },
        });
        assert_eq!(
            window_of(&show),
            Some(ModelWindow {
                tokens: 131_072,
                configured: Some(8192),
            })
        );
    }

    #[test]
    fn takes_any_context_length_without_an_architecture_and_none_without_one() {
        let show = json!({ "model_info": { "qwen2.context_length": 32768 } });
        assert_eq!(
            window_of(&show),
            Some(ModelWindow {
                tokens: 32_768,
                configured: None,
            })
        );
        assert_eq!(window_of(&json!({ "model_info": {} })), None);
        assert_eq!(
            window_of(&json!({ "model_info": { "x.context_length": 0 } })),
            None
        );
        assert_eq!(window_of(&json!({ "error": "model not found" })), None);
        assert_eq!(modelfile_num_ctx("num_ctx abc\n"), None);
    }
}
