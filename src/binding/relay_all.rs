//! `relayAll()` (docs/CONTRACT.md §15): one promise for the whole call; each backend's failure
//! travels as the marked payload a rejection would carry, for the wrapper to turn into a
//! `RelayError`.

use napi::bindgen_prelude::PromiseRaw;
use napi::Result;
use napi_derive::napi;

use super::errors::failure_message;
use super::{spawn_call, NativeCaller, NativeRelayOptions};
use crate::relay_all::{self, BackendOutcome};

/// How one backend of a `relayAll()` call settled: `answer` or `failure`.
#[napi(object)]
pub struct NativeBackendOutcome {
    pub backend: String,
    pub answer: Option<String>,
    pub failure: Option<String>,
}

impl From<BackendOutcome> for NativeBackendOutcome {
    fn from(outcome: BackendOutcome) -> Self {
        let (answer, failure) = match outcome.outcome {
            Ok(answer) => (Some(answer), None),
            Err(failure) => (None, Some(failure_message(&failure))),
        };
        NativeBackendOutcome {
            backend: outcome.backend,
            answer,
            failure,
        }
    }
}

#[napi(ts_return_type = "Promise<Array<NativeBackendOutcome>>")]
pub fn relay_all(
    env: &napi::Env,
    options: NativeRelayOptions,
    backends: Vec<String>,
    caller: NativeCaller,
) -> Result<PromiseRaw<'_, Vec<NativeBackendOutcome>>> {
    spawn_call(env, caller, |registry, context| async move {
        relay_all::relay_all(registry, options.into(), backends, context)
            .await
            .map(|outcomes| outcomes.into_iter().map(Into::into).collect())
    })
}
