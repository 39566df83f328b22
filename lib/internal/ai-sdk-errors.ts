// A relay's failures as the AI SDK's error classes where one fits (docs/AI-SDK.md, "Errors").
// None is retryable: the AI SDK retries only errors that say they are (`isRetryable: true`), and
// a relay that failed or timed out is not safe to run again behind the caller's back (it costs
// the backend's time and money, and may have touched the repository).
import type * as AiSdkProvider from '@ai-sdk/provider' with { 'resolution-mode': 'import' }
import { RelayError } from './errors.js'

type ProviderModule = typeof AiSdkProvider

let loaded: ProviderModule | undefined

/**
 * `@ai-sdk/provider`, the error classes' home: an optional peer dependency, loaded on the first
 * call of a model (never by the package's main entry). A dynamic import: it is an ES module,
 * which `require()` cannot load on every Node 20.
 */
export async function loadProviderModule(): Promise<ProviderModule> {
  if (loaded !== undefined) return loaded
  try {
    loaded = await import('@ai-sdk/provider')
  } catch (cause) {
    throw new RelayError(
      '@phone-a-friend/relay/ai-sdk needs the package @ai-sdk/provider (version 4), which the AI SDK (`ai` 7) depends on: install it next to `ai` (npm install @ai-sdk/provider)',
      'ERR_INTERNAL',
      { cause },
    )
  }
  return loaded
}

/**
 * The module for the provider's synchronous methods: as a call loaded it, else through
 * `require()`, which loads an ES module from Node 20.19 on; `undefined` where it cannot.
 */
export function providerModuleNow(): ProviderModule | undefined {
  if (loaded !== undefined) return loaded
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    loaded = require('@ai-sdk/provider') as ProviderModule
  } catch {
    return undefined
  }
  return loaded
}

/** What an error may say of the call that failed. */
export interface FailedCall {
  backend: string
  /** The request the relay sent (the prompt, before the relay's envelope). */
  request: string
}

/** The option a code is about, for the codes that are a bad argument. */
const ARGUMENT_OF: Partial<Record<string, string>> = {
  ERR_INVALID_TIMEOUT: 'timeoutSeconds',
  ERR_INVALID_SANDBOX: 'sandbox',
  ERR_INVALID_REPO: 'repoPath',
  ERR_CONTEXT_CONFLICT: 'contextFile',
}

const BACKEND_FAILURES = new Set(['ERR_BACKEND_FAILED', 'ERR_BACKEND_TIMEOUT', 'ERR_BACKEND_UNAVAILABLE', 'ERR_BACKEND_NO_OUTPUT'])

/**
 * `error` as the AI SDK's error class for it, the `RelayError` as its `cause` (its `code` also in
 * `data` for an `APICallError`); a failure no class fits, an `AbortError` or a `TypeError` as it is.
 */
export function toAiSdkError(sdk: ProviderModule, error: unknown, call: FailedCall): unknown {
  if (!(error instanceof RelayError)) return error
  const { code, message } = error
  if (code === 'ERR_UNSUPPORTED_BACKEND') {
    // NoSuchModelError takes no cause; AISDKError keeps one as a plain property, set here so
    // that every mapped error has the RelayError as its cause (docs/AI-SDK.md).
    return Object.assign(new sdk.NoSuchModelError({ modelId: call.backend, modelType: 'languageModel', message }), { cause: error })
  }
  if (code === 'ERR_PROMPT_REQUIRED' || (code === 'ERR_TOO_LARGE' && message.startsWith('Relay prompt '))) {
    return new sdk.InvalidPromptError({ prompt: call.request, message, cause: error })
  }
  // An answer that does not match its schema is returned for the AI SDK's own check (the model's
  // doGenerate); only a schema that is not one is a bad argument (docs/ERRORS.md, its texts).
  const argument = code === 'ERR_SCHEMA' && message.startsWith('Invalid JSON Schema') ? 'responseFormat.schema' : ARGUMENT_OF[code]
  if (argument !== undefined) return new sdk.InvalidArgumentError({ argument, message, cause: error })
  if (BACKEND_FAILURES.has(code) || (code === 'ERR_TOO_LARGE' && message.startsWith('Backend output '))) {
    return new sdk.APICallError({
      message,
      // The relay runs a CLI or a JS function, not an HTTP call: the URL names the backend.
      url: `phone-a-friend:${error.backend ?? call.backend}`,
      requestBodyValues: { backend: call.backend, prompt: call.request },
      isRetryable: false,
      cause: error,
      data: { code, backend: error.backend ?? call.backend },
    })
  }
  return error
}
