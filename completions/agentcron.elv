
use builtin;
use str;

set edit:completion:arg-completer[agentcron] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'agentcron'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'agentcron'= {
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand draft 'Draft a task: show what would run, its payload hash, and the confirm line'
            cand confirm 'Confirm a draft: create the task it describes'
            cand list 'List your tasks in the tenant, the next to run first'
            cand show 'Show one task and its last 10 runs'
            cand pause 'Pause a task: nothing runs while it is paused'
            cand resume 'Resume a paused task; its next run is the next occurrence after now'
            cand delete 'Delete a task; its history stays readable with `list --all`'
            cand trigger 'Run a task once more, now: the next tick claims it'
            cand next 'Show the next occurrences of a task in its zone, DST-shifted ones marked'
            cand upcoming 'Show coming occurrences of all your tasks, merged in time order'
            cand plan 'Show what applying a TOML file of tasks would change, and its plan hash'
            cand apply 'Perform a plan: every change in one transaction, or nothing'
            cand runs 'Show run history, newest first'
            cand log 'Show the audit trail: who changed what, when, newest first'
            cand explain 'Explain why the occurrence at or before TIME did or did not run'
            cand tick 'Run what is due: claim occurrences atomically, execute them under a lease, deliver notices'
            cand lease 'Inspect a run''s lease (for executors fencing their side effects)'
            cand approve 'Approve a parked run: it runs again with the continuation'
            cand deny 'Deny a parked run: it is recorded failed ("denied")'
            cand reconcile 'List unknown runs, or settle one: `reconcile RUN --decision D --reason TEXT`'
            cand status 'Report the last tick, the due backlog, stuck runs and undelivered notices'
            cand prune 'Delete settled runs, delivered notices, audit events and expired drafts older than DUR'
            cand check 'Verify the store''s invariants, read-only; exit 1 naming each violation'
            cand metrics 'Print the store''s state in the Prometheus text exposition format'
            cand crontab 'Print the crontab line that runs `agentcron tick` every minute'
            cand systemd 'Print a systemd .service and .timer pair that run `agentcron tick` every minute'
            cand export 'Write every task, run, notice, reconciliation and audit event as JSON Lines'
            cand import 'Read an export into an empty store, in one transaction'
            cand completions 'Print the completion script for a shell'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'agentcron;draft'= {
            cand --instruction 'What the agent should do (1–32768 bytes of UTF-8); `-` reads standard input'
            cand --replace 'Draft a new payload for this task (id, unique id prefix, or name)'
            cand --at 'Run once at TIME (RFC 3339, or `YYYY-MM-DD HH:MM[:SS]` in the task''s zone)'
            cand --in 'Run once after DURATION from now (`90s`, `15m`, `1h30m`, `2d`, `1w`)'
            cand --every 'Run every DURATION (at least 60 s), first one interval after now or at --start'
            cand --start 'Anchor of an --every schedule: occurrences are START + n × DURATION'
            cand --daily 'Run every day at HH:MM on the task''s wall clock'
            cand --days 'Restrict --daily to these days: `mon,wed,fri`, `mon-fri`, `weekdays`, `weekends`, `daily`'
            cand --cron 'Run on a five-field cron expression ("m h dom mon dow"), in the task''s zone'
            cand --spread 'Move every occurrence by a fixed offset in [0, DUR) taken from the payload hash (at most 1 h and the schedule''s period), so tasks at the same time start apart'
            cand --until 'End a recurring schedule: no occurrence after TIME; the task then completes'
            cand --count 'End a recurring schedule after N occurrences, counted from the draft''s creation'
            cand --name 'A unique name to address the task by: 1–64 of [A-Za-z0-9._-]'
            cand --target 'Where the notifier delivers [default: your first identity key]'
            cand --policy 'What the executor may do [default: read_only]'
            cand --tz 'The task''s time zone (IANA name) [default: $AGENTCRON_TZ, else the system zone, else UTC]'
            cand --grace 'How late a run may start and still run; later ones are recorded as missed [default: 60s]'
            cand --max-retries 'How many times a failed run is retried [default: 3]'
            cand --retry-backoff 'First retry delay; each further retry doubles it, capped at 1 h [default: 60s]'
            cand --ttl 'How long the draft may wait for confirmation'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;confirm'= {
            cand --hash 'The full 64-hex payload hash printed by `agentcron draft`'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;list'= {
            cand --state 'Only tasks in this state (active, paused, completed, deleted, error)'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --all 'Include deleted tasks'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;show'= {
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;pause'= {
            cand --reason 'Why, kept with the task and shown by `show`'
            cand --expect-revision 'Only if the task is still at revision N (compare-and-set)'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;resume'= {
            cand --expect-revision 'Only if the task is still at revision N (compare-and-set)'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;delete'= {
            cand --expect-revision 'Only if the task is still at revision N (compare-and-set)'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;trigger'= {
            cand --reason 'Why, kept in the audit trail'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;next'= {
            cand --count 'How many occurrences'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;upcoming'= {
            cand --within 'Only occurrences within DUR from now'
            cand --limit 'At most N rows'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;plan'= {
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --prune 'Also delete tasks an earlier apply of a file of this name created and the file no longer has'
            cand --detailed-exitcode 'Exit 0 when there are no changes, 2 when there are, 1 on any error'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;apply'= {
            cand --hash 'The plan hash printed by `agentcron plan`'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --prune 'Give it when the plan was made with --prune'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;runs'= {
            cand --status 'Only runs in this status'
            cand --limit 'At most N runs'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;log'= {
            cand --limit 'At most N events'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;explain'= {
            cand --at 'The moment to look back from (RFC 3339, or local in the task''s zone) [default: now]'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;tick'= {
            cand --executor 'The executor command, split by shell word rules (no shell is run)'
            cand --notifier 'The notifier command, split by shell word rules (no shell is run)'
            cand --max-runs 'Start at most N runs in this tick'
            cand --jobs 'Run up to N executors at once in this tick'
            cand --max-running 'At most N runs running at once in the whole store, across every tick'
            cand --delivery-give-up 'Give up on a notice the notifier keeps refusing (exit 75) after this long'
            cand --lease 'Lease length; the lease is renewed every third of it while the executor runs'
            cand --timeout 'Kill the executor''s process group after this long; the run becomes unknown'
            cand --kill-grace 'Time between SIGTERM and SIGKILL when a child is stopped'
            cand --notify-timeout 'How long the notifier may take before its notice becomes unknown'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --dry-run 'Print what this tick would do, changing nothing'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;lease'= {
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand check 'Exit 0 while the lease holds, 5 when it does not'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'agentcron;lease;check'= {
            cand --token 'The lease token (AGENTCRON_LEASE_TOKEN in the executor''s environment)'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;lease;help'= {
            cand check 'Exit 0 while the lease holds, 5 when it does not'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'agentcron;lease;help;check'= {
        }
        &'agentcron;lease;help;help'= {
        }
        &'agentcron;approve'= {
            cand --wait-id 'The wait id the executor gave'
            cand --executor 'The executor command, split by shell word rules'
            cand --notifier 'The notifier command, split by shell word rules'
            cand --lease 'Lease length, renewed every third of it'
            cand --timeout 'Kill the executor''s process group after this long'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;deny'= {
            cand --wait-id 'The wait id the executor gave'
            cand --notifier 'The notifier command, split by shell word rules'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;reconcile'= {
            cand --decision 'What really happened'
            cand --reason 'Why you decided so; kept with the decision'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;status'= {
            cand --max-tick-age 'Exit 1 when the last tick is older than DUR'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;prune'= {
            cand --older-than 'Age of what to delete, e.g. 90d'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --dry-run 'Report what would be deleted, changing nothing'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;check'= {
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;metrics'= {
            cand --textfile 'Write to this file (atomically) instead of standard output'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;crontab'= {
            cand --executor 'The executor the tick runs [default: $AGENTCRON_EXECUTOR]'
            cand --notifier 'The notifier the tick runs [default: $AGENTCRON_NOTIFIER]'
            cand --log 'Append the tick''s output to FILE instead of letting cron mail it'
            cand --env 'Set KEY=VALUE for the tick and so its executor and notifier; repeatable'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;systemd'= {
            cand --executor 'The executor the tick runs [default: $AGENTCRON_EXECUTOR]'
            cand --notifier 'The notifier the tick runs [default: $AGENTCRON_NOTIFIER]'
            cand --user 'The account the service runs as [default: the user running this command]'
            cand --env 'Set KEY=VALUE in the service''s environment; repeatable'
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;export'= {
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;import'= {
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;completions'= {
            cand --db 'The database file [default: $XDG_STATE_HOME/agentcron/agentcron.db, else ~/.local/state/agentcron/agentcron.db]'
            cand --tenant 'The tenant every command acts in [default: default]'
            cand --as 'The caller''s identity key; repeat for several [default: unix:<login name>]'
            cand --now 'A fixed "now" (RFC 3339 or unix seconds), for tests and simulations'
            cand --json 'Print machine-readable JSON; errors become one JSON object on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'agentcron;help'= {
            cand draft 'Draft a task: show what would run, its payload hash, and the confirm line'
            cand confirm 'Confirm a draft: create the task it describes'
            cand list 'List your tasks in the tenant, the next to run first'
            cand show 'Show one task and its last 10 runs'
            cand pause 'Pause a task: nothing runs while it is paused'
            cand resume 'Resume a paused task; its next run is the next occurrence after now'
            cand delete 'Delete a task; its history stays readable with `list --all`'
            cand trigger 'Run a task once more, now: the next tick claims it'
            cand next 'Show the next occurrences of a task in its zone, DST-shifted ones marked'
            cand upcoming 'Show coming occurrences of all your tasks, merged in time order'
            cand plan 'Show what applying a TOML file of tasks would change, and its plan hash'
            cand apply 'Perform a plan: every change in one transaction, or nothing'
            cand runs 'Show run history, newest first'
            cand log 'Show the audit trail: who changed what, when, newest first'
            cand explain 'Explain why the occurrence at or before TIME did or did not run'
            cand tick 'Run what is due: claim occurrences atomically, execute them under a lease, deliver notices'
            cand lease 'Inspect a run''s lease (for executors fencing their side effects)'
            cand approve 'Approve a parked run: it runs again with the continuation'
            cand deny 'Deny a parked run: it is recorded failed ("denied")'
            cand reconcile 'List unknown runs, or settle one: `reconcile RUN --decision D --reason TEXT`'
            cand status 'Report the last tick, the due backlog, stuck runs and undelivered notices'
            cand prune 'Delete settled runs, delivered notices, audit events and expired drafts older than DUR'
            cand check 'Verify the store''s invariants, read-only; exit 1 naming each violation'
            cand metrics 'Print the store''s state in the Prometheus text exposition format'
            cand crontab 'Print the crontab line that runs `agentcron tick` every minute'
            cand systemd 'Print a systemd .service and .timer pair that run `agentcron tick` every minute'
            cand export 'Write every task, run, notice, reconciliation and audit event as JSON Lines'
            cand import 'Read an export into an empty store, in one transaction'
            cand completions 'Print the completion script for a shell'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'agentcron;help;draft'= {
        }
        &'agentcron;help;confirm'= {
        }
        &'agentcron;help;list'= {
        }
        &'agentcron;help;show'= {
        }
        &'agentcron;help;pause'= {
        }
        &'agentcron;help;resume'= {
        }
        &'agentcron;help;delete'= {
        }
        &'agentcron;help;trigger'= {
        }
        &'agentcron;help;next'= {
        }
        &'agentcron;help;upcoming'= {
        }
        &'agentcron;help;plan'= {
        }
        &'agentcron;help;apply'= {
        }
        &'agentcron;help;runs'= {
        }
        &'agentcron;help;log'= {
        }
        &'agentcron;help;explain'= {
        }
        &'agentcron;help;tick'= {
        }
        &'agentcron;help;lease'= {
            cand check 'Exit 0 while the lease holds, 5 when it does not'
        }
        &'agentcron;help;lease;check'= {
        }
        &'agentcron;help;approve'= {
        }
        &'agentcron;help;deny'= {
        }
        &'agentcron;help;reconcile'= {
        }
        &'agentcron;help;status'= {
        }
        &'agentcron;help;prune'= {
        }
        &'agentcron;help;check'= {
        }
        &'agentcron;help;metrics'= {
        }
        &'agentcron;help;crontab'= {
        }
        &'agentcron;help;systemd'= {
        }
        &'agentcron;help;export'= {
        }
        &'agentcron;help;import'= {
        }
        &'agentcron;help;completions'= {
        }
        &'agentcron;help;help'= {
        }
    ]
    $completions[$command]
}
