//! npm's `.cmd` shims (what `npm install -g` puts on the `PATH` of Windows: `codex.cmd`,
//! `gemini.cmd`), read as data so the program they start runs without `cmd.exe`. `cmd.exe`
//! would interpret `&|^%"` in the relay's arguments (a prompt, a model name): never run a
//! batch file (docs/ARCHITECTURE.md §4). The text is the one npm's `cmd-shim` package writes
//! (`lib/index.js`, `writeShim_`); anything else is refused.

/// What a shim starts, its paths as written (relative to the shim's folder, `\`-separated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ShimTarget {
    /// `node [args] <script>`: a package's `#!/usr/bin/env node` script. `node` is the shim
    /// folder's own `node.exe` when there is one, else the one on the `PATH`.
    Node { args: Vec<String>, script: String },
    /// A program run as it is (a package's binary with no `#!` line, e.g. `claude.exe`).
    Program { program: String },
}

/// The lines every shim starts with (`head` in `writeShim_`).
const HEAD: [&str; 8] = [
    "@ECHO off",
    "GOTO start",
    ":find_dp0",
    "SET dp0=%~dp0",
    "EXIT /b",
    ":start",
    "SETLOCAL",
    "CALL :find_dp0",
];

/// The start of the line that runs the program in the long form (`#!` shims).
const RUN_PREFIX: &str = "endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\" ";

/// What `text`, a `.cmd` file's contents, starts, if it is a shim written by npm's `cmd-shim`
/// for a node script or a plain program; `None` for any other batch file.
pub(crate) fn parse(text: &str) -> Option<ShimTarget> {
    let mut lines = text
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line));
    for expected in HEAD {
        if lines.next()? != expected {
            return None;
        }
    }
    let rest: Vec<&str> = lines.collect();
    match rest.as_slice() {
        // No `#!` line: `"%dp0%\<target>"   %*`, the program itself.
        [run, ""] => {
            let quoted = run.strip_suffix(" %*")?.trim_end();
            let program = in_shim_folder(quoted.strip_prefix('"')?.strip_suffix('"')?)?;
            // cmd.exe would open anything else through its file association.
            let exe = program.len() > 4
                && program.is_char_boundary(program.len() - 4)
                && program[program.len() - 4..].eq_ignore_ascii_case(".exe");
            if !exe {
                return None;
            }
            Some(ShimTarget::Program { program })
        }
        // `#!/usr/bin/env node [args]`, without variables (`env -S VAR=…` would set some).
        ["", if_exists, set_long, else_, set_short, set_pathext, close, "", run, ""] => {
            let long = if_exists
                .strip_prefix("IF EXIST \"%dp0%\\")?
                .strip_suffix(".exe\" (")?;
            let short = set_short
                .strip_prefix("  SET \"_prog=")?
                .strip_suffix('"')?;
            let expected_long = format!("  SET \"_prog=%dp0%\\{long}.exe\"");
            if *set_long != expected_long
                || *else_ != ") ELSE ("
                || *set_pathext != "  SET PATHEXT=%PATHEXT:;.JS;=;%"
                || *close != ")"
                || long != short
                || !short.eq_ignore_ascii_case("node")
            {
                return None;
            }
            let rest = run.strip_prefix(RUN_PREFIX)?.strip_suffix(" %*")?;
            // The target may hold spaces; the arguments come from the `#!` line before it.
            let at = rest.rfind(" \"%dp0%\\")?;
            let (args, target) = (&rest[..at], &rest[at + 1..]);
            let script = in_shim_folder(target.strip_prefix('"')?.strip_suffix('"')?)?;
            let args = args
                .split(' ')
                .filter(|arg| !arg.is_empty())
                .map(|arg| plain(arg).then(|| arg.to_string()))
                .collect::<Option<Vec<_>>>()?;
            Some(ShimTarget::Node { args, script })
        }
        _ => None,
    }
}

/// `%dp0%\<relative path>`'s path, if `cmd.exe` would take it as written (no `%` to expand,
/// no quote to end the string) and it stays a relative path.
fn in_shim_folder(quoted: &str) -> Option<String> {
    let relative = quoted.strip_prefix("%dp0%\\")?;
    let clean = !relative.is_empty()
        && !relative.contains(['%', '"', '\r', '\n', ':'])
        && !relative.starts_with('\\');
    clean.then(|| relative.to_string())
}

/// An argument `cmd.exe` passes on unchanged (a node option such as `--no-warnings`).
fn plain(arg: &str) -> bool {
    arg.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '=' | '.' | ',' | '/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Written as `cmd-shim` 8.0.0's `writeShim_` writes them (CRLF line ends), for a bin whose
    // first line is `#!/usr/bin/env node`, `#!/usr/bin/env node --no-warnings`, none (a
    // binary), and `#!/usr/bin/env -S FOO=bar node` (variables: refused).
    const HEAD_TEXT: &str = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n";

    fn node_shim(variables: &str, args: &str, target: &str) -> String {
        format!(
            "{HEAD_TEXT}{variables}\r\n\
             IF EXIST \"%dp0%\\node.exe\" (\r\n  SET \"_prog=%dp0%\\node.exe\"\r\n) ELSE (\r\n  SET \"_prog=node\"\r\n  SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\n\
             endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\" {args} \"%dp0%\\{target}\" %*\r\n"
        )
    }

    #[test]
    fn a_node_script_shim_names_node_and_the_script() {
        let text = node_shim("", "", r"node_modules\@openai\codex\bin\codex.js");
        assert_eq!(
            parse(&text),
            Some(ShimTarget::Node {
                args: vec![],
                script: r"node_modules\@openai\codex\bin\codex.js".into()
            })
        );
        let text = node_shim("", "--no-warnings", r"..\my tools\dist\index.js");
        let expected = Some(ShimTarget::Node {
            args: vec!["--no-warnings".into()],
            script: r"..\my tools\dist\index.js".into(),
        });
        assert_eq!(parse(&text), expected);
        // Also with LF line ends (a shim checked out through git's autocrlf).
        assert_eq!(parse(&text.replace("\r\n", "\n")), expected);
    }

    #[test]
    fn a_binary_shim_names_the_program() {
        let text = format!(
            "{HEAD_TEXT}\"%dp0%\\node_modules\\@anthropic-ai\\claude-code\\bin\\claude.exe\"   %*\r\n"
        );
        assert_eq!(
            parse(&text),
            Some(ShimTarget::Program {
                program: r"node_modules\@anthropic-ai\claude-code\bin\claude.exe".into()
            })
        );
    }

    #[test]
    fn anything_else_is_not_a_shim() {
        let script = r"node_modules\x\cli.js";
        let refused = [
            // Variables set before node runs.
            node_shim("@SET FOO=bar", "", script),
            // A program other than node (`#!/bin/sh`).
            node_shim("", "", script)
                .replace("node.exe", "sh.exe")
                .replace("_prog=node", "_prog=sh"),
            // Arguments cmd.exe would interpret.
            node_shim("", "--x=%PATH%", script),
            node_shim("", "a&b", script),
            // A target cmd.exe would expand, or outside the shim's folder.
            node_shim("", "", r"%OTHER%\cli.js"),
            node_shim("", "", r"\abs\cli.js"),
            // A program that is not an executable.
            format!("{HEAD_TEXT}\"%dp0%\\cli.js\"   %*\r\n"),
            // A line added after the run line.
            node_shim("", "", script) + "del /q *\r\n",
            // A hand-written batch file.
            "@echo off\r\nnode \"%~dp0\\cli.js\" %*\r\n".to_string(),
            String::new(),
        ];
        for text in refused {
            assert_eq!(parse(&text), None, "{text:?}");
        }
    }
}
