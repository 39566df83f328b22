/**
 * The installer's failures (docs/CLI.md, "install and uninstall"): a host CLI that is missing,
 * failed or did not finish, or a host config file that cannot be read or edited. The CLI prints
 * them as it prints a relay's error, `Error [<code>]: <message>` then `Hint:`.
 */
export type HostErrorCode = 'ERR_HOST_NOT_FOUND' | 'ERR_HOST_FAILED' | 'ERR_HOST_TIMEOUT' | 'ERR_HOST_CONFIG'

export class HostError extends Error {
  override readonly name = 'HostError' as const
  readonly code: HostErrorCode
  readonly hint?: string

  constructor(message: string, code: HostErrorCode, hint?: string) {
    super(message)
    this.code = code
    if (hint !== undefined) this.hint = hint
  }
}
