//! What a call gives back besides the answer's text: which backend answered and what of the
//! diff it saw. The library's `relayDetailed()`, the CLI's `--json` and the MCP tools' structured
//! content are made of it; `relay()` keeps only the text.

use schemars::JsonSchema;
use serde::Serialize;

use crate::failure_reason::Reason;
use crate::fit::{Coverage, Fitted};
use crate::usage::{Reported, Usage};

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
    /// The model that answered: as the backend named it, else as the call named it.
    pub model: Option<String>,
    /// What the answer cost, as far as the backend said (docs/CONTRACT.md §8b).
    pub usage: Option<Usage>,
}

/// A backend's answer, with what its run said about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    pub answer: String,
    pub reported: Reported,
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
    pub(super) fn new(ran: Ran, backend: String, fitted: Option<Fitted>) -> Answered {
        Answered {
            answer: ran.answer,
            backend,
            coverage: fitted.map(|fitted| fitted.coverage),
            attempts: Vec::new(),
            model: ran.reported.model,
            usage: ran.reported.usage,
        }
    }
}
