#!/bin/sh
# Example agentcron notifier: appends one line per notice to a file.
#
#   NOTICE_FILE  where to append [default: ~/agentcron-notices.log] (tick --pass-env NOTICE_FILE)
#
# Exit 0 means delivered. If the file cannot be written nothing was sent, so
# it exits 75 (EX_TEMPFAIL) and agentcron tries again on a later tick.
#
# Install: agentcron tick --notifier /path/to/notifier-file.sh
set -u
file="${NOTICE_FILE:-$HOME/agentcron-notices.log}"
input=$(cat)
message=$(printf '%s' "$input" | sed -n 's/.*"message":"\(\([^"\\]\|\\.\)*\)".*/\1/p' | head -n 1)
target=$(printf '%s' "$input" | sed -n 's/.*"target":"\(\([^"\\]\|\\.\)*\)".*/\1/p' | head -n 1)
printf '%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$target" "$message" >> "$file" 2>/dev/null || exit 75
exit 0
