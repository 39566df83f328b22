// The MCP SDK's typings (mcp-task.ts) name the DOM's `HeadersInit`, which @types/node 20 does not
// declare globally; the example uses no HTTP transport, this only lets its types check.
declare global {
  type HeadersInit = import('undici-types').HeadersInit
}
export {}
