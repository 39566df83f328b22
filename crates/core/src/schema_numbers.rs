//! JSON Schemas for counts and durations, written without the `format` schemars gives Rust's integers
//! (`uint`, `uint32`), which MCP clients' validators warn about: the MCP tools' arguments and
//! results use these.

use schemars::{json_schema, Schema, SchemaGenerator};

/// A count of bytes.
pub fn byte_count(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "integer", "minimum": 0 })
}

/// A number of seconds, when there is one.
pub fn optional_seconds(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": ["number", "null"], "minimum": 0 })
}

/// A count of bytes, or `null` for the default.
pub fn optional_byte_count(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": ["integer", "null"], "minimum": 0 })
}

/// A count (tokens), when there is one.
pub fn optional_count(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": ["integer", "null"], "minimum": 0 })
}

/// An amount (dollars), when there is one.
pub fn optional_amount(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": ["number", "null"], "minimum": 0 })
}
