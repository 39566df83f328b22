/**
 * @phone-a-friend/relay/ai-sdk: the relay as an AI SDK provider (language model specification
 * v4, the one `ai` 7 uses). Each model is a backend: `friend('codex')`, `friend('claude', {
 * model })`, or a backend registered with `registerBackend()`, by name. docs/AI-SDK.md says what
 * maps to what and what warns.
 */
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4FinishReason,
  LanguageModelV4GenerateResult,
  LanguageModelV4StreamPart,
  LanguageModelV4StreamResult,
  LanguageModelV4Usage,
  ProviderV4,
  SharedV4ProviderMetadata,
  SharedV4Warning,
} from '@ai-sdk/provider' with { 'resolution-mode': 'import' }
import { relayDetailed, relayStreamDetailed, RelayError, type RelayAttempt, type RelayDetails, type RelayOptions, type RelayUsage } from './index.js'
import { invalidArgType } from './internal/errors.js'
import { requestOf } from './internal/ai-sdk-prompt.js'
import { PROVIDER_OPTIONS_KEY, callSettings, schemaOf, settingWarnings, settingsArgument, type PhoneAFriendSettings } from './internal/ai-sdk-options.js'
import { loadProviderModule, providerModuleNow, toAiSdkError, type FailedCall } from './internal/ai-sdk-errors.js'

type ProviderModule = Awaited<ReturnType<typeof loadProviderModule>>

export type { PhoneAFriendSettings } from './internal/ai-sdk-options.js'

/** What `providerOptions.phoneAFriend` takes for one call: the settings, each overriding the model's. */
export type PhoneAFriendProviderOptions = PhoneAFriendSettings

/** What a result's `providerMetadata.phoneAFriend` holds. */
export interface PhoneAFriendMetadata {
  /** The backend that answered (with `fallback`, maybe not the model's). */
  backend: string
  /** The model that answered, when known. */
  model?: string
  /** What the answer cost, as far as the backend said, its dollars included (`costUsd`). */
  usage?: RelayUsage
  /** The backends asked before the one that answered (`fallback`), with why each could not. */
  attempts?: RelayAttempt[]
  /**
   * The relay's `ERR_SCHEMA` text when the answer did not match the response format's schema: the
   * answer is then returned as it came, and the AI SDK's own check fails it
   * (`NoObjectGeneratedError`).
   */
  schemaError?: string
  /** Streaming only: the relay's warnings that came after the stream started (earlier ones are in `stream-start`). */
  warnings?: string[]
  /**
   * Streaming only, when it differs (beyond white space at its ends) from the text streamed:
   * the answer `relay()` would resolve with (codex streams each of its messages, and answers
   * with the last).
   */
  answer?: string
}

const PROVIDER = 'phone-a-friend'

/**
 * The response header that carries the relay's `ERR_SCHEMA` text when `generateText()`'s answer
 * does not match the schema: the AI SDK's `NoObjectGeneratedError` keeps the response's headers
 * (`error.response.headers`), and a relay has no HTTP response whose headers it would hide.
 */
export const SCHEMA_ERROR_HEADER = 'x-phone-a-friend-schema-error'

const STOP: LanguageModelV4FinishReason = { unified: 'stop', raw: undefined }

/** The relay's usage as the specification's: what the backend did not report is unknown. */
function usageOf(usage: RelayUsage | null): LanguageModelV4Usage {
  const { inputTokens, cachedInputTokens, outputTokens, reasoningTokens } = usage ?? {}
  const less = (total: number | undefined, part: number | undefined): number | undefined => (total === undefined || part === undefined ? undefined : total - part)
  return {
    inputTokens: { total: inputTokens, noCache: less(inputTokens, cachedInputTokens), cacheRead: cachedInputTokens, cacheWrite: undefined },
    outputTokens: { total: outputTokens, text: less(outputTokens, reasoningTokens), reasoning: reasoningTokens },
    ...(usage === null ? {} : { raw: { ...usage } }),
  }
}

function other(message: string): SharedV4Warning {
  return { type: 'other', message }
}

/** An answer that is not JSON or does not match the schema (not a schema that is not one: that is `Invalid JSON Schema: …`). */
function isAnswerMismatch(error: unknown): error is RelayError {
  return error instanceof RelayError && error.code === 'ERR_SCHEMA' && error.message.startsWith('Answer ')
}

function metadataOf(metadata: PhoneAFriendMetadata): SharedV4ProviderMetadata {
  return { [PROVIDER_OPTIONS_KEY]: { ...metadata } }
}

/** One call's relay, prepared from the AI SDK's options. */
interface PreparedCall {
  options: RelayOptions
  /** The warnings known before the relay runs. */
  warnings: SharedV4Warning[]
  /** The relay's own warnings, as they come. */
  relayWarnings: string[]
  failed: FailedCall
  schema: object | boolean | undefined
}

/** A backend as an AI SDK language model. */
export class PhoneAFriendLanguageModel implements LanguageModelV4 {
  readonly specificationVersion = 'v4' as const
  readonly provider = PROVIDER
  /** The backend's name. */
  readonly modelId: string
  /**
   * Every URL, of every media type: the AI SDK then hands a file or image URL over as it is
   * instead of downloading it first, only for the relay, which sends text only, to leave it out
   * (with a warning).
   */
  readonly supportedUrls: Record<string, RegExp[]> = { '*/*': [/^/] }
  private readonly settings: PhoneAFriendSettings

  constructor(backend: string, settings: PhoneAFriendSettings = {}) {
    if (typeof backend !== 'string') throw invalidArgType('backend', 'of type string', backend)
    this.modelId = backend
    this.settings = settingsArgument(settings, 'settings')
  }

  private prepare(sdk: ProviderModule, options: LanguageModelV4CallOptions, streaming: boolean): PreparedCall {
    const { request, warnings: promptWarnings } = requestOf(options.prompt)
    const call = callSettings(sdk, options)
    const schema = schemaOf(sdk, options)
    const relayWarnings: string[] = []
    const merged: PhoneAFriendSettings = { ...this.settings, ...call.settings }
    const relayOptions: RelayOptions = {
      ...merged,
      repoPath: merged.repoPath ?? process.cwd(),
      // A diff over its limit is fitted, and says what it left out, rather than refused.
      fit: merged.fit ?? true,
      prompt: request,
      backend: this.modelId,
      onWarning: (message) => relayWarnings.push(message),
    }
    if (options.abortSignal !== undefined) relayOptions.signal = options.abortSignal
    // A boolean schema goes as its JSON text, as the CLI's `--schema true` does.
    if (schema !== undefined) relayOptions.schema = typeof schema === 'boolean' ? JSON.stringify(schema) : schema
    return {
      options: relayOptions,
      warnings: [...settingWarnings(options, streaming), ...call.warnings, ...promptWarnings],
      relayWarnings,
      failed: { backend: this.modelId, request },
      schema,
    }
  }

  /** The model that answered, as the backend named it, else the one the call named. */
  private responseModel(call: PreparedCall, details?: RelayDetails): { modelId: string } | Record<string, never> {
    const model = details?.model ?? call.options.model
    return typeof model === 'string' ? { modelId: model } : {}
  }

  /** The metadata of an answer: who gave it, with which model, at what cost, after whom. */
  private answered(details: RelayDetails | undefined): PhoneAFriendMetadata {
    if (details === undefined) return { backend: this.modelId }
    const { backend, model, usage, attempts } = details
    return {
      backend,
      ...(model === null ? {} : { model }),
      ...(usage === null ? {} : { usage }),
      ...(attempts.length === 0 ? {} : { attempts }),
    }
  }

  /** `relay()`: the answer as one text part. */
  async doGenerate(options: LanguageModelV4CallOptions): Promise<LanguageModelV4GenerateResult> {
    const sdk = await loadProviderModule()
    const call = this.prepare(sdk, options, false)
    const timestamp = new Date()
    // With a schema, the text as produced: what is returned if the answer does not match.
    const produced: string[] = []
    let text: string
    let details: RelayDetails | undefined
    let schemaError: string | undefined
    try {
      details = await relayDetailed(call.schema === undefined ? call.options : { ...call.options, onChunk: (chunk) => void produced.push(chunk) })
      text = details.answer
    } catch (error) {
      if (!isAnswerMismatch(error) || produced.length === 0) throw toAiSdkError(sdk, error, call.failed)
      text = produced.join('')
      schemaError = error.message
    }
    const warnings = [...call.warnings, ...call.relayWarnings.map(other)]
    if (schemaError !== undefined) warnings.push(other(`ERR_SCHEMA: ${schemaError}`))
    return {
      content: [{ type: 'text', text }],
      finishReason: STOP,
      usage: usageOf(details?.usage ?? null),
      warnings,
      request: { body: { backend: this.modelId, prompt: call.failed.request } },
      // The response's headers are what the AI SDK's NoObjectGeneratedError keeps of it (its body
      // only on request): the ERR_SCHEMA text rides there, as `error.response.headers[SCHEMA_ERROR_HEADER]`.
      response: { timestamp, ...this.responseModel(call, details), ...(schemaError === undefined ? {} : { headers: { [SCHEMA_ERROR_HEADER]: schemaError } }) },
      providerMetadata: metadataOf({ ...this.answered(details), ...(schemaError === undefined ? {} : { schemaError }) }),
    }
  }

  /**
   * `relayStreamDetailed()`: `stream-start` (with the warnings so far) and `response-metadata` once
   * the relay has started answering or failed, one text part of the chunks as they come, then
   * `response-metadata` again with the model that answered, when it is known, and `finish` with
   * the usage; a failure is an `error` part then `finish` with the reason `error`. The stream is
   * pulled: a consumer that stops reading pauses the backend, and cancelling the stream stops it
   * at once, as the AI SDK's abort signal does.
   */
  async doStream(options: LanguageModelV4CallOptions): Promise<LanguageModelV4StreamResult> {
    const sdk = await loadProviderModule()
    const call = this.prepare(sdk, options, true)
    const timestamp = new Date()
    // Cancelling the stream aborts the relay at once: `return()` on a generator waits for the step
    // it is in, which may wait for the backend's next chunk until the deadline.
    const cancelled = new AbortController()
    const signal = options.abortSignal === undefined ? cancelled.signal : AbortSignal.any([options.abortSignal, cancelled.signal])
    const chunks = relayStreamDetailed({ ...call.options, signal })
    const TEXT = 'text-0'
    let started = false
    let textOpen = false
    let streamed = ''
    const backend = this.modelId
    const response = this.responseModel(call)
    const model = this
    const stream = new ReadableStream<LanguageModelV4StreamPart>({
      async pull(controller) {
        const start = (): void => {
          if (started) return
          started = true
          controller.enqueue({ type: 'stream-start', warnings: [...call.warnings, ...call.relayWarnings.splice(0).map(other)] })
          controller.enqueue({ type: 'response-metadata', timestamp, ...response })
        }
        const text = (delta: string): void => {
          if (!textOpen) controller.enqueue({ type: 'text-start', id: TEXT })
          textOpen = true
          streamed += delta
          controller.enqueue({ type: 'text-delta', id: TEXT, delta })
        }
        const finish = (finishReason: LanguageModelV4FinishReason, metadata: Partial<PhoneAFriendMetadata>, details?: RelayDetails): void => {
          if (textOpen) controller.enqueue({ type: 'text-end', id: TEXT })
          const late = call.relayWarnings.splice(0)
          const providerMetadata = metadataOf({ backend, ...metadata, ...(late.length > 0 ? { warnings: late } : {}) })
          if (details?.model != null) controller.enqueue({ type: 'response-metadata', modelId: details.model })
          controller.enqueue({ type: 'finish', finishReason, usage: usageOf(details?.usage ?? null), providerMetadata })
          controller.close()
        }
        let step: IteratorResult<string, RelayDetails>
        try {
          step = await chunks.next()
        } catch (error) {
          if (cancelled.signal.aborted) return
          start()
          if (isAnswerMismatch(error) && streamed.length > 0) return finish(STOP, { schemaError: error.message })
          controller.enqueue({ type: 'error', error: toAiSdkError(sdk, error, call.failed) })
          return finish({ unified: 'error', raw: error instanceof RelayError ? error.code : undefined }, {})
        }
        if (cancelled.signal.aborted) return
        start()
        if (!step.done) return text(step.value)
        const details = step.value
        const { answer } = details
        if (!textOpen && answer.length > 0) text(answer)
        const differs = answer.trim() !== streamed.trim()
        finish(STOP, { ...model.answered(details), ...(differs ? { answer } : {}) }, details)
      },
      async cancel() {
        // Ends the relay: its backend is stopped (docs/API.md, "Streaming").
        cancelled.abort()
        await chunks.return(undefined as never).catch(() => undefined)
      },
    })
    return { stream, request: { body: { backend, prompt: call.failed.request } } }
  }
}

/** A provider: call it (or its `languageModel`) with a backend's name for that backend's model. */
export interface PhoneAFriendProvider extends ProviderV4 {
  (backend: string, settings?: PhoneAFriendSettings): PhoneAFriendLanguageModel
  languageModel(backend: string, settings?: PhoneAFriendSettings): PhoneAFriendLanguageModel
}

/**
 * A provider whose models relay with `settings` (each model's own settings, then each call's
 * `providerOptions.phoneAFriend`, override them).
 */
export function createPhoneAFriend(settings: PhoneAFriendSettings = {}): PhoneAFriendProvider {
  const defaults = settingsArgument(settings, 'settings')
  const languageModel = (backend: string, modelSettings?: PhoneAFriendSettings): PhoneAFriendLanguageModel =>
    new PhoneAFriendLanguageModel(backend, { ...defaults, ...settingsArgument(modelSettings, 'settings') })
  const noSuchModel =
    (modelType: 'embeddingModel' | 'imageModel') =>
    (modelId: string): never => {
      const message = `phone-a-friend has language models only (the backends), no ${modelType}: ${modelId}`
      const sdk = providerModuleNow()
      if (sdk === undefined) throw new Error(message)
      throw new sdk.NoSuchModelError({ modelId, modelType, message })
    }
  const provider = (backend: string, modelSettings?: PhoneAFriendSettings): PhoneAFriendLanguageModel => languageModel(backend, modelSettings)
  return Object.assign(provider, {
    specificationVersion: 'v4' as const,
    languageModel,
    embeddingModel: noSuchModel('embeddingModel'),
    imageModel: noSuchModel('imageModel'),
  })
}

/** The default provider: each call's repository is `process.cwd()` unless a setting names one. */
export const phoneAFriend: PhoneAFriendProvider = createPhoneAFriend()
