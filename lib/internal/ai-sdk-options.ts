// The AI SDK's call options as a relay's options (docs/AI-SDK.md, "What maps to what"): what the
// AI SDK has a word for is mapped, what a relay has and the AI SDK has not comes from the
// provider's, the model's and the call's `providerOptions.phoneAFriend` settings, and every
// setting a relay cannot honour is a warning.
import type { LanguageModelV4CallOptions, SharedV4Warning } from '@ai-sdk/provider' with { 'resolution-mode': 'import' }
import type * as AiSdkProvider from '@ai-sdk/provider' with { 'resolution-mode': 'import' }
import type { RelayOptions } from './options.js'
import { invalidArgType } from './errors.js'

/** The relay options a provider, a model or one call may set (`relay()`'s own types). */
export const SETTING_KEYS = ['repoPath', 'contextFile', 'contextText', 'includeDiff', 'fit', 'maxPromptBytes', 'fallback', 'timeoutSeconds', 'idleTimeoutSeconds', 'model', 'sandbox', 'session', 'backendSession'] as const

/**
 * Relay options for every call of a provider or a model, or for one call in
 * `providerOptions.phoneAFriend`: `relay()`'s own options of these names, with their types and
 * defaults (docs/API.md, "Options"), but for `fit`, on here as in the CLI. `repoPath` defaults
 * to `process.cwd()` at the call.
 */
export type PhoneAFriendSettings = Partial<Pick<RelayOptions, (typeof SETTING_KEYS)[number]>>

/**
 * Settings given to `createPhoneAFriend()` or a model, copied: an object whose every key is a
 * setting. Anything else throws a `TypeError` where it is given (from JS, where the types do not
 * hold), rather than reaching `relay()` (a `dryRun`, an `onChunk`) or being ignored.
 */
export function settingsArgument(value: unknown, name: string): PhoneAFriendSettings {
  if (value === undefined) return {}
  if (typeof value !== 'object' || value === null) throw invalidArgType(name, 'of type object', value)
  for (const key of Object.keys(value)) {
    if (!(SETTING_KEYS as readonly string[]).includes(key)) {
      const error = new TypeError(`The "${name}.${key}" property is not a relay setting. Settings: ${SETTING_KEYS.join(', ')}`)
      Object.defineProperty(error, 'code', { value: 'ERR_INVALID_ARG_VALUE', enumerable: true, writable: true, configurable: true })
      throw error
    }
  }
  return { ...(value as PhoneAFriendSettings) }
}

/** The key of this provider's `providerOptions`. */
export const PROVIDER_OPTIONS_KEY = 'phoneAFriend'

const NO_SUCH_SETTING = 'the backend CLI has no such setting; it was not sent'

/** The warnings for the call's settings that a relay cannot honour. */
export function settingWarnings(options: LanguageModelV4CallOptions, streaming: boolean): SharedV4Warning[] {
  const warnings: SharedV4Warning[] = []
  const unsupported = (feature: string, details = NO_SUCH_SETTING): void => {
    warnings.push({ type: 'unsupported', feature, details })
  }
  const sampling = ['maxOutputTokens', 'temperature', 'topP', 'topK', 'presencePenalty', 'frequencyPenalty', 'seed'] as const
  for (const name of sampling) if (options[name] !== undefined) unsupported(name)
  if (options.stopSequences !== undefined && options.stopSequences.length > 0) unsupported('stopSequences')
  if (options.reasoning !== undefined && options.reasoning !== 'provider-default') unsupported('reasoning', 'set the backend’s own reasoning effort in its configuration; it was not sent')
  if (options.tools !== undefined && options.tools.length > 0) {
    unsupported('tools', 'the backend runs its own tools in its sandbox; the tools offered here were not sent and are never called')
  } else if (options.toolChoice !== undefined && options.toolChoice.type !== 'auto' && options.toolChoice.type !== 'none') {
    unsupported('toolChoice', 'no tools are offered to the backend')
  }
  // The AI SDK adds its own user-agent to every call: only the caller's headers are worth a warning.
  const headers = Object.entries(options.headers ?? {}).filter(([name, value]) => value !== undefined && name.toLowerCase() !== 'user-agent')
  if (headers.length > 0) unsupported('headers', `a relay makes no HTTP request of its own; ${headers.map(([name]) => name).join(', ')} not sent`)
  if (streaming && options.includeRawChunks === true) unsupported('includeRawChunks', 'a relay streams text only; there are no raw chunks')
  const format = options.responseFormat
  if (format?.type === 'json' && (format.name !== undefined || format.description !== undefined)) {
    unsupported('responseFormat.name and description', 'only the schema is asked for (and checked)')
  }
  return warnings
}

/** The type of a value, as an argument error names it. */
function typeName(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return `of type ${typeof value}`
}

/**
 * `providerOptions.phoneAFriend` as settings, and a warning for each key that is not one. Not an
 * object (`null`, a string, a number, an array: the AI SDK's types do not hold from JS) is the
 * AI SDK's `InvalidArgumentError`, never a character-by-character reading or silence.
 */
export function callSettings(sdk: typeof AiSdkProvider, options: LanguageModelV4CallOptions): { settings: PhoneAFriendSettings; warnings: SharedV4Warning[] } {
  const given: unknown = options.providerOptions?.[PROVIDER_OPTIONS_KEY]
  if (given === undefined) return { settings: {}, warnings: [] }
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    const argument = `providerOptions.${PROVIDER_OPTIONS_KEY}`
    throw new sdk.InvalidArgumentError({ argument, message: `${argument} must be an object of relay settings (${SETTING_KEYS.join(', ')}); got ${typeName(given)}` })
  }
  const settings: Record<string, unknown> = {}
  const warnings: SharedV4Warning[] = []
  for (const [key, value] of Object.entries(given)) {
    if ((SETTING_KEYS as readonly string[]).includes(key)) settings[key] = value
    else warnings.push({ type: 'unsupported', feature: `providerOptions.${PROVIDER_OPTIONS_KEY}.${key}`, details: `not a relay option (${SETTING_KEYS.join(', ')}); it was ignored` })
  }
  // The values' types are checked by relay() itself, which rejects a wrong one with a TypeError.
  return { settings: settings as PhoneAFriendSettings, warnings }
}

/**
 * The JSON Schema a relay asks for and checks, from the AI SDK's response format: its schema, or
 * `{}` (any JSON) for JSON without one; none for text. `true` and `false` are JSON Schemas too
 * (any value, none), as the CLI's `--schema true` is; anything else that is not an object is the
 * AI SDK's `InvalidArgumentError`.
 */
export function schemaOf(sdk: typeof AiSdkProvider, options: LanguageModelV4CallOptions): object | boolean | undefined {
  const format = options.responseFormat
  if (format?.type !== 'json') return undefined
  const schema: unknown = format.schema
  if (schema === undefined) return {}
  if (typeof schema === 'boolean' || (typeof schema === 'object' && schema !== null && !Array.isArray(schema))) return schema
  throw new sdk.InvalidArgumentError({ argument: 'responseFormat.schema', message: `Invalid JSON Schema: a schema is an object or a boolean; got ${typeName(schema)}` })
}
