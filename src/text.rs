//! Text rules as JavaScript applies them, so sizes, trims and sort orders match the old
//! implementation byte for byte.

use std::cmp::Ordering;

/// What `String.prototype.trim` removes: ECMAScript WhiteSpace and LineTerminator.
/// Unlike `char::is_whitespace` this includes U+FEFF and excludes U+0085.
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'
            | '\u{000A}'
            | '\u{000B}'
            | '\u{000C}'
            | '\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// `String.prototype.trim`.
pub fn js_trim(text: &str) -> &str {
    text.trim_matches(is_js_whitespace)
}

/// Byte length of the whitespace run that ends `text`.
pub fn trailing_whitespace_len(text: &str) -> usize {
    text.len() - text.trim_end_matches(is_js_whitespace).len()
}

/// The order of JavaScript's default `Array.prototype.sort` (UTF-16 code units).
pub fn js_string_order(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Sorts names as `[...names].sort()` would in JavaScript.
pub fn js_sorted<I, S>(names: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut sorted: Vec<String> = names.into_iter().map(Into::into).collect();
    sorted.sort_by(|a, b| js_string_order(a, b));
    sorted
}

/// `String(n)` for a finite number, as JavaScript prints it in messages (`0.5`, `600`, `1e+300`).
pub fn js_number(n: f64) -> String {
    if n == 0.0 {
        return "0".into();
    }
    let sign = if n < 0.0 { "-" } else { "" };
    let (digits, point) = shortest_digits(n.abs());
    format!("{sign}{}", layout(&digits, point))
}

/// The fewest significant digits that read back as `magnitude`, and where the decimal point
/// goes (`digits` × 10^(point − len)). Among equally short candidates JavaScript takes the one
/// closest to the exact value, ties to even: the correctly rounded decimal of that length, unless
/// it does not read back (just below a power of two the gap to the next double is halved), when
/// the shortest form Rust found is the only candidate.
fn shortest_digits(magnitude: f64) -> (String, i32) {
    let shortest = format!("{magnitude:e}");
    let mantissa = shortest.split('e').next().unwrap_or("");
    let length = mantissa.chars().filter(char::is_ascii_digit).count().max(1);
    let rounded = format!("{:.*e}", length - 1, magnitude);
    let chosen = if rounded.parse::<f64>() == Ok(magnitude) {
        rounded
    } else {
        shortest
    };
    let (mantissa, exponent) = chosen.split_once('e').unwrap_or((&chosen, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exponent.parse::<i32>().unwrap_or(0) + 1)
}

/// ECMAScript's Number::toString layout of `digits` with the decimal point at `point`.
fn layout(digits: &str, point: i32) -> String {
    let length = digits.len() as i32;
    match point {
        p if length <= p && p <= 21 => format!("{digits}{}", "0".repeat((p - length) as usize)),
        p if 0 < p && p <= 21 => format!("{}.{}", &digits[..p as usize], &digits[p as usize..]),
        p if -6 < p && p <= 0 => format!("0.{}{digits}", "0".repeat((-p) as usize)),
        p => {
            let exponent = p - 1;
            let sign = if exponent < 0 { '-' } else { '+' };
            let (first, rest) = digits.split_at(digits.len().min(1));
            let fraction = if rest.is_empty() {
                String::new()
            } else {
                format!(".{rest}")
            };
            format!("{first}{fraction}e{sign}{}", exponent.abs())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_what_javascript_trims() {
        assert_eq!(js_trim("\u{FEFF}\u{3000} hi \u{2028}\r\n"), "hi");
        assert_eq!(js_trim("\u{0085}x\u{0085}"), "\u{0085}x\u{0085}");
        assert_eq!(js_trim(" \t\n "), "");
        assert_eq!(trailing_whitespace_len("a\u{00A0} "), 3);
    }

    #[test]
    fn prints_numbers_like_javascript() {
        assert_eq!(js_number(600.0), "600");
        assert_eq!(js_number(0.5), "0.5");
        assert_eq!(js_number(1e300), "1e+300");
        assert_eq!(js_number(1e21), "1e+21");
        assert_eq!(js_number(1e20), "100000000000000000000");
        assert_eq!(js_number(1.5e-7), "1.5e-7");
        assert_eq!(js_number(0.000001), "0.000001");
        assert_eq!(js_number(-0.0), "0");
        assert_eq!(js_number(-2.5e-9), "-2.5e-9");
        assert_eq!(js_number(123.456), "123.456");
        // Halfway between two 17-digit decimals: ECMAScript takes the even one.
        assert_eq!(js_number(1.0000076293945312), "1.0000076293945312");
        assert_eq!(js_number(2f64.powi(50) + 0.25), "1125899906842624.2");
        // A power of two: the even candidate would not read back.
        assert_eq!(js_number(2f64.powi(-24)), "5.960464477539063e-8");
    }

    #[test]
    fn sorts_by_utf16_code_units() {
        // By UTF-8 bytes U+FF5E would come first; in UTF-16 U+1F600 starts with 0xD83D < 0xFF5E.
        assert_eq!(
            js_sorted(["\u{FF5E}", "\u{1F600}", "b", "a"]),
            ["a", "b", "\u{1F600}", "\u{FF5E}"]
        );
    }
}
