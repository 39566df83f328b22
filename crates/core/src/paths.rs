//! `path.resolve` of Node: lexical, no symlinks followed, so messages name the path exactly as
//! the old implementation did. POSIX's rules on Unix, Windows's (`path.win32.resolve`: drive
//! letters, UNC shares, `\` and `/` both separators, `\` in the result) on Windows.

/// Resolves `path` against `cwd` (itself absolute) and normalises `.`, `..` and separators.
pub fn resolve(cwd: &str, path: &str) -> String {
    #[cfg(windows)]
    {
        resolve_win32(cwd, path)
    }
    #[cfg(not(windows))]
    {
        resolve_posix(cwd, path)
    }
}

#[cfg(any(not(windows), test))]
fn resolve_posix(cwd: &str, path: &str) -> String {
    let joined = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{cwd}/{path}")
    };
    format!("/{}", normalize(&joined, &['/']).join("/"))
}

/// The parts of `path` between `separators`, `.` and `..` applied (never above the root).
fn normalize<'a>(path: &'a str, separators: &[char]) -> Vec<&'a str> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split(separators) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts
}

/// How a Windows path begins.
#[cfg(any(windows, test))]
#[derive(Debug, PartialEq)]
enum Root<'a> {
    /// `C:\…`: absolute, its root written `C:\`.
    Drive(&'a str),
    /// `\\server\share\…`: absolute, its root written `\\server\share\`.
    Unc(String),
    /// `C:…`: relative to the current folder of drive `C:`.
    DriveRelative(&'a str),
    /// `\…`: from the root of the current drive.
    CurrentDrive,
    Relative,
}

#[cfg(any(windows, test))]
fn is_separator(c: char) -> bool {
    c == '\\' || c == '/'
}

/// `path`'s root and what follows it.
#[cfg(any(windows, test))]
fn split_root(path: &str) -> (Root<'_>, &str) {
    let bytes = path.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        let drive = &path[..2];
        let rest = &path[2..];
        return match rest.chars().next() {
            Some(c) if is_separator(c) => (Root::Drive(drive), rest),
            _ => (Root::DriveRelative(drive), rest),
        };
    }
    let mut chars = path.chars();
    match (chars.next(), chars.next()) {
        (Some(a), Some(b)) if is_separator(a) && is_separator(b) => {
            // `\\server\share`: both names present, else Node treats it as rooted.
            let mut names = path[2..].splitn(3, is_separator);
            if let (Some(server), Some(share)) = (names.next(), names.next()) {
                if !server.is_empty() && !share.is_empty() {
                    let rest = names.next().unwrap_or("");
                    return (Root::Unc(format!("\\\\{server}\\{share}\\")), rest);
                }
            }
            (Root::CurrentDrive, path)
        }
        (Some(a), _) if is_separator(a) => (Root::CurrentDrive, path),
        _ => (Root::Relative, path),
    }
}

#[cfg(any(windows, test))]
fn resolve_win32(cwd: &str, path: &str) -> String {
    let (cwd_root, cwd_rest) = match split_root(cwd) {
        (Root::Drive(drive), rest) => (format!("{drive}\\"), rest),
        (Root::Unc(root), rest) => (root, rest),
        // An absolute `cwd` always has one of the above; keep what there is.
        (_, rest) => (String::from("\\"), rest),
    };
    let (root, joined) = match split_root(path) {
        (Root::Drive(drive), rest) => (format!("{drive}\\"), rest.to_string()),
        (Root::Unc(root), rest) => (root, rest.to_string()),
        (Root::CurrentDrive, rest) => (cwd_root, rest.to_string()),
        (Root::DriveRelative(drive), rest)
            if cwd_root.eq_ignore_ascii_case(&format!("{drive}\\")) =>
        {
            (cwd_root, format!("{cwd_rest}\\{rest}"))
        }
        // Another drive's current folder is not known here: its root stands in for it.
        (Root::DriveRelative(drive), rest) => (format!("{drive}\\"), rest.to_string()),
        (Root::Relative, rest) => (cwd_root, format!("{cwd_rest}\\{rest}")),
    };
    format!("{root}{}", normalize(&joined, &['\\', '/']).join("\\"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_node_on_posix() {
        assert_eq!(resolve_posix("/home/u", "repo"), "/home/u/repo");
        assert_eq!(resolve_posix("/home/u", "./repo/"), "/home/u/repo");
        assert_eq!(resolve_posix("/home/u", "../../.."), "/");
        assert_eq!(resolve_posix("/home/u", ""), "/home/u");
        assert_eq!(resolve_posix("/home/u", "/a//b/./c/.."), "/a/b");
        assert_eq!(resolve_posix("/", "."), "/");
    }

    // Each expected value is what Node's `path.win32.resolve(cwd, path)` returns.
    #[test]
    fn resolves_like_node_on_windows() {
        let cwd = r"C:\Users\u";
        assert_eq!(resolve_win32(cwd, "repo"), r"C:\Users\u\repo");
        assert_eq!(resolve_win32(cwd, "./repo/"), r"C:\Users\u\repo");
        assert_eq!(resolve_win32(cwd, r"..\..\..\.."), r"C:\");
        assert_eq!(resolve_win32(cwd, ""), r"C:\Users\u");
        assert_eq!(resolve_win32(cwd, r"D:\a\\b\.\c\.."), r"D:\a\b");
        assert_eq!(resolve_win32(cwd, "D:/a/b"), r"D:\a\b");
        assert_eq!(resolve_win32(cwd, r"\tmp\x"), r"C:\tmp\x");
        assert_eq!(resolve_win32(cwd, "/tmp/x"), r"C:\tmp\x");
        assert_eq!(resolve_win32(cwd, "C:repo"), r"C:\Users\u\repo");
        assert_eq!(resolve_win32(cwd, "D:repo"), r"D:\repo");
        assert_eq!(
            resolve_win32(cwd, r"\\server\share\dir\..\f"),
            r"\\server\share\f"
        );
        assert_eq!(
            resolve_win32(r"\\server\share\dir", "f"),
            r"\\server\share\dir\f"
        );
        assert_eq!(resolve_win32(r"C:\", "."), r"C:\");
    }
}
