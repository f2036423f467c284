//! Scenario 6: the checklist of docs/CONTRACT.md §11 not already covered in
//! draft.rs (0600/0700 under umask 000 and `file:` names are): hard links,
//! injection through the instruction, target and executor command, escapes
//! in every human output, and what the executor inherits.
use crate::support::{assert_contains, fixture, Rig, Task, TestEnv, T0};

use std::collections::HashSet;
use std::path::Path;

use super::{assert_invariants, journal_starts, raw_controls, seeded};

const HOUR: i64 = 3600;

#[test]
fn a_hard_linked_database_is_refused_under_both_names() {
    if crate::support::on_postgres() {
        return; // about the SQLite file itself
    }
    let env = TestEnv::new();
    Task::new().confirm(&env);
    let link = env.path("state/second-name.db");
    std::fs::hard_link(&env.db, &link).unwrap();
    let before = env.db_bytes();
    for db in [&env.db, &link] {
        let out = env.run(&["--db", db.to_str().unwrap(), "list"]).fails(2);
        assert_contains(&out.stderr, "hard links");
        let out = env.run(&["--db", db.to_str().unwrap(), "tick"]).fails(2);
        assert_contains(&out.stderr, "hard links");
    }
    assert_eq!(env.db_bytes(), before);
}

fn injections(marker: &Path) -> Vec<String> {
    let m = marker.display();
    vec![
        "'; DROP TABLE tasks; --".to_string(),
        "\"; DROP TABLE runs; --".to_string(),
        "x') OR 1=1; DELETE FROM tasks WHERE ('a'='a".to_string(),
        format!("$(touch {m})"),
        "$(touch /tmp/pwned)".to_string(),
        format!("`touch {m}`"),
        format!("x; touch {m}; echo"),
        format!("x && touch {m} || touch {m}"),
        format!("| touch {m}"),
        format!("x\n$(touch {m})\n"),
        format!("${{IFS}}touch${{IFS}}{m}"),
        "%s%s%n%x {{7*7}} ${jndi:ldap://x}".to_string(),
        "ü值班 \u{fffd} \\x41 \\\\ \\\"".to_string(),
    ]
}

#[test]
fn injected_sql_and_shell_arrive_byte_identical_and_do_nothing() {
    let (_rng, _guard) = seeded("injected_sql", 0);
    let rig = Rig::new();
    rig.with_notifier(0);
    let marker = rig.env.path("pwned");
    let tmp_pwned_before = Path::new("/tmp/pwned").exists();
    let instructions = injections(&marker);
    for (i, text) in instructions.iter().enumerate() {
        Task::named(&format!("inj{i}"))
            .instruction(text)
            .flags(&[
                "--target",
                &format!(
                    "chat:$(touch {})'; DROP TABLE deliveries; --",
                    marker.display()
                ),
            ])
            .confirm(&rig.env);
    }
    // The executor command is split by shell word rules, never given to a shell.
    rig.env.set_env(
        "AGENTCRON_EXECUTOR",
        &format!(
            "{} ; touch {m} $(touch {m}) `touch {m}`",
            fixture("executor.sh"),
            m = marker.display()
        ),
    );
    rig.env.set_now(T0 + HOUR);
    rig.tick(&["--max-runs", "100"]).ok();
    let starts = journal_starts(&rig.env.path("exec.journal"));
    assert_eq!(starts.len(), instructions.len());
    let mut seen = HashSet::new();
    for (run, _, _) in &starts {
        let stdin = std::fs::read(rig.env.path("stdin").join(format!("{run}.json"))).unwrap();
        let stdin: serde_json::Value = serde_json::from_slice(&stdin).unwrap();
        let instruction = stdin["instruction"].as_str().unwrap().to_string();
        assert!(
            instructions.contains(&instruction),
            "instruction changed on the way: {instruction:?}"
        );
        seen.insert(instruction);
    }
    assert_eq!(seen.len(), instructions.len());
    for notice in rig.notices() {
        assert_eq!(
            notice["target"],
            format!(
                "chat:$(touch {})'; DROP TABLE deliveries; --",
                marker.display()
            )
        );
    }
    assert_eq!(rig.notices().len(), instructions.len());
    assert!(!marker.exists(), "a shell ran: {} exists", marker.display());
    if !tmp_pwned_before {
        assert!(
            !Path::new("/tmp/pwned").exists(),
            "a shell ran: /tmp/pwned exists"
        );
    }
    assert_eq!(
        rig.env.count("SELECT count(*) FROM tasks"),
        instructions.len() as i64
    );
    assert_eq!(
        rig.env.count(if crate::support::on_postgres() {
            "SELECT count(*) FROM information_schema.tables
             WHERE table_schema = current_schema() AND table_name IN ('tasks', 'runs', 'deliveries')"
        } else {
            "SELECT count(*) FROM sqlite_master WHERE name IN ('tasks', 'runs', 'deliveries')"
        }),
        3
    );
    assert_invariants(&rig.env, &rig.env.path("exec.journal"));
}

// No backspace: serde_json writes it as `\b`, which the fixture's `echo` (dash)
// would turn back into a raw byte and so break the JSON result line.
const EVIL: &str = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[31mred\u{9b}31m\u{202e}txt.exe\u{2066}x";

#[test]
fn terminal_escapes_are_escaped_in_every_human_output() {
    let (_rng, _guard) = seeded("terminal_escapes", 0);
    let rig = Rig::new();
    rig.with_notifier(0);
    Task::named("evil")
        .instruction(EVIL)
        .max_retries("0")
        .flags(&["--target", "chat:ops"])
        .confirm(&rig.env);
    Task::named("frozen")
        .instruction(EVIL)
        .max_retries("0")
        .confirm(&rig.env);
    let summary = serde_json::to_string(EVIL).unwrap();
    rig.env.set_env(
        "FIXTURE_MODE",
        &format!(r#"json:{{"status":"failed","summary":{summary}}}"#),
    );
    rig.env.set_now(T0 + HOUR);
    let mut outputs = vec![("tick".to_string(), rig.tick(&[]).ok())];
    // Pretend the second task's tick died mid-run: the next tick freezes
    // the run as unknown, so `reconcile` lists it.
    rig.env.sql(
        "UPDATE runs SET status = 'running', lease_until = 0, lease_token = 't', finished_at = NULL
         WHERE task_id = (SELECT task_id FROM tasks WHERE name = 'frozen') RETURNING 1",
    );
    rig.env.advance(30);
    outputs.push(("second tick".to_string(), rig.tick(&[]).ok()));
    outputs.push((
        "pause".to_string(),
        rig.env.run(&["pause", "frozen", "--reason", EVIL]).ok(),
    ));
    for args in [
        &["list"][..],
        &["list", "--all"],
        &["show", "evil"],
        &["show", "frozen"],
        &["runs"],
        &["runs", "evil"],
        &["log"],
        &["log", "evil"],
        &["explain", "evil"],
        &["next", "evil"],
        &["status"],
        &["reconcile"],
        &["tick", "--dry-run"],
    ] {
        outputs.push((format!("{args:?}"), rig.env.run(args)));
    }
    let mut escaped_somewhere = false;
    for (what, out) in &outputs {
        assert_ne!(out.code, 101);
        let raw = raw_controls(&format!("{}{}", out.stdout, out.stderr));
        assert!(raw.is_empty(), "{what}: raw {raw:?} in {:?}", out.stdout);
        escaped_somewhere |= out.stdout.contains("\\x1b");
    }
    assert!(escaped_somewhere, "the text was never shown (escaped)");
    // The stored summary kept the bytes; only the printing escapes them.
    let stored = rig
        .env
        .sql("SELECT summary FROM runs WHERE summary IS NOT NULL");
    assert_eq!(stored[0][0], EVIL);
    // JSON is for programs: ESC and the other C0 controls are \u escapes.
    for args in [
        &["--json", "show", "evil"][..],
        &["--json", "runs"],
        &["--json", "log"],
    ] {
        let out = rig.env.run(args).ok();
        assert!(!out.stdout.contains('\u{1b}'), "{args:?}: raw ESC in JSON");
    }
}

#[test]
fn the_executor_gets_no_database_descriptor_no_task_data_in_argv_and_its_own_group() {
    let rig = Rig::new();
    let probe = rig.env.path("probe.out");
    rig.env.set_env("PROBE_OUT", probe.to_str().unwrap());
    rig.env.set_env(
        "AGENTCRON_EXECUTOR",
        &format!("{} --fixed-arg", fixture("probe.sh")),
    );
    Task::named("p")
        .instruction("secret instruction 1234")
        .confirm(&rig.env);
    rig.env.set_now(T0 + HOUR);
    rig.tick(&["--jobs", "1"]).ok();
    let seen = std::fs::read_to_string(&probe).unwrap();
    let argv = seen.lines().find(|l| l.starts_with("argv")).unwrap();
    assert_eq!(argv, "argv --fixed-arg");
    let ids = seen.lines().find(|l| l.starts_with("pid ")).unwrap();
    let parts: Vec<&str> = ids.split(' ').collect();
    assert_eq!(
        parts[1], parts[3],
        "the executor leads its own process group: {ids}"
    );
    let db_name = rig.env.db.file_name().unwrap().to_str().unwrap();
    let leaked: Vec<&str> = seen
        .lines()
        .filter(|l| l.starts_with("fd ") && l.contains(db_name))
        .collect();
    assert!(leaked.is_empty(), "database descriptors leaked: {leaked:?}");
    assert_eq!(rig.runs("p")[0]["status"], "succeeded");
}
