#!/bin/sh
log="$FAKE_LOG"
: > "$log/args"
for a in "$@"; do printf '%s\n' "$a" >> "$log/args"; done
pwd > "$log/cwd"
printf '%s' "$PHONE_A_FRIEND_DEPTH" > "$log/depth"
out=""; prev=""
for a in "$@"; do if [ "$prev" = "--output-last-message" ]; then out="$a"; fi; prev="$a"; done
printf '%s' "$out" > "$log/answer-file"
cat > "$log/stdin"
case "$FAKE_MODE" in
  answer) if [ -n "$out" ]; then printf '  file answer\n' > "$out"; fi; printf 'stdout answer\n' ;;
  stdout-only) printf '  stdout answer \n' ;;
  empty) ;;
  fail-stderr) echo "stdout detail"; echo "boom on stderr" >&2; exit 3 ;;
  fail-stdout) echo "stdout detail"; exit 3 ;;
  fail-silent) exit 3 ;;
  fail-silent-with-answer) printf 'half an answer' > "$out"; exit 3 ;;
  report-perms) stat -c '%a' "$(dirname "$out")" "$out" > "$log/perms"; printf 'ok' > "$out" ;;
  slow) sleep "${FAKE_SLEEP:-1}"; if [ -n "$out" ]; then printf 'slow answer' > "$out"; fi; printf 'slow answer' ;;
  hang-with-grandchild) sleep 30 & echo $! > "$log/grandchild"; sleep 30 ;;
  hang-with-new-session) setsid sleep 30 & echo $! > "$log/grandchild"; sleep 30 ;;
  flood) head -c 209715200 /dev/zero | tr '\0' a ;;
  big-answer) head -c 8000000 /dev/zero | tr '\0' a ;;
  *) echo "unknown FAKE_MODE $FAKE_MODE" >&2; exit 99 ;;
esac
