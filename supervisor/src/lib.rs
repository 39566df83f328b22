#![deny(clippy::all)]
//! The process supervisor of `@phone-a-friend/relay` (the executable in `main.rs`) and what the
//! relay shares with it: its command-line protocol and the `/proc` process tree. A crate of its
//! own, depending on libc only, so the executable builds in seconds and links statically.

pub mod process_tree;
pub mod protocol;
