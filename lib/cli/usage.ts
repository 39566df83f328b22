export const USAGE_LINE =
  'Usage: phone-a-friend [relay] --prompt <text|-> [--to <backend>] [--repo <dir>] [--context-file <file> | --context-text <text>] [--include-diff] [--no-fit] [--max-prompt-bytes <n>] [--fallback <backends>] [--timeout <s>] [--idle-timeout <s>] [--model <m>] [--sandbox <mode>] [--review] [--base <ref>] [--session <label>] [--backend-session <id>] [--schema <file|json>] [--verdict] [--dry-run [--show-envelope]] [--no-stream] [--raw] [--json] [--verbose]'

const RELAY_OPTIONS = `Relay options:
  -p, --prompt <text>      What to ask; "-" reads it from stdin
  -t, --to <backend>       codex, gemini, claude, opencode, antigravity, ollama
                           (env PHONE_A_FRIEND_BACKEND, default codex);
                           several, comma-separated (codex,gemini), are asked at once: each
                           answer is printed under a header (=== codex ===), --json prints
                           [{ backend, ok, answer | error }], exit 1 if any failed
  -r, --repo <dir>         Repository to work in        (default: the current directory)
      --context-file <f>   Add a file as context (at most 200,000 bytes)
      --context-text <t>   Add text as context (not with --context-file)
      --include-diff       Add \`git diff HEAD\`          (env PHONE_A_FRIEND_INCLUDE_DIFF=true|1)
      --no-fit             Refuse a diff over its limit (ERR_TOO_LARGE) instead of fitting it:
                           by default lock files, generated, vendored and binary files are left
                           out first, then the largest; a file too large is cut at a hunk; the
                           envelope's Diff Coverage section and a warning say what was left out
      --max-prompt-bytes <n>
                           The envelope's budget, below its 500,000-byte limit: the context and
                           diff are fitted to it (with --no-fit, a larger envelope is refused)
      --fallback <b,c>     Ask these next, in order, when the backend cannot answer now (auth,
                           quota, rate limit, network, stalled, not installed) or cannot be
                           given an envelope this large
      --timeout <s>        Seconds the whole call may take: a number like 30 or 2.5
                                                        (env PHONE_A_FRIEND_TIMEOUT, default 600)
      --idle-timeout <s>   Stop a backend that makes no progress (no output) for this long:
                           ERR_BACKEND_TIMEOUT, stalled; 0 for none
                                                        (env PHONE_A_FRIEND_IDLE_TIMEOUT, default 300)
  -m, --model <m>          Model for the backend
      --sandbox <mode>     read-only, workspace-write, danger-full-access
                                                        (env PHONE_A_FRIEND_SANDBOX, default read-only)
      --review             Review the changes against a base instead (prompt optional)
      --base <ref>         Base to review against; implies --review
                                                        (env PHONE_A_FRIEND_REVIEW_BASE, default main/master/HEAD~1)
      --session <label>    Continue the conversation of this label (or start it): see
                           \`phone-a-friend sessions\`
      --backend-session <id>
                           Attach to the backend's own session id, kept under --session's label
      --schema <file|json> A JSON Schema the answer must match (inline JSON, or a file); the
                           answer is its JSON text, checked (ERR_SCHEMA otherwise); not streamed
      --verdict            Review with a verdict: upstream's JSON envelope (ship, iterate,
                           abstain; findings), checked; implies --review; exit 0 ship, 4 iterate,
                           3 abstain
      --dry-run            Run the checks and build the envelope (context, diff), then print
                           what would run (backend, envelope size, diff, command, environment
                           changes), sending nothing; with several --to backends, one dry run
                           each, under its header
      --show-envelope      With --dry-run: print the envelope too, after the summary
      --no-stream          Wait for the whole answer, then print it (by default it is printed
                           as the backend produces it, also into a pipe)
      --raw                Print the answer's bytes as they are on a terminal too (by default a
                           terminal gets escape sequences and other control characters of the
                           answer written as \\u{1b}; a pipe or a file always gets the bytes)
      --json               Print { ok, answer, backend, model, usage, coverage, attempts, … }
                           or { ok, backend?, error: { code, message, reason, … } } on stdout
                           (usage errors too, as code ERR_USAGE); never streams
      --verbose            After the answer, say on stderr who answered, in how long and what
                           it cost (tokens, dollars), as far as the backend said`

const RELAY_EXIT = `The answer goes to stdout as it comes, errors to stderr as "Error [<code>]: <message>",
then "Hint: <what to do>" when there is advice (after part of the answer was printed, that part
stays on stdout).
Exit codes: 0 answered, 1 relay error, 2 usage error; with --verdict 0 ship, 4 iterate,
3 abstain; 129, 130, 143 stopped by SIGHUP, Ctrl-C, SIGTERM (the backend is killed); 141 output
closed early (| head).`

export const HELP = `phone-a-friend: ask another coding agent for a second opinion.

${USAGE_LINE}
       phone-a-friend doctor [--model <m>] [--json]
       phone-a-friend sessions [list | delete <label> | prune --older-than <days>] [--json]
       phone-a-friend mcp
       phone-a-friend install|uninstall <claude|codex|gemini|opencode> [--scope <s>] [--dry-run] [--json]
       phone-a-friend help [<command>] | <command> --help | --version

Commands:
  relay     Ask a backend about the repository (the default)
  doctor    Which backends are ready, and how to get the rest
  sessions  List, delete or prune the labelled sessions
  mcp       Serve relay, review and backends as MCP tools on stdin/stdout
  install   Add the MCP server to an agent host (claude, codex, gemini, opencode)
  uninstall Remove it again
  help      This text, or a command's

${RELAY_OPTIONS}

${RELAY_EXIT}
`

const RELAY_HELP = `phone-a-friend relay: ask a backend about the repository (the default command).

${USAGE_LINE}

${RELAY_OPTIONS}

${RELAY_EXIT}
`

const DOCTOR_USAGE = 'Usage: phone-a-friend doctor [--model <m>] [--json]'

const DOCTOR_HELP = `phone-a-friend doctor: which backends are ready, and how to get the rest.

${DOCTOR_USAGE}

  codex, gemini, claude, opencode, antigravity
                  Ready when their CLI is on PATH (its version is shown; antigravity's
                  is agy, checked against its documentation, never run by this package).
  ollama          Ready when its server answers GET <host>/api/tags, whether or not the
                  ollama binary is installed; the host comes from OLLAMA_HOST (default
                  http://localhost:11434). Says when no model is set: Ollama needs one.

  -m, --model <m>   The model a relay to ollama would use (env OLLAMA_MODEL)
      --json        Print the report as JSON

Exit codes: 0 at least one backend is ready, 1 none is, 2 usage error.
`

const SESSIONS_USAGE = `Usage: phone-a-friend sessions [list] [--json]
       phone-a-friend sessions delete <label> [--json]
       phone-a-friend sessions prune --older-than <days> [--json]`

const SESSIONS_HELP = `phone-a-friend sessions: the session store (labels given with --session).

${SESSIONS_USAGE}

The store is sessions.json in PHONE_A_FRIEND_HOME, else $XDG_CONFIG_HOME/phone-a-friend, else
~/.config/phone-a-friend.

Exit codes: 0 done, 1 error (delete: no such session), 2 usage error.
`

export const MCP_USAGE = 'Usage: phone-a-friend mcp'

const MCP_HELP = `phone-a-friend mcp: serve the relay over the Model Context Protocol (stdio).

${MCP_USAGE}

Tools: relay (ask a backend about a repository), review (a review of base...HEAD) and
backends (which are ready). repoPath defaults to the directory the server was started in.
The answer streams as progress notifications when the client asks for progress;
notifications/cancelled stops the backend. The server ends when its client closes stdin.

Add it to an agent host with \`phone-a-friend install <claude|codex|gemini|opencode>\` (see
phone-a-friend install --help), or by hand. A relay can take minutes: each config gives the
client's tool-call timeout room (15 minutes).

  Claude Code:  claude mcp add phone-a-friend -- npx -y @phone-a-friend/relay mcp
                and run claude with MCP_TOOL_TIMEOUT=900000 (milliseconds)
  Codex:        ~/.codex/config.toml
                  [mcp_servers.phone-a-friend]
                  command = "npx"
                  args = ["-y", "@phone-a-friend/relay", "mcp"]
                  tool_timeout_sec = 900
  Gemini CLI:   ~/.gemini/settings.json
                  { "mcpServers": { "phone-a-friend": { "command": "npx", "args": ["-y", "@phone-a-friend/relay", "mcp"], "timeout": 900000 } } }
`

export const INSTALL_USAGE = `Usage: phone-a-friend install <claude|codex|gemini|opencode> [--scope <scope>] [--dry-run] [--json]
       phone-a-friend uninstall <claude|codex|gemini|opencode> [--scope <scope>] [--dry-run] [--json]`

const INSTALL_HELP = `phone-a-friend install, uninstall: add this package's MCP server to an agent host, or remove it.

${INSTALL_USAGE}

install registers \`phone-a-friend mcp\` as the MCP server "phone-a-friend" through the host's own
CLI (claude mcp add-json, codex mcp add, gemini mcp add) or, for opencode, by editing its config
file (comments kept), with a tool-call time-out of 15 minutes: a relay can take minutes. codex and
gemini get the names of the variables the friends read (API keys by reference, never a value).
The command registered is this copy, by absolute path (node and bin/phone-a-friend.js); run from
npx's cache, it is npx -y @phone-a-friend/relay@<this version> mcp instead. Run again, it changes
nothing and says so; an entry that differs (a moved install) is replaced. uninstall removes that
entry only.

  --scope <scope>   claude: user (default), project (.mcp.json here), local
                    codex: user only
                    gemini: user (default), project (.gemini/settings.json here)
                    opencode: global (default; also "user"), project (opencode.json[c] here)
  --dry-run         Print the commands it would run and the edits it would make; change nothing
  --json            Print { ok, host, scope, config, action, dryRun, command, via, steps }

Exit codes: 0 done (or nothing to do), 1 the host's CLI is missing or failed, or its config
could not be read or edited (Error [ERR_HOST_…]), 2 usage error.
`

const HELP_USAGE = `Usage: phone-a-friend help [relay|doctor|sessions|mcp|install|uninstall|help]
       phone-a-friend <command> --help`

const HELP_HELP = `phone-a-friend help: the help of the whole CLI, or of one command.

${HELP_USAGE}
`

/** The commands, each with its help. */
export const COMMAND_HELP: Readonly<Record<string, string>> = { relay: RELAY_HELP, doctor: DOCTOR_HELP, sessions: SESSIONS_HELP, mcp: MCP_HELP, install: INSTALL_HELP, uninstall: INSTALL_HELP, help: HELP_HELP }
/** The usage lines of each command, printed after a usage error of that command. */
export const COMMAND_USAGE: Readonly<Record<string, string>> = { relay: USAGE_LINE, doctor: DOCTOR_USAGE, sessions: SESSIONS_USAGE, mcp: MCP_USAGE, install: INSTALL_USAGE, uninstall: INSTALL_USAGE, help: HELP_USAGE }
