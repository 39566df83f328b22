//! Stdout cut into lines as it arrives, for CLIs that print one JSON event per line. Lines end
//! at `\n`, a byte that never occurs inside a multi-byte UTF-8 character, so a character split
//! across reads is always whole in its line. A line longer than the limit keeps its first
//! `max_line` bytes (cut at a character boundary) and says how long it really was. A `\r`
//! before the `\n` is part of the line's end (Windows programs write `\r\n`), not of the line.

use std::collections::VecDeque;

/// One line of stdout, without its `\n` or `\r\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdoutLine {
    /// The line decoded as UTF-8 (an invalid sequence becomes U+FFFD), or its first bytes when
    /// it was cut.
    pub text: String,
    /// Bytes in the whole line as the process wrote it.
    pub len: u64,
    /// Whether the line was longer than the limit and `text` holds only its beginning.
    pub cut: bool,
}

/// Bytes kept of a line that cannot be a JSON event (it does not begin with `{`): such a line
/// is only told apart, its text is read from stdout's own bounded copy. Without this, a CLI
/// that floods stdout with one endless line would have it held up to `max_line`.
pub const PLAIN_LINE_KEEP: usize = 64 * 1024;

impl StdoutLine {
    /// At most the first `max` bytes of the text, never cutting a character: enough to tell
    /// what a line too long to parse is.
    pub fn head(&self, max: usize) -> &str {
        let mut end = self.text.len().min(max);
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        &self.text[..end]
    }
}

/// Cuts a byte stream into [`StdoutLine`]s, holding at most `max_line` bytes of a line that
/// begins with `{` and [`PLAIN_LINE_KEEP`] of any other.
#[derive(Debug)]
pub struct LineSplitter {
    max_line: usize,
    /// What the current line may keep, decided by its first byte.
    line_limit: usize,
    /// The current line's bytes, up to `max_line`.
    pending: Vec<u8>,
    /// Bytes the current line has had so far, kept or not.
    len: u64,
    /// Whether the current line's last byte so far is a `\r`.
    ends_with_cr: bool,
}

impl LineSplitter {
    pub fn new(max_line: usize) -> LineSplitter {
        LineSplitter {
            max_line,
            line_limit: max_line,
            pending: Vec::new(),
            len: 0,
            ends_with_cr: false,
        }
    }

    /// Takes the next bytes of the stream; every line they complete goes to `out`.
    pub fn push(&mut self, mut bytes: &[u8], out: &mut VecDeque<StdoutLine>) {
        while !bytes.is_empty() {
            let end = bytes.iter().position(|&b| b == b'\n');
            let piece = &bytes[..end.unwrap_or(bytes.len())];
            if self.len == 0 {
                if let Some(&first) = piece.first() {
                    self.line_limit = if first == b'{' {
                        self.max_line
                    } else {
                        self.max_line.min(PLAIN_LINE_KEEP)
                    };
                }
            }
            let room = self.line_limit.saturating_sub(self.pending.len());
            self.pending
                .extend_from_slice(&piece[..piece.len().min(room)]);
            self.len += piece.len() as u64;
            if let Some(&last) = piece.last() {
                self.ends_with_cr = last == b'\r';
            }
            match end {
                Some(end) => {
                    if std::mem::take(&mut self.ends_with_cr) {
                        self.drop_carriage_return();
                    }
                    out.push_back(self.take_line());
                    bytes = &bytes[end + 1..];
                }
                None => bytes = &[],
            }
        }
    }

    /// The last line, when the stream ended without a `\n` after it.
    pub fn finish(&mut self) -> Option<StdoutLine> {
        (self.len > 0).then(|| self.take_line())
    }

    /// The current line ends with `\r\n`: its `\r` is not the line's.
    fn drop_carriage_return(&mut self) {
        self.len = self.len.saturating_sub(1);
        if self.pending.len() as u64 > self.len {
            self.pending.pop();
        }
    }

    fn take_line(&mut self) -> StdoutLine {
        self.ends_with_cr = false;
        let bytes = std::mem::take(&mut self.pending);
        let len = std::mem::take(&mut self.len);
        let cut = len > bytes.len() as u64;
        let kept = if cut {
            // Drop a character the limit cut in two; an invalid sequence stays invalid.
            match std::str::from_utf8(&bytes) {
                Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
                _ => &bytes[..],
            }
        } else {
            &bytes[..]
        };
        StdoutLine {
            text: String::from_utf8_lossy(kept).into_owned(),
            len,
            cut,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(pieces: &[&[u8]], max_line: usize) -> Vec<StdoutLine> {
        let mut splitter = LineSplitter::new(max_line);
        let mut out = VecDeque::new();
        for piece in pieces {
            splitter.push(piece, &mut out);
        }
        out.extend(splitter.finish());
        out.into()
    }

    fn line(text: &str) -> StdoutLine {
        StdoutLine {
            text: text.into(),
            len: text.len() as u64,
            cut: false,
        }
    }

    #[test]
    fn lines_end_at_newlines_wherever_the_reads_fall() {
        let whole = split(&[b"one\ntwo\n\nthree"], 100);
        assert_eq!(whole, [line("one"), line("two"), line(""), line("three")]);
        let bytes = b"one\ntwo\n\nthree";
        for at in 0..bytes.len() {
            let (a, b) = bytes.split_at(at);
            assert_eq!(split(&[a, b], 100), whole, "split at {at}");
        }
        // One byte at a time.
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(split(&singles, 100), whole);
        assert_eq!(split(&[b"a\n"], 100), [line("a")]);
        assert_eq!(split(&[b""], 100), []);
    }

    #[test]
    fn a_character_split_across_reads_stays_whole() {
        let text = "a😀b\nünï\n";
        let bytes = text.as_bytes();
        for at in 0..bytes.len() {
            let (a, b) = bytes.split_at(at);
            assert_eq!(split(&[a, b], 100), [line("a😀b"), line("ünï")], "at {at}");
        }
    }

    #[test]
    fn a_long_line_keeps_its_beginning_and_its_true_length() {
        let lines = split(&[&[b'x'; 250], b"\nnext\n"], 100);
        assert_eq!(
            lines,
            [
                StdoutLine {
                    text: "x".repeat(100),
                    len: 250,
                    cut: true
                },
                line("next")
            ]
        );
        // Cut inside a 4-byte character: the character goes, never half of it.
        let lines = split(&["ab😀cd".as_bytes()], 4);
        assert_eq!(
            lines,
            [StdoutLine {
                text: "ab".into(),
                len: 8,
                cut: true
            }]
        );
        // Exactly the limit is not cut.
        assert_eq!(split(&[b"abcd\n"], 4), [line("abcd")]);
    }

    #[test]
    fn a_line_that_cannot_be_an_event_keeps_only_its_beginning() {
        let limit = 4 * PLAIN_LINE_KEEP;
        let plain = vec![b'a'; 3 * PLAIN_LINE_KEEP];
        let mut event = b"{\"x\":\"".to_vec();
        event.resize(3 * PLAIN_LINE_KEEP, b'y');
        // Each line arrives in small reads, as a flood does.
        let pieces: Vec<&[u8]> = plain
            .chunks(1000)
            .chain([&b"\n"[..]])
            .chain(event.chunks(1000))
            .collect();
        let lines = split(&pieces, limit);
        assert_eq!(lines.len(), 2);
        assert_eq!(
            (lines[0].text.len(), lines[0].len, lines[0].cut),
            (PLAIN_LINE_KEEP, plain.len() as u64, true)
        );
        // A line that may be an event is kept up to the full limit.
        assert_eq!((lines[1].text.len(), lines[1].cut), (event.len(), false));
    }

    #[test]
    fn a_head_never_cuts_a_character() {
        let mut text = "x".repeat(4094);
        text.push_str("😀 and more");
        let line = StdoutLine {
            len: text.len() as u64,
            text,
            cut: true,
        };
        assert_eq!(line.head(4096).len(), 4094);
        assert_eq!(line.head(4098).len(), 4098);
        assert_eq!(line.head(1 << 20), line.text);
    }

    #[test]
    fn a_crlf_line_end_is_not_part_of_the_line() {
        let bytes = b"one\r\n\r\ntwo\r\nthree\r";
        let whole = split(&[bytes], 100);
        let three_with_cr = StdoutLine {
            text: "three\r".into(),
            len: 6,
            cut: false,
        };
        // A `\r` not followed by `\n` stays (the last line, which ended with the stream).
        assert_eq!(whole, [line("one"), line(""), line("two"), three_with_cr]);
        for at in 0..bytes.len() {
            let (a, b) = bytes.split_at(at);
            assert_eq!(split(&[a, b], 100), whole, "split at {at}");
        }
        assert_eq!(split(&[b"a\rb\n"], 100), [line("a\rb")]);
        // The limit counts the line without its `\r`.
        assert_eq!(split(&[b"abcd\r\n"], 4), [line("abcd")]);
        let cut = split(&[b"abcdef\r\n"], 4);
        assert_eq!(
            (cut[0].text.as_str(), cut[0].len, cut[0].cut),
            ("abcd", 6, true)
        );
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let lines = split(&[b"a\xffb\n"], 100);
        assert_eq!(lines[0].text, "a\u{FFFD}b");
        assert_eq!((lines[0].len, lines[0].cut), (3, false));
    }
}
