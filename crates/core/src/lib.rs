#![deny(clippy::all)]
//! The core of `@phone-a-friend/relay`: everything a relay does, from the checks to the
//! backends, the sessions and the MCP server. The addon (the crate at the repository's root)
//! only converts between JS values and these types (docs/ARCHITECTURE.md §1); its `napi`
//! feature gives the request type its napi form where it is defined, and nothing else here uses
//! napi.

pub mod activity;
pub mod backend;
pub mod backends;
pub mod bounded_text;
pub mod context;
pub mod deadline;
pub mod depth;
pub mod descriptors;
pub mod doctor;
pub mod dry_run;
pub mod env;
pub mod envelope;
pub mod errors;
pub mod failure_reason;
pub mod fit;
pub mod git;
pub mod hint;
pub mod limits;
pub mod lines;
pub mod mcp;
pub mod model_window;
#[cfg(feature = "napi")]
mod napi_values;
pub mod node_errors;
pub mod paths;
pub mod progress;
pub mod registry;
pub mod relay;
pub mod relay_all;
pub mod schema;
pub mod schema_numbers;
pub mod secrets;
pub mod sessions;
pub mod stream;
pub mod subprocess;
#[cfg(unix)]
pub mod supervisor;
#[cfg(test)]
mod test_http;
pub mod text;
pub mod usage;
pub mod verdict;
