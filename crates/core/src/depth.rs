//! The recursion guard: a relay started from inside a relayed backend is refused.

use crate::env::Env;
use crate::errors::RelayError;
use crate::limits::{DEPTH_ENV_VAR, MAX_RELAY_DEPTH};

/// Raises `PHONE_A_FRIEND_DEPTH` in `env` (a call's snapshot) to `depth` when that is deeper:
/// the depth of the JS backend, in this process, that makes the call.
pub fn raise_to(env: &mut Env, depth: u64) {
    if depth > current_depth(env) {
        env.insert(DEPTH_ENV_VAR.to_string(), depth.to_string());
    }
}

/// The depth `PHONE_A_FRIEND_DEPTH` records: `^\d+$` (ASCII digits, the JS regex), else 0.
/// Digit strings too long for a u64 are deeper than any limit.
fn current_depth(env: &Env) -> u64 {
    match env.get(DEPTH_ENV_VAR) {
        Some(value) if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
            value.parse().unwrap_or(u64::MAX)
        }
        _ => 0,
    }
}

/// The child's environment: a copy of `env` with the depth raised, or `ERR_DEPTH_LIMIT`.
/// The process's own environment is never touched.
pub fn next_relay_env(env: &Env) -> Result<Env, RelayError> {
    let depth = current_depth(env);
    if depth >= u64::from(MAX_RELAY_DEPTH) {
        return Err(RelayError::DepthLimit);
    }
    let mut child = env.clone();
    child.insert(DEPTH_ENV_VAR.to_string(), (depth + 1).to_string());
    Ok(child)
}

/// The `PHONE_A_FRIEND_DEPTH` value in an environment written as `key=value` entries each
/// ended by NUL (the form a JS backend's `env` crosses to JS in).
pub fn depth_entry(entries: &str) -> Option<&str> {
    crate::env::decode(entries)
        .find(|(key, _)| *key == DEPTH_ENV_VAR)
        .map(|(_, value)| value)
}

/// Those entries with `PHONE_A_FRIEND_DEPTH` set to `depth`, the rest kept.
pub fn with_depth_entry(entries: &str, depth: &str) -> String {
    let others = crate::env::decode(entries).filter(|(key, _)| *key != DEPTH_ENV_VAR);
    crate::env::encode(others.chain(std::iter::once((DEPTH_ENV_VAR, depth))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_in_entries() {
        let entries = "PATH=/bin\0PHONE_A_FRIEND_DEPTH=0\0EMPTY=\0";
        assert_eq!(depth_entry(entries), Some("0"));
        assert_eq!(depth_entry("PATH=/bin\0"), None);
        assert_eq!(
            with_depth_entry(entries, "1"),
            "PATH=/bin\0EMPTY=\0PHONE_A_FRIEND_DEPTH=1\0"
        );
        assert_eq!(with_depth_entry("", "1"), "PHONE_A_FRIEND_DEPTH=1\0");
    }

    fn env_with(value: Option<&str>) -> Env {
        let mut env = Env::new();
        env.insert("PATH".into(), "/bin".into());
        if let Some(v) = value {
            env.insert(DEPTH_ENV_VAR.into(), v.into());
        }
        env
    }

    #[test]
    fn depth_values() {
        for value in [
            None,
            Some("0"),
            Some("garbage"),
            Some("1abc"),
            Some(""),
            Some("1\n"),
            Some("-1"),
        ] {
            let child = next_relay_env(&env_with(value)).expect("allowed");
            assert_eq!(
                child.get(DEPTH_ENV_VAR).map(String::as_str),
                Some("1"),
                "{value:?}"
            );
            assert_eq!(child.get("PATH").map(String::as_str), Some("/bin"));
        }
        for value in ["1", "01", "2", "99999999999999999999999"] {
            assert_eq!(
                next_relay_env(&env_with(Some(value))),
                Err(RelayError::DepthLimit),
                "{value}"
            );
        }
    }
}
