# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_agentcron_global_optspecs
    string join \n db= tenant= as= json now= h/help V/version
end

function __fish_agentcron_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_agentcron_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_agentcron_using_subcommand
    set -l cmd (__fish_agentcron_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c agentcron -n "__fish_agentcron_needs_command" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_needs_command" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_needs_command" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_needs_command" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_needs_command" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_needs_command" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "draft" -d 'Draft a task: show what would run, its payload hash, and the confirm line'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "confirm" -d 'Confirm a draft: create the task it describes'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "list" -d 'List your tasks in the tenant, the next to run first'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "show" -d 'Show one task and its last 10 runs'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "pause" -d 'Pause a task: nothing runs while it is paused'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "resume" -d 'Resume a paused task; its next run is the next occurrence after now'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "delete" -d 'Delete a task; its history stays readable with `list --all`'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "trigger" -d 'Run a task once more, now: the next tick claims it'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "next" -d 'Show the next occurrences of a task in its zone, DST-shifted ones marked'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "upcoming" -d 'Show coming occurrences of all your tasks, merged in time order'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "plan" -d 'Show what applying a TOML file of tasks would change, and its plan hash'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "apply" -d 'Perform a plan: every change in one transaction, or nothing'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "runs" -d 'Show run history, newest first'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "log" -d 'Show the audit trail: who changed what, when, newest first'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "explain" -d 'Explain why the occurrence at or before TIME did or did not run'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "tick" -d 'Run what is due: claim occurrences atomically, execute them under a lease, deliver notices'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "lease" -d 'Inspect a run\'s lease (for executors fencing their side effects)'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "approve" -d 'Approve a parked run: it runs again with the continuation'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "deny" -d 'Deny a parked run: it is recorded failed ("denied")'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "reconcile" -d 'List unknown runs, or settle one: `reconcile RUN --decision D --reason TEXT`'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "status" -d 'Report the last tick, the due backlog, stuck runs and undelivered notices'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "prune" -d 'Delete settled runs, delivered notices, audit events and expired drafts older than DUR'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "check" -d 'Verify the store\'s invariants, read-only; exit 1 naming each violation'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "metrics" -d 'Print the store\'s state in the Prometheus text exposition format'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "crontab" -d 'Print the crontab line that runs `agentcron tick` every minute'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "systemd" -d 'Print a systemd .service and .timer pair that run `agentcron tick` every minute'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "export" -d 'Write every task, run, notice, reconciliation and audit event as JSON Lines'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "import" -d 'Read an export into an empty store, in one transaction'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "completions" -d 'Print the completion script for a shell'
complete -c agentcron -n "__fish_agentcron_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l instruction -d 'What the agent should do (1–32768 bytes of UTF-8); `-` reads standard input' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l replace -d 'Draft a new payload for this task (id, unique id prefix, or name)' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l at -d 'Run once at TIME (RFC 3339, or `YYYY-MM-DD HH:MM[:SS]` in the task\'s zone)' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l in -d 'Run once after DURATION from now (`90s`, `15m`, `1h30m`, `2d`, `1w`)' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l every -d 'Run every DURATION (at least 60 s), first one interval after now or at --start' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l start -d 'Anchor of an --every schedule: occurrences are START + n × DURATION' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l daily -d 'Run every day at HH:MM on the task\'s wall clock' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l days -d 'Restrict --daily to these days: `mon,wed,fri`, `mon-fri`, `weekdays`, `weekends`, `daily`' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l cron -d 'Run on a five-field cron expression ("m h dom mon dow"), in the task\'s zone' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l spread -d 'Move every occurrence by a fixed offset in [0, DUR) taken from the payload hash (at most 1 h and the schedule\'s period), so tasks at the same time start apart' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l until -d 'End a recurring schedule: no occurrence after TIME; the task then completes' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l count -d 'End a recurring schedule after N occurrences, counted from the draft\'s creation' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l name -d 'A unique name to address the task by: 1–64 of [A-Za-z0-9._-]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l target -d 'Where the notifier delivers [default: your first identity key]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l policy -d 'What the executor may do [default: read_only]' -r -f -a "read_only\t'The executor must not change anything'
confirm_writes\t'The executor asks before each write'"
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l tz -d 'The task\'s time zone (IANA name) [default: $AGENTCRON_TZ, else the system zone, else UTC]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l grace -d 'How late a run may start and still run; later ones are recorded as missed [default: 60s]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l max-retries -d 'How many times a failed run is retried [default: 3]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l retry-backoff -d 'First retry delay; each further retry doubles it, capped at 1 h [default: 60s]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l ttl -d 'How long the draft may wait for confirmation' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand draft" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand confirm" -l hash -d 'The full 64-hex payload hash printed by `agentcron draft`' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand confirm" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand confirm" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand confirm" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand confirm" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand confirm" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand confirm" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand confirm" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand list" -l state -d 'Only tasks in this state (active, paused, completed, deleted, error)' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand list" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand list" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand list" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand list" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand list" -l all -d 'Include deleted tasks'
complete -c agentcron -n "__fish_agentcron_using_subcommand list" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand list" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand show" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand show" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand show" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand show" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand show" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand show" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand pause" -l reason -d 'Why, kept with the task and shown by `show`' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand pause" -l expect-revision -d 'Only if the task is still at revision N (compare-and-set)' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand pause" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand pause" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand pause" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand pause" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand pause" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand pause" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand pause" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand resume" -l expect-revision -d 'Only if the task is still at revision N (compare-and-set)' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand resume" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand resume" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand resume" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand resume" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand resume" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand resume" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand resume" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand delete" -l expect-revision -d 'Only if the task is still at revision N (compare-and-set)' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand delete" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand delete" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand delete" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand delete" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand delete" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand delete" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand delete" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand trigger" -l reason -d 'Why, kept in the audit trail' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand trigger" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand trigger" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand trigger" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand trigger" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand trigger" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand trigger" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand trigger" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand next" -l count -d 'How many occurrences' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand next" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand next" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand next" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand next" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand next" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand next" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand next" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand upcoming" -l within -d 'Only occurrences within DUR from now' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand upcoming" -l limit -d 'At most N rows' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand upcoming" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand upcoming" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand upcoming" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand upcoming" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand upcoming" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand upcoming" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand upcoming" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand plan" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand plan" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand plan" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand plan" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand plan" -l prune -d 'Also delete tasks an earlier apply of a file of this name created and the file no longer has'
complete -c agentcron -n "__fish_agentcron_using_subcommand plan" -l detailed-exitcode -d 'Exit 0 when there are no changes, 2 when there are, 1 on any error'
complete -c agentcron -n "__fish_agentcron_using_subcommand plan" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand plan" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand plan" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand apply" -l hash -d 'The plan hash printed by `agentcron plan`' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand apply" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand apply" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand apply" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand apply" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand apply" -l prune -d 'Give it when the plan was made with --prune'
complete -c agentcron -n "__fish_agentcron_using_subcommand apply" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand apply" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand apply" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand runs" -l status -d 'Only runs in this status' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand runs" -l limit -d 'At most N runs' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand runs" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand runs" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand runs" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand runs" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand runs" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand runs" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand runs" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand log" -l limit -d 'At most N events' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand log" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand log" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand log" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand log" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand log" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand log" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand log" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand explain" -l at -d 'The moment to look back from (RFC 3339, or local in the task\'s zone) [default: now]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand explain" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand explain" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand explain" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand explain" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand explain" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand explain" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand explain" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l executor -d 'The executor command, split by shell word rules (no shell is run)' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l notifier -d 'The notifier command, split by shell word rules (no shell is run)' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l max-runs -d 'Start at most N runs in this tick' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l jobs -d 'Run up to N executors at once in this tick' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l max-running -d 'At most N runs running at once in the whole store, across every tick' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l delivery-give-up -d 'Give up on a notice the notifier keeps refusing (exit 75) after this long' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l lease -d 'Lease length; the lease is renewed every third of it while the executor runs' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l timeout -d 'Kill the executor\'s process group after this long; the run becomes unknown' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l kill-grace -d 'Time between SIGTERM and SIGKILL when a child is stopped' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l notify-timeout -d 'How long the notifier may take before its notice becomes unknown' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l dry-run -d 'Print what this tick would do, changing nothing'
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand tick" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and not __fish_seen_subcommand_from check help" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and not __fish_seen_subcommand_from check help" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and not __fish_seen_subcommand_from check help" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and not __fish_seen_subcommand_from check help" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and not __fish_seen_subcommand_from check help" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and not __fish_seen_subcommand_from check help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and not __fish_seen_subcommand_from check help" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and not __fish_seen_subcommand_from check help" -f -a "check" -d 'Exit 0 while the lease holds, 5 when it does not'
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and not __fish_seen_subcommand_from check help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and __fish_seen_subcommand_from check" -l token -d 'The lease token (AGENTCRON_LEASE_TOKEN in the executor\'s environment)' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and __fish_seen_subcommand_from check" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and __fish_seen_subcommand_from check" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and __fish_seen_subcommand_from check" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and __fish_seen_subcommand_from check" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and __fish_seen_subcommand_from check" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and __fish_seen_subcommand_from check" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and __fish_seen_subcommand_from help" -f -a "check" -d 'Exit 0 while the lease holds, 5 when it does not'
complete -c agentcron -n "__fish_agentcron_using_subcommand lease; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentcron -n "__fish_agentcron_using_subcommand approve" -l wait-id -d 'The wait id the executor gave' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand approve" -l executor -d 'The executor command, split by shell word rules' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand approve" -l notifier -d 'The notifier command, split by shell word rules' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand approve" -l lease -d 'Lease length, renewed every third of it' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand approve" -l timeout -d 'Kill the executor\'s process group after this long' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand approve" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand approve" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand approve" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand approve" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand approve" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand approve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand approve" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand deny" -l wait-id -d 'The wait id the executor gave' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand deny" -l notifier -d 'The notifier command, split by shell word rules' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand deny" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand deny" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand deny" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand deny" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand deny" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand deny" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand deny" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand reconcile" -l decision -d 'What really happened' -r -f -a "confirmed_succeeded\t'The work was done: settle as succeeded'
confirmed_failed\t'The work was not done: settle as failed'
abandoned\t'Give up on it: settle as failed'"
complete -c agentcron -n "__fish_agentcron_using_subcommand reconcile" -l reason -d 'Why you decided so; kept with the decision' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand reconcile" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand reconcile" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand reconcile" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand reconcile" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand reconcile" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand reconcile" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand reconcile" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand status" -l max-tick-age -d 'Exit 1 when the last tick is older than DUR' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand status" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand status" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand status" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand status" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand status" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand status" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand status" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand prune" -l older-than -d 'Age of what to delete, e.g. 90d' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand prune" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand prune" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand prune" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand prune" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand prune" -l dry-run -d 'Report what would be deleted, changing nothing'
complete -c agentcron -n "__fish_agentcron_using_subcommand prune" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand prune" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand prune" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand check" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand check" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand check" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand check" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand check" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand check" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand metrics" -l textfile -d 'Write to this file (atomically) instead of standard output' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand metrics" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand metrics" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand metrics" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand metrics" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand metrics" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand metrics" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand metrics" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand crontab" -l executor -d 'The executor the tick runs [default: $AGENTCRON_EXECUTOR]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand crontab" -l notifier -d 'The notifier the tick runs [default: $AGENTCRON_NOTIFIER]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand crontab" -l log -d 'Append the tick\'s output to FILE instead of letting cron mail it' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand crontab" -l env -d 'Set KEY=VALUE for the tick and so its executor and notifier; repeatable' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand crontab" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand crontab" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand crontab" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand crontab" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand crontab" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand crontab" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand crontab" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand systemd" -l executor -d 'The executor the tick runs [default: $AGENTCRON_EXECUTOR]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand systemd" -l notifier -d 'The notifier the tick runs [default: $AGENTCRON_NOTIFIER]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand systemd" -l user -d 'The account the service runs as [default: the user running this command]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand systemd" -l env -d 'Set KEY=VALUE in the service\'s environment; repeatable' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand systemd" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand systemd" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand systemd" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand systemd" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand systemd" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand systemd" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand systemd" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand export" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand export" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand export" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand export" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand export" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand export" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand export" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand import" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand import" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand import" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand import" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand import" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand import" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand import" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand completions" -l db -d 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]' -r -F
complete -c agentcron -n "__fish_agentcron_using_subcommand completions" -l tenant -d 'The tenant every command acts in [default: default]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand completions" -l as -d 'The caller\'s identity key; repeat for several [default: unix:<login name>]' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand completions" -l now -d 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations' -r
complete -c agentcron -n "__fish_agentcron_using_subcommand completions" -l json -d 'Print machine-readable JSON; errors become one JSON object on stderr'
complete -c agentcron -n "__fish_agentcron_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentcron -n "__fish_agentcron_using_subcommand completions" -s V -l version -d 'Print version'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "draft" -d 'Draft a task: show what would run, its payload hash, and the confirm line'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "confirm" -d 'Confirm a draft: create the task it describes'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "list" -d 'List your tasks in the tenant, the next to run first'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "show" -d 'Show one task and its last 10 runs'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "pause" -d 'Pause a task: nothing runs while it is paused'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "resume" -d 'Resume a paused task; its next run is the next occurrence after now'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "delete" -d 'Delete a task; its history stays readable with `list --all`'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "trigger" -d 'Run a task once more, now: the next tick claims it'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "next" -d 'Show the next occurrences of a task in its zone, DST-shifted ones marked'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "upcoming" -d 'Show coming occurrences of all your tasks, merged in time order'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "plan" -d 'Show what applying a TOML file of tasks would change, and its plan hash'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "apply" -d 'Perform a plan: every change in one transaction, or nothing'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "runs" -d 'Show run history, newest first'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "log" -d 'Show the audit trail: who changed what, when, newest first'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "explain" -d 'Explain why the occurrence at or before TIME did or did not run'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "tick" -d 'Run what is due: claim occurrences atomically, execute them under a lease, deliver notices'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "lease" -d 'Inspect a run\'s lease (for executors fencing their side effects)'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "approve" -d 'Approve a parked run: it runs again with the continuation'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "deny" -d 'Deny a parked run: it is recorded failed ("denied")'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "reconcile" -d 'List unknown runs, or settle one: `reconcile RUN --decision D --reason TEXT`'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "status" -d 'Report the last tick, the due backlog, stuck runs and undelivered notices'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "prune" -d 'Delete settled runs, delivered notices, audit events and expired drafts older than DUR'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "check" -d 'Verify the store\'s invariants, read-only; exit 1 naming each violation'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "metrics" -d 'Print the store\'s state in the Prometheus text exposition format'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "crontab" -d 'Print the crontab line that runs `agentcron tick` every minute'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "systemd" -d 'Print a systemd .service and .timer pair that run `agentcron tick` every minute'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "export" -d 'Write every task, run, notice, reconciliation and audit event as JSON Lines'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "import" -d 'Read an export into an empty store, in one transaction'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "completions" -d 'Print the completion script for a shell'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and not __fish_seen_subcommand_from draft confirm list show pause resume delete trigger next upcoming plan apply runs log explain tick lease approve deny reconcile status prune check metrics crontab systemd export import completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentcron -n "__fish_agentcron_using_subcommand help; and __fish_seen_subcommand_from lease" -f -a "check" -d 'Exit 0 while the lease holds, 5 when it does not'
