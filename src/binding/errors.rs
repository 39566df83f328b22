//! The one place a relay failure becomes a JavaScript rejection. Async functions can only reject
//! with napi's own status codes, so the failure travels as a marked JSON payload in the message;
//! the JS wrapper (`lib/internal/calls.ts`) turns it into the `RelayError` / `AbortError` / the
//! original thrown value.

use napi::{Error, Status};
use serde::Serialize;

use crate::errors::{RelayError, RelayFailure};
use crate::mcp::McpError;

/// Must match `FAILURE_MARKER` in `lib/internal/calls.ts`.
pub const FAILURE_MARKER: &str = "@@phone-a-friend/relay@@";

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Payload<'a> {
    #[serde(rename_all = "camelCase")]
    Relay {
        code: &'static str,
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        backend: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cause_handle: Option<u32>,
    },
    Thrown {
        handle: u32,
    },
    Aborted,
}

pub fn to_napi_error(failure: &RelayFailure) -> Error {
    Error::new(Status::GenericFailure, failure_message(failure))
}

/// The marked payload a rejection with `failure` carries as its message (`relayAll()` hands
/// each backend's failure to the wrapper this way too).
pub fn failure_message(failure: &RelayFailure) -> String {
    let payload = match failure {
        RelayFailure::Relay(err) => relay_payload(err),
        RelayFailure::Thrown(thrown) => Payload::Thrown {
            handle: thrown.handle,
        },
        RelayFailure::Aborted => Payload::Aborted,
    };
    match serde_json::to_string(&payload) {
        Ok(json) => format!("{FAILURE_MARKER}{json}"),
        Err(e) => e.to_string(),
    }
}

pub fn relay_error(err: &RelayError) -> Error {
    to_napi_error(&RelayFailure::Relay(err.clone()))
}

/// The MCP server could not serve its client: a plain `Error` with the reason (not a relay
/// failure: there is no call to fail).
pub fn mcp_error(error: &McpError) -> Error {
    Error::new(Status::GenericFailure, error.to_string())
}

fn relay_payload(err: &RelayError) -> Payload<'_> {
    let cause_handle = match err {
        RelayError::Backend { cause, .. } => cause.as_ref().map(|c| c.handle),
        _ => None,
    };
    Payload::Relay {
        code: err.code(),
        message: err.to_string(),
        backend: err.backend(),
        cause_handle,
    }
}
