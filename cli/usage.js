"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.HELP = exports.USAGE_LINE = void 0;
exports.USAGE_LINE = 'Usage: phone-a-friend [relay] --prompt <text|-> [--to <backend>] [--repo <dir>] [--context-file <file> | --context-text <text>] [--include-diff] [--timeout <s>] [--model <m>] [--sandbox <mode>] [--review] [--base <ref>] [--json]';
exports.HELP = `phone-a-friend: ask another coding agent for a second opinion.

${exports.USAGE_LINE}
       phone-a-friend doctor [--json]
       phone-a-friend --version | --help

Relay options:
  -p, --prompt <text>      What to ask; "-" reads it from stdin
  -t, --to <backend>       codex, gemini, ollama        (env PHONE_A_FRIEND_BACKEND, default codex)
  -r, --repo <dir>         Repository to work in        (default: the current directory)
      --context-file <f>   Add a file as context (at most 200,000 bytes)
      --context-text <t>   Add text as context (not with --context-file)
      --include-diff       Add \`git diff HEAD\`          (env PHONE_A_FRIEND_INCLUDE_DIFF=true|1)
      --timeout <s>        Seconds the backend may take (env PHONE_A_FRIEND_TIMEOUT, default 600)
  -m, --model <m>          Model for the backend
      --sandbox <mode>     read-only, workspace-write, danger-full-access
                                                        (env PHONE_A_FRIEND_SANDBOX, default read-only)
      --review             Review the changes against a base instead (prompt optional)
      --base <ref>         Base to review against; implies --review
                                                        (env PHONE_A_FRIEND_REVIEW_BASE, default main/master/HEAD~1)
      --json               Print { ok, output } or { ok, error: { code, message } } on stdout
                           (usage errors too, as code ERR_USAGE)

The answer goes to stdout, errors to stderr as "Error [<code>]: <message>".
Exit codes: 0 answered, 1 relay error, 2 usage error; 129, 130, 143 stopped by SIGHUP, Ctrl-C,
SIGTERM (the backend is killed); 141 output closed early (| head).
`;
