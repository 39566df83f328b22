//! `phone-a-friend mcp`: starts the MCP server (`crate::mcp`) on the process's stdin and stdout.
//! The promise settles when the client closes stdin and every relay in flight has stopped; the
//! JS thread is free meanwhile.

use napi::bindgen_prelude::PromiseRaw;
use napi::Result;
use napi_derive::napi;

use super::{caller_env, errors, scope};
use crate::backends::builtins;
use crate::mcp::{serve_process_stdio, ServerConfig};
use crate::registry::Registry;

/// Serves MCP on fd 0 and 1 until stdin closes. From then on nothing else in the process can
/// use them: stdin reads `/dev/null`, stdout writes go to stderr. Relays use the environment and
/// `cwd` as they are now and the built-in backends only (JS backends are not served).
#[napi(ts_return_type = "Promise<void>")]
pub fn serve_mcp(env: &napi::Env, scope: u32, cwd: String) -> Result<PromiseRaw<'_, ()>> {
    let (_, warn, scope_cancel) = scope::snapshot(scope)?;
    let config = ServerConfig {
        registry: Registry::new(builtins()),
        env: caller_env(None, None),
        cwd,
        warn,
        // The scope's teardown (process exit) stops every relay in flight.
        cancel: scope_cancel.child_token(),
    };
    env.spawn_future(async move {
        serve_process_stdio(config)
            .await
            .map_err(|e| errors::mcp_error(&e))
    })
}
