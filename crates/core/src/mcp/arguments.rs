//! The `relay` and `review` tools' arguments: the library's one [`RelayRequest`], holding only the
//! options of the tool's call, and a JSON Schema of exactly those (docs/MCP.md). An option of
//! the other call is refused as serde refuses an unknown field.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::relay::{Operation, RelayRequest};

/// The `relay` tool's arguments.
pub struct RelayArguments(pub RelayRequest);

/// The `review` tool's arguments.
pub struct ReviewArguments(pub RelayRequest);

impl<'de> Deserialize<'de> for RelayArguments {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        request_for(Operation::Relay, deserializer).map(RelayArguments)
    }
}

impl<'de> Deserialize<'de> for ReviewArguments {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        request_for(Operation::Review, deserializer).map(ReviewArguments)
    }
}

impl JsonSchema for RelayArguments {
    fn schema_name() -> Cow<'static, str> {
        "RelayArguments".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        schema_for(Operation::Relay, generator)
    }
}

impl JsonSchema for ReviewArguments {
    fn schema_name() -> Cow<'static, str> {
        "ReviewArguments".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        schema_for(Operation::Review, generator)
    }
}

fn request_for<'de, D: Deserializer<'de>>(
    operation: Operation,
    deserializer: D,
) -> Result<RelayRequest, D::Error> {
    let arguments = Map::<String, Value>::deserialize(deserializer)?;
    let not_taken = operation.options_not_taken();
    if let Some(name) = arguments
        .keys()
        .find(|name| not_taken.contains(&name.as_str()))
    {
        // serde's own words for an unknown field.
        let expected: Vec<String> = taken_options(operation)
            .iter()
            .map(|name| format!("`{name}`"))
            .collect();
        return Err(D::Error::custom(format_args!(
            "unknown field `{name}`, expected one of {}",
            expected.join(", ")
        )));
    }
    RelayRequest::deserialize(Value::Object(arguments)).map_err(D::Error::custom)
}

/// The request's schema without the options the call does not take; a relay requires its prompt.
fn schema_for(operation: Operation, generator: &mut SchemaGenerator) -> Schema {
    let mut schema = RelayRequest::json_schema(generator);
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        properties.retain(|name, _| !operation.options_not_taken().contains(&name.as_str()));
    }
    if operation.requires_prompt() {
        schema.insert("required".into(), Value::from(["prompt"].as_slice()));
    }
    schema
}

/// The options `operation` takes, in the request's order.
fn taken_options(operation: Operation) -> Vec<String> {
    let schema = schemars::schema_for!(RelayRequest);
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .keys()
                .filter(|name| !operation.options_not_taken().contains(&name.as_str()))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}
