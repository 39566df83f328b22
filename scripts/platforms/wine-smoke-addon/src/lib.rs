//! The smallest addon that needs what the relay's addon needs from Windows through Rust's std:
//! random seeds (bcryptprimitives' ProcessPrng, which wine 8 lacks), threads and processes.
#![deny(clippy::all)]

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use napi_derive::napi;

/// The Windows process id of the process that loaded the addon, as Rust's std sees it.
#[napi]
pub fn process_id() -> u32 {
    std::process::id()
}

/// Whether two fresh std hash seeds differ: they come from ProcessPrng, so a shim that returned
/// no randomness shows up here.
#[napi]
pub fn seeds_differ() -> bool {
    let first = RandomState::new().hash_one("seed");
    // A thread of its own draws its own seed: with a shim that gave zeros, both would be equal.
    let second = std::thread::spawn(|| RandomState::new().hash_one("seed")).join();
    matches!(second, Ok(second) if second != first)
}
