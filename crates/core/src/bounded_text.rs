//! A byte stream read as JavaScript would see it once decoded and trimmed, holding at most a
//! fixed number of bytes: past the limit the text is counted, not kept.
//!
//! Decoding is lossy like Node's `'utf8'` decoder (each maximal invalid sequence becomes
//! U+FFFD), so the counted size is the UTF-8 byte length of the string JavaScript would hold.

use std::io::Read;

use crate::deadline::{Deadline, Stop};
use crate::errors::{RelayError, Subject};
use crate::text::{is_js_whitespace, trailing_whitespace_len};

const REPLACEMENT: &str = "\u{FFFD}";
const READ_CHUNK: usize = 64 * 1024;

#[derive(Debug)]
pub struct BoundedText {
    limit: usize,
    /// Text after the leading whitespace, up to `limit` bytes; always a prefix of it.
    kept: String,
    /// `true` once a character did not fit: nothing more is kept, so `kept` stays a prefix.
    kept_is_full: bool,
    /// Decoded bytes after the leading whitespace.
    counted: u64,
    /// Decoded bytes of the whitespace run at the current end.
    trailing_whitespace: u64,
    in_leading_whitespace: bool,
    /// An incomplete UTF-8 sequence carried to the next chunk.
    pending: Vec<u8>,
}

/// The trimmed text, or as much of it as fitted. The default is no text at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Measured {
    /// The trimmed text, cut to the limit when it did not fit.
    pub text: String,
    /// Exact UTF-8 byte length of the whole trimmed text.
    pub trimmed_len: u64,
}

impl Measured {
    pub fn is_complete(&self) -> bool {
        self.trimmed_len == self.text.len() as u64
    }

    /// The whole trimmed text, or `ERR_TOO_LARGE` for `subject` with its exact size.
    pub fn within(self, subject: Subject, max: usize) -> Result<String, RelayError> {
        if self.trimmed_len > max as u64 || !self.is_complete() {
            return Err(RelayError::TooLarge {
                subject,
                size: self.trimmed_len,
                max,
            });
        }
        Ok(self.text)
    }
}

impl BoundedText {
    pub fn new(limit: usize) -> Self {
        BoundedText {
            limit,
            kept: String::new(),
            kept_is_full: false,
            counted: 0,
            trailing_whitespace: 0,
            in_leading_whitespace: true,
            pending: Vec::new(),
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        if self.pending.is_empty() {
            self.decode(bytes);
        } else {
            let mut joined = std::mem::take(&mut self.pending);
            joined.extend_from_slice(bytes);
            self.decode(&joined);
        }
    }

    pub fn finish(mut self) -> Measured {
        if !self.pending.is_empty() {
            self.pending.clear();
            self.push_str(REPLACEMENT);
        }
        let trimmed_len = self.counted - self.trailing_whitespace;
        let mut text = self.kept;
        if let Ok(len) = usize::try_from(trimmed_len) {
            if len < text.len() && text.is_char_boundary(len) {
                text.truncate(len);
            }
        }
        if text.len() as u64 > trimmed_len {
            // Only reachable if the invariants above broke; never hand out untrimmed text.
            text.clear();
        }
        let trimmed_end = text.len() - trailing_whitespace_len(&text);
        text.truncate(trimmed_end);
        Measured { text, trimmed_len }
    }

    fn decode(&mut self, bytes: &[u8]) {
        // Output is nearly always valid UTF-8, which `from_utf8` checks many bytes at a time;
        // the walk below, sequence by sequence, is for what follows the first invalid byte.
        let rest = match std::str::from_utf8(bytes) {
            Ok(text) => return self.push_str(text),
            Err(e) => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                self.push_str(std::str::from_utf8(valid).unwrap_or_default());
                rest
            }
        };
        let mut chunks = rest.utf8_chunks().peekable();
        while let Some(chunk) = chunks.next() {
            self.push_str(chunk.valid());
            let invalid = chunk.invalid();
            if invalid.is_empty() {
                continue;
            }
            let is_last = chunks.peek().is_none();
            if is_last && is_truncated_sequence(invalid) {
                self.pending.extend_from_slice(invalid);
            } else {
                self.push_str(REPLACEMENT);
            }
        }
    }

    fn push_str(&mut self, text: &str) {
        let text = if self.in_leading_whitespace {
            let rest = text.trim_start_matches(is_js_whitespace);
            if rest.is_empty() {
                return;
            }
            self.in_leading_whitespace = false;
            rest
        } else {
            text
        };
        self.counted += text.len() as u64;
        let trailing = trailing_whitespace_len(text);
        if trailing == text.len() {
            self.trailing_whitespace += trailing as u64;
        } else {
            self.trailing_whitespace = trailing as u64;
        }
        self.keep(text);
    }

    fn keep(&mut self, text: &str) {
        if self.kept_is_full {
            return;
        }
        let room = self.limit - self.kept.len();
        if text.len() <= room {
            self.kept.push_str(text);
            return;
        }
        let mut end = room;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.kept.push_str(&text[..end]);
        self.kept_is_full = true;
    }
}

/// A sequence cut off by the end of the chunk, which the next chunk may complete.
fn is_truncated_sequence(invalid: &[u8]) -> bool {
    matches!(std::str::from_utf8(invalid), Err(e) if e.error_len().is_none())
}

/// A file opened for [`read_bounded_until`]: never blocking on the open (`O_NONBLOCK`: a FIFO
/// would wait for a writer), and a regular file by the opened file's own type, so a FIFO or a
/// device put in place after any earlier look is refused too. `Ok(None)`: not a regular file.
/// (Windows has no FIFOs in its file system; the type check is the same.)
pub fn open_regular(path: &std::path::Path) -> std::io::Result<Option<std::fs::File>> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = match options.open(path) {
        Ok(file) => file,
        // Windows refuses to open a folder for reading ("Access denied"): not a regular file
        // either, and said so as on Unix rather than as a permission the user lacks.
        #[cfg(windows)]
        Err(e)
            if e.kind() == std::io::ErrorKind::PermissionDenied
                && std::fs::metadata(path).is_ok_and(|m| m.is_dir()) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    Ok(file.metadata()?.is_file().then_some(file))
}

/// Why [`read_bounded_until`] did not reach the end.
#[derive(Debug)]
pub enum ReadStopped {
    Io(std::io::Error),
    /// The deadline passed or the call was cancelled.
    Deadline(Stop),
}

/// Reads `reader` (a regular file: its reads do not wait long) to its end on the calling task,
/// keeping at most `limit` bytes of the trimmed text. Between chunks it checks the deadline and
/// yields, so a file that never ends (a `/proc` file, a 64 GiB sparse file) stops at the
/// deadline or the cancel, neither holds a thread nor starves the runtime.
pub async fn read_bounded_until(
    mut reader: impl Read,
    limit: usize,
    deadline: &Deadline,
) -> Result<Measured, ReadStopped> {
    let mut text = BoundedText::new(limit);
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        deadline.check().map_err(ReadStopped::Deadline)?;
        match reader.read(&mut chunk) {
            Ok(0) => return Ok(text.finish()),
            Ok(n) => text.push(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ReadStopped::Io(e)),
        }
        tokio::task::yield_now().await;
    }
}

/// Decodes a whole byte slice under a limit (convenience for tests and small inputs).
pub fn measure(bytes: &[u8], limit: usize) -> Measured {
    let mut text = BoundedText::new(limit);
    text.push(bytes);
    text.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::js_trim;

    fn measure_in_chunks(bytes: &[u8], limit: usize, chunk: usize) -> Measured {
        let mut text = BoundedText::new(limit);
        for piece in bytes.chunks(chunk) {
            text.push(piece);
        }
        text.finish()
    }

    #[test]
    fn trims_and_counts_like_javascript() {
        let m = measure(b"\n\n  hello world \r\n", 100);
        assert_eq!(m.text, "hello world");
        assert_eq!(m.trimmed_len, 11);
        assert!(m.is_complete());
    }

    #[test]
    fn counts_past_the_limit_without_keeping() {
        let m = measure(&[b'x'; 1000], 10);
        assert_eq!(m.trimmed_len, 1000);
        assert_eq!(m.text.len(), 10);
        assert!(m.within(Subject::GitDiff, 10).is_err());
    }

    #[test]
    fn long_trailing_whitespace_does_not_count() {
        let mut input = vec![b'a'; 10];
        input.extend(std::iter::repeat_n(b' ', 1000));
        let m = measure(&input, 10);
        assert_eq!(m.trimmed_len, 10);
        assert_eq!(m.within(Subject::GitDiff, 10).as_deref(), Ok("aaaaaaaaaa"));
    }

    #[test]
    fn leading_whitespace_is_never_kept() {
        let mut input = vec![b'\n'; 1000];
        input.extend_from_slice(b"diff");
        let m = measure(&input, 4);
        assert_eq!(m.within(Subject::GitDiff, 4).as_deref(), Ok("diff"));
    }

    #[test]
    fn invalid_utf8_counts_as_replacement_characters() {
        // Node: Buffer.byteLength(Buffer.from([0x61, 0xff, 0xe2, 0x82]).toString()) === 7
        let m = measure(&[0x61, 0xff, 0xe2, 0x82], 100);
        assert_eq!(m.text, "a\u{FFFD}\u{FFFD}");
        assert_eq!(m.trimmed_len, 7);
    }

    #[test]
    fn multibyte_characters_split_across_chunks_decode_whole() {
        let input = "\u{FEFF}é€😀 \u{3000}".as_bytes();
        for chunk in 1..input.len() {
            let m = measure_in_chunks(input, 100, chunk);
            assert_eq!(m.text, "é€😀", "chunk size {chunk}");
            assert_eq!(m.trimmed_len, 9);
        }
    }

    /// Valid text before and after invalid bytes, cut anywhere: the fast path for valid chunks
    /// and the walk after an invalid byte decode as one lossy decoding of the whole.
    #[test]
    fn chunks_mixing_valid_and_invalid_bytes_decode_as_the_whole() {
        let inputs: [&[u8]; 3] = [
            b"ab\xffcd\xe2\x82\xacef\xf0\x9f\x98gh",
            b"\xe2\x82\xac\xc3\xa9\xc3tail\xed\xa0\x80end",
            b"plain ascii, then \xf4\x90\x80\x80 and a split \xe2\x82",
        ];
        for input in inputs {
            let whole = String::from_utf8_lossy(input);
            for chunk in 1..=input.len() {
                let m = measure_in_chunks(input, 1000, chunk);
                assert_eq!(m.text, js_trim(&whole), "chunk size {chunk}");
                assert_eq!(m.trimmed_len, js_trim(&whole).len() as u64);
            }
        }
    }

    #[test]
    fn exact_boundary_and_one_over() {
        let at = measure(&[b'y'; 300], 300);
        assert_eq!(at.within(Subject::GitDiff, 300).map(|t| t.len()), Ok(300));
        let over = measure(&[b'y'; 301], 300).within(Subject::GitDiff, 300);
        assert_eq!(
            over.map_err(|e| e.to_string()),
            Err("Git diff is too large (301 bytes; max 300 bytes)".to_string())
        );
    }

    #[test]
    fn a_character_that_straddles_the_limit_is_not_kept_in_part() {
        let m = measure("ab€".as_bytes(), 3);
        assert_eq!(m.text, "ab");
        assert_eq!(m.trimmed_len, 5);
    }
}
