//! `doctor()`: the core's one doctor (`relay_core::doctor`), run off the JS thread and handed
//! back as JSON text the wrapper parses into its typed report; `cancel()` stops its checks' processes
//! (the CLI's Ctrl-C, an `AbortSignal`).

use napi_derive::napi;
use tokio_util::sync::CancellationToken;

use crate::scope::RelayScope;
use crate::{caller_env, NativeCaller};
use relay_core::env::Env;

#[napi]
pub struct NativeDoctor {
    env: Env,
    cwd: String,
    model: Option<String>,
    cancel: CancellationToken,
}

/// A doctor for the caller's environment; `model` is the one a relay to ollama would use.
#[napi]
pub fn start_doctor(
    scope: &RelayScope,
    caller: NativeCaller,
    model: Option<String>,
) -> NativeDoctor {
    NativeDoctor {
        env: caller_env(caller.env.as_deref(), caller.depth),
        cwd: caller.cwd,
        model,
        cancel: scope.child_token(),
    }
}

#[napi]
impl NativeDoctor {
    /// The report, as the JSON `doctor --json` prints.
    #[napi]
    pub async fn report(&self) -> String {
        let report = relay_core::doctor::report(
            &self.env,
            std::path::Path::new(&self.cwd),
            self.model.as_deref(),
            &self.cancel,
        )
        .await;
        // A report of strings and booleans always serializes.
        serde_json::to_string(&report).unwrap_or_else(|_| String::from("{\"backends\":[]}"))
    }

    /// Stops the checks: their processes are killed and the report says so.
    #[napi]
    pub fn cancel(&self) {
        self.cancel.cancel();
    }
}
