// The MCP SDK's typings name the DOM's `HeadersInit`, which @types/node 20 does not declare
// globally; the tests use no HTTP transport, this only lets their types check.
declare global {
  type HeadersInit = import('undici-types').HeadersInit
}
export {}
