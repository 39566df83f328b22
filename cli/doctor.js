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
};
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
async function serverAnswers(url, signal) {
    // AbortSignal.any() is newer than Node 20.0.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 3_000);
    const onAbort = () => controller.abort();
    signal.addEventListener('abort', onAbort);
    try {
        const response = await fetch(`${url}/api/tags`, { signal: controller.signal });
        return response.ok;
    }
    catch {
        return false;
    }
    finally {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
    }
}
/** What is installed and reachable; `signal` cuts it short (the CLI's Ctrl-C). */
async function doctor(signal = new AbortController().signal) {
    const installed = native_js_1.binding.checkBackends();
    const url = native_js_1.binding.ollamaBaseUrl(process.env.OLLAMA_HOST);
    const [backends, reachable] = await Promise.all([
        Promise.all(Object.keys(INSTALL).map(async (name) => {
            if (!installed[name])
                return { name, found: false, install: INSTALL[name] };
            return { name, found: true, version: await versionOf(name, signal) };
        })),
        serverAnswers(url, signal),
    ]);
    return { backends, ollamaServer: { url, reachable } };
}
function formatDoctor(report) {
    const lines = report.backends.map((backend) => {
        if (!backend.found)
            return `✗ ${backend.name.padEnd(7)} not found. Install it: ${backend.install}`;
        return `✓ ${backend.name.padEnd(7)} ${backend.version ?? '(version unknown)'}`;
    });
    const { url, reachable } = report.ollamaServer;
    lines.push(reachable ? `✓ ollama server answers at ${url}` : `✗ ollama server not reachable at ${url} (set OLLAMA_HOST, or start \`ollama serve\`)`);
    return `${lines.join('\n')}\n`;
}
