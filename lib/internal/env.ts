// An environment as the one string it crosses the native boundary in: `key=value` entries each
// ended by NUL (one string crosses far faster than an object of many). Rust's `crates/core/src/env.rs`
// encodes and decodes the same form.

/** `env` as entries; names whose value is not a string are left out. */
export function encodeEnv(env: Readonly<Record<string, string | undefined>>): string {
  let entries = ''
  // `process.env` answers each read through an interceptor: one `for…in` pass reads least.
  for (const key in env) {
    const value = env[key]
    if (typeof value === 'string') entries += `${key}=${value}\0`
  }
  return entries
}

/** Entries as an object; a piece with no name before its first `=` is no entry. */
export function decodeEnv(entries: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const entry of entries.split('\0')) {
    const equals = entry.indexOf('=')
    if (equals > 0) env[entry.slice(0, equals)] = entry.slice(equals + 1)
  }
  return env
}
