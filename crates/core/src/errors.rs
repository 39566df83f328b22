//! The one error enum of the relay: stable codes (docs/CONTRACT.md §7) and exact message texts.

use std::fmt;

use thiserror::Error;

use crate::limits::MAX_MESSAGE_BYTES;
use crate::secrets::{bounded, mask_secrets};

/// Calls `$then!` with every code a relay error can carry (docs/CONTRACT.md §7), each a variant
/// name, its doc and its text: the one list. The core's [`ErrorCode`] is made from it, and so is
/// the addon's napi enum, which binding.d.ts renders as the `RelayErrorCode` union the JS API
/// exports. (`ERR_NATIVE_BINDING_MISSING`, raised when the addon itself is missing, is the JS
/// wrapper's own.)
#[macro_export]
macro_rules! with_error_codes {
    ($then:ident) => {
        $then! {
            #[doc = "The prompt is missing or blank."]
            PromptRequired = "ERR_PROMPT_REQUIRED",
            #[doc = "`timeoutSeconds` is not a number greater than zero."]
            InvalidTimeout = "ERR_INVALID_TIMEOUT",
            #[doc = "`repoPath` is not a folder."]
            InvalidRepo = "ERR_INVALID_REPO",
            #[doc = "No backend of that name is built in or registered."]
            UnsupportedBackend = "ERR_UNSUPPORTED_BACKEND",
            #[doc = "The sandbox mode is unknown, or not one the backend allows."]
            InvalidSandbox = "ERR_INVALID_SANDBOX",
            #[doc = "Both `contextFile` and `contextText` were given."]
            ContextConflict = "ERR_CONTEXT_CONFLICT",
            #[doc = "The context file is missing, not a file, unreadable or refused."]
            ContextFile = "ERR_CONTEXT_FILE",
            #[doc = "An input or the answer is over its limit."]
            TooLarge = "ERR_TOO_LARGE",
            #[doc = "A relayed agent tried to relay again."]
            DepthLimit = "ERR_DEPTH_LIMIT",
            #[doc = "`git diff` failed."]
            GitDiff = "ERR_GIT_DIFF",
            #[doc = "The backend was not found or cannot run."]
            BackendUnavailable = "ERR_BACKEND_UNAVAILABLE",
            #[doc = "The backend did not answer in time."]
            BackendTimeout = "ERR_BACKEND_TIMEOUT",
            #[doc = "The call's time ran out before the backend was asked."]
            Timeout = "ERR_TIMEOUT",
            #[doc = "The answer does not match the schema or the verdict, or the schema is invalid."]
            Schema = "ERR_SCHEMA",
            #[doc = "The session could not be looked up, continued or saved."]
            Session = "ERR_SESSION",
            #[doc = "The backend failed."]
            BackendFailed = "ERR_BACKEND_FAILED",
            #[doc = "The backend answered nothing."]
            BackendNoOutput = "ERR_BACKEND_NO_OUTPUT",
            #[doc = "A fault of the relay itself."]
            Internal = "ERR_INTERNAL",
        }
    };
}

/// Defines [`ErrorCode`] from [`with_error_codes`]'s list.
macro_rules! define_error_code {
    ($(#[doc = $doc:literal] $variant:ident = $code:literal,)*) => {
        /// A relay error's stable code: what JavaScript sees as `err.code`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $(#[doc = $doc] $variant,)*
        }

        impl ErrorCode {
            /// The code's text (`ERR_…`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $code,)*
                }
            }
        }
    };
}
with_error_codes!(define_error_code);

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A value a JavaScript backend threw, held by the bindings; the core only carries its handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThrownValue {
    /// Opaque handle the bindings use to give the caller back the very same value.
    pub handle: u32,
    /// `true` when the value is a `RelayError` (a review must not fall back on it).
    pub is_relay_error: bool,
    /// The value's message, for the review fallback warning.
    pub message: String,
}

/// What a size limit applies to; its `Display` is the subject of the `ERR_TOO_LARGE` message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    ContextFile,
    ContextText,
    GitDiff,
    RelayPrompt,
    BackendOutput,
    Schema,
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Subject::ContextFile => "Context file",
            Subject::ContextText => "Context text",
            Subject::GitDiff => "Git diff",
            Subject::RelayPrompt => "Relay prompt",
            Subject::BackendOutput => "Backend output",
            Subject::Schema => "JSON Schema",
        })
    }
}

/// How a backend failed; decides the code of the `RelayError` it becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendFailureKind {
    Unavailable,
    Timeout,
    /// No progress for the idle time-out (`idleTimeoutSeconds`): stopped as a time-out is.
    Stalled,
    Failed,
    NoOutput,
    OutputTooLarge,
    /// The envelope is larger than the backend can be given (antigravity's one argument).
    PromptTooLarge,
}

impl BackendFailureKind {
    pub fn code(self) -> ErrorCode {
        match self {
            BackendFailureKind::Unavailable => ErrorCode::BackendUnavailable,
            BackendFailureKind::Timeout | BackendFailureKind::Stalled => ErrorCode::BackendTimeout,
            BackendFailureKind::Failed => ErrorCode::BackendFailed,
            BackendFailureKind::NoOutput => ErrorCode::BackendNoOutput,
            BackendFailureKind::OutputTooLarge | BackendFailureKind::PromptTooLarge => {
                ErrorCode::TooLarge
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Error)]
pub enum RelayError {
    #[error("Prompt is required")]
    PromptRequired,
    #[error("Timeout must be greater than zero")]
    InvalidTimeout,
    #[error("Idle timeout must be greater than zero")]
    InvalidIdleTimeout,
    #[error("Repository path does not exist or is not a directory: {0}")]
    InvalidRepo(String),
    #[error("Unsupported relay backend: {name}. Supported: {}", .supported.join(", "))]
    UnsupportedBackend {
        name: String,
        supported: Vec<String>,
    },
    #[error("Invalid sandbox mode: {mode}. Allowed values: {}", .allowed.join(", "))]
    InvalidSandbox { mode: String, allowed: Vec<String> },
    #[error("Use either context_file or context_text, not both")]
    ContextConflict,
    #[error("Context file does not exist: {0}")]
    ContextFileMissing(String),
    #[error("Context path is not a file: {0}")]
    ContextNotAFile(String),
    #[error("Failed reading context file: {0}")]
    ContextFileUnreadable(String),
    /// A context file the relay will not send, whatever the caller: a process's environment or
    /// memory; or, through the MCP server, a file outside what an agent may name.
    #[error("Context file refused: {why}: {path}")]
    ContextFileRefused { path: String, why: String },
    #[error("{subject} is too large ({size} bytes; max {max} bytes)")]
    TooLarge {
        subject: Subject,
        size: u64,
        max: usize,
    },
    #[error("Relay depth limit reached; refusing nested relay invocation")]
    DepthLimit,
    #[error("Failed to collect git diff against {base}: {detail}")]
    GitDiff { base: String, detail: String },
    /// The call's deadline passed outside the backend (a context file or git that did not end,
    /// or the check of its answer against a schema).
    #[error("Relay timed out after {after}s while {during}")]
    Timeout { after: String, during: &'static str },
    /// A session that cannot be used as asked (docs/CONTRACT.md §12).
    #[error("{0}")]
    Session(String),
    /// A schema that is not one, or an answer (or verdict) that does not match it (docs/CONTRACT.md
    /// §13).
    #[error("{0}")]
    Schema(String),
    /// An answer that is not the JSON its schema (or verdict) asks for: `ERR_SCHEMA`, with the
    /// backend that gave it and the answer itself, for the caller to read or retry with
    /// (docs/ERRORS.md, `answer`).
    #[error("{message}")]
    AnswerMismatch {
        backend: String,
        message: String,
        answer: String,
    },
    /// A failure reported by a backend, with the backend's own message.
    #[error("{message}")]
    Backend {
        kind: BackendFailureKind,
        backend: String,
        message: String,
        /// The `BackendError` a JavaScript backend threw, when there is one. Boxed, as
        /// `partial` is: every `Result` of a `RelayError` stays small.
        cause: Option<Box<ThrownValue>>,
        /// The end (at most 2 KiB) of what a CLI backend said last: its error events, else its
        /// stderr (docs/ERRORS.md, `backendOutput`).
        output: Option<String>,
        /// What the backend had answered when it was stopped (a stall), when it had begun.
        partial: Option<Box<str>>,
    },
    /// A bug in this package (a task that panicked); never expected.
    #[error("Internal error in @phone-a-friend/relay: {0}")]
    Internal(String),
}

impl RelayError {
    /// The stable code JavaScript sees as `err.code`.
    pub fn code(&self) -> ErrorCode {
        match self {
            RelayError::PromptRequired => ErrorCode::PromptRequired,
            RelayError::InvalidTimeout | RelayError::InvalidIdleTimeout => {
                ErrorCode::InvalidTimeout
            }
            RelayError::InvalidRepo(_) => ErrorCode::InvalidRepo,
            RelayError::UnsupportedBackend { .. } => ErrorCode::UnsupportedBackend,
            RelayError::InvalidSandbox { .. } => ErrorCode::InvalidSandbox,
            RelayError::ContextConflict => ErrorCode::ContextConflict,
            RelayError::ContextFileMissing(_)
            | RelayError::ContextNotAFile(_)
            | RelayError::ContextFileUnreadable(_)
            | RelayError::ContextFileRefused { .. } => ErrorCode::ContextFile,
            RelayError::TooLarge { .. } => ErrorCode::TooLarge,
            RelayError::DepthLimit => ErrorCode::DepthLimit,
            RelayError::GitDiff { .. } => ErrorCode::GitDiff,
            RelayError::Timeout { .. } => ErrorCode::Timeout,
            RelayError::Schema(_) | RelayError::AnswerMismatch { .. } => ErrorCode::Schema,
            RelayError::Session(_) => ErrorCode::Session,
            RelayError::Backend { kind, .. } => kind.code(),
            RelayError::Internal(_) => ErrorCode::Internal,
        }
    }

    /// The backend's name, for errors a backend reported (an answer it gave included).
    pub fn backend(&self) -> Option<&str> {
        match self {
            RelayError::Backend { backend, .. } | RelayError::AnswerMismatch { backend, .. } => {
                Some(backend)
            }
            _ => None,
        }
    }

    /// The answer that did not match its schema.
    pub fn answer(&self) -> Option<&str> {
        match self {
            RelayError::AnswerMismatch { answer, .. } => Some(answer),
            _ => None,
        }
    }

    /// A failure a backend reported: its kind, and its message and last words (what
    /// `failure_reason` reads why from).
    pub fn backend_failure(&self) -> Option<(BackendFailureKind, String)> {
        match self {
            RelayError::Backend {
                kind,
                message,
                output,
                ..
            } => Some((
                *kind,
                format!("{message}\n{}", output.as_deref().unwrap_or("")),
            )),
            _ => None,
        }
    }

    /// What the backend had answered when it was stopped.
    pub fn partial_answer(&self) -> Option<&str> {
        match self {
            RelayError::Backend { partial, .. } => partial.as_deref(),
            _ => None,
        }
    }

    /// What a CLI backend said last, for errors it reported with words of its own.
    pub fn backend_output(&self) -> Option<&str> {
        match self {
            RelayError::Backend { output, .. } => output.as_deref(),
            _ => None,
        }
    }

    /// The message as every surface shows it: secrets masked, at most [`MAX_MESSAGE_BYTES`].
    pub fn shown_message(&self) -> String {
        if self.is_fixed_text() {
            return self.to_string();
        }
        shown(&self.to_string())
    }

    /// Whether the message is the contract's words alone, with nothing a caller, a repository or
    /// a backend said in it (numbers at most): nothing to mask, and short.
    fn is_fixed_text(&self) -> bool {
        matches!(
            self,
            RelayError::PromptRequired
                | RelayError::InvalidTimeout
                | RelayError::InvalidIdleTimeout
                | RelayError::ContextConflict
                | RelayError::DepthLimit
                | RelayError::TooLarge { .. }
        )
    }

    /// [`Self::backend_output`] as every surface shows it: secrets masked.
    pub fn shown_backend_output(&self) -> Option<String> {
        self.backend_output().map(shown)
    }
}

/// `text` (a message, a CLI's words) as it may be shown: secrets masked, then cut to
/// [`MAX_MESSAGE_BYTES`]. A text of megabytes is cut to a few times the limit first, so masking
/// costs microseconds; the final cut keeps only the ends of that, far from the first cut, so no
/// secret is shown in part.
pub fn shown(text: &str) -> String {
    let first_cut = bounded(text, 16 * MAX_MESSAGE_BYTES);
    bounded(&mask_secrets(&first_cut), MAX_MESSAGE_BYTES).into_owned()
}

/// Why a `relay()` or `reviewRelay()` call did not produce an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum RelayFailure {
    /// A coded error of the relay.
    Relay(RelayError),
    /// Something a JavaScript backend threw that must reach the caller unchanged.
    Thrown(ThrownValue),
    /// The caller's `AbortSignal` fired.
    Aborted,
}

impl From<RelayError> for RelayFailure {
    fn from(err: RelayError) -> Self {
        RelayFailure::Relay(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_the_contract() {
        let unsupported = RelayError::UnsupportedBackend {
            name: "nope".into(),
            supported: vec!["codex".into(), "gemini".into(), "ollama".into()],
        };
        assert_eq!(
            unsupported.to_string(),
            "Unsupported relay backend: nope. Supported: codex, gemini, ollama"
        );
        let too_large = RelayError::TooLarge {
            subject: Subject::GitDiff,
            size: 300_001,
            max: 300_000,
        };
        assert_eq!(
            too_large.to_string(),
            "Git diff is too large (300001 bytes; max 300000 bytes)"
        );
        assert_eq!(too_large.code(), "ERR_TOO_LARGE");
        let sandbox = RelayError::InvalidSandbox {
            mode: "x".into(),
            allowed: vec!["danger-full-access".into(), "read-only".into()],
        };
        assert_eq!(
            sandbox.to_string(),
            "Invalid sandbox mode: x. Allowed values: danger-full-access, read-only"
        );
    }

    #[test]
    fn shows_messages_bounded_and_masked() {
        let stderr = format!(
            "Error: OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx rejected\n{}\nthe end",
            "x".repeat(1_000_000)
        );
        let err = RelayError::Backend {
            kind: BackendFailureKind::Failed,
            backend: "codex".into(),
            message: stderr,
            cause: None,
            output: Some("token ghp_0123456789abcdefghijABCDEFGHIJ012345 expired".into()),
            partial: None,
        };
        let message = err.shown_message();
        assert!(message.len() <= MAX_MESSAGE_BYTES, "{}", message.len());
        assert!(
            message.starts_with("Error: OPENAI_API_KEY=******** rejected"),
            "{message}"
        );
        assert!(message.ends_with("the end"));
        assert_eq!(
            err.shown_backend_output().as_deref(),
            Some("token ******** expired")
        );
    }

    #[test]
    fn backend_errors_take_their_code_from_the_kind() {
        let err = RelayError::Backend {
            kind: BackendFailureKind::OutputTooLarge,
            backend: "codex".into(),
            message: "Backend output is too large (9 bytes; max 8 bytes)".into(),
            cause: None,
            output: None,
            partial: None,
        };
        assert_eq!(err.code(), "ERR_TOO_LARGE");
        assert_eq!(err.backend(), Some("codex"));
        assert_eq!(
            err.to_string(),
            "Backend output is too large (9 bytes; max 8 bytes)"
        );
    }
}
