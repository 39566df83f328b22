"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.doctor = doctor;
exports.formatDoctor = formatDoctor;
const node_child_process_1 = require("node:child_process");
const native_js_1 = require("../internal/native.js");
const INSTALL = {
    codex: 'npm install -g @openai/codex',
    gemini: 'npm install -g @google/gemini-cli',
    ollama: 'https://ollama.com/download',
    claude: 'npm install -g @anthropic-ai/claude-code',
    opencode: 'npm install -g opencode-ai',
};
/** The built-in backends that run a CLI, in the order `doctor` lists them (ollama comes last). */
const CLIS = ['codex', 'gemini', 'claude', 'opencode'];
/** How long the Ollama server has to answer `GET /api/tags`. */
const PROBE_MS = 3_000;
/** At most this many of the server's models are named in the text report. */
const MODELS_SHOWN = 5;
/** The last line `<cli> --version` prints; stdin closed so no CLI waits on it; killed on abort. */
function versionOf(cli, signal) {
    return new Promise((resolve) => {
        const child = (0, node_child_process_1.spawn)(cli, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000, signal });
        let stdout = '';
        child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
        child.on('error', () => resolve(undefined));
        child.on('close', (code) => {
            const line = stdout.trim().split('\n').at(-1)?.trim();
            resolve(code === 0 && line ? line : undefined);
        });
    });
}
/** Whether an Ollama server answers `GET <host>/api/tags`, and the models it lists. */
async function probeOllama(host, signal) {
    // AbortSignal.any() is newer than Node 20.0.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), PROBE_MS);
    const onAbort = () => controller.abort();
    signal.addEventListener('abort', onAbort);
    try {
        const response = await fetch(`${host}/api/tags`, { signal: controller.signal });
        if (!response.ok)
            return { answers: false };
        const body = (await response.json().catch(() => undefined));
        const models = Array.isArray(body?.models)
            ? body.models.map((model) => model?.name).filter((name) => typeof name === 'string')
            : undefined;
        return { answers: true, models };
    }
    catch {
        return { answers: false };
    }
    finally {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
    }
}
function nonEmpty(value) {
    return value === undefined || value === '' ? undefined : value;
}
/**
 * What is ready. codex, gemini, claude and opencode need their CLI on PATH. ollama needs its
 * server to answer at OLLAMA_HOST, whether or not the `ollama` binary is installed here (the
 * relay only talks HTTP).
 */
async function doctor(options = {}) {
    const signal = options.signal ?? new AbortController().signal;
    const installed = native_js_1.binding.checkBackends();
    const host = native_js_1.binding.ollamaBaseUrl(process.env.OLLAMA_HOST);
    const model = nonEmpty(options.model) ?? nonEmpty(process.env.OLLAMA_MODEL);
    const clis = CLIS.map(async (name) => {
        if (!installed[name])
            return { name, ready: false, found: false, install: INSTALL[name] };
        return { name, ready: true, found: true, version: await versionOf(name, signal) };
    });
    const ollama = probeOllama(host, signal).then(({ answers, models }) => {
        const found = Boolean(installed.ollama);
        return {
            name: 'ollama',
            ready: answers,
            found,
            ...(answers || found ? {} : { install: INSTALL.ollama }),
            host,
            ...(model === undefined ? {} : { model }),
            ...(models === undefined ? {} : { models }),
        };
    });
    return { backends: await Promise.all([...clis, ollama]) };
}
/** `llama3` is the tag `llama3:latest`. */
function hasModel(models, model) {
    return models.some((name) => name === model || name === `${model}:latest`);
}
function formatOllama(backend) {
    const label = `${backend.ready ? '✓' : '✗'} ollama  `;
    const indent = ' '.repeat(10);
    const elsewhere = 'set OLLAMA_HOST to point elsewhere';
    if (!backend.ready) {
        const start = backend.found ? 'start it with `ollama serve`' : `install Ollama (${INSTALL.ollama}) and run \`ollama serve\``;
        return [`${label}server not reachable at ${backend.host}: ${start}, or ${elsewhere}`];
    }
    const lines = [`${label}server answers at ${backend.host} (${elsewhere})`];
    const { model, models } = backend;
    const listed = models && models.length > 0 ? `${models.slice(0, MODELS_SHOWN).join(', ')}${models.length > MODELS_SHOWN ? ', …' : ''}` : undefined;
    if (model === undefined) {
        lines.push(`${indent}no model set: Ollama refuses a chat without one; pass --model <name> or set OLLAMA_MODEL${listed ? ` (this server has ${listed})` : ''}`);
    }
    else if (models && !hasModel(models, model)) {
        lines.push(`${indent}model ${model} is not on this server: \`ollama pull ${model}\`${listed ? ` (it has ${listed})` : ''}`);
    }
    else {
        lines.push(`${indent}model ${model}`);
    }
    return lines;
}
function formatDoctor(report) {
    const lines = report.backends.flatMap((backend) => {
        if (backend.name === 'ollama')
            return formatOllama(backend);
        if (!backend.found)
            return [`✗ ${backend.name.padEnd(7)} not found. Install it: ${backend.install}`];
        return [`✓ ${backend.name.padEnd(7)} ${backend.version ?? '(version unknown)'}`];
    });
    return `${lines.join('\n')}\n`;
}
