//! Property-based tests of the text rules the relay must share with JavaScript and the Ollama CLI:
//! the bounded, lossy, JS-trim-aware reader, the prompt envelope (docs/CONTRACT.md §6), `String(n)`
//! for numbers and `OLLAMA_HOST` parsing (docs/BACKENDS.md §5).
//!
//! Every expectation comes from a reference model written here, from the specs, without calling
//! the code under test. Case counts are kept small so the file runs in seconds in a debug build,
//! and failing cases are never persisted to files in the repository.

use std::io::{self, Read};
use std::net::Ipv6Addr;

use proptest::prelude::*;
use relay_core::backends::ollama_host::{self, OllamaHost};
use relay_core::bounded_text::{self, BoundedText, Measured};
use relay_core::deadline::Deadline;
use relay_core::deadline::Timeout;
use relay_core::envelope::{build_envelope, check_prompt_size, Attached};
use relay_core::errors::Subject;
use relay_core::text::js_number;

/// `read_bounded_until` to the end, under a deadline too far away to matter.
fn read_whole(reader: impl Read, limit: usize) -> Measured {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let far = Timeout::from_seconds(3600.0).expect("valid timeout");
    runtime.block_on(async {
        let deadline = Deadline::starting_now(far, Default::default());
        bounded_text::read_bounded_until(reader, limit, &deadline)
            .await
            .expect("no real error")
    })
}

/// Modest case counts unless `PROPTEST_CASES` asks for more, and no `proptest-regressions/`
/// files written beside the tests.
fn config(cases: u32) -> ProptestConfig {
    let default = ProptestConfig::default();
    ProptestConfig {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            default.cases
        } else {
            cases
        },
        failure_persistence: None,
        ..default
    }
}

// ---------------------------------------------------------------------------------------------
// Reference models
// ---------------------------------------------------------------------------------------------

/// What ECMAScript's `String.prototype.trim` removes, listed from the spec: WhiteSpace (TAB, VT,
/// FF, ZWNBSP and every `Space_Separator`) and LineTerminator (LF, CR, LS, PS). Not U+0085.
const JS_TRIMMED: &[char] = &[
    '\u{0009}', '\u{000B}', '\u{000C}', '\u{FEFF}', // TAB VT FF ZWNBSP
    '\u{0020}', '\u{00A0}', '\u{1680}', // Zs
    '\u{2000}', '\u{2001}', '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}', '\u{2006}', '\u{2007}',
    '\u{2008}', '\u{2009}', '\u{200A}', '\u{202F}', '\u{205F}', '\u{3000}', // Zs
    '\u{000A}', '\u{000D}', '\u{2028}', '\u{2029}', // LF CR LS PS
];

/// Unicode `White_Space`, what Go's `strings.TrimSpace` removes (the Ollama CLI's trim).
const GO_SPACE: &[char] = &[
    '\u{0009}', '\u{000A}', '\u{000B}', '\u{000C}', '\u{000D}', '\u{0020}', '\u{0085}', '\u{00A0}',
    '\u{1680}', '\u{2000}', '\u{2001}', '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}', '\u{2006}',
    '\u{2007}', '\u{2008}', '\u{2009}', '\u{200A}', '\u{2028}', '\u{2029}', '\u{202F}', '\u{205F}',
    '\u{3000}',
];

fn is_js_trimmed(c: char) -> bool {
    JS_TRIMMED.contains(&c)
}

/// `String.prototype.trim`, char by char.
fn ref_js_trim(text: &str) -> &str {
    let start = text
        .char_indices()
        .find(|&(_, c)| !is_js_trimmed(c))
        .map_or(text.len(), |(i, _)| i);
    let end = text
        .char_indices()
        .rev()
        .find(|&(_, c)| !is_js_trimmed(c))
        .map_or(start, |(i, c)| i + c.len_utf8());
    &text[start..end.max(start)]
}

/// The string Node holds for `bytes` once decoded (one U+FFFD per maximal invalid sequence),
/// then trimmed the JavaScript way.
fn ref_decoded_trimmed(bytes: &[u8]) -> String {
    ref_js_trim(&String::from_utf8_lossy(bytes)).to_string()
}

/// The longest prefix of `text` of at most `limit` bytes that ends on a character boundary.
fn ref_prefix(text: &str, limit: usize) -> &str {
    let mut end = 0;
    for (i, c) in text.char_indices() {
        if i + c.len_utf8() > limit {
            break;
        }
        end = i + c.len_utf8();
    }
    &text[..end]
}

/// The envelope as docs/CONTRACT.md §6 lays it out: the fixed lines, the trimmed request, then each
/// optional section (only when its trimmed body is non-empty) after one empty line; the whole text
/// trimmed.
fn ref_envelope(repo: &str, request: &str, context: &str, diff: &str) -> String {
    let mut text = String::new();
    text.push_str(
        "You are helping another coding agent by reviewing or advising on work in a local repository.\n",
    );
    text.push_str("Repository path: ");
    text.push_str(repo);
    text.push('\n');
    text.push_str("Use the repository files for context when needed.\n");
    text.push_str("Respond with concise, actionable feedback.\n");
    text.push('\n');
    text.push_str("Request:\n");
    text.push_str(ref_js_trim(request));
    for (heading, body) in [("Additional Context:", context), ("Git Diff:", diff)] {
        let body = ref_js_trim(body);
        if !body.is_empty() {
            text.push_str("\n\n");
            text.push_str(heading);
            text.push('\n');
            text.push_str(body);
        }
    }
    ref_js_trim(&text).to_string()
}

/// ECMAScript `Number::toString` step 5 onwards for a positive number `0.d1…dk × 10^n`, where
/// `digits` has no trailing zero.
fn es_layout(digits: &str, n: i32) -> String {
    let k = digits.len() as i32;
    if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        format!("{int}.{frac}")
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let sign = if e < 0 { '-' } else { '+' };
        let (first, rest) = digits.split_at(1);
        if rest.is_empty() {
            format!("{first}e{sign}{}", e.abs())
        } else {
            format!("{first}.{rest}e{sign}{}", e.abs())
        }
    }
}

/// `c × 10^q` as `(digits without trailing zeros, n)` with the value `0.digits × 10^n`.
fn normalized(c: u128, q: i32) -> (String, i32) {
    let all = c.to_string();
    let n = all.len() as i32 + q;
    (all.trim_end_matches('0').to_string(), n)
}

/// The digits ECMAScript picks for a positive finite `x`: the fewest digits `k` whose decimal
/// reads back as `x`, the closest to `x` among those. At each `k` the closest `k`-digit decimal
/// is the correctly rounded one (`{:.*e}`, Rust's exact mode, ties to even); when it does not
/// read back, its neighbour one unit away on the far side can (the rounding interval of a power
/// of two is lopsided), and nothing further away can.
fn ref_shortest(x: f64) -> (String, i32) {
    for k in 1..=17usize {
        let rounded = format!("{:.*e}", k - 1, x);
        let (mantissa, exponent) = rounded.split_once('e').expect("exponent");
        let exponent: i32 = exponent.parse().expect("exponent digits");
        let s: u128 = mantissa.replace('.', "").parse().expect("mantissa digits");
        let q = exponent - (k as i32 - 1);
        for c in [s, s - 1, s + 1] {
            if c > 0 && format!("{c}e{q}").parse::<f64>() == Ok(x) {
                return normalized(c, q);
            }
        }
    }
    unreachable!("17 digits always read back: {x:e}")
}

/// JavaScript's `String(x)` for a finite number.
fn ref_js_number(x: f64) -> String {
    if x == 0.0 {
        return "0".to_string(); // +0 and -0 alike
    }
    if x < 0.0 {
        return format!("-{}", ref_js_number(-x));
    }
    let (digits, n) = ref_shortest(x);
    es_layout(&digits, n)
}

/// `String(x)` for an integral `x` below 1e21 in magnitude, in integer arithmetic only: the
/// fewest leading digits of `x`, rounded down or up, that convert back to `x` (the closer one,
/// the even one on a tie), padded with zeros.
fn ref_js_integer(x: f64) -> String {
    let v = x.abs() as u128;
    let sign = if x < 0.0 { "-" } else { "" };
    if v == 0 {
        return "0".to_string();
    }
    let len = v.to_string().len() as u32;
    for k in 1..=len {
        let p = 10u128.pow(len - k);
        let lo = v / p * p;
        let hi = lo + p;
        let lo_ok = lo as f64 == x.abs();
        let hi_ok = hi as f64 == x.abs();
        let pick = match (lo_ok, hi_ok) {
            (true, true) if v - lo < hi - v => lo,
            (true, true) if v - lo > hi - v => hi,
            (true, true) if (lo / p).is_multiple_of(2) => lo,
            (true, true) => hi,
            (true, false) => lo,
            (false, true) => hi,
            (false, false) => continue,
        };
        return format!("{sign}{pick}");
    }
    unreachable!("all digits read back")
}

/// What `clean` in the Ollama CLI leaves of an unquoted value: nothing to strip at either end.
fn unpadded(value: &str) -> &str {
    value.trim_matches(|c: char| GO_SPACE.contains(&c) || c == '"' || c == '\'')
}

/// Go's `strconv.ParseInt(port, 10, 32)` (an optional sign, then ASCII digits) followed by the
/// CLI's 0..=65535 check; `None` where the CLI falls back to the default port.
fn ref_go_port(port: &str) -> Option<u16> {
    let (negative, digits) = match port.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, port.strip_prefix('+').unwrap_or(port)),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let value: i128 = digits.parse().ok()?;
    let value = if negative { -value } else { value };
    u16::try_from(value).ok()
}

fn default_port(scheme: Option<&str>) -> u16 {
    match scheme {
        Some("http") => 80,
        Some("https") => 443,
        _ => 11434,
    }
}

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

/// Multi-byte characters JavaScript trims, plus U+0085 (which it does not) and others it keeps.
const MULTIBYTE: &[char] = &[
    '\u{00A0}', '\u{1680}', '\u{2000}', '\u{200A}', '\u{2028}', '\u{2029}', '\u{202F}', '\u{205F}',
    '\u{3000}', '\u{FEFF}', '\u{0085}', '\u{200B}', 'é', '€', '😀', '\u{FFFD}',
];

/// One piece of a byte stream: ASCII text or white space, multi-byte characters, stray bytes,
/// or a multi-byte character cut short.
fn byte_piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => "[a-z0-9.]{1,4}".prop_map(String::into_bytes),
        3 => prop::sample::select(&b" \t\n\r\x0b\x0c"[..]).prop_map(|b| vec![b]),
        4 => prop::sample::select(MULTIBYTE).prop_map(|c| c.to_string().into_bytes()),
        1 => any::<char>().prop_map(|c| c.to_string().into_bytes()),
        2 => (0x80u8..=0xFF).prop_map(|b| vec![b]),
        2 => (prop::sample::select(MULTIBYTE), 1usize..=3).prop_map(|(c, cut)| {
            let bytes = c.to_string().into_bytes();
            bytes[..cut.min(bytes.len() - 1).max(1)].to_vec()
        }),
    ]
}

fn byte_stream() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => prop::collection::vec(byte_piece(), 0..32).prop_map(|pieces| pieces.concat()),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

/// A limit chosen near the reference size most of the time, anywhere otherwise.
fn pick_limit(reference_len: usize, near: Option<i8>, anywhere: usize) -> usize {
    match near {
        Some(delta) => (reference_len as i64 + i64::from(delta)).max(0) as usize,
        None => anywhere,
    }
}

/// Hands out `data` in reads of the given sizes (0 = an `Interrupted` error), then the rest.
struct ChunkedReader {
    data: Vec<u8>,
    at: usize,
    sizes: std::vec::IntoIter<usize>,
}

impl Read for ChunkedReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let rest = self.data.len() - self.at;
        let n = match self.sizes.next() {
            Some(0) => return Err(io::ErrorKind::Interrupted.into()),
            Some(size) => size.min(rest),
            None => rest,
        }
        .min(buf.len());
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Text for envelope parts: mostly white space and line breaks (JS-trimmed or not), some words.
fn envelope_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => "[a-zA-Z:/ ]{1,6}",
        3 => prop::sample::select(&[" ", "\n", "\r\n", "\t", "\u{00A0}", "\u{3000}", "\u{FEFF}",
            "\u{2028}", "\u{0085}", "\u{200B}"][..]).prop_map(str::to_string),
        1 => any::<String>(),
    ];
    prop::collection::vec(piece, 0..8).prop_map(|pieces| pieces.concat())
}

/// Text without a `:`, so a section heading can only come from the envelope itself.
fn plain_text() -> impl Strategy<Value = String> {
    "[a-z \n\t\u{00A0}\u{3000}\u{0085}]{0,12}"
}

fn hostname() -> impl Strategy<Value = String> {
    "[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,5}[a-z0-9])?){0,3}"
        .prop_filter("the CLI's special case", |h| h != "ollama.com")
}

fn ipv4() -> impl Strategy<Value = String> {
    any::<[u8; 4]>().prop_map(|[a, b, c, d]| format!("{a}.{b}.{c}.{d}"))
}

/// A host as written with a port: (as written, as it must come back).
fn host_with_port() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        3 => hostname().prop_map(|h| (h.clone(), h)),
        1 => ipv4().prop_map(|h| (h.clone(), h)),
        1 => any::<[u16; 8]>().prop_map(|groups| {
            let ip = Ipv6Addr::from(groups).to_string();
            (format!("[{ip}]"), ip)
        }),
    ]
}

fn scheme() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("http".to_string()),
        Just("https".to_string()),
        "[a-z][a-z0-9+.-]{0,6}",
    ]
}

/// Path segments, and the slashes written before and after them.
fn path() -> impl Strategy<Value = (Vec<String>, usize, usize)> {
    (
        prop::collection::vec("[A-Za-z0-9._~-]{1,6}", 0..4),
        0usize..3,
        0usize..3,
    )
}

fn written_path(segments: &[String], before: usize, after: usize) -> String {
    if segments.is_empty() {
        return "/".repeat(before + after);
    }
    format!(
        "{}{}{}",
        "/".repeat(before.max(1)),
        segments.join("/"),
        "/".repeat(after)
    )
}

/// Any value, and values made of the characters that matter to the parser.
fn host_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-f0-9:/\\[\\]. \"'+%-]{0,24}",
        "(https?|ftp|)://[a-f0-9:/\\[\\]. \"'+%-]{0,20}",
    ]
}

fn padding() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(GO_SPACE), 0..3)
        .prop_map(|chars| chars.into_iter().collect())
}

fn quote() -> impl Strategy<Value = &'static str> {
    prop::sample::select(&["", "\"", "'"][..])
}

fn finite_f64() -> impl Strategy<Value = f64> {
    prop::num::f64::POSITIVE
        | prop::num::f64::NEGATIVE
        | prop::num::f64::NORMAL
        | prop::num::f64::SUBNORMAL
        | prop::num::f64::ZERO
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(256))]

    /// Pushed in arbitrary chunks, a stream measures as Node decodes and trims it; what is kept
    /// is the whole trimmed text when it fits, else the longest prefix that fits (end-trimmed).
    #[test]
    fn bounded_text_matches_node_decode_and_js_trim(
        bytes in byte_stream(),
        sizes in prop::collection::vec(0usize..=7, 0..16),
        near in prop::option::weighted(0.7, -3i8..=3),
        anywhere in 0usize..80,
    ) {
        let reference = ref_decoded_trimmed(&bytes);
        let limit = pick_limit(reference.len(), near, anywhere);

        let mut reader = BoundedText::new(limit);
        let mut rest = &bytes[..];
        for size in &sizes {
            let (piece, after) = rest.split_at((*size).min(rest.len()));
            reader.push(piece);
            rest = after;
        }
        reader.push(rest);
        let measured = reader.finish();

        prop_assert_eq!(measured.trimmed_len, reference.len() as u64);
        prop_assert!(measured.text.len() <= limit);
        if reference.len() <= limit {
            prop_assert_eq!(&measured.text, &reference);
            prop_assert!(measured.is_complete());
        } else {
            prop_assert!(!measured.is_complete());
            prop_assert_eq!(
                measured.text.as_str(),
                ref_prefix(&reference, limit).trim_end_matches(is_js_trimmed)
            );
        }

        let whole = bounded_text::measure(&bytes, limit);
        prop_assert_eq!(&whole, &measured);

        match measured.within(Subject::GitDiff, limit) {
            Ok(text) => {
                prop_assert!(reference.len() <= limit);
                prop_assert_eq!(text, reference);
            }
            Err(e) => {
                prop_assert!(reference.len() > limit);
                prop_assert_eq!(
                    e.to_string(),
                    format!("Git diff is too large ({} bytes; max {limit} bytes)", reference.len())
                );
            }
        }
    }

    /// `read_bounded_until` over a reader that hands out arbitrary short reads (and `Interrupted`
    /// errors, which it must retry) measures like the whole stream at once.
    #[test]
    fn read_bounded_matches_node_decode_and_js_trim(
        bytes in byte_stream(),
        sizes in prop::collection::vec(0usize..=9, 0..24),
        near in prop::option::weighted(0.7, -3i8..=3),
        anywhere in 0usize..80,
    ) {
        let reference = ref_decoded_trimmed(&bytes);
        let limit = pick_limit(reference.len(), near, anywhere);
        let reader = ChunkedReader { data: bytes, at: 0, sizes: sizes.into_iter() };
        let measured = read_whole(reader, limit);
        prop_assert_eq!(measured.trimmed_len, reference.len() as u64);
        prop_assert!(measured.text.len() <= limit);
        if reference.len() <= limit {
            prop_assert_eq!(&measured.text, &reference);
        }
        prop_assert_eq!(measured.within(Subject::ContextFile, limit).is_err(), reference.len() > limit);
    }

    /// The envelope is the docs/CONTRACT.md §6 text, byte for byte.
    #[test]
    fn envelope_is_built_by_spec_6(
        repo in envelope_text(),
        request in envelope_text(),
        context in envelope_text(),
        diff in envelope_text(),
    ) {
        let envelope = build_envelope(&repo, &request, Attached { context: &context, diff: &diff, coverage: "" });
        prop_assert_eq!(&envelope, &ref_envelope(&repo, &request, &context, &diff));
        prop_assert!(envelope.starts_with("You are helping another coding agent"));
        let first = envelope.chars().next().expect("never empty");
        let last = envelope.chars().next_back().expect("never empty");
        prop_assert!(!is_js_trimmed(first) && !is_js_trimmed(last));
    }

    /// Each optional section is there exactly when its trimmed body is non-empty, and after the
    /// request, in order; the request line follows its heading.
    #[test]
    fn envelope_sections_appear_iff_their_body_is_not_blank(
        repo in plain_text(),
        request in plain_text(),
        context in plain_text(),
        diff in plain_text(),
    ) {
        let envelope = build_envelope(&repo, &request, Attached { context: &context, diff: &diff, coverage: "" });
        let has_context = !ref_js_trim(&context).is_empty();
        let has_diff = !ref_js_trim(&diff).is_empty();
        let context_at = envelope.find("\n\nAdditional Context:\n");
        let diff_at = envelope.find("\n\nGit Diff:\n");
        prop_assert_eq!(context_at.is_some(), has_context);
        prop_assert_eq!(diff_at.is_some(), has_diff);
        if let (Some(c), Some(d)) = (context_at, diff_at) {
            prop_assert!(c < d);
        }
        let request_at = envelope.find("\nRequest:\n").map(|i| i + "\nRequest:\n".len());
        let request_at = request_at.or_else(|| {
            // A blank request alone: the trailing "\n" went with the final trim.
            envelope.ends_with("\nRequest:").then_some(envelope.len())
        });
        prop_assert!(request_at.is_some());
        let body = &envelope[request_at.unwrap_or_default()..];
        prop_assert!(body.starts_with(ref_js_trim(&request)));
        let last_section = if has_diff {
            Some(["\n\nGit Diff:\n", ref_js_trim(&diff)].concat())
        } else if has_context {
            Some(["\n\nAdditional Context:\n", ref_js_trim(&context)].concat())
        } else {
            None
        };
        if let Some(last_section) = last_section {
            prop_assert!(envelope.ends_with(&last_section));
        }
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// `check_prompt_size` refuses exactly the texts over 500,000 bytes, with their exact size.
    #[test]
    fn prompt_size_limit_is_500000_bytes(
        prefix in "\\PC{0,16}",
        target in 499_980usize..=500_020,
    ) {
        let mut text = prefix;
        while text.len() < target {
            text.push('x');
        }
        match check_prompt_size(&text, 500_000) {
            Ok(()) => prop_assert!(text.len() <= 500_000),
            Err(e) => {
                prop_assert!(text.len() > 500_000);
                prop_assert_eq!(
                    e.to_string(),
                    format!("Relay prompt is too large ({} bytes; max 500000 bytes)", text.len())
                );
            }
        }
    }

    /// Around the limit with a real envelope: a diff sized so the envelope lands near 500,000.
    #[test]
    fn envelope_size_check_at_the_boundary(
        repo in "/[a-z/]{0,12}",
        request in envelope_text(),
        context in envelope_text(),
        offset in -8i64..=8,
    ) {
        let head = ref_envelope(&repo, &request, &context, "d").len() as i64;
        let filler = (500_000 - head + offset).max(0) as usize;
        let diff = format!("\n d{} \n", "x".repeat(filler));
        let envelope = build_envelope(&repo, &request, Attached { context: &context, diff: &diff, coverage: "" });
        prop_assert_eq!(envelope.len() as i64, head + filler as i64);
        prop_assert_eq!(check_prompt_size(&envelope, 500_000).is_err(), envelope.len() > 500_000);
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Any finite number reads back as itself, in exponent notation exactly when JavaScript
    /// switches to it (below 1e-6 or from 1e21 on).
    #[test]
    fn js_number_reads_back_and_switches_notation_where_javascript_does(n in finite_f64()) {
        let printed = js_number(n);
        prop_assert_eq!(printed.parse::<f64>(), Ok(n));
        let exponential = n != 0.0 && !(1e-6..1e21).contains(&n.abs());
        prop_assert_eq!(printed.contains('e'), exponential);
        prop_assert!(!printed.contains("e-0") && !printed.contains("e+0"));
    }

    /// The full `Number::toString`, including its tie rule: when two shortest decimals are
    /// equally close (1 + 2^-17 = 1.00000762939453125 lies halfway between …312 and …313),
    /// JavaScript takes the even one; Rust's `{}` / `{:e}` round the tie up.
    #[test]
    fn js_number_is_javascripts_number_to_string(
        n in prop_oneof![
            // Any number; numbers with a short binary fraction, where ties live; and
            // 2^50 ≤ |n| < 2^51 with a quarter, halfway between two 17-digit decimals when .25.
            1 => finite_f64(),
            1 => (0i32..53, 1i32..=52, -60i32..=60)
                .prop_map(|(k, j, s)| (2f64.powi(k) + 2f64.powi(-j)) * 2f64.powi(s)),
            1 => ((1u64 << 51)..(1 << 52), any::<bool>())
                .prop_map(|(m, negative)| (2 * m + 1) as f64 / 4.0 * if negative { -1.0 } else { 1.0 }),
        ],
    ) {
        prop_assert_eq!(js_number(n), ref_js_number(n));
    }

    /// Integers below 1e21, up to 2^70 so the ones past 2^53 need rounding to shortest digits.
    #[test]
    fn js_number_prints_integers_below_1e21(
        mantissa in 0u64..(1 << 53),
        shift in 0i32..=17,
        negative in any::<bool>(),
    ) {
        let n = mantissa as f64 * 2f64.powi(shift) * if negative { -1.0 } else { 1.0 };
        prop_assume!(n.abs() < 1e21);
        prop_assert_eq!(js_number(n), ref_js_integer(n));
    }

    /// Numbers written with at most 15 significant digits (which a double always keeps, so they
    /// are their own shortest form), with the decimal point placed near the 1e21 and 1e-6
    /// switches to exponent notation, and anywhere between 1e-300 and 1e305.
    #[test]
    fn js_number_prints_short_decimals_exactly(
        digits in 1u64..1_000_000_000_000_000,
        point in prop_oneof![-9i32..=-3, 18i32..=24, -299i32..=305],
        negative in any::<bool>(),
    ) {
        let (significant, _) = normalized(u128::from(digits), 0);
        let written = format!("0.{significant}e{point}");
        let n: f64 = written.parse().expect("a number");
        let n = if negative { -n } else { n };
        let sign = if negative { "-" } else { "" };
        prop_assert_eq!(js_number(n), format!("{sign}{}", es_layout(&significant, point)));
    }

    /// Whatever the value, parsing never panics and gives a usable base URL: a non-empty host, a
    /// path without edge slashes, and no trailing `/`.
    #[test]
    fn ollama_host_parses_anything(value in host_value()) {
        let parsed = OllamaHost::parse(&value);
        prop_assert!(!parsed.host.is_empty());
        prop_assert!(!parsed.path.starts_with('/') && !parsed.path.ends_with('/'));
        let url = parsed.base_url();
        prop_assert!(!url.ends_with('/'), "{:?} -> {}", value, url);
        let scheme_prefix = format!("{}://", parsed.scheme);
        prop_assert!(url.starts_with(&scheme_prefix));
        let from_env = ollama_host::base_url(Some(&value));
        prop_assert!(!from_env.ends_with('/'));
    }

    /// `host:port`, optionally after a scheme and before a path: each part comes back as written.
    #[test]
    fn ollama_host_keeps_written_parts(
        (written_host, host) in host_with_port(),
        port in any::<u16>(),
        zeros in 0usize..3,
        scheme in prop::option::of(scheme()),
        (segments, before, after) in path(),
    ) {
        let mut value = String::new();
        if let Some(scheme) = &scheme {
            value.push_str(scheme);
            value.push_str("://");
        }
        value.push_str(&format!("{written_host}:{}{port}", "0".repeat(zeros)));
        value.push_str(&written_path(&segments, before, after));
        let parsed = OllamaHost::parse(&value);
        let expected = OllamaHost {
            scheme: scheme.unwrap_or_else(|| "http".to_string()),
            host,
            port,
            path: segments.join("/"),
            userinfo: None,
        };
        prop_assert_eq!(parsed, expected);
    }

    /// Without a port: the scheme's default port (80, 443, else 11434), the rest as written.
    #[test]
    fn ollama_host_defaults_the_port(
        host in prop_oneof![3 => hostname(), 1 => ipv4()],
        scheme in prop::option::of(scheme()),
        (segments, before, after) in path(),
    ) {
        let written_scheme = scheme.as_deref().map(|s| format!("{s}://")).unwrap_or_default();
        let value = format!("{written_scheme}{host}{}", written_path(&segments, before, after));
        let parsed = OllamaHost::parse(&value);
        let expected = OllamaHost {
            port: default_port(scheme.as_deref()),
            scheme: scheme.unwrap_or_else(|| "http".to_string()),
            host,
            path: segments.join("/"),
            userinfo: None,
        };
        prop_assert_eq!(parsed, expected);
    }

    /// A port Go's `ParseInt` rejects, or outside 0..=65535, gives the scheme's default port.
    #[test]
    fn ollama_host_reads_the_port_like_go(
        host in hostname(),
        port in prop_oneof![
            "[+-]?0{0,12}[0-9]{1,8}",
            "[+-]{0,2}[0-9]{0,3}[a-z_.+-]{1,2}[0-9]{0,3}",
        ],
        scheme in prop::option::of(scheme()),
    ) {
        let written_scheme = scheme.as_deref().map(|s| format!("{s}://")).unwrap_or_default();
        let parsed = OllamaHost::parse(&format!("{written_scheme}{host}:{port}"));
        prop_assert_eq!(parsed.port, ref_go_port(&port).unwrap_or(default_port(scheme.as_deref())));
        prop_assert_eq!(parsed.host, host);
    }

    /// Quotes and white space around a value change nothing, as the CLI strips them.
    #[test]
    fn ollama_host_ignores_quotes_and_padding(
        raw in prop_oneof![host_value(), "[a-z0-9.]{1,12}(:[0-9]{1,5})?(/[a-z]{1,4})?"],
        outer in (padding(), padding()),
        quotes in (quote(), quote()),
        inner in (padding(), padding()),
    ) {
        let value = unpadded(&raw);
        let wrapped = format!(
            "{}{}{}{value}{}{}{}",
            outer.0, quotes.0, inner.0, inner.1, quotes.1, outer.1
        );
        prop_assert_eq!(OllamaHost::parse(&wrapped), OllamaHost::parse(value));
        prop_assert_eq!(ollama_host::base_url(Some(&wrapped)), ollama_host::base_url(Some(value)));
        if value.is_empty() {
            prop_assert_eq!(ollama_host::base_url(Some(&wrapped)), "http://localhost:11434");
        }
    }
}
