#!/bin/sh
# What doctor asks; answered before anything is logged, so a probe never clobbers a relay's record.
if [ "$#" = 1 ] && [ "$1" = --version ]; then printf '%s %s\n' "$(basename "$0")" "${FAKE_VERSION:-1.2.3-fake}"; exit 0; fi
# The sign-in checks doctor makes (codex, claude, opencode), answered as a signed-in CLI does.
case "$(basename "$0") $*" in
  "codex login status") echo 'API key configured - fake'; exit 0 ;;
  "claude auth status") echo '{"loggedIn":true,"authMethod":"api_key","apiKeySource":"FAKE"}'; exit 0 ;;
  "opencode auth list") printf 'Credentials\n1 credentials\n'; exit 0 ;;
esac
log="$FAKE_LOG"
: > "$log/args"
for a in "$@"; do printf '%s\n' "$a" >> "$log/args"; done
pwd > "$log/cwd"
printf '%s' "$PHONE_A_FRIEND_DEPTH" > "$log/depth"
out=""; prev=""
for a in "$@"; do if [ "$prev" = "--output-last-message" ]; then out="$a"; fi; prev="$a"; done
printf '%s' "$out" > "$log/answer-file"
cat > "$log/stdin"
cli=$(basename "$0")
# One JSON event a line, as `gemini --output-format stream-json` / `codex exec --json` print them.
event() { printf '%s\n' "$1"; if [ -n "$FAKE_GAP" ]; then sleep "$FAKE_GAP"; fi; }
case "$FAKE_MODE" in
  events|events-no-file)
    if [ "$cli" = gemini ]; then
      event "{\"type\":\"init\",\"timestamp\":\"t\",\"session_id\":\"${FAKE_SESSION_ID:-s1}\",\"model\":\"m\"}"
      event '{"type":"message","timestamp":"t","role":"user","content":"the prompt"}'
      event '{"type":"message","timestamp":"t","role":"assistant","content":"  Hel","delta":true}'
      event 'not an event'
      event '{"type":"message","timestamp":"t","role":"assistant","content":"lo, wörld 😀","delta":true}'
      event '{"type":"message","timestamp":"t","role":"assistant","content":"!\n","delta":true}'
      event '{"type":"result","timestamp":"t","status":"success","stats":{}}'
    elif [ "$cli" = claude ]; then
      event "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"  All good 😀\\n\",\"session_id\":\"${FAKE_SESSION_ID:-fake-session}\"}"
    elif [ "$cli" = opencode ]; then
      event "{\"type\":\"text\",\"sessionID\":\"${FAKE_SESSION_ID:-ses_fake}\",\"part\":{\"messageID\":\"m1\",\"type\":\"text\",\"text\":\"All good 😀\"}}"
    else
      event "{\"type\":\"thread.started\",\"thread_id\":\"${FAKE_SESSION_ID:-fake-thread}\"}"
      event '{"type":"turn.started"}'
      event '{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Looking."}}'
      event '{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"ls","aggregated_output":"a.txt\n","exit_code":0,"status":"completed"}}'
      event '{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"  All good 😀\n"}}'
      if [ "$FAKE_MODE" = events ] && [ -n "$out" ]; then printf 'All good 😀\n' > "$out"; fi
      event '{"type":"turn.completed","usage":{}}'
    fi ;;
  event-flood)
    # gemini's format: 64 assistant deltas of 64 KiB each (4 MiB), then a mark that it finished.
    chunk=$(head -c 65536 /dev/zero | tr '\0' x)
    i=0; while [ $i -lt 64 ]; do
      printf '{"type":"message","role":"assistant","content":"%s","delta":true}\n' "$chunk"; i=$((i + 1))
    done
    printf '{"type":"result","status":"success","stats":{}}\n'
    : > "$log/finished" ;;
  events-no-result)
    # gemini's format, cut short: text, then an exit 0 without the closing result event.
    event '{"type":"init","timestamp":"t","session_id":"s1","model":"m"}'
    event '{"type":"message","timestamp":"t","role":"assistant","content":"Half an ans","delta":true}' ;;
  events-fail)
    if [ "$cli" = gemini ]; then
      event '{"type":"init","timestamp":"t","session_id":"s1","model":"m"}'
      event '{"type":"result","timestamp":"t","status":"error","error":{"type":"unknown","message":"[API Error: quota]"},"stats":{}}'
    else
      event '{"type":"thread.started","thread_id":"fake-thread"}'
      event '{"type":"error","message":"first problem"}'
      event '{"type":"turn.failed","error":{"message":"the turn failed"}}'
    fi
    exit 1 ;;
  answer) if [ -n "$out" ]; then printf '  file answer\n' > "$out"; fi; printf 'stdout answer\n' ;;
  stdout-only) printf '  stdout answer \n' ;;
  stdout-env-answer) printf '%s\n' "$FAKE_ANSWER" ;;
  empty) ;;
  answer-path-is-a-folder) rm -f "$out"; mkdir "$out"; printf 'stdout answer\n' ;;
  fail-stderr) echo "stdout detail"; echo "boom on stderr" >&2; exit 3 ;;
  fail-stdout) echo "stdout detail"; exit 3 ;;
  fail-silent) exit 3 ;;
  fail-silent-with-answer) printf 'half an answer' > "$out"; exit 3 ;;
  report-perms) stat -c '%a' "$(dirname "$out")" "$out" > "$log/perms"; printf 'ok' > "$out" ;;
  slow) sleep "${FAKE_SLEEP:-1}"; if [ -n "$out" ]; then printf 'slow answer' > "$out"; fi; printf 'slow answer' ;;
  hang-with-grandchild) sleep 30 & echo $! > "$log/grandchild"; sleep 30 ;;
  hang-with-new-session) setsid sleep 30 & echo $! > "$log/grandchild"; sleep 30 ;;
  events-then-hang)
    # gemini's format: one assistant delta, then a hang with a grandchild in a new session.
    setsid sleep 30 & echo $! > "$log/grandchild"
    event '{"type":"message","timestamp":"t","role":"assistant","content":"first words","delta":true}'
    sleep 30 ;;
  flood) head -c 209715200 /dev/zero | tr '\0' a ;;
  big-answer) head -c 8000000 /dev/zero | tr '\0' a ;;
  *) echo "unknown FAKE_MODE $FAKE_MODE" >&2; exit 99 ;;
esac
