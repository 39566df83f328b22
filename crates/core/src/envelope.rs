//! The prompt envelope every backend receives (docs/CONTRACT.md §6), byte for byte.

use crate::errors::{RelayError, Subject};
use crate::text::{js_trim, trailing_whitespace_len};

const PREAMBLE: [&str; 4] = [
    "You are helping another coding agent by reviewing or advising on work in a local repository.",
    "Repository path: ",
    "Use the repository files for context when needed.",
    "Respond with concise, actionable feedback.",
];

/// The parts of an envelope besides its repository and request; empty ones are left out.
#[derive(Debug, Clone, Copy, Default)]
pub struct Attached<'a> {
    pub context: &'a str,
    pub diff: &'a str,
    /// What a fitted diff covers (crate::fit::coverage_section).
    pub coverage: &'a str,
}

impl<'a> Attached<'a> {
    pub fn only_context(context: &'a str) -> Attached<'a> {
        Attached {
            context,
            ..Attached::default()
        }
    }
}

/// Builds the envelope; empty context, diff or coverage sections are left out. The parts are
/// joined in one allocation: with a large diff and context, each extra copy costs the runtime's
/// thread fresh pages (BENCHMARKS.md, "Large inputs: one copy of each").
pub fn build_envelope(repo_path: &str, request: &str, attached: Attached<'_>) -> String {
    let repo_line = [PREAMBLE[1], repo_path].concat();
    let mut sections = vec![
        PREAMBLE[0],
        &repo_line,
        PREAMBLE[2],
        PREAMBLE[3],
        "",
        "Request:",
        js_trim(request),
    ];
    let Attached {
        context,
        diff,
        coverage,
    } = attached;
    let parts = [
        ("Additional Context:", context),
        ("Git Diff:", diff),
        ("Diff Coverage:", coverage),
    ];
    for (heading, body) in parts {
        let body = js_trim(body);
        if !body.is_empty() {
            sections.extend(["", heading, body]);
        }
    }
    let mut envelope = sections.join("\n");
    // The preamble starts it, so only its end can need trimming (an empty request).
    envelope.truncate(envelope.len() - trailing_whitespace_len(&envelope));
    envelope
}

/// The limit on the whole envelope: 500,000 bytes, or the call's `maxPromptBytes`.
pub fn check_prompt_size(envelope: &str, limit: usize) -> Result<(), RelayError> {
    if envelope.len() > limit {
        return Err(RelayError::TooLarge {
            subject: Subject::RelayPrompt,
            size: envelope.len() as u64,
            max: limit,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_PROMPT_BYTES;

    fn attached<'a>(context: &'a str, diff: &'a str) -> Attached<'a> {
        Attached {
            context,
            diff,
            coverage: "",
        }
    }

    const HEAD: &str = "You are helping another coding agent by reviewing or advising on work in a local repository.\nRepository path: /r\nUse the repository files for context when needed.\nRespond with concise, actionable feedback.\n\nRequest:\n";

    #[test]
    fn request_only() {
        assert_eq!(
            build_envelope("/r", "  ask \n", Attached::default()),
            format!("{HEAD}ask")
        );
    }

    #[test]
    fn all_sections() {
        assert_eq!(
            build_envelope("/r", "ask", attached(" ctx ", "\ndiff --git a b\n")),
            format!("{HEAD}ask\n\nAdditional Context:\nctx\n\nGit Diff:\ndiff --git a b")
        );
    }

    #[test]
    fn diff_without_context() {
        assert_eq!(
            build_envelope("/r", "ask", attached("  ", "d")),
            format!("{HEAD}ask\n\nGit Diff:\nd")
        );
    }

    #[test]
    fn prompt_limit_at_the_boundary_and_one_over() {
        assert!(check_prompt_size(&"x".repeat(MAX_PROMPT_BYTES), MAX_PROMPT_BYTES).is_ok());
        let err =
            check_prompt_size(&"x".repeat(MAX_PROMPT_BYTES + 1), MAX_PROMPT_BYTES).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Relay prompt is too large (500001 bytes; max 500000 bytes)"
        );
    }
}
