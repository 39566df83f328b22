//! The request's extra context: a file or inline text, never both, within 200,000 bytes.

use std::fs::File;

use crate::bounded_text::read_bounded;
use crate::errors::{RelayError, Subject};
use crate::limits::MAX_CONTEXT_FILE_BYTES;
use crate::paths::resolve;
use crate::text::js_trim;

/// The trimmed context ("" when there is none). An empty `context_file` counts as absent.
pub fn resolve_context(
    context_file: Option<&str>,
    context_text: Option<&str>,
    cwd: &str,
) -> Result<String, RelayError> {
    let file = context_file.filter(|f| !f.is_empty());
    let text = js_trim(context_text.unwrap_or(""));
    match file {
        Some(_) if !text.is_empty() => Err(RelayError::ContextConflict),
        Some(file) => read_context_file(&resolve(cwd, file)),
        None if text.len() > MAX_CONTEXT_FILE_BYTES => Err(RelayError::TooLarge {
            subject: Subject::ContextText,
            size: text.len() as u64,
            max: MAX_CONTEXT_FILE_BYTES,
        }),
        None => Ok(text.to_string()),
    }
}

/// Reads a regular file through a bounded buffer: a 50 MB file costs 200 KB of memory.
/// The type is checked before opening, so a FIFO or a device is refused without blocking.
fn read_context_file(path: &str) -> Result<String, RelayError> {
    let metadata =
        std::fs::metadata(path).map_err(|_| RelayError::ContextFileMissing(path.to_string()))?;
    if !metadata.is_file() {
        return Err(RelayError::ContextNotAFile(path.to_string()));
    }
    let unreadable = |e: std::io::Error| RelayError::ContextFileUnreadable(format!("{e}: {path}"));
    let file = File::open(path).map_err(unreadable)?;
    read_bounded(file, MAX_CONTEXT_FILE_BYTES)
        .map_err(unreadable)?
        .within(Subject::ContextFile, MAX_CONTEXT_FILE_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(bytes: &[u8]) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("ctx.txt");
        std::fs::write(&path, bytes).expect("write");
        (dir, path.to_string_lossy().into_owned())
    }

    #[test]
    fn conflict_is_checked_before_the_file_is_opened() {
        let err = resolve_context(Some("/does/not/exist"), Some(" x "), "/").unwrap_err();
        assert_eq!(err, RelayError::ContextConflict);
        // Blank text does not conflict.
        let (_dir, path) = temp_file(b"file text\n");
        assert_eq!(
            resolve_context(Some(&path), Some("  \n"), "/"),
            Ok("file text".into())
        );
    }

    #[test]
    fn file_errors() {
        assert_eq!(
            resolve_context(Some("missing.txt"), None, "/nowhere"),
            Err(RelayError::ContextFileMissing(
                "/nowhere/missing.txt".into()
            ))
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let dir_path = dir.path().to_string_lossy().into_owned();
        assert_eq!(
            resolve_context(Some(&dir_path), None, "/"),
            Err(RelayError::ContextNotAFile(dir_path.clone()))
        );
        assert_eq!(
            resolve_context(Some("/dev/zero"), None, "/"),
            Err(RelayError::ContextNotAFile("/dev/zero".into()))
        );
    }

    #[test]
    fn limits_at_the_boundary_and_one_over() {
        let exact = "c".repeat(MAX_CONTEXT_FILE_BYTES);
        assert_eq!(
            resolve_context(None, Some(&exact), "/").map(|t| t.len()),
            Ok(exact.len())
        );
        let over = format!(" {exact}c ");
        assert_eq!(
            resolve_context(None, Some(&over), "/")
                .unwrap_err()
                .to_string(),
            "Context text is too large (200001 bytes; max 200000 bytes)"
        );
        let (_dir, path) = temp_file(format!("\n{exact}\n").as_bytes());
        assert_eq!(
            resolve_context(Some(&path), None, "/").map(|t| t.len()),
            Ok(exact.len())
        );
        let (_dir2, path2) = temp_file(over.as_bytes());
        assert_eq!(
            resolve_context(Some(&path2), None, "/")
                .unwrap_err()
                .to_string(),
            "Context file is too large (200001 bytes; max 200000 bytes)"
        );
    }

    #[test]
    fn a_bom_is_trimmed_and_invalid_utf8_is_replaced() {
        let (_dir, path) = temp_file(b"\xEF\xBB\xBFhello \xFF");
        assert_eq!(
            resolve_context(Some(&path), None, "/"),
            Ok("hello \u{FFFD}".into())
        );
    }
}
