//! `relayAll()` (docs/CONTRACT.md §15) outcomes as JS objects: each backend's answer or failure,
//! as data.

use napi_derive::napi;

use crate::failure::NativeFailure;
use crate::usage::NativeUsage;
use relay_core::relay_all::BackendOutcome;

/// How one backend of a `relayAll()` call settled: `answer` or `failure`.
#[napi(object, object_from_js = false)]
pub struct NativeBackendOutcome {
    pub backend: String,
    pub answer: Option<String>,
    pub failure: Option<NativeFailure>,
    /// The model that answered, when known.
    pub model: Option<String>,
    /// What its run cost, as far as the backend said (an answer or a failure).
    pub usage: Option<NativeUsage>,
}

impl From<BackendOutcome> for NativeBackendOutcome {
    fn from(outcome: BackendOutcome) -> Self {
        let (answer, failure) = match outcome.outcome {
            Ok(answer) => (Some(answer), None),
            Err(failure) => (None, Some(NativeFailure::from(&failure))),
        };
        NativeBackendOutcome {
            backend: outcome.backend,
            answer,
            failure,
            model: outcome.reported.model,
            usage: outcome.reported.usage.map(NativeUsage::from),
        }
    }
}
