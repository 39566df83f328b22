//! The supervisor's command line, read from the `argc` and `argv` its C `main` receives. It
//! defines its own `main` (`no_main`), and there std's `args_os` is empty on musl targets:
//! glibc passes `argc` and `argv` to the initialisers std reads them from, musl does not.

use std::ffi::{CStr, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// The arguments after the program's name, copied: `argv[1]` to `argv[argc - 1]`. A null
/// `argv` or an `argc` below 2 gives none, and a null entry ends the list early: nothing at or
/// past `argv[argc]` is ever read.
///
/// # Safety
///
/// `argv` is null, or each of its first `argc` entries up to the first null one is readable and
/// points at a NUL-terminated string, as C's `main` receives them.
pub unsafe fn after_program_name(
    argc: libc::c_int,
    argv: *const *const libc::c_char,
) -> Vec<OsString> {
    if argv.is_null() {
        return Vec::new();
    }
    let count = usize::try_from(argc).unwrap_or(0);
    (0..count)
        // SAFETY: `index < argc`, and no entry after a null one is read (`map_while` is lazy).
        .map(|index| unsafe { *argv.add(index) })
        .map_while(|arg| {
            // SAFETY: a non-null entry before `argv[argc]` points at a NUL-terminated string.
            (!arg.is_null()).then(|| OsStr::from_bytes(unsafe { CStr::from_ptr(arg) }.to_bytes()))
        })
        .skip(1)
        .map(OsStr::to_os_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::ptr::null;

    /// `argv` for `args` (which outlive it), with the terminating null pointer C adds.
    fn c_argv(args: &[CString]) -> Vec<*const libc::c_char> {
        args.iter()
            .map(|arg| arg.as_ptr())
            .chain(std::iter::once(null()))
            .collect()
    }

    fn c_strings(args: &[&[u8]]) -> Vec<CString> {
        args.iter()
            .map(|arg| CString::new(*arg).expect("no NUL inside"))
            .collect()
    }

    fn os(args: &[&[u8]]) -> Vec<OsString> {
        args.iter()
            .map(|arg| OsStr::from_bytes(arg).to_os_string())
            .collect()
    }

    #[test]
    fn reads_the_arguments_after_the_name_byte_for_byte() {
        let args = c_strings(&[b"supervisor", b"--", b"/bin/echo", b"caf\xc3\xa9 \xff", b""]);
        let argv = c_argv(&args);
        // SAFETY: `argv` holds `args.len()` live strings and a null pointer.
        let read = unsafe { after_program_name(args.len() as libc::c_int, argv.as_ptr()) };
        assert_eq!(read, os(&[b"--", b"/bin/echo", b"caf\xc3\xa9 \xff", b""]));
    }

    #[test]
    fn reads_no_further_than_argc() {
        let args = c_strings(&[b"supervisor", b"one", b"two", b"three"]);
        let argv = c_argv(&args);
        // SAFETY: as above; `argc` is smaller than the array.
        let read = unsafe { after_program_name(2, argv.as_ptr()) };
        assert_eq!(read, os(&[b"one"]));
    }

    #[test]
    fn a_null_entry_ends_the_list() {
        let args = c_strings(&[b"supervisor", b"one"]);
        let argv = c_argv(&args);
        // SAFETY: `argv` has 3 entries, the last null; with `argc` 5 nothing past it is read.
        let read = unsafe { after_program_name(5, argv.as_ptr()) };
        assert_eq!(read, os(&[b"one"]));
        // A null name: nothing after it is read either.
        let no_name = [null(), null()];
        // SAFETY: the first entry is null, so only it is read.
        assert!(unsafe { after_program_name(9, no_name.as_ptr()) }.is_empty());
    }

    #[test]
    fn no_argv_or_no_argc_gives_no_arguments() {
        let args = c_strings(&[b"supervisor", b"one"]);
        let argv = c_argv(&args);
        for argc in [libc::c_int::MIN, -1, 0, 1] {
            // SAFETY: `argv` is valid; `argc` covers at most its name.
            assert!(unsafe { after_program_name(argc, argv.as_ptr()) }.is_empty());
        }
        // SAFETY: a null `argv` is never read.
        assert!(unsafe { after_program_name(3, null()) }.is_empty());
    }
}
