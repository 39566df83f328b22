//! A child process's environment, and the one text form it crosses the JS boundary in.

use std::collections::BTreeMap;

/// A child process's whole environment.
pub type Env = BTreeMap<String, String>;

/// The value of `name` in `env`. On Windows, where names are case-insensitive (Node's
/// `process.env` lists `Path`, not `PATH`), a name differing only in case is found too.
pub fn var<'a>(env: &'a Env, name: &str) -> Option<&'a str> {
    if let Some(value) = env.get(name) {
        return Some(value);
    }
    if cfg!(windows) {
        return var_ignoring_case(env, name);
    }
    None
}

fn var_ignoring_case<'a>(env: &'a Env, name: &str) -> Option<&'a str> {
    env.iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}

/// This process's environment as JS sees it: a name that is not UTF-8 is left out, a value that
/// is not UTF-8 is replaced, as Node decodes them. Read on the JS thread, where Node writes it.
pub fn process_vars() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().filter_map(|(key, value)| {
        let value = value
            .into_string()
            .unwrap_or_else(|value| value.to_string_lossy().into_owned());
        Some((key.into_string().ok()?, value))
    })
}

/// [`process_vars`] as an [`Env`].
pub fn process() -> Env {
    process_vars().collect()
}

/// [`process_vars`] as entries (see [`encode`]).
pub fn process_entries() -> String {
    let vars: Vec<(String, String)> = process_vars().collect();
    encode(vars.iter().map(|(key, value)| (key, value)))
}

/// `entries` as `key=value` entries each ended by NUL: the one string an environment crosses
/// the JS boundary as (one string crosses far faster than an object of many).
pub fn encode<K, V, I>(entries: I) -> String
where
    K: AsRef<str>,
    V: AsRef<str>,
    I: IntoIterator<Item = (K, V)>,
    I::IntoIter: Clone,
{
    let entries = entries.into_iter();
    // Sized first: the string is made once per backend call, on its hot path.
    let size = entries
        .clone()
        .map(|(k, v)| k.as_ref().len() + v.as_ref().len() + 2);
    let mut encoded = String::with_capacity(size.sum());
    for (key, value) in entries {
        encoded.push_str(key.as_ref());
        encoded.push('=');
        encoded.push_str(value.as_ref());
        encoded.push('\0');
    }
    encoded
}

/// The `(key, value)` pairs of [`encode`]d entries, in order; the value runs from the first `=`
/// to the NUL, and a piece with no `=` is no entry.
pub fn decode(entries: &str) -> impl Iterator<Item = (&str, &str)> + Clone + '_ {
    entries
        .split('\0')
        .filter_map(|entry| entry.split_once('='))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        let env = Env::from([
            ("PATH".to_string(), "/bin:/usr/bin".to_string()),
            ("EMPTY".to_string(), String::new()),
            ("EQUALS".to_string(), "a=b=c".to_string()),
        ]);
        let encoded = encode(&env);
        assert_eq!(encoded, "EMPTY=\0EQUALS=a=b=c\0PATH=/bin:/usr/bin\0");
        let decoded: Env = decode(&encoded)
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        assert_eq!(decoded, env);
    }

    #[test]
    fn a_name_is_found_exactly_or_on_windows_in_any_case() {
        let env = Env::from([
            ("Path".to_string(), r"C:\bin".to_string()),
            ("TMP".to_string(), "t".to_string()),
        ]);
        assert_eq!(var(&env, "TMP"), Some("t"));
        assert_eq!(var(&env, "Path"), Some(r"C:\bin"));
        assert_eq!(var_ignoring_case(&env, "PATH"), Some(r"C:\bin"));
        assert_eq!(var(&env, "PATH"), cfg!(windows).then_some(r"C:\bin"));
        assert_eq!(var(&env, "HOME"), None);
    }

    #[test]
    fn pieces_without_an_equals_sign_are_no_entries() {
        let pairs: Vec<_> = decode("A=1\0junk\0\0B=\0").collect();
        assert_eq!(pairs, [("A", "1"), ("B", "")]);
        assert_eq!(decode("").count(), 0);
        assert_eq!(encode(&Env::new()), "");
    }
}
