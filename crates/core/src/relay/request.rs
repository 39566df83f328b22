//! One request type for every call: `relay()`'s options, and `reviewRelay()`'s, which are a
//! relay's with a review part (`base`, `verdict`; its `prompt` is the review's instructions).
//! The JS API, the addon (napi, from this struct and its docs: binding.d.ts) and the MCP tools
//! all take it; adding an option is one field here, and its use.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::ContextText;
use crate::limits::MAX_PROMPT_BYTES;
use crate::schema::SchemaArgument;

/// Which call a request is for: each takes its own options of a [`RelayRequest`] (the others are
/// ignored by the JS API and refused by the MCP tools) and makes its own checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Relay,
    Review,
    /// `relayAll()`: a relay to several backends at once.
    RelayAll,
}

impl Operation {
    /// The options of a [`RelayRequest`] this call does not take, as the JS API names them.
    pub fn options_not_taken(self) -> &'static [&'static str] {
        match self {
            Operation::Relay | Operation::RelayAll => RelayRequest::REVIEW_ONLY,
            Operation::Review => RelayRequest::RELAY_ONLY,
        }
    }

    /// Whether the call asks a prompt of its caller (check 1): a review has default instructions.
    pub fn requires_prompt(self) -> bool {
        self != Operation::Review
    }
}

/// How a call holds its envelope to its limit: the limit, and whether to fit the context and
/// diff to it rather than refuse an envelope over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvelopeLimit {
    pub bytes: usize,
    pub fit: bool,
}

/// A relay's options; a review takes the same with its review part (`base`, `verdict`).
// Their JSON form (camelCase, as the JS API names them) and its JSON Schema are what the MCP
// server's tools take (mcp/arguments.rs); napi makes binding.d.ts's `RelayRequest` of it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "napi", napi_derive::napi(object, object_to_js = false))]
pub struct RelayRequest {
    /// What to ask the other agent; must not be blank. For a review, its instructions.
    /// @default for a review: 'Review the following changes.'
    pub prompt: Option<String>,
    /// The repository the other agent works in (for a review, the one reviewed); a relative
    /// path resolves against the caller's working directory, an empty one is that directory.
    #[serde(default)]
    pub repo_path: String,
    /// Backend name: `codex`, `gemini`, `claude`, `opencode`, `antigravity`, `ollama` or one passed to `registerBackend()`.
    /// @default 'codex'
    #[schemars(description = crate::backends::builtin::backend_option_description())]
    pub backend: Option<String>,
    /// A file whose text goes into the prompt as additional context (at most 200,000 bytes
    /// trimmed).
    pub context_file: Option<String>,
    /// Inline additional context (at most 200,000 bytes trimmed); not together with
    /// `contextFile`.
    #[schemars(with = "Option<String>")]
    #[cfg_attr(feature = "napi", napi(ts_type = "string"))]
    pub context_text: Option<ContextText>,
    /// Add `git diff HEAD` (or, when that is empty, the last commit's diff) to the prompt.
    /// @default false
    pub include_diff: Option<bool>,
    /// Seconds the whole call may take, a finite number greater than zero: one deadline counted
    /// from the call, so reading the context file and running git come out of it and the
    /// backend gets what is left.
    /// @default 600
    pub timeout_seconds: Option<f64>,
    /// Seconds the backend may go without making progress (no output from a CLI, no chunk from
    /// Ollama or a JS backend) before it is stopped as stalled, a finite number greater than
    /// zero: `ERR_BACKEND_TIMEOUT` with `reason: 'stalled'` (docs/CONTRACT.md §14). Off in the
    /// library; the CLI and the MCP server set 300.
    pub idle_timeout_seconds: Option<f64>,
    /// The model the backend should use; its own default when absent.
    pub model: Option<String>,
    /// What the backend may change in the repository (a `SandboxMode`).
    /// @default 'read-only'
    // null too: the type (an Option) allows it, and it means the default.
    #[schemars(extend("enum" = ["read-only", "workspace-write", "danger-full-access", null]))]
    pub sandbox: Option<String>,
    /// A JSON Schema the answer must match (the schema, or its JSON text; the JS wrapper passes
    /// an object's text): the answer is then its JSON text. Not together with `verdict`.
    #[serde(default, deserialize_with = "SchemaArgument::deserialize_text")]
    #[schemars(with = "Option<SchemaArgument>")]
    pub schema: Option<String>,
    /// Backends to ask next, in order, when the backend fails for a reason that means it cannot
    /// answer now (`auth`, `quota`, `rate-limit`, `network`, `stalled`, `not-installed`:
    /// docs/ERRORS.md) or refused an envelope too large for it before running: the same
    /// envelope, sandbox and deadline; never after an answer, a schema mismatch or an abort
    /// (docs/CONTRACT.md §8a). Each is checked with the backend (check 4). With a session, the
    /// label moves to the backend that answered, which begins its own conversation.
    pub fallback: Option<Vec<String>>,
    /// A label of yours for a conversation with this backend in this repository
    /// (docs/CONTRACT.md §12): the first call starts it, later calls continue it (the backend's
    /// own session, or a replay of the earlier turns). Kept in the session store.
    pub session: Option<String>,
    /// The backend's own session id to attach to (adopted under `session` when both are given).
    pub backend_session: Option<String>,
    /// Fit a diff over its limit (300,000 bytes, or what the envelope's 500,000 leave) instead
    /// of refusing it (docs/CONTRACT.md §6a): binary, generated and vendored files and lock
    /// files are left out first, then the largest files; a file too large to include whole is
    /// cut at hunk boundaries; and a "Diff Coverage" section tells the backend, file by file,
    /// what it did not see. The CLI, the MCP server and the AI SDK provider fit by default.
    /// @default false
    pub fit: Option<bool>,
    /// The most bytes the envelope may take, for a friend with a small context window or to
    /// keep a call's cost down; never more than the envelope's limit, 500,000 (a larger value
    /// means 500,000). With `fit`, the context and diff are fitted to it; without, a larger
    /// envelope is refused (`ERR_TOO_LARGE`, naming this budget as its max). A native review
    /// (codex) builds its own prompt and is not bound by it.
    /// @default 500000
    // `default`: schemars then lists it as optional, as an `Option` is.
    #[serde(default)]
    #[schemars(schema_with = "crate::schema_numbers::optional_byte_count")]
    pub max_prompt_bytes: Option<u32>,
    /// The branch or commit a review diffs against (`git diff <base>...HEAD`).
    /// @default the first of `main`, `master` that exists, else `HEAD~1`
    pub base: Option<String>,
    /// Answer a review with a verdict (docs/CONTRACT.md §13): the verdict envelope of upstream,
    /// the phone-a-friend v4.1.1 CLI (`schema_version` 1: ship, iterate or abstain, with
    /// findings) as JSON text, checked against its schema and its findings. Not with `schema`.
    /// @default false
    pub verdict: Option<bool>,
}

impl RelayRequest {
    /// The options only `relay()` (and `relayAll()`) takes: a review has its own diff, and no
    /// session.
    pub const RELAY_ONLY: &'static [&'static str] = &[
        "contextFile",
        "contextText",
        "includeDiff",
        "fallback",
        "session",
        "backendSession",
    ];

    /// The options only `reviewRelay()` takes.
    pub const REVIEW_ONLY: &'static [&'static str] = &["base", "verdict"];

    /// The prompt, an absent one being blank (check 1 refuses it where a prompt is required).
    pub fn prompt_text(&self) -> &str {
        self.prompt.as_deref().unwrap_or("")
    }

    pub fn includes_diff(&self) -> bool {
        self.include_diff.unwrap_or(false)
    }

    pub fn fits(&self) -> bool {
        self.fit.unwrap_or(false)
    }

    /// The envelope's limit for this call: `maxPromptBytes`, within the contract's.
    pub fn prompt_limit(&self) -> usize {
        self.max_prompt_bytes.map_or(MAX_PROMPT_BYTES, |max| {
            usize::try_from(max).map_or(MAX_PROMPT_BYTES, |max| max.min(MAX_PROMPT_BYTES))
        })
    }

    pub fn envelope_limit(&self) -> EnvelopeLimit {
        EnvelopeLimit {
            bytes: self.prompt_limit(),
            fit: self.fits(),
        }
    }

    pub fn wants_verdict(&self) -> bool {
        self.verdict.unwrap_or(false)
    }

    /// Whether the call belongs to a session (a label, or the backend's own id).
    pub fn in_session(&self) -> bool {
        self.session.is_some() || self.backend_session.is_some()
    }

    /// Whether preparing this relay waits on nothing: no step that reads a file, runs git or
    /// opens the session store, nor a schema to compile; only checks, inline text and the
    /// envelope (the steps of prepare.rs `prepare_run`, in its order). Nor a stall watchdog,
    /// which keeps its time on the runtime (settle.rs `watched`), nor a fallback, which runs
    /// there (fallback.rs).
    pub fn waits_on_nothing(&self) -> bool {
        self.inline_context_is_next()
            && !self.includes_diff()
            && self.idle_timeout_seconds.is_none()
            && self.fallback.as_ref().is_none_or(Vec::is_empty)
    }

    /// Whether the inline context is the first step after check 4 that can refuse the relay:
    /// no schema, no session and no context file come before it (prepare.rs `prepare_run`).
    pub fn inline_context_is_next(&self) -> bool {
        self.schema.is_none() && !self.in_session() && self.context_file.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option a call does not take is an option of the request.
    #[test]
    fn the_lists_of_one_calls_options_name_fields_of_the_request() {
        let schema = serde_json::to_value(schemars::schema_for!(RelayRequest)).unwrap_or_default();
        let properties = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for name in RelayRequest::RELAY_ONLY
            .iter()
            .chain(RelayRequest::REVIEW_ONLY)
        {
            assert!(properties.contains_key(*name), "{name} is no option");
        }
    }

    #[test]
    fn json_options_take_the_schema_itself_or_its_text() {
        let request = |schema: serde_json::Value| {
            serde_json::from_value::<RelayRequest>(
                serde_json::json!({ "prompt": "p", "schema": schema }),
            )
            .map(|options| options.schema)
        };
        // Key order is kept: the prompt shows the schema as written.
        assert_eq!(
            request(serde_json::json!({ "type": "object", "required": ["a"] })).ok(),
            Some(Some(r#"{"type":"object","required":["a"]}"#.to_string()))
        );
        assert_eq!(
            request(serde_json::Value::String(r#"{"type":"string"}"#.into())).ok(),
            Some(Some(r#"{"type":"string"}"#.to_string()))
        );
        assert_eq!(
            request(serde_json::Value::Bool(true)).ok(),
            Some(Some("true".to_string()))
        );
        assert_eq!(request(serde_json::Value::Null).ok(), Some(None));
        assert!(request(serde_json::json!(5)).is_err());
        let absent = serde_json::from_value::<RelayRequest>(serde_json::json!({ "prompt": "p" }));
        assert_eq!(absent.ok().map(|options| options.schema), Some(None));
    }
}
