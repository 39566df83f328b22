/** `text` on one line, every unprintable character escaped. */
export declare function printable(text: string): string;
/** `text` with its line breaks and tabs kept, every other unprintable character escaped. */
export declare function printableLines(text: string): string;
/**
 * `JSON.stringify(value)` with the characters it leaves raw (DEL, C1 controls, format characters)
 * written as `\uXXXX` too: the same JSON, nothing unprintable in it. Outside strings JSON text is
 * printable ASCII, so every match is inside a string.
 */
export declare function printableJson(value: unknown): string;
