"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.toDryRun = toDryRun;
const limits_js_1 = require("./limits.js");
function action(native) {
    const { command, request } = native;
    if (command) {
        return {
            kind: 'command',
            name: command.name,
            program: command.program ?? null,
            installHint: command.installHint,
            args: command.args,
            commandLine: command.commandLine,
            cwd: command.cwd,
            stdin: command.envelopeOnStdin ? 'envelope' : 'empty',
        };
    }
    if (request)
        return { kind: 'http', method: request.method, url: request.url, body: JSON.parse(request.body) };
    return { kind: native.kind === 'review' ? 'review' : 'run' };
}
function toDryRun(native) {
    const envelope = native.envelope ?? null;
    return {
        dryRun: true,
        backend: native.backend,
        repoPath: native.repoPath,
        sandbox: native.sandbox,
        model: native.model ?? null,
        timeoutSeconds: native.timeoutSeconds,
        ...(native.base === undefined || native.base === null ? {} : { base: native.base }),
        envelope,
        envelopeBytes: envelope === null ? 0 : Buffer.byteLength(envelope, 'utf8'),
        maxPromptBytes: limits_js_1.MAX_PROMPT_BYTES,
        action: action(native),
        env: { set: Object.fromEntries(native.envSet.map(([name, value]) => [name, value])), removed: native.envRemoved },
    };
}
