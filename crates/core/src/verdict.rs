//! Review verdicts (docs/CONTRACT.md §13), in the envelope of upstream, the phone-a-friend v4.1.1
//! CLI (`schema_version` 1), and by its rule: the verdict follows from the findings' severities,
//! and a model whose verdict contradicts its own findings is malformed output, never trusted.

use serde::de::value::StrDeserializer;
use serde::de::IntoDeserializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

use crate::errors::RelayError;
use crate::schema::strip_json_fence;

pub const SCHEMA_VERSION: u64 = 1;

/// Largest verdict text read: the largest answer a backend may give, so no real review is
/// refused for its size, while `parseVerdict` (on the JS thread) refuses a larger one unparsed.
pub const MAX_VERDICT_BYTES: usize = crate::limits::MAX_OUTPUT_BYTES;

/// Most findings read; past it the verdict is refused before any finding is checked.
pub const MAX_FINDINGS: usize = 1_000;

/// What is wrong with a verdict envelope, in upstream's words; the relay's `ERR_SCHEMA`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct VerdictError(String);

impl From<String> for VerdictError {
    fn from(message: String) -> Self {
        VerdictError(message)
    }
}

impl From<&str> for VerdictError {
    fn from(message: &str) -> Self {
        VerdictError(message.to_string())
    }
}

impl From<VerdictError> for RelayError {
    fn from(error: VerdictError) -> Self {
        RelayError::Schema(error.0)
    }
}

/// Most severities a contradiction message lists.
const LISTED_SEVERITIES: usize = 20;

/// The envelope's JSON Schema, strict enough for OpenAI's structured outputs (which codex's
/// `--output-schema` uses): every object closed, every key required (`location` nullable).
pub const SCHEMA: &str = r#"{"type":"object","additionalProperties":false,"required":["schema_version","verdict","summary","findings"],"properties":{"schema_version":{"type":"integer","enum":[1]},"verdict":{"type":"string","enum":["ship","iterate","abstain"]},"summary":{"type":"string"},"findings":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["severity","title","rationale","location"],"properties":{"severity":{"type":"string","enum":["blocker","important","nit"]},"title":{"type":"string"},"rationale":{"type":"string"},"location":{"type":["string","null"]}}}}}}"#;

/// Asked of the reviewer when a verdict is wanted and no request was given.
pub const DEFAULT_REQUEST: &str = "Review the changes in this branch. Flag correctness, security, regression, and quality concerns; ignore style preferences unless they obscure intent.";

const INSTRUCTIONS: &str = r#"Respond with a JSON object matching this exact shape (no preamble, no
explanation, JSON only):

  {
    "schema_version": 1,
    "verdict": "ship" | "iterate" | "abstain",
    "summary": "<one-paragraph synthesis of the review>",
    "findings": [
      {
        "severity": "blocker" | "important" | "nit",
        "title": "<short headline>",
        "rationale": "<1-3 sentences explaining the issue and what to change>",
        "location": "<file or file:line> or null"
      }
    ]
  }

Decision rule (the parser enforces this: do not contradict it):
- Any "blocker" or "important" finding => verdict MUST be "iterate".
- Empty findings, or only "nit" findings => verdict MUST be "ship".
- "abstain" is allowed only when you cannot make a confident call AND
  findings is empty.

Severity guide:
- "blocker": correctness, security, data integrity, or a regression. Must
  be fixed before merge.
- "important": meaningful concern that should be addressed before merge,
  but the reviewer can imagine a defensible counter-argument.
- "nit": optional polish. Never blocks merge.

Output ONLY the JSON object. No code fences, no markdown, no commentary."#;

/// The review request (the caller's, else [`DEFAULT_REQUEST`]), then the envelope's rules.
pub fn prompt(request: Option<&str>) -> String {
    let request = request
        .map(crate::text::js_trim)
        .filter(|r| !r.is_empty())
        .unwrap_or(DEFAULT_REQUEST);
    format!("Review request:\n{request}\n\n{INSTRUCTIONS}")
}

/// Read and written by the same names (serde's): see [`named`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Ship,
    Iterate,
    Abstain,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Blocker,
    Important,
    Nit,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    pub title: String,
    pub rationale: String,
    pub location: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub schema_version: u64,
    pub verdict: Kind,
    pub summary: String,
    pub findings: Vec<Finding>,
}

impl Verdict {
    /// Compact JSON, keys in the envelope's order.
    pub fn to_json(&self) -> String {
        // Plain strings and enums: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Reads a verdict envelope (inside a ```` ```json ```` fence, or claude's `structured_output`
/// wrapper, too) and checks it as upstream's `parseVerdict` does; the error says what is wrong.
/// The fields are read by hand, not into a derived `Deserialize` shape: upstream's messages come
/// in its order of checks (the verdict after the findings), tell an absent field (`undefined`)
/// from `null`, and show the value as `JSON.stringify` does, where serde would stop at the first
/// field in the text's order with words of its own. Only the names are serde's ([`named`]).
pub fn parse(text: &str) -> Result<Verdict, VerdictError> {
    if text.len() > MAX_VERDICT_BYTES {
        return Err(format!(
            "verdict response is too large ({} bytes; max {MAX_VERDICT_BYTES} bytes)",
            text.len()
        )
        .into());
    }
    let parsed: Value = serde_json::from_str(strip_json_fence(text))
        .map_err(|e| format!("verdict response is not valid JSON: {e}"))?;
    let Value::Object(outer) = parsed else {
        return Err("verdict response must be a JSON object".into());
    };
    let object = unwrap_structured_output(&outer);
    if object.get("schema_version").and_then(Value::as_u64) != Some(SCHEMA_VERSION) {
        return Err(format!(
            "verdict schema_version mismatch: expected {SCHEMA_VERSION}, got {}",
            shown(object.get("schema_version"))
        )
        .into());
    }
    let summary = non_empty_string(object.get("summary"))
        .ok_or("verdict summary must be a non-empty string")?;
    let Some(Value::Array(items)) = object.get("findings") else {
        return Err("verdict findings must be an array".into());
    };
    if items.len() > MAX_FINDINGS {
        return Err(format!(
            "verdict has {} findings; at most {MAX_FINDINGS} are read",
            items.len()
        )
        .into());
    }
    let findings = items
        .iter()
        .enumerate()
        .map(|(index, item)| finding(index, item))
        .collect::<Result<Vec<_>, _>>()?;
    let claimed = named(object.get("verdict")).ok_or_else(|| {
        format!(
            "verdict must be one of ship|iterate|abstain, got {}",
            shown(object.get("verdict"))
        )
    })?;
    let verdict = derive(&findings, claimed).ok_or_else(|| {
        format!(
            "verdict \"{}\" contradicts findings; severities=[{}]",
            kind_name(claimed),
            listed_severities(&findings)
        )
    })?;
    Ok(Verdict {
        schema_version: SCHEMA_VERSION,
        verdict,
        summary: summary.to_string(),
        findings,
    })
}

/// Upstream's `deriveVerdict`: a blocker or important finding requires `iterate`; `abstain`
/// only with no findings; otherwise `ship`. `None`: the claim contradicts the findings.
pub fn derive(findings: &[Finding], claimed: Kind) -> Option<Kind> {
    let blocking = findings
        .iter()
        .any(|f| matches!(f.severity, Severity::Blocker | Severity::Important));
    match (blocking, claimed) {
        (true, Kind::Iterate) => Some(Kind::Iterate),
        (true, _) => None,
        (false, Kind::Abstain) => findings.is_empty().then_some(Kind::Abstain),
        (false, Kind::Iterate) => None,
        (false, Kind::Ship) => Some(Kind::Ship),
    }
}

/// The findings' severities, the first [`LISTED_SEVERITIES`] of them and a count of the rest.
fn listed_severities(findings: &[Finding]) -> String {
    let mut listed: Vec<String> = findings
        .iter()
        .take(LISTED_SEVERITIES)
        .map(|f| severity_name(f.severity).to_string())
        .collect();
    if findings.len() > LISTED_SEVERITIES {
        listed.push(format!(
            "\u{2026} {} more",
            findings.len() - LISTED_SEVERITIES
        ));
    }
    listed.join(", ")
}

fn unwrap_structured_output(object: &Map<String, Value>) -> &Map<String, Value> {
    if object.get("schema_version").and_then(Value::as_u64) == Some(SCHEMA_VERSION) {
        return object;
    }
    match object.get("structured_output") {
        Some(Value::Object(inner)) => inner,
        _ => object,
    }
}

fn finding(index: usize, item: &Value) -> Result<Finding, VerdictError> {
    let Value::Object(fields) = item else {
        return Err(format!("finding[{index}] must be an object").into());
    };
    let severity = named(fields.get("severity")).ok_or_else(|| {
        format!(
            "finding[{index}].severity must be one of blocker|important|nit, got {}",
            shown(fields.get("severity"))
        )
    })?;
    let title = non_empty_string(fields.get("title"))
        .ok_or_else(|| format!("finding[{index}].title must be a non-empty string"))?;
    let rationale = non_empty_string(fields.get("rationale"))
        .ok_or_else(|| format!("finding[{index}].rationale must be a non-empty string"))?;
    let location = match fields.get("location") {
        None | Some(Value::Null) => None,
        Some(value) => Some(non_empty_string(Some(value)).ok_or_else(|| {
            format!("finding[{index}].location must be a non-empty string or null")
        })?),
    };
    Ok(Finding {
        severity,
        title: title.to_string(),
        rationale: rationale.to_string(),
        location: location.map(str::to_string),
    })
}

/// The variant of `T` a JSON string names, by the names `T` is written with; `None` for any other
/// value. Only a string is read: serde reading the `Value` itself would also take `{"nit":null}`.
fn named<'a, T: Deserialize<'a>>(value: Option<&'a Value>) -> Option<T> {
    let name: StrDeserializer<'a, serde::de::value::Error> = value?.as_str()?.into_deserializer();
    T::deserialize(name).ok()
}

fn non_empty_string(value: Option<&Value>) -> Option<&str> {
    value.and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// As `JSON.stringify` shows a value in upstream's messages (`undefined` when absent).
fn shown(value: Option<&Value>) -> String {
    value.map_or_else(|| "undefined".to_string(), Value::to_string)
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Ship => "ship",
        Kind::Iterate => "iterate",
        Kind::Abstain => "abstain",
    }
}

fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Blocker => "blocker",
        Severity::Important => "important",
        Severity::Nit => "nit",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(verdict: &str, severities: &[&str]) -> String {
        let findings: Vec<String> = severities
            .iter()
            .map(|s| format!(r#"{{"severity":"{s}","title":"t","rationale":"r","location":null}}"#))
            .collect();
        format!(
            r#"{{"schema_version":1,"verdict":"{verdict}","summary":"s","findings":[{}]}}"#,
            findings.join(",")
        )
    }

    #[test]
    fn the_verdict_follows_the_findings() {
        let kind = |verdict, severities: &[&str]| parse(&envelope(verdict, severities));
        assert_eq!(kind("ship", &[]).map(|v| v.verdict), Ok(Kind::Ship));
        assert_eq!(kind("ship", &["nit"]).map(|v| v.verdict), Ok(Kind::Ship));
        assert_eq!(
            kind("iterate", &["nit", "important"]).map(|v| v.verdict),
            Ok(Kind::Iterate)
        );
        assert_eq!(kind("abstain", &[]).map(|v| v.verdict), Ok(Kind::Abstain));
        assert_eq!(
            kind("ship", &["blocker"]),
            Err("verdict \"ship\" contradicts findings; severities=[blocker]".into())
        );
        assert!(kind("abstain", &["nit"]).is_err());
        assert!(kind("iterate", &["nit"]).is_err());
    }

    #[test]
    fn says_what_is_malformed() {
        assert_eq!(
            parse(r#"{"schema_version":2}"#),
            Err("verdict schema_version mismatch: expected 1, got 2".into())
        );
        assert_eq!(
            parse("[]"),
            Err("verdict response must be a JSON object".into())
        );
        let bad_severity = envelope("ship", &["fatal"]);
        assert_eq!(
            parse(&bad_severity),
            Err("finding[0].severity must be one of blocker|important|nit, got \"fatal\"".into())
        );
        // Only the names themselves: not another case, nor serde's `{"<name>": null}` form.
        let tagged = r#"{"schema_version":1,"verdict":"ship","summary":"s","findings":[
            {"severity":{"nit":null},"title":"t","rationale":"r"}]}"#;
        assert_eq!(
            parse(tagged),
            Err(
                "finding[0].severity must be one of blocker|important|nit, got {\"nit\":null}"
                    .into()
            )
        );
        let tagged = r#"{"schema_version":1,"verdict":{"ship":null},"summary":"s","findings":[]}"#;
        assert_eq!(
            parse(tagged),
            Err("verdict must be one of ship|iterate|abstain, got {\"ship\":null}".into())
        );
        assert_eq!(
            parse(&envelope("Ship", &[])),
            Err("verdict must be one of ship|iterate|abstain, got \"Ship\"".into())
        );
        assert!(parse("not json").err().is_some_and(|e| e
            .to_string()
            .starts_with("verdict response is not valid JSON: ")));
    }

    #[test]
    fn a_malformed_verdict_is_err_schema_with_its_message_unchanged() {
        let error = parse("[]").expect_err("not an object");
        let relay_error = RelayError::from(error);
        assert_eq!(relay_error.code(), "ERR_SCHEMA");
        assert_eq!(
            relay_error.to_string(),
            "verdict response must be a JSON object"
        );
    }

    #[test]
    fn reads_fenced_and_wrapped_envelopes_and_writes_them_back_compact() {
        let fenced = format!("```json\n{}\n```", envelope("ship", &[]));
        let verdict = parse(&fenced).expect("fenced");
        assert_eq!(verdict.to_json(), envelope("ship", &[]));
        let wrapped = format!(r#"{{"structured_output":{}}}"#, envelope("abstain", &[]));
        assert_eq!(parse(&wrapped).map(|v| v.verdict), Ok(Kind::Abstain));
    }

    #[test]
    fn a_hostile_verdict_is_refused_early_with_a_short_message() {
        let many = envelope("ship", &vec!["nit"; MAX_FINDINGS + 1]);
        assert_eq!(
            parse(&many),
            Err(format!(
                "verdict has {} findings; at most {MAX_FINDINGS} are read",
                MAX_FINDINGS + 1
            )
            .into())
        );
        let huge = envelope("ship", &vec!["nit"; 300_000]);
        assert_eq!(
            parse(&huge),
            Err(format!(
                "verdict response is too large ({} bytes; max {MAX_VERDICT_BYTES} bytes)",
                huge.len()
            )
            .into())
        );
        let padded = format!("{}{}", envelope("ship", &[]), " ".repeat(MAX_VERDICT_BYTES));
        assert!(parse(&padded)
            .is_err_and(|e| e.to_string().starts_with("verdict response is too large")));
    }

    #[test]
    fn a_contradiction_lists_twenty_severities_at_most() {
        let mut severities = vec!["blocker"];
        severities.extend(vec!["nit"; MAX_FINDINGS - 1]);
        let listed = format!("blocker{}", ", nit".repeat(19));
        assert_eq!(
            parse(&envelope("ship", &severities)),
            Err(format!(
                "verdict \"ship\" contradicts findings; severities=[{listed}, \u{2026} 980 more]"
            )
            .into())
        );
        let twenty = vec!["important"; 20];
        assert_eq!(
            parse(&envelope("abstain", &twenty)),
            Err(format!(
                "verdict \"abstain\" contradicts findings; severities=[{}]",
                twenty.join(", ")
            )
            .into())
        );
    }

    #[test]
    fn its_schema_compiles_and_accepts_its_own_envelope() {
        let schema = crate::schema::Schema::parse(SCHEMA).expect("verdict schema");
        assert!(schema.check(&envelope("iterate", &["blocker"])).is_ok());
        assert!(schema.check(r#"{"schema_version":1}"#).is_err());
    }
}
