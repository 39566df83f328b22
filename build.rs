//! napi's link setup, and on x86_64 Linux the order of the addon's code: the functions a process
//! runs when it loads the addon and relays are placed together (scripts/link-order/), so the
//! pages of code it touches, and keeps in memory, are about 1.4 MB rather than 3.7 MB spread
//! over the whole 5.8 MB (BENCHMARKS.md, "The addon's code in the order it runs").

use std::env;
use std::path::Path;
use std::process::Command;

fn main() {
    napi_build::setup();
    println!("cargo:rerun-if-env-changed=PAF_LINK_MAP");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    // scripts/link-order.mjs reads the link map to name what runs.
    if let Ok(map) = env::var("PAF_LINK_MAP") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-Map={map},--no-demangle");
    }
    let target = env::var("TARGET").unwrap_or_default();
    let order = Path::new("scripts/link-order").join(format!("{target}.order"));
    println!("cargo:rerun-if-changed={}", order.display());
    if order.is_file() && links_with_rust_lld(&target) {
        let order = order.canonicalize().unwrap_or(order);
        // Symbols the code no longer has are skipped without a word: the order is a hint.
        println!(
            "cargo:rustc-cdylib-link-arg=-Wl,--symbol-ordering-file={},--no-warn-symbol-ordering",
            order.display()
        );
    }
}

/// Whether rustc links this target with its own rust-lld, the only linker here that reads an
/// ordering file: its default on x86_64 Linux from Rust 1.90, unless a linker is configured
/// (`RUSTC_LINKER`, cargo's resolved `target.<triple>.linker`) or the flags choose one. Any doubt
/// means no order, never a failed link.
fn links_with_rust_lld(target: &str) -> bool {
    if target != "x86_64-unknown-linux-gnu" || env::var_os("RUSTC_LINKER").is_some() {
        return false;
    }
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let chooses_linker = ["linker", "link-self-contained", "fuse-ld"]
        .iter()
        .any(|flag| flags.contains(flag));
    !chooses_linker && rustc_minor_version().is_some_and(|minor| minor >= 90)
}

/// The minor version of the rustc that builds the addon (`rustc 1.95.0 (…)` → 95).
fn rustc_minor_version() -> Option<u32> {
    let rustc = env::var_os("RUSTC")?;
    let output = Command::new(rustc).arg("--version").output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let version = text.split_whitespace().nth(1)?;
    let mut parts = version.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}
