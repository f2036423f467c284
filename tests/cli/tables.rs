//! Tables on a real terminal (docs/CONTRACT.md §9): run in a pseudo-terminal
//! of a given width, `list`, `runs`, `log`, `upcoming` and `status` fit it
//! without wrapping a cell (one line per row, every line within the width);
//! a terminal that reports 0 columns, and a pipe, get the table at full width.
use crate::support::terminal::Terminal;
use crate::support::{assert_contains, Rig, Task, T0};

/// Runs `args` on a pseudo-terminal `columns` wide (stderr goes to
/// /dev/null: the screen compared is stdout's); returns the screen text.
fn on_terminal(rig: &Rig, columns: u16, args: &[&str]) -> String {
    let terminal = Terminal {
        columns: Some(columns),
        stderr_to_null: true,
        ..Terminal::default()
    };
    let screen = terminal.run(&rig.env, args);
    assert_eq!(
        screen.code, 0,
        "{args:?} at {columns} columns: {}",
        screen.text
    );
    screen.text
}

fn columns_of(line: &str) -> usize {
    line.chars().count()
}

/// A store whose rows are wider than 80 columns: long instructions and
/// summaries, a zone with a long name, runs, log events.
fn wide_store() -> Rig {
    let rig = Rig::new();
    for (name, zone) in [
        ("digest", "Asia/Shanghai"),
        ("oncall", "America/Argentina/Buenos_Aires"),
    ] {
        Task::named(name)
            .instruction(
                "summarize the on-call channel, list every open incident with its owner, \
             and post the digest to the team channel before the stand-up",
            )
            .daily("09:30")
            .tz(zone)
            .flags(&["--days", "mon-fri"])
            .confirm(&rig.env);
    }
    rig.env.set_now(T0 + 2 * 86400);
    rig.tick(&[]).ok();
    rig
}

#[test]
fn tables_fit_the_terminal_without_wrapping_a_cell() {
    let rig = wide_store();
    for command in [
        &["list"][..],
        &["runs"],
        &["log"],
        &["upcoming"],
        &["status"],
    ] {
        let piped = rig.env.run(command).ok().stdout;
        let widest = piped.lines().map(columns_of).max().unwrap_or(0);
        for columns in [80u16, 120] {
            let screen = on_terminal(&rig, columns, command);
            for line in screen.lines() {
                assert!(
                    columns_of(line) <= usize::from(columns) || command == ["status"],
                    "{command:?} at {columns} columns: a line of {} columns:\n{screen}",
                    columns_of(line)
                );
            }
            // No cell wraps: one line per row, as into a pipe.
            assert_eq!(
                screen.lines().count(),
                piped.lines().count(),
                "{command:?} at {columns} columns:\n{screen}\npiped:\n{piped}"
            );
            if widest > usize::from(columns) && command != ["status"] {
                assert!(screen.contains('…'), "{command:?}:\n{screen}");
            }
        }
        // A terminal that reports no width: the table at full width.
        assert_eq!(
            on_terminal(&rig, 0, command),
            piped,
            "{command:?} at 0 columns"
        );
    }
    assert!(
        columns_of(rig.env.run(&["list"]).ok().stdout.lines().nth(1).unwrap()) > 80,
        "the store is wide enough to need fitting"
    );
}

#[test]
fn low_value_columns_go_first_and_words_are_not_broken() {
    let rig = wide_store();
    let screen = on_terminal(&rig, 80, &["runs"]);
    let header = screen.lines().next().unwrap();
    for dropped in ["PAYLOAD", "ATTEMPT", "DELIVERY"] {
        assert!(!header.contains(dropped), "{header}");
    }
    for kept in ["RUN", "TASK", "STATUS", "SUMMARY"] {
        assert!(header.contains(kept), "{header}");
    }
    let wide = on_terminal(&rig, 200, &["runs"]);
    assert!(wide.lines().next().unwrap().contains("PAYLOAD"), "{wide}");

    let list = on_terminal(&rig, 80, &["list"]);
    assert!(!list.contains("Asia/S\n"), "{list}");
    for line in list.lines().skip(1) {
        // A cut ends at a word's end: "…" follows a whole word.
        if let Some(at) = line.find('…') {
            let before = line[..at].chars().last().unwrap();
            assert!(before.is_alphanumeric() || ",.)".contains(before), "{line}");
        }
    }
}

const HOUR: i64 = 3600;

#[test]
fn tables_in_a_pipe_keep_one_row_per_line_and_list_reads_like_a_panel() {
    let rig = Rig::new();
    rig.env.set_env("COLUMNS", "40");
    let long = "summarize the on-call channel and every open incident ".repeat(4);
    Task::named("later")
        .instruction(&long)
        .every("3h")
        .confirm(&rig.env);
    Task::named("office")
        .cron("*/15 9-17 * * 1-5")
        .tz("Asia/Shanghai")
        .confirm(&rig.env);
    Task::named("hourly").confirm(&rig.env);
    Task::named("resting").confirm(&rig.env);
    rig.env
        .json(&["pause", "resting", "--reason", "on vacation until Monday"]);
    rig.env.advance(HOUR);
    rig.tick(&[]).ok();
    let out = rig.env.run(&["list"]).ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "one line per row:\n{}", out.stdout);
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        [
            "ID",
            "NAME",
            "STATE",
            "NEXT",
            "RUN",
            "LAST",
            "RUN",
            "RESULT",
            "SCHEDULE",
            "INSTRUCTION"
        ]
    );
    // Soonest first (office runs every 15 min in Shanghai's office hours,
    // 17:00 there now), the paused task last.
    let names: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(
        names,
        ["office", "hourly", "later", "resting"],
        "{}",
        out.stdout
    );
    assert_contains(lines[1], "every 15 min, 09:00–17:59, Mon–Fri");
    assert_contains(lines[1], "in Asia/Shanghai");
    assert!(
        lines[2].contains("now") && lines[2].contains("succeeded"),
        "{}",
        lines[2]
    );
    assert_contains(lines[4], "paused: on vacation until Monday");
    assert!(
        lines[3].contains('…'),
        "a long instruction is clipped: {}",
        lines[3]
    );
    // The audit trail says what happened in words, one event per line.
    let out = rig.env.run(&["log"]).ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    let events = rig.env.count("SELECT count(*) FROM events");
    assert_eq!(lines.len() as i64, events + 1, "{}", out.stdout);
    assert_contains(&out.stdout, "paused: on vacation until Monday");
    assert_contains(&out.stdout, "running → succeeded");
    assert_contains(&out.stdout, "confirmed draft ");
    assert!(
        !out.stdout.contains('{'),
        "no JSON in the human log: {}",
        out.stdout
    );
    let out = rig.env.run(&["runs"]).ok();
    assert_eq!(out.stdout.lines().count(), 1 + 3, "{}", out.stdout);
}
