//! `binary-facts --floor <linux-gnu|linux-musl|darwin-arm64|darwin-x64|windows> <file>...`: prints
//! one line of facts per file (crate docs), and every way a file asks for more than the floor
//! allows; exits 1 if any does, 2 if a file cannot be read or parsed. Without `--floor`, prints
//! only.
use std::process::ExitCode;

use binary_facts::{facts, Floor};

const USAGE: &str =
    "usage: binary-facts [--floor linux-gnu|linux-musl|darwin-arm64|darwin-x64|windows] <file>...";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut floor = None;
    let mut files = Vec::new();
    while let Some(arg) = args.next() {
        if arg == "--floor" {
            match args.next().as_deref().and_then(Floor::parse) {
                Some(parsed) => floor = Some(parsed),
                None => {
                    eprintln!("binary-facts: --floor needs one of the floors\n{USAGE}");
                    return ExitCode::from(2);
                }
            }
        } else if arg.starts_with('-') {
            eprintln!("binary-facts: unknown option {arg}\n{USAGE}");
            return ExitCode::from(2);
        } else {
            files.push(arg);
        }
    }
    if files.is_empty() {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let mut status = ExitCode::SUCCESS;
    for file in &files {
        let read = std::fs::read(file).map_err(|e| format!("cannot read it: {e}"));
        match read.and_then(|data| facts(&data)) {
            Ok(found) => {
                println!("{file}: {found}");
                for wrong in floor
                    .map(|floor| floor.violations(&found))
                    .unwrap_or_default()
                {
                    println!("{file}: FAILS its floor: {wrong}");
                    if status == ExitCode::SUCCESS {
                        status = ExitCode::from(1);
                    }
                }
            }
            Err(why) => {
                eprintln!("binary-facts: {file}: {why}");
                status = ExitCode::from(2);
            }
        }
    }
    status
}
