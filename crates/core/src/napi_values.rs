//! The core's own types as napi takes them from JS, for the addon (the `napi` feature): napi's
//! conversions must be implemented where the type is defined.
//!
//! `contextText` is measured before it is copied, so a text over the limit is refused with its
//! size without being copied into Rust first (BENCHMARKS.md, "Context over the limit, measured
//! in place").

use std::ptr;

use crate::context::ContextText;
use crate::limits::MAX_CONTEXT_FILE_BYTES;
use napi::bindgen_prelude::{FromNapiValue, TypeName, ValidateNapiValue, ValueType};
use napi::{check_status, sys, Result};

impl TypeName for ContextText {
    fn type_name() -> &'static str {
        "String"
    }

    fn value_type() -> ValueType {
        ValueType::String
    }
}

impl ValidateNapiValue for ContextText {}

impl FromNapiValue for ContextText {
    unsafe fn from_napi_value(env: sys::napi_env, mut value: sys::napi_value) -> Result<Self> {
        let mut bytes = unsafe { utf8_len(env, value) }?;
        if bytes > MAX_CONTEXT_FILE_BYTES {
            // The limit counts the text after `trim()`; JS's own trim returns the same string
            // when there is nothing to trim, and only then is its size the one measured.
            let trimmed = unsafe { trim(env, value) }?;
            if !unsafe { same(env, value, trimmed) }? {
                bytes = unsafe { utf8_len(env, trimmed) }?;
            }
            if bytes > MAX_CONTEXT_FILE_BYTES {
                return Ok(ContextText::Oversized(bytes));
            }
            // Under the limit once trimmed: the trimmed text is copied, so no copy is ever
            // larger than the limit, however much whitespace surrounds it.
            value = trimmed;
        }
        // Copied with the length already counted: `String`'s own conversion would count it again.
        let mut text = vec![0u8; bytes + 1];
        let mut written = 0;
        check_status!(
            unsafe {
                sys::napi_get_value_string_utf8(
                    env,
                    value,
                    text.as_mut_ptr().cast(),
                    text.len(),
                    &mut written,
                )
            },
            "options.contextText could not be read"
        )?;
        text.truncate(written);
        // N-API writes UTF-8 (a lone surrogate becomes U+FFFD), as for any string option.
        let text = String::from_utf8(text)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        Ok(ContextText::Text(text))
    }
}

/// The string's length in UTF-8, without copying it.
unsafe fn utf8_len(env: sys::napi_env, value: sys::napi_value) -> Result<usize> {
    let mut bytes = 0;
    check_status!(
        unsafe { sys::napi_get_value_string_utf8(env, value, ptr::null_mut(), 0, &mut bytes) },
        "options.contextText must be a string"
    )?;
    Ok(bytes)
}

/// `value.trim()`.
unsafe fn trim(env: sys::napi_env, value: sys::napi_value) -> Result<sys::napi_value> {
    let mut method = ptr::null_mut();
    check_status!(
        unsafe { sys::napi_get_named_property(env, value, c"trim".as_ptr(), &mut method) },
        "options.contextText could not be trimmed"
    )?;
    let mut trimmed = ptr::null_mut();
    check_status!(
        unsafe { sys::napi_call_function(env, value, method, 0, ptr::null(), &mut trimmed) },
        "options.contextText could not be trimmed"
    )?;
    Ok(trimmed)
}

/// `a === b`.
unsafe fn same(env: sys::napi_env, a: sys::napi_value, b: sys::napi_value) -> Result<bool> {
    let mut equal = false;
    check_status!(
        unsafe { sys::napi_strict_equals(env, a, b, &mut equal) },
        "options.contextText could not be compared"
    )?;
    Ok(equal)
}
