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

/// Whether JavaScript counts a parsed JSON value as true (`if (value)`).
pub fn js_truthy(value: &serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|n| n != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// JavaScript's `String(value)` of a parsed JSON value: `[object Object]`, arrays joined by
/// commas (with `null` as nothing), numbers as JavaScript prints them.
pub fn js_string(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), js_number),
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Null => String::new(),
                item => js_string(item),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".to_string(),
    }
}

/// `String(n)` for a finite number, as JavaScript prints it in messages (`0.5`, `600`, `1e+300`):
/// ECMAScript's Number::toString, by the maintained `ryu-js` crate.
pub fn js_number(n: f64) -> String {
    ryu_js::Buffer::new().format(n).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_json_values_as_javascript_string_does() {
        let cases = [
            (r#"{"code":1}"#, "[object Object]", true),
            (r#"[1,[2,null],"a",{}]"#, "1,2,,a,[object Object]", true),
            ("[]", "", true),
            ("1e21", "1e+21", true),
            ("0.5", "0.5", true),
            ("0", "0", false),
            ("-0.0", "0", false),
            ("true", "true", true),
            ("false", "false", false),
            ("null", "null", false),
            (r#""""#, "", false),
            (r#""boom""#, "boom", true),
        ];
        for (json, printed, truthy) in cases {
            let value: serde_json::Value = serde_json::from_str(json).expect("valid JSON");
            assert_eq!(js_string(&value), printed, "{json}");
            assert_eq!(js_truthy(&value), truthy, "{json}");
        }
    }

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
