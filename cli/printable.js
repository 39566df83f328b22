"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.printable = printable;
exports.printableLines = printableLines;
exports.printableJson = printableJson;
/**
 * Text from the session store or a backend, made safe to print: a hand-edited store or a hostile
 * backend must not reach the terminal with escape sequences (ESC, BEL), nor reorder or hide what
 * is shown (bidi controls such as U+202E, U+2066; invisible ones such as U+200B, U+FEFF, U+00AD).
 * Control, format and line-separator characters are written as `\u{…}`.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;
/** As UNPRINTABLE, but a line break and a tab (of a multi-line message) stay. */
const UNPRINTABLE_IN_LINES = /(?![\n\t])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;
function escaped(char) {
    return `\\u{${char.codePointAt(0).toString(16)}}`;
}
/** `text` on one line, every unprintable character escaped. */
function printable(text) {
    return text.replace(UNPRINTABLE, escaped);
}
/** `text` with its line breaks and tabs kept, every other unprintable character escaped. */
function printableLines(text) {
    return text.replace(UNPRINTABLE_IN_LINES, escaped);
}
/**
 * `JSON.stringify(value)` with the characters it leaves raw (DEL, C1 controls, format characters)
 * written as `\uXXXX` too: the same JSON, nothing unprintable in it. Outside strings JSON text is
 * printable ASCII, so every match is inside a string.
 */
function printableJson(value) {
    return JSON.stringify(value).replace(UNPRINTABLE, (char) => Array.from({ length: char.length }, (_, i) => `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`).join(''));
}
