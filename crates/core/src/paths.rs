//! `path.resolve` of Node on POSIX: lexical, no symlinks followed, so messages name the path
//! exactly as the old implementation did.

/// Resolves `path` against `cwd` (itself absolute) and normalises `.`, `..` and slashes.
pub fn resolve(cwd: &str, path: &str) -> String {
    let joined = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{cwd}/{path}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn resolves_like_node() {
        assert_eq!(resolve("/home/u", "repo"), "/home/u/repo");
        assert_eq!(resolve("/home/u", "./repo/"), "/home/u/repo");
        assert_eq!(resolve("/home/u", "../../.."), "/");
        assert_eq!(resolve("/home/u", ""), "/home/u");
        assert_eq!(resolve("/home/u", "/a//b/./c/.."), "/a/b");
        assert_eq!(resolve("/", "."), "/");
    }
}
