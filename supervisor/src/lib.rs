#![deny(clippy::all)]
//! The process supervisor of `@phone-a-friend/relay` (the executable in `main.rs`) and what the
//! relay shares with it: its command-line protocol and the `/proc` process tree; and how the
//! macOS supervisor ends a tree (`tree_kill`), OS-neutral so that it is tested everywhere. A
//! crate of its own, depending on libc only (and libproc on macOS), so the executable builds in
//! seconds and links statically.
//! `argv` (how the executable reads its command line) is here only so that it can be unit-tested.

// The executable and what only it uses are Unix-only: on Windows the relay keeps the backend's
// tree in a Job Object instead (docs/ARCHITECTURE.md §4) and needs only the protocol's constants.
#[cfg(unix)]
pub mod argv;
#[cfg(unix)]
pub mod process_tree;
pub mod protocol;
pub mod tree_kill;
