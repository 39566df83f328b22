//! `phone-a-friend mcp`: starts the MCP server (`relay_core::mcp`) on the process's stdin and stdout.
//! The promise settles when the client closes stdin and every relay in flight has stopped; the
//! JS thread is free meanwhile.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use napi::bindgen_prelude::PromiseRaw;
use napi::Result;
use napi_derive::napi;

use crate::scope::RelayScope;
use relay_core::backends::builtins;
use relay_core::mcp::{serve_process_stdio, ServerConfig};
use relay_core::registry::Registry;
use relay_core::relay::Warn;

/// Serves MCP on fd 0 and 1 until stdin closes. From then on nothing else in the process can
/// use them: stdin reads `/dev/null`, stdout writes go to stderr. Relays use the environment and
/// `cwd` as they are now and the built-in backends only (JS backends are not served).
#[napi(ts_return_type = "Promise<void>")]
pub fn serve_mcp<'env>(
    env: &'env napi::Env,
    scope: &RelayScope,
    cwd: String,
) -> Result<PromiseRaw<'env, ()>> {
    let config = ServerConfig {
        registry: Registry::new(builtins()),
        env: relay_core::env::process(),
        cwd,
        warn: Arc::new(Stderr),
        // The scope's teardown (process exit) stops every relay in flight.
        cancel: scope.child_token(),
    };
    env.spawn_future(async move {
        serve_process_stdio(config)
            .await
            // Not a relay failure (there is no call to fail): a plain `Error` with the reason.
            .map_err(|e| napi::Error::new(napi::Status::GenericFailure, e.to_string()))
    })
}

/// The server's warnings (a review's fallback) go to stderr: stdout is the protocol's.
struct Stderr;

impl Warn for Stderr {
    fn warn(&self, message: String) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        use std::io::Write;
        // A closed stderr has nobody to tell.
        let _ = writeln!(std::io::stderr(), "{message}");
        Box::pin(std::future::ready(()))
    }
}
