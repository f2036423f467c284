
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'agentcron' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'agentcron'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'agentcron' {
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('draft', 'draft', [CompletionResultType]::ParameterValue, 'Draft a task: show what would run, its payload hash, and the confirm line')
            [CompletionResult]::new('confirm', 'confirm', [CompletionResultType]::ParameterValue, 'Confirm a draft: create the task it describes')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List your tasks in the tenant, the next to run first')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one task and its last 10 runs')
            [CompletionResult]::new('pause', 'pause', [CompletionResultType]::ParameterValue, 'Pause a task: nothing runs while it is paused')
            [CompletionResult]::new('resume', 'resume', [CompletionResultType]::ParameterValue, 'Resume a paused task; its next run is the next occurrence after now')
            [CompletionResult]::new('delete', 'delete', [CompletionResultType]::ParameterValue, 'Delete a task; its history stays readable with `list --all`')
            [CompletionResult]::new('trigger', 'trigger', [CompletionResultType]::ParameterValue, 'Run a task once more, now: the next tick claims it')
            [CompletionResult]::new('next', 'next', [CompletionResultType]::ParameterValue, 'Show the next occurrences of a task in its zone, DST-shifted ones marked')
            [CompletionResult]::new('upcoming', 'upcoming', [CompletionResultType]::ParameterValue, 'Show coming occurrences of all your tasks, merged in time order')
            [CompletionResult]::new('plan', 'plan', [CompletionResultType]::ParameterValue, 'Show what applying a TOML file of tasks would change, and its plan hash')
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Perform a plan: every change in one transaction, or nothing')
            [CompletionResult]::new('runs', 'runs', [CompletionResultType]::ParameterValue, 'Show run history, newest first')
            [CompletionResult]::new('log', 'log', [CompletionResultType]::ParameterValue, 'Show the audit trail: who changed what, when, newest first')
            [CompletionResult]::new('explain', 'explain', [CompletionResultType]::ParameterValue, 'Explain why the occurrence at or before TIME did or did not run')
            [CompletionResult]::new('tick', 'tick', [CompletionResultType]::ParameterValue, 'Run what is due: claim occurrences atomically, execute them under a lease, deliver notices')
            [CompletionResult]::new('lease', 'lease', [CompletionResultType]::ParameterValue, 'Inspect a run''s lease (for executors fencing their side effects)')
            [CompletionResult]::new('approve', 'approve', [CompletionResultType]::ParameterValue, 'Approve a parked run: it runs again with the continuation')
            [CompletionResult]::new('deny', 'deny', [CompletionResultType]::ParameterValue, 'Deny a parked run: it is recorded failed ("denied")')
            [CompletionResult]::new('reconcile', 'reconcile', [CompletionResultType]::ParameterValue, 'List unknown runs, or settle one: `reconcile RUN --decision D --reason TEXT`')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Report the last tick, the due backlog, stuck runs and undelivered notices')
            [CompletionResult]::new('prune', 'prune', [CompletionResultType]::ParameterValue, 'Delete settled runs, delivered notices, audit events and expired drafts older than DUR')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Verify the store''s invariants, read-only; exit 1 naming each violation')
            [CompletionResult]::new('metrics', 'metrics', [CompletionResultType]::ParameterValue, 'Print the store''s state in the Prometheus text exposition format')
            [CompletionResult]::new('crontab', 'crontab', [CompletionResultType]::ParameterValue, 'Print the crontab line that runs `agentcron tick` every minute')
            [CompletionResult]::new('systemd', 'systemd', [CompletionResultType]::ParameterValue, 'Print a systemd .service and .timer pair that run `agentcron tick` every minute')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'Write every task, run, notice, reconciliation and audit event as JSON Lines')
            [CompletionResult]::new('import', 'import', [CompletionResultType]::ParameterValue, 'Read an export into an empty store, in one transaction')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print the completion script for a shell')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentcron;draft' {
            [CompletionResult]::new('--instruction', '--instruction', [CompletionResultType]::ParameterName, 'What the agent should do (1–32768 bytes of UTF-8); `-` reads standard input')
            [CompletionResult]::new('--replace', '--replace', [CompletionResultType]::ParameterName, 'Draft a new payload for this task (id, unique id prefix, or name)')
            [CompletionResult]::new('--at', '--at', [CompletionResultType]::ParameterName, 'Run once at TIME (RFC 3339, or `YYYY-MM-DD HH:MM[:SS]` in the task''s zone)')
            [CompletionResult]::new('--in', '--in', [CompletionResultType]::ParameterName, 'Run once after DURATION from now (`90s`, `15m`, `1h30m`, `2d`, `1w`)')
            [CompletionResult]::new('--every', '--every', [CompletionResultType]::ParameterName, 'Run every DURATION (at least 60 s), first one interval after now or at --start')
            [CompletionResult]::new('--start', '--start', [CompletionResultType]::ParameterName, 'Anchor of an --every schedule: occurrences are START + n × DURATION')
            [CompletionResult]::new('--daily', '--daily', [CompletionResultType]::ParameterName, 'Run every day at HH:MM on the task''s wall clock')
            [CompletionResult]::new('--days', '--days', [CompletionResultType]::ParameterName, 'Restrict --daily to these days: `mon,wed,fri`, `mon-fri`, `weekdays`, `weekends`, `daily`')
            [CompletionResult]::new('--cron', '--cron', [CompletionResultType]::ParameterName, 'Run on a five-field cron expression ("m h dom mon dow"), in the task''s zone')
            [CompletionResult]::new('--spread', '--spread', [CompletionResultType]::ParameterName, 'Move every occurrence by a fixed offset in [0, DUR) taken from the payload hash (at most 1 h and the schedule''s period), so tasks at the same time start apart')
            [CompletionResult]::new('--until', '--until', [CompletionResultType]::ParameterName, 'End a recurring schedule: no occurrence after TIME; the task then completes')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'End a recurring schedule after N occurrences, counted from the draft''s creation')
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'A unique name to address the task by: 1–64 of [A-Za-z0-9._-]')
            [CompletionResult]::new('--target', '--target', [CompletionResultType]::ParameterName, 'Where the notifier delivers [default: your first identity key]')
            [CompletionResult]::new('--policy', '--policy', [CompletionResultType]::ParameterName, 'What the executor may do [default: read_only]')
            [CompletionResult]::new('--tz', '--tz', [CompletionResultType]::ParameterName, 'The task''s time zone (IANA name) [default: $AGENTCRON_TZ, else the system zone, else UTC]')
            [CompletionResult]::new('--grace', '--grace', [CompletionResultType]::ParameterName, 'How late a run may start and still run; later ones are recorded as missed [default: 60s]')
            [CompletionResult]::new('--max-retries', '--max-retries', [CompletionResultType]::ParameterName, 'How many times a failed run is retried [default: 3]')
            [CompletionResult]::new('--retry-backoff', '--retry-backoff', [CompletionResultType]::ParameterName, 'First retry delay; each further retry doubles it, capped at 1 h [default: 60s]')
            [CompletionResult]::new('--ttl', '--ttl', [CompletionResultType]::ParameterName, 'How long the draft may wait for confirmation')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;confirm' {
            [CompletionResult]::new('--hash', '--hash', [CompletionResultType]::ParameterName, 'The full 64-hex payload hash printed by `agentcron draft`')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;list' {
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'Only tasks in this state (active, paused, completed, deleted, error)')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Include deleted tasks')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;show' {
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;pause' {
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why, kept with the task and shown by `show`')
            [CompletionResult]::new('--expect-revision', '--expect-revision', [CompletionResultType]::ParameterName, 'Only if the task is still at revision N (compare-and-set)')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;resume' {
            [CompletionResult]::new('--expect-revision', '--expect-revision', [CompletionResultType]::ParameterName, 'Only if the task is still at revision N (compare-and-set)')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;delete' {
            [CompletionResult]::new('--expect-revision', '--expect-revision', [CompletionResultType]::ParameterName, 'Only if the task is still at revision N (compare-and-set)')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;trigger' {
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why, kept in the audit trail')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;next' {
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'How many occurrences')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;upcoming' {
            [CompletionResult]::new('--within', '--within', [CompletionResultType]::ParameterName, 'Only occurrences within DUR from now')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'At most N rows')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;plan' {
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--prune', '--prune', [CompletionResultType]::ParameterName, 'Also delete tasks an earlier apply of a file of this name created and the file no longer has')
            [CompletionResult]::new('--detailed-exitcode', '--detailed-exitcode', [CompletionResultType]::ParameterName, 'Exit 0 when there are no changes, 2 when there are, 1 on any error')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;apply' {
            [CompletionResult]::new('--hash', '--hash', [CompletionResultType]::ParameterName, 'The plan hash printed by `agentcron plan`')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--prune', '--prune', [CompletionResultType]::ParameterName, 'Give it when the plan was made with --prune')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;runs' {
            [CompletionResult]::new('--status', '--status', [CompletionResultType]::ParameterName, 'Only runs in this status')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'At most N runs')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;log' {
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'At most N events')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;explain' {
            [CompletionResult]::new('--at', '--at', [CompletionResultType]::ParameterName, 'The moment to look back from (RFC 3339, or local in the task''s zone) [default: now]')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;tick' {
            [CompletionResult]::new('--executor', '--executor', [CompletionResultType]::ParameterName, 'The executor command, split by shell word rules (no shell is run)')
            [CompletionResult]::new('--notifier', '--notifier', [CompletionResultType]::ParameterName, 'The notifier command, split by shell word rules (no shell is run)')
            [CompletionResult]::new('--max-runs', '--max-runs', [CompletionResultType]::ParameterName, 'Start at most N runs in this tick')
            [CompletionResult]::new('--jobs', '--jobs', [CompletionResultType]::ParameterName, 'Run up to N executors at once in this tick')
            [CompletionResult]::new('--max-running', '--max-running', [CompletionResultType]::ParameterName, 'At most N runs running at once in the whole store, across every tick')
            [CompletionResult]::new('--delivery-give-up', '--delivery-give-up', [CompletionResultType]::ParameterName, 'Give up on a notice the notifier keeps refusing (exit 75) after this long')
            [CompletionResult]::new('--lease', '--lease', [CompletionResultType]::ParameterName, 'Lease length; the lease is renewed every third of it while the executor runs')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Kill the executor''s process group after this long; the run becomes unknown')
            [CompletionResult]::new('--kill-grace', '--kill-grace', [CompletionResultType]::ParameterName, 'Time between SIGTERM and SIGKILL when a child is stopped')
            [CompletionResult]::new('--notify-timeout', '--notify-timeout', [CompletionResultType]::ParameterName, 'How long the notifier may take before its notice becomes unknown')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print what this tick would do, changing nothing')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;lease' {
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Exit 0 while the lease holds, 5 when it does not')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentcron;lease;check' {
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'The lease token (AGENTCRON_LEASE_TOKEN in the executor''s environment)')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;lease;help' {
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Exit 0 while the lease holds, 5 when it does not')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentcron;lease;help;check' {
            break
        }
        'agentcron;lease;help;help' {
            break
        }
        'agentcron;approve' {
            [CompletionResult]::new('--wait-id', '--wait-id', [CompletionResultType]::ParameterName, 'The wait id the executor gave')
            [CompletionResult]::new('--executor', '--executor', [CompletionResultType]::ParameterName, 'The executor command, split by shell word rules')
            [CompletionResult]::new('--notifier', '--notifier', [CompletionResultType]::ParameterName, 'The notifier command, split by shell word rules')
            [CompletionResult]::new('--lease', '--lease', [CompletionResultType]::ParameterName, 'Lease length, renewed every third of it')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Kill the executor''s process group after this long')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;deny' {
            [CompletionResult]::new('--wait-id', '--wait-id', [CompletionResultType]::ParameterName, 'The wait id the executor gave')
            [CompletionResult]::new('--notifier', '--notifier', [CompletionResultType]::ParameterName, 'The notifier command, split by shell word rules')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;reconcile' {
            [CompletionResult]::new('--decision', '--decision', [CompletionResultType]::ParameterName, 'What really happened')
            [CompletionResult]::new('--reason', '--reason', [CompletionResultType]::ParameterName, 'Why you decided so; kept with the decision')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;status' {
            [CompletionResult]::new('--max-tick-age', '--max-tick-age', [CompletionResultType]::ParameterName, 'Exit 1 when the last tick is older than DUR')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;prune' {
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Age of what to delete, e.g. 90d')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Report what would be deleted, changing nothing')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;check' {
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;metrics' {
            [CompletionResult]::new('--textfile', '--textfile', [CompletionResultType]::ParameterName, 'Write to this file (atomically) instead of standard output')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;crontab' {
            [CompletionResult]::new('--executor', '--executor', [CompletionResultType]::ParameterName, 'The executor the tick runs [default: $AGENTCRON_EXECUTOR]')
            [CompletionResult]::new('--notifier', '--notifier', [CompletionResultType]::ParameterName, 'The notifier the tick runs [default: $AGENTCRON_NOTIFIER]')
            [CompletionResult]::new('--log', '--log', [CompletionResultType]::ParameterName, 'Append the tick''s output to FILE instead of letting cron mail it')
            [CompletionResult]::new('--env', '--env', [CompletionResultType]::ParameterName, 'Set KEY=VALUE for the tick and so its executor and notifier; repeatable')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;systemd' {
            [CompletionResult]::new('--executor', '--executor', [CompletionResultType]::ParameterName, 'The executor the tick runs [default: $AGENTCRON_EXECUTOR]')
            [CompletionResult]::new('--notifier', '--notifier', [CompletionResultType]::ParameterName, 'The notifier the tick runs [default: $AGENTCRON_NOTIFIER]')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'The account the service runs as [default: the user running this command]')
            [CompletionResult]::new('--env', '--env', [CompletionResultType]::ParameterName, 'Set KEY=VALUE in the service''s environment; repeatable')
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;export' {
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;import' {
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;completions' {
            [CompletionResult]::new('--db', '--db', [CompletionResultType]::ParameterName, 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]')
            [CompletionResult]::new('--tenant', '--tenant', [CompletionResultType]::ParameterName, 'The tenant every command acts in [default: default]')
            [CompletionResult]::new('--as', '--as', [CompletionResultType]::ParameterName, 'The caller''s identity key; repeat for several [default: unix:<login name>]')
            [CompletionResult]::new('--now', '--now', [CompletionResultType]::ParameterName, 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print machine-readable JSON; errors become one JSON object on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'agentcron;help' {
            [CompletionResult]::new('draft', 'draft', [CompletionResultType]::ParameterValue, 'Draft a task: show what would run, its payload hash, and the confirm line')
            [CompletionResult]::new('confirm', 'confirm', [CompletionResultType]::ParameterValue, 'Confirm a draft: create the task it describes')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List your tasks in the tenant, the next to run first')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one task and its last 10 runs')
            [CompletionResult]::new('pause', 'pause', [CompletionResultType]::ParameterValue, 'Pause a task: nothing runs while it is paused')
            [CompletionResult]::new('resume', 'resume', [CompletionResultType]::ParameterValue, 'Resume a paused task; its next run is the next occurrence after now')
            [CompletionResult]::new('delete', 'delete', [CompletionResultType]::ParameterValue, 'Delete a task; its history stays readable with `list --all`')
            [CompletionResult]::new('trigger', 'trigger', [CompletionResultType]::ParameterValue, 'Run a task once more, now: the next tick claims it')
            [CompletionResult]::new('next', 'next', [CompletionResultType]::ParameterValue, 'Show the next occurrences of a task in its zone, DST-shifted ones marked')
            [CompletionResult]::new('upcoming', 'upcoming', [CompletionResultType]::ParameterValue, 'Show coming occurrences of all your tasks, merged in time order')
            [CompletionResult]::new('plan', 'plan', [CompletionResultType]::ParameterValue, 'Show what applying a TOML file of tasks would change, and its plan hash')
            [CompletionResult]::new('apply', 'apply', [CompletionResultType]::ParameterValue, 'Perform a plan: every change in one transaction, or nothing')
            [CompletionResult]::new('runs', 'runs', [CompletionResultType]::ParameterValue, 'Show run history, newest first')
            [CompletionResult]::new('log', 'log', [CompletionResultType]::ParameterValue, 'Show the audit trail: who changed what, when, newest first')
            [CompletionResult]::new('explain', 'explain', [CompletionResultType]::ParameterValue, 'Explain why the occurrence at or before TIME did or did not run')
            [CompletionResult]::new('tick', 'tick', [CompletionResultType]::ParameterValue, 'Run what is due: claim occurrences atomically, execute them under a lease, deliver notices')
            [CompletionResult]::new('lease', 'lease', [CompletionResultType]::ParameterValue, 'Inspect a run''s lease (for executors fencing their side effects)')
            [CompletionResult]::new('approve', 'approve', [CompletionResultType]::ParameterValue, 'Approve a parked run: it runs again with the continuation')
            [CompletionResult]::new('deny', 'deny', [CompletionResultType]::ParameterValue, 'Deny a parked run: it is recorded failed ("denied")')
            [CompletionResult]::new('reconcile', 'reconcile', [CompletionResultType]::ParameterValue, 'List unknown runs, or settle one: `reconcile RUN --decision D --reason TEXT`')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Report the last tick, the due backlog, stuck runs and undelivered notices')
            [CompletionResult]::new('prune', 'prune', [CompletionResultType]::ParameterValue, 'Delete settled runs, delivered notices, audit events and expired drafts older than DUR')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Verify the store''s invariants, read-only; exit 1 naming each violation')
            [CompletionResult]::new('metrics', 'metrics', [CompletionResultType]::ParameterValue, 'Print the store''s state in the Prometheus text exposition format')
            [CompletionResult]::new('crontab', 'crontab', [CompletionResultType]::ParameterValue, 'Print the crontab line that runs `agentcron tick` every minute')
            [CompletionResult]::new('systemd', 'systemd', [CompletionResultType]::ParameterValue, 'Print a systemd .service and .timer pair that run `agentcron tick` every minute')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'Write every task, run, notice, reconciliation and audit event as JSON Lines')
            [CompletionResult]::new('import', 'import', [CompletionResultType]::ParameterValue, 'Read an export into an empty store, in one transaction')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print the completion script for a shell')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentcron;help;draft' {
            break
        }
        'agentcron;help;confirm' {
            break
        }
        'agentcron;help;list' {
            break
        }
        'agentcron;help;show' {
            break
        }
        'agentcron;help;pause' {
            break
        }
        'agentcron;help;resume' {
            break
        }
        'agentcron;help;delete' {
            break
        }
        'agentcron;help;trigger' {
            break
        }
        'agentcron;help;next' {
            break
        }
        'agentcron;help;upcoming' {
            break
        }
        'agentcron;help;plan' {
            break
        }
        'agentcron;help;apply' {
            break
        }
        'agentcron;help;runs' {
            break
        }
        'agentcron;help;log' {
            break
        }
        'agentcron;help;explain' {
            break
        }
        'agentcron;help;tick' {
            break
        }
        'agentcron;help;lease' {
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Exit 0 while the lease holds, 5 when it does not')
            break
        }
        'agentcron;help;lease;check' {
            break
        }
        'agentcron;help;approve' {
            break
        }
        'agentcron;help;deny' {
            break
        }
        'agentcron;help;reconcile' {
            break
        }
        'agentcron;help;status' {
            break
        }
        'agentcron;help;prune' {
            break
        }
        'agentcron;help;check' {
            break
        }
        'agentcron;help;metrics' {
            break
        }
        'agentcron;help;crontab' {
            break
        }
        'agentcron;help;systemd' {
            break
        }
        'agentcron;help;export' {
            break
        }
        'agentcron;help;import' {
            break
        }
        'agentcron;help;completions' {
            break
        }
        'agentcron;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
