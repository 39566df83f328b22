// What `phone-a-friend install` registers with a host (docs/HOSTS.md): the command that starts
// this package's MCP server, the tool-call time-out a relay needs, and the environment variables
// the friends read, for the hosts that filter the server's environment.

/** The server's name in every host's config. */
export const SERVER_NAME = 'phone-a-friend'

/**
 * The host's tool-call time-out, in milliseconds: above a relay's own (`timeoutSeconds`, default
 * 600 s, docs/MCP.md), so the relay's time-out, not the host's, ends a long one.
 */
export const TOOL_TIMEOUT_MS = 900_000

/**
 * The variables the friends and the server read: sign-in keys, config homes, Ollama's host and
 * model, the session store, the depth guard and the default backend, from the core's table of
 * backends (`friendEnvironment`, the one list). codex passes an MCP server none of them unless
 * named (docs/HOSTS.md).
 */
export function friendEnvNames(): string[] {
  const core = require('../internal/core.js') as typeof import('../internal/core.js')
  return core.native.binding.friendEnvironment()
}

/**
 * Those of friendEnvNames() that gemini withholds from an MCP server (a name holding KEY, TOKEN,
 * SECRET, AUTH or CERT, docs/HOSTS.md): put back by reference, `"NAME": "$NAME"`, never a value.
 */
export function geminiWithheldNames(): string[] {
  return friendEnvNames().filter((name) => /KEY|TOKEN|SECRET|AUTH|CERT/.test(name))
}

/** How the server is started: `installed` runs this copy of the package, `npx` fetches it. */
export interface McpEntry {
  command: string
  args: string[]
  via: 'installed' | 'npx'
}

/** Where this CLI runs from: the package's own `bin/phone-a-friend.js`, Node and the version. */
export interface Origin {
  binPath: string
  nodePath: string
  version: string
}

/**
 * The command that starts the server on this machine now. From an installed copy (global or a
 * project's node_modules): this Node and this bin, by absolute path, so no PATH or npx is needed.
 * From npx's cache (`_npx` in the path), which npx may empty at any time: npx again, pinned to
 * this version.
 */
export function mcpEntry(origin: Origin): McpEntry {
  if (/[\\/]_npx[\\/]/.test(origin.binPath)) {
    return { command: 'npx', args: ['-y', `@phone-a-friend/relay@${origin.version}`, 'mcp'], via: 'npx' }
  }
  return { command: origin.nodePath, args: [origin.binPath, 'mcp'], via: 'installed' }
}
