/**
 * Text from the session store or a backend, made safe to print: a hand-edited store or a hostile
 * backend must not reach the terminal with escape sequences (ESC, BEL), nor reorder or hide what
 * is shown (bidi controls such as U+202E, U+2066; invisible ones such as U+200B, U+FEFF, U+00AD).
 * Control, format and line-separator characters are written as `\u{…}`.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu

/** As UNPRINTABLE, but a line break and a tab (of a multi-line message) stay. */
const UNPRINTABLE_IN_LINES = /(?![\n\t])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu

function escaped(char: string): string {
  return `\\u{${(char.codePointAt(0) as number).toString(16)}}`
}

/** `text` on one line, every unprintable character escaped. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, escaped)
}

/** `text` with its line breaks and tabs kept, every other unprintable character escaped. */
export function printableLines(text: string): string {
  return text.replace(UNPRINTABLE_IN_LINES, escaped)
}

/**
 * `JSON.stringify(value)` with the characters it leaves raw (DEL, C1 controls, format characters)
 * written as `\uXXXX` too: the same JSON, nothing unprintable in it. Outside strings JSON text is
 * printable ASCII, so every match is inside a string.
 */
export function printableJson(value: unknown): string {
  return JSON.stringify(value).replace(UNPRINTABLE, (char) =>
    Array.from({ length: char.length }, (_, i) => `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`).join(''),
  )
}

/**
 * How the CLI writes text it did not write itself (a friend's answer, a dry run's envelope) to
 * stdout. On a terminal every unprintable character but a line break and a tab is escaped
 * (`printableLines`): a repository can make a friend say `ESC ] 52` (write the clipboard) or
 * `ESC [ 2J`, and the friend's words must not drive the user's terminal. SGR colour sequences are
 * escaped too: a friend's answer is plain text (Markdown), and colour can hide text (`ESC [ 8m`,
 * the same colour on both grounds) or dress an answer up as the CLI's own words. Into a pipe or a
 * file, or with `--raw`, the text goes as it is: a program reading it gets the friend's bytes.
 */
export function stdoutText(terminal: boolean, raw: boolean): (text: string) => string {
  return terminal && !raw ? printableLines : (text) => text
}

/** An argument a POSIX shell reads as it is: no quoting needed. */
const SHELL_SAFE = /^[\w@%+=:,./-]+$/

/**
 * `argv` as one line a POSIX shell would read back as the same arguments (each one that needs it
 * in single quotes), made printable: a dry run shows what it would run, to read or paste.
 */
export function shellLine(argv: readonly string[]): string {
  const quoted = argv.map((arg) => (SHELL_SAFE.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`))
  return printable(quoted.join(' '))
}
