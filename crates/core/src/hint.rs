//! What to do about an error (docs/ERRORS.md, "`hint`"): said beside its message, which stays the
//! original's where the drop-in contract fixes it. Every surface carries it: the library's
//! `error.hint`, the CLI's `Hint:` line and `--json`, the MCP tools' error results.

use crate::errors::{RelayError, Subject};

/// The advice for `err`, when there is any.
pub fn hint_of(err: &RelayError) -> Option<String> {
    match err {
        RelayError::UnsupportedBackend { name, supported } => {
            did_you_mean(name, supported.iter().map(String::as_str))
        }
        RelayError::InvalidSandbox { mode, allowed } => {
            did_you_mean(mode, allowed.iter().map(String::as_str))
        }
        RelayError::TooLarge { subject, .. } => too_large(*subject).map(str::to_string),
        RelayError::InvalidTimeout => Some(seconds("timeoutSeconds", "--timeout")),
        RelayError::InvalidIdleTimeout => Some(seconds("idleTimeoutSeconds", "--idle-timeout")),
        _ => None,
    }
}

/// `Did you mean <name>?` for the candidate `given` most likely meant, ignoring case: the closest
/// within a third of its length (at least 1), the first listed on a tie.
pub fn did_you_mean<'a>(given: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    closest(given, candidates).map(|meant| format!("Did you mean {meant}?"))
}

/// Past this length an input is not a typo of a short name (and is not worth the work).
const LONGEST_TYPO: usize = 40;

fn closest<'a>(given: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let given = given.to_lowercase();
    let length = given.chars().count();
    if length == 0 || length > LONGEST_TYPO {
        return None;
    }
    let limit = (length / 3).max(1);
    candidates
        // The distance is at least the difference in length: most names are ruled out at once.
        .filter(|name| name.chars().count().abs_diff(length) <= limit)
        .map(|name| (strsim::osa_distance(&given, &name.to_lowercase()), name))
        .filter(|(distance, _)| *distance <= limit)
        // The first of the closest: `min_by_key` keeps the first on a tie.
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

/// What a time-out takes.
fn seconds(option: &str, flag: &str) -> String {
    format!(
        "{option} (the CLI's {flag}) takes a number of seconds greater than zero, such as 30 or \
         2.5; a string such as '30', NaN or Infinity is not one"
    )
}

/// How to get under a size limit.
fn too_large(subject: Subject) -> Option<&'static str> {
    Some(match subject {
        Subject::RelayPrompt => {
            "Shorten the prompt or the context, or fit the diff to the budget (fit: true; the CLI and \
             MCP server fit by default): a dry run shows what each part weighs"
        }
        Subject::GitDiff => {
            "Fit it to the budget instead (fit: true; the CLI and MCP server fit by default), or \
             commit part of the changes and relay the rest"
        }
        Subject::ContextFile | Subject::ContextText => {
            "Pass the part that matters, or name the file in the prompt for the backend to read \
             in the repository"
        }
        Subject::BackendOutput => {
            "Ask for a shorter answer (a summary, or one file at a time)"
        }
        Subject::Schema => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn a_typo_or_a_capital_gets_the_name_meant_and_a_stranger_gets_nothing() {
        let supported = names(&["codex", "gemini", "claude", "opencode", "ollama"]);
        let hint = |name: &str| {
            hint_of(&RelayError::UnsupportedBackend {
                name: name.into(),
                supported: supported.clone(),
            })
        };
        assert_eq!(hint("gemni").as_deref(), Some("Did you mean gemini?"));
        assert_eq!(hint("Codex").as_deref(), Some("Did you mean codex?"));
        assert_eq!(hint("cluade").as_deref(), Some("Did you mean claude?"));
        assert_eq!(hint("gpt-4"), None);
        assert_eq!(hint(""), None);
        let sandbox = RelayError::InvalidSandbox {
            mode: "readonly".into(),
            allowed: names(&["read-only", "workspace-write", "danger-full-access"]),
        };
        assert_eq!(
            hint_of(&sandbox).as_deref(),
            Some("Did you mean read-only?")
        );
    }

    #[test]
    fn a_size_error_says_how_to_get_under_its_limit() {
        let too_large = RelayError::TooLarge {
            subject: Subject::RelayPrompt,
            size: 600_232,
            max: 500_000,
        };
        assert!(hint_of(&too_large).is_some_and(|hint| hint.contains("fit: true")));
        assert_eq!(hint_of(&RelayError::DepthLimit), None);
    }
}
