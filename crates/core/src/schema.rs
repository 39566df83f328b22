//! Structured output (docs/CONTRACT.md §13): a JSON Schema given with a call is compiled once (a
//! schema that is not one fails before anything runs), asked of the backend, and the answer is
//! checked against it here, whatever the backend claims to enforce.

use std::fmt;

use jsonschema::{PatternOptions, Validator};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::errors::{RelayError, Subject};
use crate::limits::MAX_PROMPT_BYTES;

/// Compiled size of one `pattern` (`patternProperties`...): bounds the work per byte checked.
const PATTERN_SIZE_LIMIT: usize = 1024 * 1024;
/// Cache of the lazy DFA that matches a pattern.
const PATTERN_DFA_LIMIT: usize = 2 * 1024 * 1024;

// How a JSON Schema may be given in JSON options (the MCP tools' arguments): the schema itself,
// or its JSON text, as the JS API takes it; both become the text `Schema::parse` reads. Inlined
// in the tools' input schemas: some clients resolve no `$ref`.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(inline)]
pub enum SchemaArgument {
    /// The schema's JSON text.
    Text(String),
    /// The schema itself.
    Schema(serde_json::Map<String, Value>),
    /// `true` (anything) or `false` (nothing).
    Boolean(bool),
}

impl SchemaArgument {
    /// For `#[serde(deserialize_with)]` on an optional schema field.
    pub fn deserialize_text<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<String>, D::Error> {
        Ok(
            Option::<SchemaArgument>::deserialize(deserializer)?.map(|argument| match argument {
                SchemaArgument::Text(text) => text,
                SchemaArgument::Schema(schema) => Value::Object(schema).to_string(),
                SchemaArgument::Boolean(schema) => schema.to_string(),
            }),
        )
    }
}

pub struct Schema {
    /// Compact JSON: what the prompt and a schema file carry.
    text: String,
    value: Value,
    validator: Validator,
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Schema").field(&self.text).finish()
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        self.value == other.value
    }
}

impl Schema {
    /// `text` must be JSON and a JSON Schema this validator can compile (no remote `$ref`: the
    /// relay fetches nothing). Its patterns are matched in linear time (no backreferences or
    /// lookaround, which backtrack without bound: such a schema is refused here).
    pub fn parse(text: &str) -> Result<Schema, RelayError> {
        // The schema goes into the prompt: one that cannot fit there is refused before the
        // (much costlier) parsing and compiling.
        if text.len() > MAX_PROMPT_BYTES {
            return Err(RelayError::TooLarge {
                subject: Subject::Schema,
                size: text.len() as u64,
                max: MAX_PROMPT_BYTES,
            });
        }
        let value: Value = serde_json::from_str(text)
            .map_err(|e| RelayError::Schema(format!("Invalid JSON Schema: not JSON: {e}")))?;
        let patterns = PatternOptions::regex()
            .size_limit(PATTERN_SIZE_LIMIT)
            .dfa_size_limit(PATTERN_DFA_LIMIT);
        let validator = jsonschema::options()
            .with_pattern_options(patterns)
            .build(&value)
            .map_err(|e| RelayError::Schema(format!("Invalid JSON Schema: {e}{}", hint(&e))))?;
        Ok(Schema {
            text: value.to_string(),
            value,
            validator,
        })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn value(&self) -> &Value {
        &self.value
    }

    /// What the envelope ends with when a schema is asked for (in the words of upstream, the
    /// phone-a-friend v4.1.1 CLI), for every backend: those with a native mechanism get it too.
    pub fn prompt_suffix(&self) -> String {
        format!(
            "\n\nRespond with JSON only. The response must match this JSON Schema exactly:\n{}",
            self.text
        )
    }

    /// The answer's JSON text (without a Markdown fence some models add), or the first place it
    /// breaks the schema.
    pub fn check(&self, answer: &str) -> Result<String, RelayError> {
        let json = strip_json_fence(answer);
        let instance: Value = serde_json::from_str(json).map_err(|e| not_json(json, &e))?;
        if let Err(error) = self.validator.validate(&instance) {
            return Err(RelayError::Schema(format!(
                "Answer does not match the schema at {}: {error}",
                shown_path(&error.instance_path().to_string())
            )));
        }
        Ok(json.to_string())
    }
}

/// An answer that is not JSON, said for a person: how it begins, and where a JSON parser gave up
/// (the answer itself is the error's `answer`).
fn not_json(json: &str, e: &serde_json::Error) -> RelayError {
    let begins: String = json.trim_start().chars().take(40).collect();
    let more = if json.trim_start().chars().nth(40).is_some() {
        "…"
    } else {
        ""
    };
    RelayError::Schema(format!(
        "Answer is not JSON: it begins {begins:?}{more}, and is not JSON from line {} column {} on; the whole answer is the error's answer",
        e.line(),
        e.column()
    ))
}

/// Why a pattern that is a valid ECMA-262 regex may still be refused.
fn hint(error: &jsonschema::ValidationError<'_>) -> &'static str {
    match error.kind() {
        jsonschema::error::ValidationErrorKind::Format { format } if format == "regex" => {
            " (patterns must match in linear time: no lookaround or backreferences, at most 1 MiB compiled)"
        }
        _ => "",
    }
}

/// A JSON pointer as people read it: the root is `/`.
pub fn shown_path(pointer: &str) -> &str {
    if pointer.is_empty() {
        "/"
    } else {
        pointer
    }
}

/// The text inside a ```` ```json … ``` ```` fence that wraps the whole (trimmed) answer.
pub fn strip_json_fence(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(inner) = trimmed
        .strip_prefix("```")
        .and_then(|rest| rest.strip_suffix("```"))
    else {
        return trimmed;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = r#"{"type":"object","required":["answer"],"properties":{"answer":{"type":"integer"},"items":{"type":"array","items":{"type":"string"}}}}"#;

    fn message(result: Result<impl fmt::Debug, RelayError>) -> String {
        match result {
            Err(RelayError::Schema(message)) => message,
            other => panic!("expected ERR_SCHEMA, got {other:?}"),
        }
    }

    #[test]
    fn refuses_what_is_not_a_schema() {
        assert!(message(Schema::parse("{nope")).starts_with("Invalid JSON Schema: not JSON: "));
        assert!(message(Schema::parse(r#"{"type":"no-such-type"}"#))
            .starts_with("Invalid JSON Schema: "));
        assert!(Schema::parse("true").is_ok());
    }

    #[test]
    fn never_fetches_a_remote_reference() {
        // A listener the reference points at: a fetch would at least connect to it (the kernel
        // completes the handshake before any accept), so an empty backlog means none was tried.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let address = listener.local_addr().expect("address");
        let schema = format!(r#"{{"$ref":"http://{address}/s.json"}}"#);
        assert!(message(Schema::parse(&schema)).starts_with("Invalid JSON Schema: "));
        let accepted = listener.accept().map(|_| ()).map_err(|e| e.kind());
        assert_eq!(accepted, Err(std::io::ErrorKind::WouldBlock));
        // The check bites: a connection that was made is seen.
        let _client = std::net::TcpStream::connect(address).expect("connect");
        assert!(listener.accept().is_ok());
    }

    #[test]
    fn refuses_a_schema_too_large_for_a_prompt_before_parsing_it() {
        // Not even JSON: the size is what is refused, before any parsing.
        let huge = "x".repeat(MAX_PROMPT_BYTES + 1);
        assert_eq!(
            Schema::parse(&huge).map(|_| ()),
            Err(RelayError::TooLarge {
                subject: Subject::Schema,
                size: (MAX_PROMPT_BYTES + 1) as u64,
                max: MAX_PROMPT_BYTES,
            })
        );
        let error = Schema::parse(&format!(
            r#"{{"description":"{}"}}"#,
            "d".repeat(12_000_000)
        ))
        .map(|_| ())
        .err();
        assert_eq!(
            error.map(|e| (e.code().as_str(), e.to_string())),
            Some((
                "ERR_TOO_LARGE",
                "JSON Schema is too large (12000018 bytes; max 500000 bytes)".to_string()
            ))
        );
        let fits = format!(r#"{{"description":"{}"}}"#, "d".repeat(400_000));
        assert!(Schema::parse(&fits).is_ok());
    }

    #[test]
    fn refuses_patterns_that_only_a_backtracking_engine_matches() {
        // Lookaround and backreferences backtrack without bound over an answer's keys; a huge
        // pattern costs as much per byte checked.
        for pattern in [
            r"^(a|a)*(?!.)b",
            r"(?:(a)|aa)*\\1c",
            r"^(?=a)",
            "a{1000}{1000}",
        ] {
            for schema in [
                format!(r#"{{"patternProperties":{{"{pattern}":{{}}}}}}"#),
                format!(r#"{{"propertyNames":{{"pattern":"{pattern}"}}}}"#),
                format!(r#"{{"properties":{{"a":{{"pattern":"{pattern}"}}}}}}"#),
            ] {
                let refused = message(Schema::parse(&schema));
                assert!(refused.starts_with("Invalid JSON Schema: \""), "{refused}");
                assert!(refused.ends_with("is not a \"regex\" (patterns must match in linear time: no lookaround or backreferences, at most 1 MiB compiled)"), "{refused}");
            }
        }
    }

    #[test]
    fn matches_patterns_in_linear_time_over_many_keys() {
        // Exponential for a backtracking engine; linear here.
        let schema = Schema::parse(
            r#"{"patternProperties":{"^(a|a)*$":{"type":"integer"},"^(a+)+b$":{"type":"integer"}},"propertyNames":{"pattern":"^(\\w+\\s?)+$"}}"#,
        )
        .expect("schema");
        let keys: Vec<String> = (0..1000)
            .map(|i| format!(r#""{}{i}":{i}"#, "a".repeat(40)))
            .collect();
        let answer = format!("{{{}}}", keys.join(","));
        let started = std::time::Instant::now();
        assert!(schema.check(&answer).is_ok());
        assert!(message(schema.check(r#"{"aaab":"x"}"#)).contains("/aaab"));
        // Generous: a backtracking engine takes hours here.
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn names_the_first_violation_by_its_path() {
        let schema = Schema::parse(SCHEMA).expect("schema");
        assert_eq!(
            schema.check(r#" {"answer": 4} "#),
            Ok(r#"{"answer": 4}"#.into())
        );
        assert_eq!(
            message(schema.check(r#"{"answer":4,"items":["a",5]}"#)),
            "Answer does not match the schema at /items/1: 5 is not of type \"string\""
        );
        assert_eq!(
            message(schema.check("{}")),
            "Answer does not match the schema at /: \"answer\" is a required property"
        );
        assert!(message(schema.check("four")).starts_with("Answer is not JSON: "));
    }

    #[test]
    fn reads_an_answer_inside_a_json_fence() {
        let schema = Schema::parse(SCHEMA).expect("schema");
        assert_eq!(
            schema.check("```json\n{\"answer\": 4}\n```"),
            Ok("{\"answer\": 4}".into())
        );
        assert_eq!(
            schema.check("```\n{\"answer\": 4}\n```"),
            Ok("{\"answer\": 4}".into())
        );
    }

    #[test]
    fn asks_for_json_in_the_prompt() {
        let schema = Schema::parse(r#"{ "type": "object" }"#).expect("schema");
        assert_eq!(
            schema.prompt_suffix(),
            "\n\nRespond with JSON only. The response must match this JSON Schema exactly:\n{\"type\":\"object\"}"
        );
    }
}
