//! The request's extra context: a file or inline text, never both, within 200,000 bytes.
//! A context file is read on the call's task in chunks, bounded by the call's deadline: a file
//! that never ends (`/proc`), or a huge sparse one, ends in `ERR_TIMEOUT` or the call's abort,
//! and no thread keeps reading it afterwards.

use std::borrow::Cow;
use std::fs::File;

use crate::bounded_text::{read_bounded_until, ReadStopped};
use crate::deadline::Deadline;
use crate::errors::{RelayError, RelayFailure, Subject};
use crate::limits::MAX_CONTEXT_FILE_BYTES;
use crate::paths::resolve;
use crate::text::js_trim;

const READING: &str = "reading the context file";

/// `contextText` as a caller gave it: the text, or, when whoever took it measured it over the
/// limit, only that size (UTF-8 bytes after `trim()`), so a text refused for its size need not be
/// copied first (its napi conversion, napi_values.rs).
#[derive(Debug, Clone, PartialEq)]
pub enum ContextText {
    Text(String),
    /// Always refused, with this size, whatever it is.
    Oversized(usize),
}

impl ContextText {
    /// Whether it is empty once trimmed: then it counts as absent.
    fn is_blank(&self) -> bool {
        match self {
            ContextText::Text(text) => js_trim(text).is_empty(),
            ContextText::Oversized(_) => false,
        }
    }
}

impl From<String> for ContextText {
    fn from(text: String) -> Self {
        ContextText::Text(text)
    }
}

impl From<&str> for ContextText {
    fn from(text: &str) -> Self {
        ContextText::Text(text.to_string())
    }
}

impl<'de> serde::Deserialize<'de> for ContextText {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(ContextText::Text)
    }
}

/// The trimmed context ("" when there is none). An empty `context_file` counts as absent when
/// checking for both, then is a path like any other: the working directory, so `Context path is
/// not a file: <cwd>`, as in the original.
pub async fn resolve_context<'text>(
    context_file: Option<&str>,
    context_text: Option<&'text ContextText>,
    cwd: &str,
    deadline: &Deadline,
) -> Result<Cow<'text, str>, RelayFailure> {
    let has_text = context_text.is_some_and(|text| !text.is_blank());
    match context_file {
        Some(file) if !file.is_empty() && has_text => Err(RelayError::ContextConflict.into()),
        Some(file) => Ok(Cow::Owned(
            read_context_file(&resolve(cwd, file), deadline).await?,
        )),
        // Borrowed: the envelope copies it once (a context can be 200 KB).
        None => Ok(Cow::Borrowed(inline_context(context_text)?)),
    }
}

/// The trimmed inline context, when there is no context file: a check that waits on nothing.
pub fn inline_context(context_text: Option<&ContextText>) -> Result<&str, RelayError> {
    let too_large = |size: usize| RelayError::TooLarge {
        subject: Subject::ContextText,
        size: size as u64,
        max: MAX_CONTEXT_FILE_BYTES,
    };
    let text = match context_text {
        None => return Ok(""),
        Some(ContextText::Oversized(size)) => return Err(too_large(*size)),
        Some(ContextText::Text(text)) => js_trim(text),
    };
    if text.len() > MAX_CONTEXT_FILE_BYTES {
        return Err(too_large(text.len()));
    }
    Ok(text)
}

fn unreadable(path: &str) -> impl Fn(std::io::Error) -> RelayError + '_ {
    move |e| RelayError::ContextFileUnreadable(format!("{e}: {path}"))
}

/// Opens a regular file without ever blocking: `O_NONBLOCK` (opening a FIFO for reading would
/// wait for a writer), then the opened file's own type is checked, so a FIFO or a device put in
/// place after the `stat` is refused too.
fn open_regular(path: &str) -> Result<File, RelayError> {
    crate::bounded_text::open_regular(path.as_ref())
        .map_err(unreadable(path))?
        .ok_or_else(|| RelayError::ContextNotAFile(path.to_string()))
}

/// Files of `/proc/<pid>/` that hold a process's secrets: its environment (API keys) and memory.
const PROCESS_SECRETS: [&str; 2] = ["environ", "mem"];

/// Refuses a file that is a process's environment or memory (`/proc/self/environ`, through any
/// symbolic link): sent as context, its keys would go to a model provider. Judged by what was
/// opened (the descriptor's own path), so a link swapped after a check cannot slip one through.
fn refuse_process_secrets(file: &File, path: &str) -> Result<(), RelayError> {
    let Some(opened) = opened_path(file) else {
        return Ok(());
    };
    let is_secret = opened.starts_with("/proc/")
        && opened
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| PROCESS_SECRETS.contains(&name));
    if is_secret {
        return Err(RelayError::ContextFileRefused {
            path: path.to_string(),
            why: "it is a process's environment or memory, which is never sent".into(),
        });
    }
    Ok(())
}

/// The path of what `file` is open on; only Linux has `/proc`, so elsewhere there is nothing to
/// refuse.
#[cfg(target_os = "linux")]
fn opened_path(file: &File) -> Option<std::path::PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

#[cfg(not(target_os = "linux"))]
fn opened_path(_file: &File) -> Option<std::path::PathBuf> {
    None
}

/// Reads a regular file through a bounded buffer: a 50 MB file costs 200 KB of memory.
/// The type is checked before opening, so a FIFO or a device is refused without opening it.
async fn read_context_file(path: &str, deadline: &Deadline) -> Result<String, RelayFailure> {
    deadline
        .check()
        .map_err(|stop| deadline.failure(stop, READING))?;
    let metadata =
        std::fs::metadata(path).map_err(|_| RelayError::ContextFileMissing(path.to_string()))?;
    if !metadata.is_file() {
        return Err(RelayError::ContextNotAFile(path.to_string()).into());
    }
    let file = open_regular(path)?;
    refuse_process_secrets(&file, path)?;
    let text = read_bounded_until(file, MAX_CONTEXT_FILE_BYTES, deadline)
        .await
        .map_err(|stopped| match stopped {
            ReadStopped::Io(e) => unreadable(path)(e).into(),
            ReadStopped::Deadline(stop) => deadline.failure(stop, READING),
        })?;
    Ok(text.within(Subject::ContextFile, MAX_CONTEXT_FILE_BYTES)?)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::deadline::Timeout;

    fn temp_file(bytes: &[u8]) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("ctx.txt");
        std::fs::write(&path, bytes).expect("write");
        (dir, path.to_string_lossy().into_owned())
    }

    fn deadline(seconds: f64) -> Deadline {
        let timeout = Timeout::from_seconds(seconds).expect("valid timeout");
        Deadline::starting_now(timeout, CancellationToken::new())
    }

    async fn resolve(
        file: Option<&str>,
        text: Option<&str>,
        cwd: &str,
    ) -> Result<String, RelayFailure> {
        let text = text.map(ContextText::from);
        resolve_context(file, text.as_ref(), cwd, &deadline(60.0))
            .await
            .map(Cow::into_owned)
    }

    fn relay_error(err: RelayError) -> Result<String, RelayFailure> {
        Err(RelayFailure::Relay(err))
    }

    fn message(result: Result<String, RelayFailure>) -> String {
        match result {
            Err(RelayFailure::Relay(err)) => err.to_string(),
            other => panic!("expected a RelayError, got {other:?}"),
        }
    }

    /// A text the addon measured over the limit holds only its size, and is refused with it; it
    /// still conflicts with a context file (it is not blank).
    /// A process's environment or memory is refused, named directly, through `self`, or through a
    /// link in a repository; other `/proc` files are read as before.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_processs_environment_or_memory_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let link = dir.path().join("notes.txt");
        std::os::unix::fs::symlink("/proc/self/environ", &link).expect("symlink");
        let pid = std::process::id();
        let link = link.to_string_lossy().into_owned();
        for file in [
            "/proc/self/environ".to_string(),
            format!("/proc/{pid}/environ"),
            "/proc/thread-self/environ".to_string(),
            "/proc/self/mem".to_string(),
            link,
        ] {
            let result = resolve(Some(&file), None, "/").await;
            let Err(RelayFailure::Relay(err)) = result else {
                panic!("{file}: expected a refusal, got {result:?}");
            };
            assert_eq!(err.code(), "ERR_CONTEXT_FILE", "{file}");
            assert_eq!(
                err.to_string(),
                format!("Context file refused: it is a process's environment or memory, which is never sent: {file}")
            );
        }
        assert!(resolve(Some("/proc/self/status"), None, "/").await.is_ok());
    }

    #[tokio::test]
    async fn a_text_measured_over_the_limit_is_refused_with_its_size() {
        let size = MAX_CONTEXT_FILE_BYTES + 7;
        let measured = ContextText::Oversized(size);
        let too_large = RelayError::TooLarge {
            subject: Subject::ContextText,
            size: size as u64,
            max: MAX_CONTEXT_FILE_BYTES,
        };
        assert_eq!(inline_context(Some(&measured)), Err(too_large.clone()));
        // Whatever the size: the variant never stands for a text that was let through.
        assert!(inline_context(Some(&ContextText::Oversized(3))).is_err());
        let minute = deadline(60.0);
        assert_eq!(
            resolve_context(None, Some(&measured), "/", &minute)
                .await
                .map(Cow::into_owned),
            relay_error(too_large)
        );
        assert_eq!(
            resolve_context(Some("/does/not/exist"), Some(&measured), "/", &minute)
                .await
                .map(Cow::into_owned),
            relay_error(RelayError::ContextConflict)
        );
    }

    #[tokio::test]
    async fn conflict_is_checked_before_the_file_is_opened() {
        let err = resolve(Some("/does/not/exist"), Some(" x "), "/").await;
        assert_eq!(err, relay_error(RelayError::ContextConflict));
        // Blank text does not conflict.
        let (_dir, path) = temp_file(b"file text\n");
        assert_eq!(
            resolve(Some(&path), Some("  \n"), "/").await,
            Ok("file text".into())
        );
        // An empty file name is absent for this check, as in the original, then resolved.
        let cwd = tempfile::tempdir().expect("dir");
        let cwd = cwd.path().to_string_lossy().into_owned();
        assert_eq!(
            resolve(Some(""), Some("x"), &cwd).await,
            relay_error(RelayError::ContextNotAFile(cwd.clone()))
        );
    }

    #[tokio::test]
    async fn file_errors() {
        let missing = if cfg!(windows) {
            r"\nowhere\missing.txt"
        } else {
            "/nowhere/missing.txt"
        };
        assert_eq!(
            resolve(Some("missing.txt"), None, "/nowhere").await,
            relay_error(RelayError::ContextFileMissing(missing.into()))
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let dir_path = dir.path().to_string_lossy().into_owned();
        assert_eq!(
            resolve(Some(&dir_path), None, "/").await,
            relay_error(RelayError::ContextNotAFile(dir_path.clone()))
        );
        #[cfg(unix)]
        assert_eq!(
            resolve(Some("/dev/zero"), None, "/").await,
            relay_error(RelayError::ContextNotAFile("/dev/zero".into()))
        );
    }

    #[tokio::test]
    async fn limits_at_the_boundary_and_one_over() {
        let exact = "c".repeat(MAX_CONTEXT_FILE_BYTES);
        assert_eq!(
            resolve(None, Some(&exact), "/").await.map(|t| t.len()),
            Ok(exact.len())
        );
        let over = format!(" {exact}c ");
        assert_eq!(
            message(resolve(None, Some(&over), "/").await),
            "Context text is too large (200001 bytes; max 200000 bytes)"
        );
        let (_dir, path) = temp_file(format!("\n{exact}\n").as_bytes());
        assert_eq!(
            resolve(Some(&path), None, "/").await.map(|t| t.len()),
            Ok(exact.len())
        );
        let (_dir2, path2) = temp_file(over.as_bytes());
        assert_eq!(
            message(resolve(Some(&path2), None, "/").await),
            "Context file is too large (200001 bytes; max 200000 bytes)"
        );
    }

    #[tokio::test]
    async fn a_bom_is_trimmed_and_invalid_utf8_is_replaced() {
        let (_dir, path) = temp_file(b"\xEF\xBB\xBFhello \xFF");
        assert_eq!(
            resolve(Some(&path), None, "/").await,
            Ok("hello \u{FFFD}".into())
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_put_in_place_after_the_stat_is_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("temp dir");
        let fifo = dir.path().join("ctx.fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(status.success());
        let fifo = fifo.to_string_lossy().into_owned();
        // What `read_context_file` does once the `stat` said "a regular file".
        assert_eq!(
            open_regular(&fifo).err(),
            Some(RelayError::ContextNotAFile(fifo.clone()))
        );
    }

    /// A 64 GiB sparse file: counted to its exact size, it would take minutes.
    fn sparse_file() -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("sparse");
        let file = File::create(&path).expect("create");
        file.set_len(64 << 30).expect("truncate -s 64G");
        (dir, path.to_string_lossy().into_owned())
    }

    #[tokio::test]
    async fn reading_stops_at_the_deadline() {
        let (_dir, path) = sparse_file();
        let started = Instant::now();
        let result = resolve_context(Some(&path), None, "/", &deadline(0.3))
            .await
            .map(Cow::into_owned);
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(
            message(result),
            "Relay timed out after 0.3s while reading the context file"
        );
    }

    #[tokio::test]
    async fn reading_stops_when_the_call_is_cancelled() {
        let (_dir, path) = sparse_file();
        let cancel = CancellationToken::new();
        let timeout = Timeout::from_seconds(600.0).expect("valid timeout");
        let deadline = Deadline::starting_now(timeout, cancel.clone());
        let canceller = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        };
        // One thread: the read must yield for the canceller to run at all.
        let (result, ()) = tokio::join!(
            resolve_context(Some(&path), None, "/", &deadline),
            canceller
        );
        assert_eq!(result, Err(RelayFailure::Aborted));
    }
}
