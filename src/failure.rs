//! The one place a relay failure becomes something JavaScript reads: a `NativeFailure` object,
//! returned as data (a call's last step, a `relayAll()` outcome, the value of a synchronous
//! helper), never thrown. The wrapper (`lib/internal/calls.ts` `fromNative`) makes it the
//! `RelayError`, the `AbortError` or the very value a JS backend threw.

use napi::bindgen_prelude::Either;
use napi_derive::napi;

use relay_core::errors::{ErrorCode, RelayError, RelayFailure};
use relay_core::failure_reason::{reason_of_error, retry_after_of_error, Reason};
use relay_core::hint::hint_of;

/// Defines the napi `RelayErrorCode` (binding.d.ts's union of the codes) from the core's one list.
macro_rules! define_relay_error_code {
    ($(#[doc = $doc:literal] $variant:ident = $code:literal,)*) => {
        /// A relay error's stable code (docs/CONTRACT.md §7).
        #[napi(string_enum)]
        pub enum RelayErrorCode {
            $(#[doc = $doc] #[napi(value = $code)] $variant,)*
        }

        impl From<ErrorCode> for RelayErrorCode {
            fn from(code: ErrorCode) -> Self {
                match code {
                    $(ErrorCode::$variant => RelayErrorCode::$variant,)*
                }
            }
        }
    };
}
relay_core::with_error_codes!(define_relay_error_code);

/// Why a backend failed (docs/ERRORS.md, "Why: `reason`"): the core's one list, which napi
/// renders in binding.d.ts (the wrapper's `RelayErrorReason`).
#[napi(string_enum = "kebab-case")]
pub enum RelayErrorReason {
    Auth,
    Quota,
    RateLimit,
    Network,
    ModelNotFound,
    Stalled,
    Timeout,
    NotInstalled,
    Output,
    Crashed,
}

impl From<Reason> for RelayErrorReason {
    fn from(reason: Reason) -> Self {
        match reason {
            Reason::Auth => RelayErrorReason::Auth,
            Reason::Quota => RelayErrorReason::Quota,
            Reason::RateLimit => RelayErrorReason::RateLimit,
            Reason::Network => RelayErrorReason::Network,
            Reason::ModelNotFound => RelayErrorReason::ModelNotFound,
            Reason::Stalled => RelayErrorReason::Stalled,
            Reason::Timeout => RelayErrorReason::Timeout,
            Reason::NotInstalled => RelayErrorReason::NotInstalled,
            Reason::Output => RelayErrorReason::Output,
            Reason::Crashed => RelayErrorReason::Crashed,
        }
    }
}

/// What kind of failure a `NativeFailure` is.
#[napi(string_enum = "lowercase")]
pub enum FailureKind {
    /// A coded error of the relay (`code`, `message`, maybe `backend` and `causeHandle`).
    Relay,
    /// A value a JS backend threw, kept by the wrapper under `handle`.
    Thrown,
    /// The caller's signal fired, or the call was given up.
    Aborted,
}

#[napi(object)]
pub struct NativeFailure {
    pub failure: FailureKind,
    pub code: Option<RelayErrorCode>,
    pub message: Option<String>,
    /// The backend that reported the error.
    pub backend: Option<String>,
    /// What a CLI backend said last (at most 2 KiB).
    pub backend_output: Option<String>,
    /// The answer that did not match its schema (`ERR_SCHEMA`), whole.
    pub answer: Option<String>,
    /// Why the backend failed (docs/ERRORS.md, `reason`), for a failure a backend reported.
    pub reason: Option<RelayErrorReason>,
    /// Seconds the backend said to wait before asking again, when it said.
    pub retry_after_seconds: Option<f64>,
    /// What the backend had answered when the relay stopped it (a time-out, a stall).
    pub partial_answer: Option<String>,
    /// What to do about it (docs/ERRORS.md, `hint`), beside the message.
    pub hint: Option<String>,
    /// Where the wrapper keeps the thrown value: the value itself (`thrown`), or the `cause` of
    /// a `RelayError` a backend reported by throwing a `BackendError` (`relay`).
    pub handle: Option<u32>,
}

impl From<&RelayFailure> for NativeFailure {
    fn from(failure: &RelayFailure) -> Self {
        match failure {
            RelayFailure::Relay(err) => NativeFailure::from(err),
            RelayFailure::Thrown(thrown) => NativeFailure {
                failure: FailureKind::Thrown,
                code: None,
                message: None,
                backend: None,
                backend_output: None,
                answer: None,
                reason: None,
                retry_after_seconds: None,
                partial_answer: None,
                hint: None,
                handle: Some(thrown.handle),
            },
            RelayFailure::Aborted => NativeFailure {
                failure: FailureKind::Aborted,
                code: None,
                message: None,
                backend: None,
                backend_output: None,
                answer: None,
                reason: None,
                retry_after_seconds: None,
                partial_answer: None,
                hint: None,
                handle: None,
            },
        }
    }
}

impl From<&RelayError> for NativeFailure {
    fn from(err: &RelayError) -> Self {
        let handle = match err {
            RelayError::Backend { cause, .. } => cause.as_ref().map(|cause| cause.handle),
            _ => None,
        };
        NativeFailure {
            failure: FailureKind::Relay,
            code: Some(err.code().into()),
            message: Some(err.shown_message()),
            backend: err.backend().map(String::from),
            backend_output: err.shown_backend_output(),
            answer: err.answer().map(String::from),
            reason: reason_of_error(err).map(RelayErrorReason::from),
            retry_after_seconds: retry_after_of_error(err),
            partial_answer: err.partial_answer().map(String::from),
            hint: hint_of(err),
            handle,
        }
    }
}

/// A value, or the relay error that stopped it, as a synchronous helper or a session call
/// returns it (`Either<T, NativeFailure>`: napi's typings name no alias).
pub fn outcome<T, E>(result: Result<T, E>) -> Either<T, NativeFailure>
where
    NativeFailure: for<'a> From<&'a E>,
{
    match result {
        Ok(value) => Either::A(value),
        Err(err) => Either::B(NativeFailure::from(&err)),
    }
}
