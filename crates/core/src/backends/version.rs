//! Which version of a CLI is installed, and whether it is in the range the relay was verified
//! with ([`Builtin::verified_range`]): the CLIs change flags between minor versions
//! (docs/BACKENDS.md, "Versions").

use std::path::Path;

use semver::Version;
use serde::Deserialize;

use super::builtin::Builtin;
use crate::bounded_text::open_regular;

/// A `package.json` larger than this is not the small manifest of a CLI package.
const MANIFEST_LIMIT: u64 = 256 * 1024;
/// How many folders above the executable an npm package's manifest may be
/// (`bin/codex.js`, `bin/claude.exe`, `node_modules/.bin` resolved to either).
const MANIFEST_DEPTH: usize = 4;

/// The first word of `text` that is a version (`codex-cli 0.169.0`, `2.1.330 (Claude Code)`,
/// `v1.2.3`).
pub fn parse(text: &str) -> Option<Version> {
    text.split_whitespace()
        .map(|word| word.strip_prefix('v').unwrap_or(word))
        .find_map(|word| Version::parse(word).ok())
}

/// What to say when `installed` is outside the range `backend` was verified with; `None` inside
/// it, or when nothing was verified.
pub fn drift(backend: &Builtin, installed: &Version) -> Option<String> {
    let verified = backend.verified_version?;
    let range = backend.verified_range()?;
    if range.matches(installed) {
        return None;
    }
    let series = Version::parse(verified)
        .map(|v| format!("{}.{}.x", v.major, v.minor))
        .unwrap_or_else(|_| verified.to_string());
    Some(format!(
        "{} {installed} is outside the versions this relay was verified with ({verified}, {series}): its flags may have changed",
        backend.name
    ))
}

#[derive(Deserialize)]
struct Manifest {
    name: Option<String>,
    version: Option<String>,
}

/// The version of `backend`'s npm package that `program` belongs to, read from the package's
/// `package.json` (no process is started: a relay that failed has no time left for one).
/// `None` when `program` is not from npm, or the manifest cannot be read.
pub fn of_npm_install(backend: &Builtin, program: &Path) -> Option<Version> {
    let package = backend.npm_package?;
    let real = std::fs::canonicalize(program).ok()?;
    real.ancestors()
        .skip(1)
        .take(MANIFEST_DEPTH)
        .find_map(|dir| manifest_version(&dir.join("package.json"), package))
}

fn manifest_version(path: &Path, package: &str) -> Option<Version> {
    use std::io::Read;
    let file = open_regular(path).ok()??;
    let mut text = String::new();
    file.take(MANIFEST_LIMIT).read_to_string(&mut text).ok()?;
    let manifest: Manifest = serde_json::from_str(&text).ok()?;
    if manifest.name.as_deref() != Some(package) {
        return None;
    }
    Version::parse(manifest.version?.as_str()).ok()
}

/// The drift note for a failed relay of `backend` run as `program`, when its npm manifest says
/// a version outside the verified range.
pub fn drift_of_install(backend: &Builtin, program: &Path) -> Option<String> {
    drift(backend, &of_npm_install(backend, program)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::builtin::{CODEX, OLLAMA};

    #[test]
    fn finds_the_version_among_the_words() {
        let v = |text: &str| parse(text).map(|v| v.to_string());
        assert_eq!(v("codex-cli 0.169.0").as_deref(), Some("0.169.0"));
        assert_eq!(v("2.1.330 (Claude Code)").as_deref(), Some("2.1.330"));
        assert_eq!(v("v1.18.33").as_deref(), Some("1.18.33"));
        assert_eq!(v("no version here 1.2"), None);
    }

    #[test]
    fn drift_is_outside_the_minor_series_from_the_verified_version_up() {
        let at = |text: &str| Version::parse(text).ok().and_then(|v| drift(&CODEX, &v));
        assert_eq!(at("0.169.0"), None);
        assert_eq!(at("0.169.7"), None);
        let newer = at("0.180.0").unwrap_or_default();
        assert!(newer.contains("codex 0.180.0"), "{newer}");
        assert!(newer.contains("0.169.0, 0.169.x"), "{newer}");
        assert!(at("0.168.9").is_some());
        assert!(at("0.170.0").is_some());
        assert_eq!(drift(&OLLAMA, &Version::new(9, 9, 9)), None);
    }

    #[test]
    fn reads_the_manifest_of_the_package_the_program_is_in() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let program = bin.join("codex.js");
        std::fs::write(&program, "").unwrap();
        let manifest = dir.path().join("package.json");
        std::fs::write(&manifest, r#"{"name":"@openai/codex","version":"0.180.1"}"#).unwrap();
        assert_eq!(
            of_npm_install(&CODEX, &program)
                .map(|v| v.to_string())
                .as_deref(),
            Some("0.180.1")
        );
        std::fs::write(
            &manifest,
            r#"{"name":"something-else","version":"0.180.1"}"#,
        )
        .unwrap();
        assert_eq!(of_npm_install(&CODEX, &program), None);
    }
}
