#![deny(clippy::all)]
//! Native core of `@phone-a-friend/relay`. Everything but `binding` is free of napi types.

pub mod backend;
pub mod backends;
// napi registers exports only outside `cfg(test)`; the bindings are tested from JS.
#[cfg(not(test))]
mod binding;
pub mod bounded_text;
pub mod context;
pub mod deadline;
pub mod depth;
pub mod descriptors;
pub mod dry_run;
pub mod env;
pub mod envelope;
pub mod errors;
pub mod git;
pub mod limits;
pub mod lines;
pub mod mcp;
pub mod paths;
pub mod registry;
pub mod relay;
pub mod relay_all;
pub mod schema;
pub mod sessions;
pub mod stream;
pub mod subprocess;
pub mod supervisor;
#[cfg(test)]
mod test_http;
pub mod text;
pub mod verdict;
