// The one text form an environment crosses the native boundary in (`key=value` entries each
// ended by NUL), as the TypeScript side encodes and decodes it.
import { describe, expect, it } from 'vitest'
import { decodeEnv, encodeEnv } from '../lib/internal/env.js'

describe('the environment codec', () => {
  it('round-trips names and values, `=` and empty values included', () => {
    const env = { PATH: '/bin:/usr/bin', EMPTY: '', EQUALS: 'a=b=c' }
    const entries = encodeEnv(env)
    expect(entries).toBe('PATH=/bin:/usr/bin\0EMPTY=\0EQUALS=a=b=c\0')
    expect(decodeEnv(entries)).toEqual(env)
  })

  it('leaves out unset names and pieces that are no entry', () => {
    expect(encodeEnv({ SET: '1', UNSET: undefined })).toBe('SET=1\0')
    expect(decodeEnv('A=1\0junk\0=nameless\0\0B=\0')).toEqual({ A: '1', B: '' })
    expect(decodeEnv('')).toEqual({})
  })
})
