//! Reads the body of a successful `/api/chat` answer as it arrives, as `JSON.parse(await
//! res.text())` would read it, keeping only `error` and `message.content`: the content is
//! counted in full but held only up to the output limit, so the answer's exact size is known
//! without buffering the body.

use crate::bounded_text::{BoundedText, Measured};

/// Deeper nesting than this is refused as invalid JSON (the stack would be unbounded).
const MAX_DEPTH: usize = 1024;
/// Keys longer than the longest one we look for (`message`, `content`) need not be kept.
const KEY_BYTES: usize = 8;
/// Content is handed to the bounded text in pieces of about this size.
const FLUSH_BYTES: usize = 64 * 1024;
const REPLACEMENT: char = '\u{FFFD}';

/// The fields of the answer the backend uses.
#[derive(Debug, PartialEq)]
pub(crate) struct ChatReply {
    /// `error`, when it is a non-empty string (the only kind JavaScript's `if (data.error)`
    /// would act on that Ollama sends); kept up to the limit.
    pub error: Option<String>,
    /// `message.content`, when it is a string.
    pub content: Option<Measured>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InvalidJson;

/// Which object this is: the top-level one, the top-level `message`, or another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Root,
    Message,
    Other,
}

/// The member whose value comes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Error,
    Message,
    Content,
    Other,
}

#[derive(Debug, Clone, Copy)]
enum Frame {
    Object { role: Role, field: Field },
    Array,
}

/// Where the characters of the current string go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Key,
    Error,
    Content,
    Skip,
}

/// Position inside a number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Number {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
}

enum NumberStep {
    More(Number),
    /// The character is not part of the number, which is complete.
    End,
    Invalid,
}

impl Number {
    fn next(self, c: char) -> NumberStep {
        use Number::*;
        match (self, c) {
            (Minus, '0') => NumberStep::More(Zero),
            (Minus | Int, '1'..='9') | (Int, '0') => NumberStep::More(Int),
            (Zero | Int, '.') => NumberStep::More(Dot),
            (Dot | Frac, '0'..='9') => NumberStep::More(Frac),
            (Zero | Int | Frac, 'e' | 'E') => NumberStep::More(Exp),
            (Exp, '+' | '-') => NumberStep::More(ExpSign),
            (Exp | ExpSign | ExpDigits, '0'..='9') => NumberStep::More(ExpDigits),
            (Zero | Int | Frac | ExpDigits, _) => NumberStep::End,
            _ => NumberStep::Invalid,
        }
    }

    fn is_complete(self) -> bool {
        matches!(
            self,
            Number::Zero | Number::Int | Number::Frac | Number::ExpDigits
        )
    }
}

#[derive(Debug, Clone, Copy)]
enum State {
    Value,
    ValueOrArrayEnd,
    KeyOrObjectEnd,
    Key,
    Colon,
    AfterValue,
    Str(Target),
    Escape(Target),
    Unicode {
        target: Target,
        digits: u8,
        unit: u32,
    },
    Number(Number),
    /// The rest of `true`, `false` or `null`.
    Literal(&'static str),
    Done,
    Invalid,
}

pub(crate) struct ReplyScanner {
    limit: usize,
    state: State,
    stack: Vec<Frame>,
    /// An incomplete UTF-8 sequence carried to the next chunk.
    pending_utf8: Vec<u8>,
    at_start: bool,
    /// A `\uD800`–`\uDBFF` escape waiting for its low half.
    high_surrogate: Option<u32>,
    key: String,
    key_overflow: bool,
    error: Option<String>,
    content: Option<BoundedText>,
    content_buffer: String,
}

impl ReplyScanner {
    /// `limit`: bytes of `message.content` (and of `error`) kept.
    pub(crate) fn new(limit: usize) -> Self {
        ReplyScanner {
            limit,
            state: State::Value,
            stack: Vec::new(),
            pending_utf8: Vec::new(),
            at_start: true,
            high_surrogate: None,
            key: String::new(),
            key_overflow: false,
            error: None,
            content: None,
            content_buffer: String::new(),
        }
    }

    /// Feeds the next bytes of the body; `Err` as soon as it cannot be JSON any more.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<(), InvalidJson> {
        if self.pending_utf8.is_empty() {
            self.decode(bytes);
        } else {
            let mut joined = std::mem::take(&mut self.pending_utf8);
            joined.extend_from_slice(bytes);
            self.decode(&joined);
        }
        match self.state {
            State::Invalid => Err(InvalidJson),
            _ => Ok(()),
        }
    }

    pub(crate) fn finish(mut self) -> Result<ChatReply, InvalidJson> {
        if !self.pending_utf8.is_empty() {
            self.pending_utf8.clear();
            self.char(REPLACEMENT);
        }
        if let State::Number(number) = self.state {
            if number.is_complete() && self.stack.is_empty() {
                self.state = State::Done;
            }
        }
        if !matches!(self.state, State::Done) {
            return Err(InvalidJson);
        }
        Ok(ChatReply {
            error: self.error.filter(|error| !error.is_empty()),
            content: self.content.map(BoundedText::finish),
        })
    }

    /// Lossy UTF-8 as fetch's `text()` decodes: each maximal invalid sequence is U+FFFD.
    fn decode(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.utf8_chunks().peekable();
        while let Some(chunk) = chunks.next() {
            for c in chunk.valid().chars() {
                self.char(c);
            }
            let invalid = chunk.invalid();
            if invalid.is_empty() {
                continue;
            }
            let cut_short =
                matches!(std::str::from_utf8(invalid), Err(e) if e.error_len().is_none());
            if chunks.peek().is_none() && cut_short {
                self.pending_utf8.extend_from_slice(invalid);
            } else {
                self.char(REPLACEMENT);
            }
        }
    }

    fn char(&mut self, c: char) {
        if std::mem::take(&mut self.at_start) && c == '\u{FEFF}' {
            // fetch's `text()` drops a byte order mark.
            return;
        }
        if let State::Number(number) = self.state {
            match number.next(c) {
                NumberStep::More(next) => {
                    self.state = State::Number(next);
                    return;
                }
                NumberStep::Invalid => {
                    self.state = State::Invalid;
                    return;
                }
                // `c` follows the number: read it in the state after a value.
                NumberStep::End => self.state = self.after_value_state(),
            }
        }
        let state = self.state;
        self.state = match state {
            State::Invalid => State::Invalid,
            State::Str(target) => self.in_string(target, c),
            State::Escape(target) => self.escape(target, c),
            State::Unicode {
                target,
                digits,
                unit,
            } => self.unicode(target, digits, unit, c),
            State::Literal(rest) => match rest.strip_prefix(c) {
                Some("") => self.after_value_state(),
                Some(rest) => State::Literal(rest),
                None => State::Invalid,
            },
            _ if matches!(c, ' ' | '\t' | '\n' | '\r') => state,
            State::Value => self.begin_value(c),
            State::ValueOrArrayEnd if c == ']' => self.end_container(),
            State::ValueOrArrayEnd => self.begin_value(c),
            State::KeyOrObjectEnd if c == '}' => self.end_container(),
            State::KeyOrObjectEnd | State::Key if c == '"' => {
                self.key.clear();
                self.key_overflow = false;
                State::Str(Target::Key)
            }
            State::Colon if c == ':' => State::Value,
            State::AfterValue => self.after_value(c),
            _ => State::Invalid,
        };
    }

    fn begin_value(&mut self, c: char) -> State {
        let field = match self.stack.last() {
            Some(Frame::Object { field, .. }) => *field,
            _ => Field::Other,
        };
        // A repeated member replaces the earlier one, as in `JSON.parse`.
        match field {
            Field::Error => self.error = None,
            Field::Message | Field::Content => self.content = None,
            Field::Other => {}
        }
        match c {
            '{' => {
                let role = match (self.stack.is_empty(), field) {
                    (true, _) => Role::Root,
                    (false, Field::Message) => Role::Message,
                    (false, _) => Role::Other,
                };
                self.open(Frame::Object {
                    role,
                    field: Field::Other,
                })
            }
            '[' => self.open(Frame::Array),
            '"' => State::Str(match field {
                Field::Error => {
                    self.error = Some(String::new());
                    Target::Error
                }
                Field::Content => {
                    self.content = Some(BoundedText::new(self.limit));
                    Target::Content
                }
                Field::Message | Field::Other => Target::Skip,
            }),
            '-' => State::Number(Number::Minus),
            '0' => State::Number(Number::Zero),
            '1'..='9' => State::Number(Number::Int),
            't' => State::Literal("rue"),
            'f' => State::Literal("alse"),
            'n' => State::Literal("ull"),
            _ => State::Invalid,
        }
    }

    fn open(&mut self, frame: Frame) -> State {
        if self.stack.len() >= MAX_DEPTH {
            return State::Invalid;
        }
        self.stack.push(frame);
        match frame {
            Frame::Object { .. } => State::KeyOrObjectEnd,
            Frame::Array => State::ValueOrArrayEnd,
        }
    }

    fn end_container(&mut self) -> State {
        self.stack.pop();
        self.after_value_state()
    }

    fn after_value_state(&self) -> State {
        if self.stack.is_empty() {
            State::Done
        } else {
            State::AfterValue
        }
    }

    fn after_value(&mut self, c: char) -> State {
        match (self.stack.last(), c) {
            (Some(Frame::Object { .. }), ',') => State::Key,
            (Some(Frame::Array), ',') => State::Value,
            (Some(Frame::Object { .. }), '}') | (Some(Frame::Array), ']') => self.end_container(),
            _ => State::Invalid,
        }
    }

    fn in_string(&mut self, target: Target, c: char) -> State {
        match c {
            '"' => {
                self.flush_surrogate(target);
                self.end_string(target)
            }
            '\\' => State::Escape(target),
            '\u{0}'..='\u{1F}' => State::Invalid,
            _ => {
                self.flush_surrogate(target);
                self.emit(target, c);
                State::Str(target)
            }
        }
    }

    fn escape(&mut self, target: Target, c: char) -> State {
        let decoded = match c {
            '"' | '\\' | '/' => c,
            'b' => '\u{8}',
            'f' => '\u{C}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'u' => {
                return State::Unicode {
                    target,
                    digits: 0,
                    unit: 0,
                }
            }
            _ => return State::Invalid,
        };
        self.flush_surrogate(target);
        self.emit(target, decoded);
        State::Str(target)
    }

    fn unicode(&mut self, target: Target, digits: u8, unit: u32, c: char) -> State {
        let Some(digit) = c.to_digit(16) else {
            return State::Invalid;
        };
        let unit = unit * 16 + digit;
        if digits < 3 {
            return State::Unicode {
                target,
                digits: digits + 1,
                unit,
            };
        }
        self.code_unit(target, unit);
        State::Str(target)
    }

    /// A `\uXXXX` escape. `JSON.parse` keeps lone surrogates; a Rust string cannot, so they
    /// become U+FFFD, which is also what Node makes of them when it encodes UTF-8 (and
    /// which has the same UTF-8 size, 3 bytes, that `Buffer.byteLength` counts for them).
    fn code_unit(&mut self, target: Target, unit: u32) {
        match unit {
            0xD800..=0xDBFF => {
                self.flush_surrogate(target);
                self.high_surrogate = Some(unit);
            }
            0xDC00..=0xDFFF => {
                let c = match self.high_surrogate.take() {
                    Some(high) => {
                        char::from_u32(0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00))
                            .unwrap_or(REPLACEMENT)
                    }
                    None => REPLACEMENT,
                };
                self.emit(target, c);
            }
            _ => {
                self.flush_surrogate(target);
                self.emit(target, char::from_u32(unit).unwrap_or(REPLACEMENT));
            }
        }
    }

    fn flush_surrogate(&mut self, target: Target) {
        if self.high_surrogate.take().is_some() {
            self.emit(target, REPLACEMENT);
        }
    }

    fn emit(&mut self, target: Target, c: char) {
        match target {
            Target::Key => {
                if self.key.len() + c.len_utf8() <= KEY_BYTES {
                    self.key.push(c);
                } else {
                    self.key_overflow = true;
                }
            }
            Target::Error => {
                if let Some(error) = &mut self.error {
                    if error.len() < self.limit {
                        error.push(c);
                    }
                }
            }
            Target::Content => {
                self.content_buffer.push(c);
                if self.content_buffer.len() >= FLUSH_BYTES {
                    self.flush_content();
                }
            }
            Target::Skip => {}
        }
    }

    fn flush_content(&mut self) {
        if let Some(content) = &mut self.content {
            content.push(self.content_buffer.as_bytes());
        }
        self.content_buffer.clear();
    }

    fn end_string(&mut self, target: Target) -> State {
        match target {
            Target::Key => {
                let named = if self.key_overflow {
                    ""
                } else {
                    self.key.as_str()
                };
                if let Some(Frame::Object { role, field }) = self.stack.last_mut() {
                    *field = match (*role, named) {
                        (Role::Root, "error") => Field::Error,
                        (Role::Root, "message") => Field::Message,
                        (Role::Message, "content") => Field::Content,
                        _ => Field::Other,
                    };
                }
                State::Colon
            }
            Target::Content => {
                self.flush_content();
                self.after_value_state()
            }
            Target::Error | Target::Skip => self.after_value_state(),
        }
    }
}
