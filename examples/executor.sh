#!/bin/sh
# Example agentcron executor: runs one script per task.
#
#   $1  folder holding one executable per task, named after the task's name
#       (or its id when it has none) [default: ~/agentcron-scripts]
#
# A folder, not a variable: a run receives only an allowlist of the tick's
# environment (docs/CONTRACT.md §19), never an AGENTCRON_* setting of its own.
#
# The script gets agentcron's JSON (instruction, policy, task, run …) on
# stdin, exactly as the executor did. Its exit status decides the
# run (0 succeeded, else failed) and the tail of its output becomes the
# summary. Before a side effect, a script can fence it with
#   agentcron lease check "$AGENTCRON_RUN_ID" --token "$AGENTCRON_LEASE_TOKEN"
# which exits 5 once another tick owns the run.
#
# Install: agentcron tick --executor "/path/to/executor.sh /path/to/scripts"
set -eu
input=$(cat)

# Task names are [A-Za-z0-9._-]; the unescaped "name" key is the task's (the
# same text inside the instruction would have its quotes escaped).
name=$(printf '%s' "$input" | sed -n 's/.*[{,]"name":"\([A-Za-z0-9._-]*\)".*/\1/p' | head -n 1)
script="${1:-$HOME/agentcron-scripts}/${name:-$AGENTCRON_TASK_ID}"
if [ ! -x "$script" ]; then
  printf '{"status":"failed","summary":"no executable script %s"}\n' "$script"
  exit 0
fi

printf '%s' "$input" | "$script"
