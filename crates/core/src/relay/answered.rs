//! What a call gives back besides the answer's text: which backend answered and what of the
//! diff it saw. The library's `relayDetailed()`, the CLI's `--json` and the MCP tools' structured
//! content are made of it; `relay()` keeps only the text.

use schemars::JsonSchema;
use serde::Serialize;

use crate::failure_reason::Reason;
use crate::fit::{Coverage, Fitted};

/// An answer with what is known about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered {
    pub answer: String,
    /// The backend that answered.
    pub backend: String,
    /// With `fit`, how a diff too large to send whole was fitted, every changed file in git's
    /// order (docs/CONTRACT.md §6a); `None` when the diff went whole, or there was none.
    pub coverage: Option<Vec<Coverage>>,
    /// The backends asked before the one that answered (`fallback`), in order.
    pub attempts: Vec<Attempt>,
}

/// A backend that could not answer now, before the next was asked (`fallback`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Attempt {
    pub backend: String,
    /// Why (docs/ERRORS.md, `reason`).
    pub reason: Reason,
    pub code: &'static str,
    /// Its error's message, as every surface shows it.
    pub message: String,
}

impl Answered {
    pub(super) fn new(answer: String, backend: String, fitted: Option<Fitted>) -> Answered {
        Answered {
            answer,
            backend,
            coverage: fitted.map(|fitted| fitted.coverage),
            attempts: Vec::new(),
        }
    }
}
