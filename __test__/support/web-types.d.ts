// DOM names that SDK typings use and @types/node 20 does not declare globally; the tests use
// neither an HTTP transport nor a browser, this only lets their types check.
// - the MCP SDK's: `HeadersInit`;
// - the AI SDK's (`ai` 7: its browser chat transport and realtime audio): `RequestCredentials`,
//   `FileList`, `MediaStream`.
declare global {
  type HeadersInit = import('undici-types').HeadersInit
  type RequestCredentials = 'include' | 'omit' | 'same-origin'
  interface FileList {
    readonly length: number
  }
  interface MediaStream {
    readonly id: string
  }
}
export {}
