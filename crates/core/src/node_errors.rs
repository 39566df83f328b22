//! OS errors in Node's words, where the original relay's text came from Node (docs/CONTRACT.md
//! §7): `EISDIR: illegal operation on a directory, read`, `EACCES: permission denied, open
//! '<path>'` (libuv's code and message, then the system call, and for `open` the path), so a
//! drop-in caller that matched the original's messages still matches.

use std::io;

/// libuv's code and message for the errors a file read meets; `None` for the rest.
fn libuv_words(err: &io::Error) -> Option<(&'static str, &'static str)> {
    #[cfg(unix)]
    if let Some(errno) = err.raw_os_error() {
        let words = match errno {
            libc::EACCES => ("EACCES", "permission denied"),
            libc::EPERM => ("EPERM", "operation not permitted"),
            libc::ENOENT => ("ENOENT", "no such file or directory"),
            libc::EISDIR => ("EISDIR", "illegal operation on a directory"),
            libc::ENOTDIR => ("ENOTDIR", "not a directory"),
            libc::EINVAL => ("EINVAL", "invalid argument"),
            libc::EIO => ("EIO", "i/o error"),
            libc::ELOOP => ("ELOOP", "too many symbolic links encountered"),
            libc::ENAMETOOLONG => ("ENAMETOOLONG", "name too long"),
            libc::EMFILE => ("EMFILE", "too many open files"),
            libc::ENFILE => ("ENFILE", "file table overflow"),
            libc::ENOMEM => ("ENOMEM", "not enough memory"),
            libc::EAGAIN => ("EAGAIN", "resource temporarily unavailable"),
            libc::EBUSY => ("EBUSY", "resource busy or locked"),
            libc::ENXIO => ("ENXIO", "no such device or address"),
            libc::ETXTBSY => ("ETXTBSY", "text file is busy"),
            _ => return None,
        };
        return Some(words);
    }
    // Windows' own codes: libuv maps the common ones to these names.
    Some(match err.kind() {
        io::ErrorKind::NotFound => ("ENOENT", "no such file or directory"),
        io::ErrorKind::PermissionDenied => ("EPERM", "operation not permitted"),
        io::ErrorKind::IsADirectory => ("EISDIR", "illegal operation on a directory"),
        io::ErrorKind::NotADirectory => ("ENOTDIR", "not a directory"),
        io::ErrorKind::InvalidInput => ("EINVAL", "invalid argument"),
        _ => return None,
    })
}

/// Errors Node reports from `open` (with the path), rather than from the `read` after it.
fn fails_open(code: &str) -> bool {
    matches!(
        code,
        "EACCES" | "EPERM" | "ENOENT" | "ENOTDIR" | "ELOOP" | "ENAMETOOLONG" | "EMFILE" | "ENFILE"
    )
}

/// What Node's `fs.readFile(path)` says for `err` (its `error.message`); Rust's words when libuv
/// has none for it.
pub fn read_file_error(err: &io::Error, path: &str) -> String {
    match libuv_words(err) {
        Some((code, words)) if fails_open(code) => format!("{code}: {words}, open '{path}'"),
        Some((code, words)) => format!("{code}: {words}, read"),
        None => err.to_string(),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn says_what_node_says() {
        let of = |errno| io::Error::from_raw_os_error(errno);
        assert_eq!(
            read_file_error(&of(libc::EISDIR), "/r/out"),
            "EISDIR: illegal operation on a directory, read"
        );
        assert_eq!(
            read_file_error(&of(libc::EACCES), "/r/out"),
            "EACCES: permission denied, open '/r/out'"
        );
        assert_eq!(
            read_file_error(&of(libc::EINVAL), "/r/out"),
            "EINVAL: invalid argument, read"
        );
        // No libuv words: Rust's.
        assert_eq!(
            read_file_error(&of(libc::EDOM), "/r/out"),
            of(libc::EDOM).to_string()
        );
    }
}
