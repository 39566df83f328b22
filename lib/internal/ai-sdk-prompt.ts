// The AI SDK's prompt (a list of messages) as the one request a relay sends (docs/AI-SDK.md,
// "Prompts"): a lone user message as its text; anything else as a transcript, oldest first, with
// a heading per message. What text cannot carry is left out with a warning, never in silence.
import type { LanguageModelV4Prompt, LanguageModelV4ToolResultOutput, SharedV4Warning } from '@ai-sdk/provider' with { 'resolution-mode': 'import' }

/** What the transcript starts with, so the backend knows which message to answer. */
export const TRANSCRIPT_PREAMBLE = 'The conversation so far, oldest message first. Answer its last message.'

interface Block {
  heading: string
  text: string
}

/** Warnings about the prompt: one per kind of content left out, however often it occurs. */
class Omissions {
  private readonly seen = new Map<string, SharedV4Warning>()

  unsupported(feature: string, details: string): void {
    if (!this.seen.has(feature)) this.seen.set(feature, { type: 'unsupported', feature, details })
  }

  compatibility(feature: string, details: string): void {
    if (!this.seen.has(feature)) this.seen.set(feature, { type: 'compatibility', feature, details })
  }

  get warnings(): SharedV4Warning[] {
    return [...this.seen.values()]
  }
}

const TEXT_ONLY = 'a relay sends the backend text only; it was left out of the request'

function fileLeftOut(omissions: Omissions, mediaType: string): void {
  omissions.unsupported(`file parts (${mediaType})`, TEXT_ONLY)
}

function toolOutputText(output: LanguageModelV4ToolResultOutput, omissions: Omissions): string {
  switch (output.type) {
    case 'text':
    case 'error-text':
      return output.value
    case 'json':
    case 'error-json':
      return JSON.stringify(output.value)
    case 'execution-denied':
      return output.reason === undefined ? 'Execution denied.' : `Execution denied: ${output.reason}`
    case 'content':
      return output.value
        .flatMap((part) => {
          if (part.type === 'text') return [part.text]
          if (part.type === 'file') fileLeftOut(omissions, part.mediaType)
          else omissions.unsupported('custom tool output parts', TEXT_ONLY)
          return []
        })
        .join('\n\n')
  }
}

const HISTORY_AS_TEXT = 'tool calls and results in the prompt are sent as text in the transcript; the backend runs its own tools, not yours'

/** The prompt's messages as blocks of text, with warnings for what was left out. */
function blocksOf(prompt: LanguageModelV4Prompt, omissions: Omissions): Block[] {
  const blocks: Block[] = []
  for (const message of prompt) {
    switch (message.role) {
      case 'system':
        blocks.push({ heading: 'System', text: message.content })
        break
      case 'user': {
        const texts: string[] = []
        for (const part of message.content) {
          if (part.type === 'text') texts.push(part.text)
          else fileLeftOut(omissions, part.mediaType)
        }
        blocks.push({ heading: 'User', text: texts.join('\n\n') })
        break
      }
      case 'assistant': {
        const texts: string[] = []
        for (const part of message.content) {
          if (part.type === 'text') texts.push(part.text)
          else if (part.type === 'tool-call') {
            omissions.compatibility('tool calls and results in the prompt', HISTORY_AS_TEXT)
            texts.push(`(called the tool ${part.toolName}, call ${part.toolCallId}, with ${JSON.stringify(part.input) ?? 'no input'})`)
          } else if (part.type === 'tool-result') {
            omissions.compatibility('tool calls and results in the prompt', HISTORY_AS_TEXT)
            texts.push(`(the tool ${part.toolName}, call ${part.toolCallId}, returned: ${toolOutputText(part.output, omissions)})`)
          } else if (part.type === 'reasoning') omissions.unsupported('reasoning parts in the prompt', 'an earlier turn’s reasoning is not sent')
          else if (part.type === 'file' || part.type === 'reasoning-file') fileLeftOut(omissions, part.mediaType)
          else omissions.unsupported('custom parts in the prompt', TEXT_ONLY)
        }
        blocks.push({ heading: 'Assistant', text: texts.join('\n\n') })
        break
      }
      case 'tool':
        for (const part of message.content) {
          if (part.type === 'tool-result') {
            omissions.compatibility('tool calls and results in the prompt', HISTORY_AS_TEXT)
            blocks.push({ heading: `Tool result (${part.toolName}, call ${part.toolCallId})`, text: toolOutputText(part.output, omissions) })
          } else omissions.unsupported('tool approval responses', 'the backend runs its own tools and asks nobody for approval')
        }
        break
    }
  }
  return blocks
}

/**
 * The request a relay sends for `prompt`, and the warnings for what it could not carry. A prompt
 * of one user message is sent as its text (its text parts a blank line apart), as `relay()`
 * would send it; anything else (a system message, earlier turns, tool results) becomes a
 * transcript: `TRANSCRIPT_PREAMBLE`, then each message as `### <role>` and its text, a blank line
 * apart.
 */
export function requestOf(prompt: LanguageModelV4Prompt): { request: string; warnings: SharedV4Warning[] } {
  const omissions = new Omissions()
  const blocks = blocksOf(prompt, omissions)
  const [only] = blocks
  const request =
    blocks.length === 1 && only.heading === 'User'
      ? only.text
      : [TRANSCRIPT_PREAMBLE, ...blocks.map((block) => `### ${block.heading}\n${block.text}`)].join('\n\n')
  return { request, warnings: omissions.warnings }
}
