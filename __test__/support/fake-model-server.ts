/**
 * A fake model server for end-to-end tests: one HTTP server on 127.0.0.1 that speaks just enough
 * of the real CLIs' wire protocols for them to finish cleanly. (Ollama has a stand-in of its own,
 * `ollama-stub.ts`.)
 *
 * - codex (`@openai/codex` 0.169): `POST /v1/responses`, answered as a Responses API SSE stream.
 * - gemini (`@google/gemini-cli` 0.61): `POST /v1beta/models/<m>:streamGenerateContent?alt=sse`
 *   (SSE of GenerateContentResponse JSON), plus `:generateContent`, `:countTokens` and model listing.
 * - claude (`@anthropic-ai/claude-code` 2.1.330): `POST /v1/messages?beta=true`, answered as an
 *   Anthropic Messages SSE stream (`message_start` … `message_stop`), JSON when `stream` is false.
 * - opencode (`opencode-ai` 1.18.33, provider `@ai-sdk/openai-compatible`): `POST /v1/chat/completions`,
 *   answered as OpenAI chat-completion chunks (`data: {…}` lines, then `data: [DONE]`).
 *
 * A tool call can be scripted (`setTool`): a model request that offers that tool and carries no
 * tool result yet is answered with a short text and a call of it; the request that brings the
 * result back gets the answer. This works in the two protocols with tools, Anthropic Messages
 * (claude) and OpenAI chat completions (opencode).
 *
 * Every request is recorded in `requests` (model requests with the prompt they carried). Anything
 * else is answered with a 404 JSON error and recorded as `other`, so an unexpected call shows up.
 *
 * `codexEnv` / `geminiEnv` make a throwaway config home that points the CLI at a server and return
 * the environment variables to add for the child. Their folders are removed when the server they
 * were made for closes (a home made for a bare `{ url }`, such as `deadServerUrl()`, when any
 * server of this process closes next), by `removeTempHomes()`, or when this process exits
 * normally. (A test worker killed by a signal gets no exit hook: close the server in afterAll.)
 */
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';

export type RecordedProtocol = 'codex' | 'gemini' | 'anthropic' | 'openai-chat' | 'other';

export interface RecordedRequest {
  protocol: RecordedProtocol;
  method: string;
  /** Path with query string, as the client sent it. */
  path: string;
  /**
   * The prompt a model request carried; `null` for requests that carry none (listings…).
   * - codex: the text of the LAST `input[]` item with `role: "user"` (its `content[].text`
   *   joined). Codex puts its own user items (`<environment_context>`, AGENTS.md instructions)
   *   BEFORE the prompt, so the last one is the prompt, whole. All user texts are in `userTexts`.
   * - gemini: the text of the last part of the last `contents` entry.
   * - anthropic: the last user text block that is not claude's own `<system-reminder>`.
   * - openai-chat: the content of the last `role: "user"` message.
   */
  prompt: string | null;
  /** codex and anthropic: the text of every user item or text block, in order. Else `[]`. */
  userTexts: string[];
  /** anthropic, openai-chat and codex: the names of the tools the request offered the model. */
  tools: string[];
  /** anthropic, openai-chat, codex and gemini: the tool results the request brings back, as text. */
  toolResults: string[];
  /** Parsed JSON body; the raw text when it is not JSON; `null` when empty. */
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * The token counts every model answer reports, in each vendor's own way (docs/BACKENDS.md,
 * "Usage"): `input` includes `cached`, `output` includes `reasoning`. Anthropic's `input_tokens`
 * leaves out the cache read and write; gemini's `candidatesTokenCount` leaves out the thoughts.
 */
export const FAKE_USAGE = { input: 1234, cached: 200, cacheWrite: 30, output: 56, reasoning: 7 } as const

export interface FakeModelServerOptions {
  /** The answer every model request gets. @default 'FAKE_ANSWER' */
  answer?: string;
  /** Milliseconds to wait before answering each model request (not tags, listings). @default 0 */
  delayMs?: number;
  /** Answer every model request with this HTTP error instead (see `setFailure`). @default null */
  failure?: FakeFailure | null;
  /** Send each answer in several parts, paced (see `setParts`). @default { count: 1, gapMs: 0 } */
  parts?: FakeParts;
}

/**
 * How an answer is cut up. The answer is split into `count` pieces of about equal length (never
 * inside a character), sent `gapMs` apart:
 * - gemini: one SSE `GenerateContentResponse` per piece (the model's text, streamed);
 * - codex: one assistant `message` output item per piece (several assistant messages in one
 *   turn, as when a model talks between tool calls); the last piece is codex's last message.
 */
export interface FakeParts {
  count: number;
  gapMs: number;
}

/**
 * A tool call the model makes (anthropic, openai-chat and codex), e.g. claude's
 * `{ name: 'Write', input: { file_path, content } }`, opencode's `{ name: 'bash', input: { command, description } }`
 * or codex's `{ name: 'exec', input: '<JavaScript>' }` (a freeform tool: its input is text).
 */
export interface FakeToolCall {
  name: string;
  input: Record<string, unknown> | string;
  /**
   * Call it even when the request does not offer it, as a model that remembers a tool from
   * elsewhere would (the CLI must then refuse it). @default false
   */
  unoffered?: boolean;
}

/** The text the model says before its scripted tool call. */
export const TOOL_PREAMBLE = 'Calling the tool.';

/** A gemini function call the fake model makes (see `setToolCall`). */
export interface FakeFunctionCall {
  name: string;
  args: Json;
  /** Call it even when the request does not offer it (see `FakeToolCall`). @default false */
  unoffered?: boolean;
}

/** An HTTP error for model requests, sent in each protocol's own error shape. */
export interface FakeFailure {
  status: number;
  message?: string;
}

export interface FakeModelServer {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Model requests only (codex, gemini content calls, anthropic, openai-chat). */
  modelRequests(): RecordedRequest[];
  setAnswer(text: string): void;
  setDelay(ms: number): void;
  /** From now on, send answers in `count` parts `gapMs` apart (`count: 1`: all at once). */
  setParts(parts: FakeParts): void;
  /** From now on, answer model requests with this HTTP error (`null`: answer normally again). */
  setFailure(failure: FakeFailure | null): void;
  /**
   * From now on (`true`), answer model requests with a stream's headers, then nothing, the
   * connection held open: a model that stalled (`false`: answer normally again).
   */
  setStall(stall: boolean): void;
  /** From now on, make this tool call once per conversation where it is offered (`null`: none). */
  setTool(call: FakeToolCall | null): void;
  /**
   * gemini: from now on, a streaming request that offers a function whose name ends with
   * `toolCall.name` and carries no function response yet is answered with a call of that
   * function with `toolCall.args`; the request that brings its response gets the text answer.
   * `null`: text answers only again.
   */
  setToolCall(toolCall: FakeFunctionCall | null): void;
  /**
   * Stops listening, cuts open connections, removes the temp homes made for this server and
   * those made for a bare `{ url }` target.
   */
  close(): Promise<void>;
}

/** What codexEnv/geminiEnv need: a live FakeModelServer, or just `{ url }` (e.g. a dead port). */
export interface ServerTarget {
  url: string;
}

export const DEFAULT_ANSWER = 'FAKE_ANSWER';
/**
 * The model `geminiEnv(…, { failFast: true })` pins in settings.json (requests then go to
 * `/v1beta/models/<it>:…`). Otherwise gemini 0.61 picks `gemini-3.1-pro-preview-customtools`.
 */
export const FAKE_GEMINI_MODEL = 'gemini-2.5-flash';

// ---------------------------------------------------------------------------------------------
// temp homes

/** Servers made by startFakeModelServer, to tell them from a bare `{ url }` target. */
const servers = new WeakSet<object>();
const homesByServer = new WeakMap<object, Set<string>>();
/** Homes made for a bare `{ url }`: removed by the next close() of any server. */
const looseHomes = new Set<string>();
const allHomes = new Set<string>();
let exitHookInstalled = false;

async function makeTempHome(target: object, prefix: string): Promise<string> {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const dir of allHomes) rmSync(dir, { recursive: true, force: true });
    });
  }
  const dir = await mkdtemp(join(tmpdir(), prefix));
  allHomes.add(dir);
  let owner = looseHomes;
  if (servers.has(target)) {
    owner = homesByServer.get(target) ?? new Set();
    homesByServer.set(target, owner);
  }
  owner.add(dir);
  return dir;
}

async function removeHomes(dirs: Set<string>): Promise<void> {
  for (const dir of [...dirs]) {
    dirs.delete(dir);
    allHomes.delete(dir);
    await rm(dir, { recursive: true, force: true });
  }
}

/** Removes every temp home made by codexEnv/geminiEnv in this process and not yet removed. */
export async function removeTempHomes(): Promise<void> {
  looseHomes.clear();
  await removeHomes(allHomes);
}

export interface CliEnvOptions {
  /**
   * Make an unreachable server or an HTTP error end the CLI within about 3 s, exit 1.
   *
   * Without it the CLIs keep their own connection retries, which is what a timeout test needs:
   * against a dead server codex NEVER gives up by itself ("Reconnecting... waiting for network",
   * unbounded, feature `unbounded_connection_retries`) and gemini exits 1 after ~17 s (its "auto"
   * model: 3 tries of the pro model with backoff). An HTTP error still ends codex in ~1 s either
   * way (1 request retry, 0 stream retries are always set); gemini's "auto" model retries a 5xx
   * or 429 for minutes (pro ×3, then a silent fallback to flash ×10, with backoff).
   * @default false
   */
  failFast?: boolean;
}

/**
 * A fresh CODEX_HOME whose config.toml sends codex to `target` (`<url>/v1/responses`). Returns
 * the env vars to ADD to the child's environment: `CODEX_HOME` and `TMPDIR`.
 *
 * The folder is `<tmp>/fake-codex-XXXX/{home,tmp}`: CODEX_HOME is `home`, the child's TMPDIR the
 * sibling `tmp`. (A release codex refuses to make its helper-binary aliases under a CODEX_HOME
 * inside the temp dir and says so on stderr; this layout keeps stderr quiet and keeps whatever
 * codex writes to its temp dir inside the folder that gets removed.)
 * No `model` is set: codex uses its built-in default, which it has metadata for (`-m <unknown>`
 * works too, with a "Model metadata … not found" warning on stderr).
 * Always 1 request retry and 0 stream retries (an HTTP error ends codex in ~1 s, exit 1, instead
 * of ~30 requests over ~25 s); with `failFast`, also no unbounded reconnects (a dead server ends
 * codex in ~1 s, exit 1, "ERROR: Connection failed: error sending request").
 */
export async function codexEnv(
  target: ServerTarget,
  options: CliEnvOptions = {},
): Promise<Record<string, string>> {
  const root = await makeTempHome(target, 'fake-codex-');
  const home = join(root, 'home');
  const tmp = join(root, 'tmp');
  await mkdir(home);
  await mkdir(tmp);
  const config = [
    'model_provider = "fake"',
    'check_for_update_on_startup = false',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[feedback]',
    'enabled = false',
    '',
    ...(options.failFast === true ? ['[features]', 'unbounded_connection_retries = false', ''] : []),
    '[model_providers.fake]',
    'name = "fake"',
    `base_url = "${target.url}/v1"`,
    'wire_api = "responses"',
    'request_max_retries = 1',
    'stream_max_retries = 0',
    '',
  ].join('\n');
  await writeFile(join(home, 'config.toml'), config);
  return { CODEX_HOME: home, TMPDIR: tmp };
}

/**
 * A fresh HOME with `.gemini/settings.json` that sends gemini to `target`. Returns the env vars
 * to ADD to the child's environment: `HOME` and `GEMINI_CLI_HOME` (the same folder: the CLI's
 * launcher reads `$GEMINI_CLI_HOME/settings.json`, its core `$GEMINI_CLI_HOME/.gemini/…`, and
 * a few corners use `os.homedir()`), `GOOGLE_GEMINI_BASE_URL`, `GEMINI_API_KEY`, `NO_COLOR`, and
 * `TMPDIR` (a sibling folder: gemini drops `gemini-client-error-*.json` reports in the temp dir
 * when a model request fails).
 *
 * settings.json selects API-key auth (without it the base URL alone picks an auth type the CLI
 * rejects, exit 41) and turns off usage statistics, telemetry, update checks, IDE integration,
 * the terminal compatibility warnings and the ripgrep probe. With `failFast` it also pins the
 * model to FAKE_GEMINI_MODEL with `general.maxAttempts: 1` (the "auto" model ignores that
 * setting: its own policies say 3 and 10). `-m <model>` on the command line overrides the
 * settings model and gives a one-model chain too, which then honours maxAttempts.
 */
export async function geminiEnv(
  target: ServerTarget,
  options: CliEnvOptions = {},
): Promise<Record<string, string>> {
  const root = await makeTempHome(target, 'fake-gemini-');
  const home = join(root, 'home');
  const tmp = join(root, 'tmp');
  await mkdir(join(home, '.gemini'), { recursive: true });
  await mkdir(tmp);
  const fast = options.failFast === true;
  const settings = {
    security: { auth: { selectedType: 'gemini-api-key' } },
    general: {
      enableAutoUpdate: false,
      enableAutoUpdateNotification: false,
      ...(fast ? { maxAttempts: 1 } : {}),
    },
    ...(fast ? { model: { name: FAKE_GEMINI_MODEL } } : {}),
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    ide: { enabled: false },
    // Quiet stderr: no "256-color support not detected" warning when not on a terminal, and no
    // "Ripgrep is not available" (the same grep tool whether or not rg is installed).
    ui: { showCompatibilityWarnings: false },
    tools: { useRipgrep: false },
  };
  await writeFile(join(home, '.gemini', 'settings.json'), `${JSON.stringify(settings, null, 2)}\n`);
  return {
    HOME: home,
    GEMINI_CLI_HOME: home,
    GOOGLE_GEMINI_BASE_URL: target.url,
    GEMINI_API_KEY: 'fake-gemini-api-key',
    NO_COLOR: '1',
    TMPDIR: tmp,
  };
}

/** The provider and model `opencodeEnv` configures: what `model: 'fake/fake-model'` names. */
export const FAKE_OPENCODE_MODEL = 'fake/fake-model';

/**
 * A fresh HOME for claude that sends it to `target` (`<url>/v1/messages`). Returns the env vars
 * to ADD: `HOME`, `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY` (any value: no login, no approval
 * prompt in `-p`), `TMPDIR` (a sibling folder) and `NO_COLOR`. The backend itself turns off
 * claude's non-essential traffic (update checks, telemetry, `HEAD /api/hello`, DNS look-ups).
 */
export async function claudeEnv(target: ServerTarget): Promise<Record<string, string>> {
  const root = await makeTempHome(target, 'fake-claude-');
  const home = join(root, 'home');
  const tmp = join(root, 'tmp');
  await mkdir(home);
  await mkdir(tmp);
  return {
    HOME: home,
    ANTHROPIC_BASE_URL: target.url,
    ANTHROPIC_API_KEY: 'fake-anthropic-api-key',
    NO_COLOR: '1',
    TMPDIR: tmp,
  };
}

/**
 * A fresh HOME (with its XDG folders) for opencode and a config that defines one provider,
 * `fake` (`@ai-sdk/openai-compatible`, bundled in the binary), at `<url>/v1`, with two models:
 * `fake-model`, the default, and `other-model`. Returns the env vars to ADD: `HOME`, the four
 * `XDG_*_HOME`, `OPENCODE_CONFIG_CONTENT` and `TMPDIR`, plus npm and bun registries on a dead
 * local port: opencode tries to npm-install `@opencode-ai/plugin` into its config folder at
 * first run, which must not reach the network in a test (offline it fails silently).
 */
export async function opencodeEnv(target: ServerTarget): Promise<Record<string, string>> {
  const root = await makeTempHome(target, 'fake-opencode-');
  const home = join(root, 'home');
  const tmp = join(root, 'tmp');
  await mkdir(home);
  await mkdir(tmp);
  const config = {
    $schema: 'https://opencode.ai/config.json',
    provider: {
      fake: {
        npm: '@ai-sdk/openai-compatible',
        name: 'Fake',
        options: { baseURL: `${target.url}/v1` },
        models: { 'fake-model': { name: 'Fake model' }, 'other-model': { name: 'Another fake model' } },
      },
    },
    model: FAKE_OPENCODE_MODEL,
    autoupdate: false,
    share: 'disabled',
  };
  const noRegistry = 'http://127.0.0.1:9/';
  return {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
    npm_config_registry: noRegistry,
    BUN_CONFIG_REGISTRY: noRegistry,
    NO_COLOR: '1',
    TMPDIR: tmp,
  };
}

/** A `http://127.0.0.1:<port>` URL nothing listens on (a port just released by the OS). */
export async function deadServerUrl(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

// ---------------------------------------------------------------------------------------------
// request parsing

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function decode(raw: Buffer, encoding: string | undefined): Buffer {
  switch ((encoding ?? '').toLowerCase()) {
    case 'gzip':
      return gunzipSync(raw);
    case 'deflate':
      return inflateSync(raw);
    case 'br':
      return brotliDecompressSync(raw);
    default:
      return raw;
  }
}

function parseBody(raw: Buffer, encoding: string | undefined): unknown {
  if (raw.length === 0) return null;
  const text = decode(raw, encoding).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** `value[key]` when value is a JSON object, else undefined. */
function field(value: unknown, key: string): unknown {
  return isObject(value) ? value[key] : undefined;
}

function stringField(value: unknown, key: string): string | null {
  const found = field(value, key);
  return typeof found === 'string' ? found : null;
}

/** The last element of `value[key]` when that is an array, else undefined. */
function lastOf(value: unknown, key: string): unknown {
  const list = field(value, key);
  return Array.isArray(list) ? (list as unknown[])[list.length - 1] : undefined;
}

/** Text of a codex input item's content: a string, or `[{ type, text }]` parts joined. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as unknown[]).map((part) => stringField(part, 'text') ?? '').join('');
}

function codexUserTexts(body: unknown): string[] {
  const input = field(body, 'input');
  if (!Array.isArray(input)) return [];
  return (input as unknown[])
    .filter((item) => field(item, 'role') === 'user')
    .map((item) => contentText(field(item, 'content')));
}

/** The tools a codex request offers: `tools[]` and those of its `additional_tools` input items (namespaces nest). */
function codexToolNames(body: unknown): string[] {
  const names = (tools: unknown): string[] =>
    Array.isArray(tools)
      ? (tools as unknown[]).flatMap((tool) => [...(stringField(tool, 'type') === 'namespace' ? [] : [stringField(tool, 'name')]), ...names(field(tool, 'tools'))])
          .filter((name): name is string => name !== null)
      : [];
  const input = field(body, 'input');
  const extra = Array.isArray(input) ? (input as unknown[]).filter((item) => field(item, 'type') === 'additional_tools') : [];
  return [...names(field(body, 'tools')), ...extra.flatMap((item) => names(field(item, 'tools')))];
}

/** The declared type of a codex tool (`function`, `custom`…), searched as `codexToolNames` does. */
function codexToolType(body: unknown, name: string): string | null {
  const find = (tools: unknown): string | null => {
    if (!Array.isArray(tools)) return null;
    for (const tool of tools as unknown[]) {
      if (stringField(tool, 'type') !== 'namespace' && stringField(tool, 'name') === name) return stringField(tool, 'type');
      const nested = find(field(tool, 'tools'));
      if (nested !== null) return nested;
    }
    return null;
  };
  const input = field(body, 'input');
  const extra = Array.isArray(input) ? (input as unknown[]).filter((item) => field(item, 'type') === 'additional_tools') : [];
  return [field(body, 'tools'), ...extra.map((item) => field(item, 'tools'))].map(find).find((type) => type !== null) ?? null;
}

/** The tool outputs a codex request brings back (`function_call_output`, `custom_tool_call_output`), as text. */
function codexToolResults(body: unknown): string[] {
  const input = field(body, 'input');
  if (!Array.isArray(input)) return [];
  return (input as unknown[])
    .filter((item) => /_call_output$/.test(stringField(item, 'type') ?? ''))
    .map((item) => {
      const output = field(item, 'output');
      return typeof output === 'string' ? output : JSON.stringify(output ?? null);
    });
}

function geminiPrompt(body: unknown): string | null {
  return stringField(lastOf(lastOf(body, 'contents'), 'parts'), 'text');
}

/** An Anthropic message's content as blocks (a string is one text block). */
function anthropicBlocks(content: unknown): unknown[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? (content as unknown[]) : [];
}

function anthropicUserTexts(body: unknown): string[] {
  const messages = field(body, 'messages');
  if (!Array.isArray(messages)) return [];
  return (messages as unknown[])
    .filter((message) => field(message, 'role') === 'user')
    .flatMap((message) => anthropicBlocks(field(message, 'content')))
    .filter((block) => field(block, 'type') === 'text')
    .map((block) => stringField(block, 'text') ?? '')
    .filter((text) => !text.startsWith('<system-reminder>'));
}

function anthropicToolResults(body: unknown): string[] {
  const messages = field(body, 'messages');
  if (!Array.isArray(messages)) return [];
  return (messages as unknown[])
    .flatMap((message) => anthropicBlocks(field(message, 'content')))
    .filter((block) => field(block, 'type') === 'tool_result')
    .map((block) => contentText(field(block, 'content')));
}

/** The names of the tools offered: Anthropic `tools[].name`, OpenAI `tools[].function.name`. */
function toolNames(body: unknown): string[] {
  const tools = field(body, 'tools');
  if (!Array.isArray(tools)) return [];
  return (tools as unknown[])
    .map((tool) => stringField(tool, 'name') ?? stringField(field(tool, 'function'), 'name'))
    .filter((name): name is string => name !== null);
}

function openAiPrompt(body: unknown): string | null {
  const messages = field(body, 'messages');
  if (!Array.isArray(messages)) return null;
  const user = (messages as unknown[]).filter((message) => field(message, 'role') === 'user').at(-1);
  return user === undefined ? null : contentText(field(user, 'content'));
}

function openAiToolResults(body: unknown): string[] {
  const messages = field(body, 'messages');
  if (!Array.isArray(messages)) return [];
  return (messages as unknown[])
    .filter((message) => field(message, 'role') === 'tool')
    .map((message) => contentText(field(message, 'content')));
}

// ---------------------------------------------------------------------------------------------
// responses

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function startSse(res: ServerResponse): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
}

/** `text` cut into `count` pieces of about equal length, never inside a character. */
export function splitAnswer(text: string, count: number): string[] {
  const chars = [...text];
  const n = Math.max(1, Math.min(Math.floor(count), chars.length));
  const pieces: string[] = [];
  for (let i = 0; i < n; i++) {
    pieces.push(chars.slice(Math.floor((i * chars.length) / n), Math.floor(((i + 1) * chars.length) / n)).join(''));
  }
  return pieces;
}

/** Writes `events` to an SSE response `gapMs` apart, then ends it; stops if the client left. */
type Pace = (res: ServerResponse, events: string[], gapMs: number) => void;

function sendCodex(res: ServerResponse, answer: string, seq: number, parts: FakeParts, pace: Pace, call: { tool: FakeToolCall; type: string | null } | null = null): void {
  const responseId = `resp_fake_${seq}`;
  const messages: Json[] = splitAnswer(call ? TOOL_PREAMBLE : answer, call ? 1 : parts.count).map((text, i) => ({
    type: 'message',
    id: `msg_fake_${seq}_${i}`,
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text, annotations: [] }],
  }));
  if (call) {
    const { tool, type } = call;
    // A freeform (`custom`) tool takes its input as text; a function, JSON arguments.
    const text = typeof tool.input === 'string' ? tool.input : JSON.stringify(tool.input);
    messages.push(
      type === 'custom'
        ? { type: 'custom_tool_call', id: `ctc_fake_${seq}`, call_id: `call_fake_${seq}`, name: tool.name, input: text, status: 'completed' }
        : { type: 'function_call', id: `fc_fake_${seq}`, call_id: `call_fake_${seq}`, name: tool.name, arguments: text, status: 'completed' },
    );
  }
  const u = FAKE_USAGE;
  const usage = {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cached },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.input + u.output,
  };
  const sse = (event: Json): string => `event: ${String(event['type'])}\ndata: ${JSON.stringify(event)}\n\n`;
  const created = sse({ type: 'response.created', response: { id: responseId, status: 'in_progress' } });
  const items = messages.map((item, index) => sse({ type: 'response.output_item.done', output_index: index, item }));
  const completed = sse({
    type: 'response.completed',
    response: { id: responseId, status: 'completed', output: messages, usage },
  });
  startSse(res);
  // The first item goes with `response.created`, the completion with the last item.
  const events = [...items];
  events[0] = created + events[0];
  events[events.length - 1] += completed;
  pace(res, events, parts.gapMs);
}

function geminiResponse(answer: string, model: string, last = true): Json {
  return {
    candidates: [
      {
        content: { role: 'model', parts: [{ text: answer }] },
        ...(last ? { finishReason: 'STOP' } : {}),
        index: 0,
      },
    ],
    ...(last ? { usageMetadata: { promptTokenCount: FAKE_USAGE.input, cachedContentTokenCount: FAKE_USAGE.cached, candidatesTokenCount: FAKE_USAGE.output - FAKE_USAGE.reasoning, thoughtsTokenCount: FAKE_USAGE.reasoning, totalTokenCount: FAKE_USAGE.input + FAKE_USAGE.output } } : {}),
    modelVersion: model,
  };
}

/** The declared function a gemini request offers whose name ends with `name` (MCP tools get a prefix). */
function offeredFunction(body: unknown, name: string): string | undefined {
  const tools = field(body, 'tools');
  if (!Array.isArray(tools)) return undefined;
  for (const tool of tools) {
    const declarations = field(tool, 'functionDeclarations');
    if (!Array.isArray(declarations)) continue;
    for (const declaration of declarations) {
      const declared = stringField(declaration, 'name');
      if (declared !== null && (declared === name || declared.endsWith(`_${name}`))) return declared;
    }
  }
  return undefined;
}

/** The function responses a gemini request brings back, as JSON text. */
function geminiToolResults(body: unknown): string[] {
  const contents = field(body, 'contents');
  if (!Array.isArray(contents)) return [];
  return (contents as unknown[]).flatMap((content) => {
    const parts = field(content, 'parts');
    return Array.isArray(parts) ? (parts as unknown[]).filter((part) => isObject(part) && 'functionResponse' in part).map((part) => JSON.stringify(field(part, 'functionResponse'))) : [];
  });
}

/** Whether a gemini request already carries a function response. */
function hasFunctionResponse(body: unknown): boolean {
  const contents = field(body, 'contents');
  return Array.isArray(contents) && contents.some((content) => {
    const parts = field(content, 'parts');
    return Array.isArray(parts) && parts.some((part) => isObject(part) && 'functionResponse' in part);
  });
}

function sendGeminiCall(res: ServerResponse, name: string, args: Json, model: string): void {
  startSse(res);
  const response = {
    candidates: [{ content: { role: 'model', parts: [{ functionCall: { name, args } }] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: FAKE_USAGE.input, cachedContentTokenCount: FAKE_USAGE.cached, candidatesTokenCount: FAKE_USAGE.output - FAKE_USAGE.reasoning, thoughtsTokenCount: FAKE_USAGE.reasoning, totalTokenCount: FAKE_USAGE.input + FAKE_USAGE.output },
    modelVersion: model,
  };
  res.end(`data: ${JSON.stringify(response)}\r\n\r\n`);
}

function sendGeminiStream(res: ServerResponse, answer: string, model: string, parts: FakeParts, pace: Pace): void {
  startSse(res);
  const pieces = splitAnswer(answer, parts.count);
  const events = pieces.map((piece, i) => `data: ${JSON.stringify(geminiResponse(piece, model, i === pieces.length - 1))}\r\n\r\n`);
  pace(res, events, parts.gapMs);
}

function geminiModelInfo(name: string): Json {
  return {
    name: `models/${name}`,
    version: '001',
    displayName: name,
    inputTokenLimit: 1_048_576,
    outputTokenLimit: 65_536,
    supportedGenerationMethods: ['generateContent', 'countTokens'],
  };
}

const GEMINI_MODELS = ['gemini-2.5-pro', FAKE_GEMINI_MODEL, 'gemini-2.5-flash-lite'];

/** What one model turn says: text pieces (sent `gapMs` apart), then maybe a tool call. */
interface Turn {
  pieces: string[];
  gapMs: number;
  tool: FakeToolCall | null;
}

function sendAnthropic(res: ServerResponse, body: unknown, seq: number, turn: Turn, pace: Pace): void {
  const model = stringField(body, 'model') ?? 'claude-fake';
  const id = `msg_fake_${seq}`;
  const u = FAKE_USAGE;
  const usage = { input_tokens: u.input - u.cached - u.cacheWrite, cache_read_input_tokens: u.cached, cache_creation_input_tokens: u.cacheWrite, output_tokens: u.output };
  const toolId = `toolu_fake_${seq}`;
  const text = turn.pieces.join('');
  if (field(body, 'stream') !== true) {
    const content: Json[] = [{ type: 'text', text }];
    if (turn.tool) content.push({ type: 'tool_use', id: toolId, name: turn.tool.name, input: turn.tool.input });
    sendJson(res, 200, {
      id, type: 'message', role: 'assistant', model, content,
      stop_reason: turn.tool ? 'tool_use' : 'end_turn', stop_sequence: null, usage,
    });
    return;
  }
  const sse = (event: Json): string => `event: ${String(event['type'])}\ndata: ${JSON.stringify(event)}\n\n`;
  const start =
    sse({
      type: 'message_start',
      message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage },
    }) + sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
  const events = turn.pieces.map((piece) => sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } }));
  let end = sse({ type: 'content_block_stop', index: 0 });
  if (turn.tool) {
    end +=
      sse({ type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: toolId, name: turn.tool.name, input: {} } }) +
      sse({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: JSON.stringify(turn.tool.input) } }) +
      sse({ type: 'content_block_stop', index: 1 });
  }
  end +=
    sse({ type: 'message_delta', delta: { stop_reason: turn.tool ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: FAKE_USAGE.output } }) +
    sse({ type: 'message_stop' });
  events[0] = start + events[0];
  events[events.length - 1] += end;
  startSse(res);
  pace(res, events, turn.gapMs);
}

function sendOpenAiChat(res: ServerResponse, body: unknown, seq: number, turn: Turn, pace: Pace): void {
  const model = stringField(body, 'model') ?? 'fake-model';
  const id = `chatcmpl-fake-${seq}`;
  const created = Math.floor(Date.now() / 1000);
  const u = FAKE_USAGE;
  const usage = { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output, prompt_tokens_details: { cached_tokens: u.cached }, completion_tokens_details: { reasoning_tokens: u.reasoning } };
  const finish = turn.tool ? 'tool_calls' : 'stop';
  const toolCall = turn.tool
    ? { id: `call_fake_${seq}`, type: 'function', function: { name: turn.tool.name, arguments: JSON.stringify(turn.tool.input) } }
    : null;
  if (field(body, 'stream') !== true) {
    const message = { role: 'assistant', content: turn.pieces.join(''), ...(toolCall ? { tool_calls: [toolCall] } : {}) };
    sendJson(res, 200, { id, object: 'chat.completion', created, model, choices: [{ index: 0, message, finish_reason: finish }], usage });
    return;
  }
  const chunk = (delta: Json, finishReason: string | null = null, extra: Json = {}): string =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra })}\n\n`;
  const events = turn.pieces.map((piece) => chunk({ content: piece }));
  events[0] = chunk({ role: 'assistant', content: '' }) + events[0];
  let end = toolCall ? chunk({ tool_calls: [{ index: 0, ...toolCall }] }) : '';
  end += chunk({}, finish, { usage }) + 'data: [DONE]\n\n';
  events[events.length - 1] += end;
  startSse(res);
  pace(res, events, turn.gapMs);
}

const GOOGLE_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
};

function sendFailure(res: ServerResponse, protocol: RecordedProtocol, failure: FakeFailure): void {
  const message = failure.message ?? `fake model server error ${failure.status}`;
  if (protocol === 'codex') {
    const type = failure.status >= 500 ? 'server_error' : 'invalid_request_error';
    sendJson(res, failure.status, { error: { message, type, param: null, code: null } });
  } else if (protocol === 'anthropic') {
    const type = failure.status >= 500 ? 'api_error' : failure.status === 401 ? 'authentication_error' : 'invalid_request_error';
    sendJson(res, failure.status, { type: 'error', error: { type, message } });
  } else if (protocol === 'openai-chat') {
    const type = failure.status >= 500 ? 'server_error' : 'invalid_request_error';
    sendJson(res, failure.status, { error: { message, type, param: null, code: null } });
  } else if (protocol === 'gemini') {
    const status = GOOGLE_STATUS[failure.status] ?? 'UNKNOWN';
    sendJson(res, failure.status, { error: { code: failure.status, message, status } });
  } else {
    sendJson(res, failure.status, { error: message });
  }
}

// ---------------------------------------------------------------------------------------------
// server

const GEMINI_PATH = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):([A-Za-z]+)$/;

export async function startFakeModelServer(
  opts: FakeModelServerOptions = {},
): Promise<FakeModelServer> {
  let answer = opts.answer ?? DEFAULT_ANSWER;
  let delayMs = opts.delayMs ?? 0;
  let failure = opts.failure ?? null;
  let stall = false;
  let parts: FakeParts = opts.parts ?? { count: 1, gapMs: 0 };
  let tool: FakeToolCall | null = null;
  let toolCall: FakeFunctionCall | null = null;
  let seq = 0;
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();

  const pace: Pace = (res, events, gapMs) => {
    const next = (i: number): void => {
      if (res.destroyed || res.writableEnded) return;
      if (i >= events.length) {
        res.end();
        return;
      }
      res.write(events[i]);
      if (gapMs <= 0) {
        next(i + 1);
        return;
      }
      const timer = setTimeout(() => {
        timers.delete(timer);
        next(i + 1);
      }, gapMs);
      timers.add(timer);
    };
    next(0);
  };

  /** Answers a model request after the configured delay, or with the configured failure. */
  const answerModel = (res: ServerResponse, protocol: RecordedProtocol, send: () => void): void => {
    const fail = failure;
    if (stall) {
      res.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders();
      return;
    }
    const reply = (): void => {
      if (res.destroyed || res.writableEnded) return;
      if (fail) sendFailure(res, protocol, fail);
      else send();
    };
    if (delayMs <= 0) {
      reply();
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      reply();
    }, delayMs);
    timers.add(timer);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    const pathname = new URL(path, 'http://x').pathname;
    const raw = await readBody(req);
    const body = parseBody(raw, req.headers['content-encoding']);
    const record = (protocol: RecordedProtocol, prompt: string | null, userTexts: string[] = [], toolResults: string[] = [], tools = toolNames(body)) =>
      requests.push({ protocol, method, path, prompt, userTexts, tools, toolResults, body, headers: { ...req.headers } });
    /** The scripted tool call when it is offered (or `unoffered`) and has not been answered yet. */
    const scripted = (toolResults: string[], offered: string[]): FakeToolCall | null =>
      tool !== null && toolResults.length === 0 && (tool.unoffered === true || offered.includes(tool.name)) ? tool : null;
    /** The scripted tool call, else the answer. */
    const turn = (toolResults: string[]): Turn => {
      const call = scripted(toolResults, toolNames(body));
      if (call) return { pieces: [TOOL_PREAMBLE], gapMs: 0, tool: call };
      return { pieces: splitAnswer(answer, parts.count), gapMs: parts.gapMs, tool: null };
    };
    seq += 1;
    const n = seq;

    // codex: Responses API
    if (method === 'POST' && pathname === '/v1/responses') {
      const userTexts = codexUserTexts(body);
      const offered = codexToolNames(body);
      const results = codexToolResults(body);
      record('codex', userTexts.length > 0 ? (userTexts[userTexts.length - 1] ?? null) : null, userTexts, results, offered);
      const call = scripted(results, offered);
      answerModel(res, 'codex', () => sendCodex(res, answer, n, parts, pace, call && { tool: call, type: codexToolType(body, call.name) }));
      return;
    }
    if (method === 'GET' && pathname === '/v1/models') {
      // Not called by codex 0.169 with this config; an empty list if a later version asks.
      record('other', null);
      sendJson(res, 200, { object: 'list', data: [], models: [] });
      return;
    }

    // gemini: Generative Language API
    const gem = GEMINI_PATH.exec(pathname);
    if (method === 'POST' && gem) {
      const model = gem[1] ?? 'gemini';
      const action = gem[2] ?? '';
      if (action === 'streamGenerateContent' || action === 'generateContent') {
        record('gemini', geminiPrompt(body), [], geminiToolResults(body));
        const call = toolCall;
        const callee =
          call && action === 'streamGenerateContent' && !hasFunctionResponse(body)
            ? (offeredFunction(body, call.name) ?? (call.unoffered === true ? call.name : undefined))
            : undefined;
        answerModel(res, 'gemini', () => {
          if (call && callee !== undefined) sendGeminiCall(res, callee, call.args, model);
          else if (action === 'generateContent') sendJson(res, 200, geminiResponse(answer, model));
          else sendGeminiStream(res, answer, model, parts, pace);
        });
        return;
      }
      record('other', null);
      if (action === 'countTokens') sendJson(res, 200, { totalTokens: Math.ceil(raw.length / 4) });
      else if (action === 'embedContent') sendJson(res, 200, { embedding: { values: [0, 0, 0] } });
      else sendJson(res, 404, { error: { code: 404, message: `fake: no ${action}`, status: 'NOT_FOUND' } });
      return;
    }
    if (method === 'GET' && /^\/v1(?:beta|alpha)?\/models\/?$/.test(pathname)) {
      record('other', null);
      sendJson(res, 200, { models: GEMINI_MODELS.map(geminiModelInfo) });
      return;
    }
    if (method === 'GET' && gem === null && /^\/v1(?:beta|alpha)?\/models\/[^/:]+$/.test(pathname)) {
      record('other', null);
      sendJson(res, 200, geminiModelInfo(pathname.split('/').pop() ?? 'gemini'));
      return;
    }

    // claude: Anthropic Messages API
    if (method === 'POST' && /^(?:\/v1)?\/messages$/.test(pathname)) {
      const userTexts = anthropicUserTexts(body);
      const results = anthropicToolResults(body);
      record('anthropic', userTexts.at(-1) ?? null, userTexts, results);
      answerModel(res, 'anthropic', () => sendAnthropic(res, body, n, turn(results), pace));
      return;
    }
    if (method === 'POST' && /^(?:\/v1)?\/messages\/count_tokens$/.test(pathname)) {
      record('other', null);
      sendJson(res, 200, { input_tokens: Math.ceil(raw.length / 4) });
      return;
    }

    // opencode: OpenAI chat completions
    if (method === 'POST' && /^(?:\/v1)?\/chat\/completions$/.test(pathname)) {
      const results = openAiToolResults(body);
      record('openai-chat', openAiPrompt(body), [], results);
      answerModel(res, 'openai-chat', () => sendOpenAiChat(res, body, n, turn(results), pace));
      return;
    }

    record('other', null);
    sendJson(res, 404, { error: `fake model server: no route for ${method} ${pathname}` });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: String(err) });
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 1000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  const fake: FakeModelServer = {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    modelRequests: () =>
      requests.filter((r) => ['codex', 'gemini', 'anthropic', 'openai-chat'].includes(r.protocol)),
    setAnswer: (text) => {
      answer = text;
    },
    setDelay: (ms) => {
      delayMs = ms;
    },
    setParts: (next) => {
      parts = next;
    },
    setFailure: (next) => {
      failure = next;
    },
    setStall: (next) => {
      stall = next;
    },
    setTool: (next) => {
      tool = next;
    },
    setToolCall: (next) => {
      toolCall = next;
    },
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      await removeHomes(homesByServer.get(fake) ?? new Set());
      await removeHomes(looseHomes);
    },
  };
  servers.add(fake);
  return fake;
}
