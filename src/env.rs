//! A child process's environment, and the one text form it crosses the JS boundary in.

use std::collections::BTreeMap;

/// A child process's whole environment.
pub type Env = BTreeMap<String, String>;
