//! `draft`: what a person sees before confirming, and every bad input.
use crate::support::{assert_contains, fed, Task, TestEnv, T0};

#[test]
fn draft_shows_words_next_runs_hash_expiry_and_confirm_line() {
    let env = TestEnv::new();
    let out = env
        .run(&[
            "draft",
            "--instruction",
            "summarize on-call",
            "--daily",
            "09:30",
            "--days",
            "mon-fri",
            "--tz",
            "Asia/Shanghai",
            "--name",
            "oncall",
        ])
        .ok();
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    assert!(out.stdout.contains("summarize on-call"));
    assert_contains(&out.stdout, "09:30");
    assert!(out.stdout.contains("Asia/Shanghai"));
    assert!(out.stdout.contains("expires"));
    let hash_line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("Payload hash: "))
        .unwrap();
    let hash = hash_line.trim_start_matches("Payload hash: ");
    assert_eq!(hash.len(), 64);
    let confirm = out
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("agentcron confirm "))
        .unwrap();
    assert_contains(confirm, &format!("--hash {hash}"));
    // 2026-12-02 is a Wednesday; 08:00Z is 16:00 in Shanghai, so the next
    // weekday 09:30 is Thursday 2026-12-03.
    assert_contains(&out.stdout, "2026-12-03 09:30");
}

#[test]
fn draft_json_has_the_spec_fields() {
    let env = TestEnv::new();
    let d = env.draft(&["--instruction", "x", "--every", "1h"]);
    for field in [
        "draft_id",
        "expires_at",
        "payload",
        "payload_hash",
        "schedule",
        "summary",
        "next_runs",
    ] {
        assert!(d.get(field).is_some(), "missing {field}: {d}");
    }
    assert_eq!(d["next_runs"].as_array().unwrap().len(), 3);
    assert_eq!(d["next_runs"][0], "2026-12-02T09:00:00Z");
    assert_eq!(d["expires_at"], "2026-12-02T08:30:00Z");
    assert_eq!(
        d["schedule"],
        serde_json::json!({"kind": "interval", "seconds": 3600, "anchor_at": T0})
    );
}

#[test]
fn payload_hash_is_sha256_of_the_printed_payload_which_is_canonical() {
    let env = TestEnv::new();
    let d = env.draft(&[
        "--instruction",
        "Grüße, 值班 \"quoted\"\nline two",
        "--cron",
        "*/15 9-17 * * 1-5",
        "--tz",
        "Europe/Berlin",
        "--target",
        "chat:42",
        "--policy",
        "confirm_writes",
    ]);
    let payload = d["payload"].as_str().unwrap();
    // Independent recomputation: the system's sha256sum over the exact bytes.
    let child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum");
    let out = fed(child, payload.as_bytes());
    let sum = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        sum.split_whitespace().next().unwrap(),
        d["payload_hash"].as_str().unwrap()
    );
    // Canonical: re-serializing (serde_json sorts keys, compact) gives the same bytes,
    // non-ASCII stays UTF-8, and the fields are exactly the contract's.
    let value: serde_json::Value = serde_json::from_str(payload).unwrap();
    assert_eq!(serde_json::to_string(&value).unwrap(), payload);
    assert!(payload.contains("值班") && payload.contains("Grüße"));
    let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "grace_seconds",
            "instruction",
            "max_retries",
            "name",
            "notify",
            "owner_keys",
            "policy",
            "realert_seconds",
            "retry_backoff_seconds",
            "schedule",
            "target",
            "tenant_key",
            "timezone"
        ]
    );
    // A new draft's notice policy (docs/CONTRACT.md §16) is written out.
    assert_eq!(value["notify"], "attention");
    assert_eq!(value["realert_seconds"], 3600);
    assert_eq!(value["owner_keys"], serde_json::json!(["unix:tester"]));
    assert_eq!(value["name"], serde_json::Value::Null);
}

#[test]
fn owner_keys_are_sorted_and_deduplicated() {
    let env = TestEnv::new();
    let d = env.draft(&[
        "--as",
        "zed",
        "--as",
        "amy",
        "--as",
        "zed",
        "--instruction",
        "x",
        "--in",
        "1h",
    ]);
    let payload: serde_json::Value = serde_json::from_str(d["payload"].as_str().unwrap()).unwrap();
    assert_eq!(payload["owner_keys"], serde_json::json!(["amy", "zed"]));
    assert_eq!(
        payload["target"], "zed",
        "default target is the first identity key"
    );
}

#[test]
fn instruction_from_stdin() {
    let env = TestEnv::new();
    let out = env
        .run_with_stdin(
            &["--json", "draft", "--instruction", "-", "--in", "10m"],
            b"from stdin\n",
        )
        .ok();
    let payload: serde_json::Value =
        serde_json::from_str(out.json()["payload"].as_str().unwrap()).unwrap();
    assert_eq!(payload["instruction"], "from stdin");
}

#[test]
fn a_huge_instruction_on_stdin_is_refused_as_more_than_the_limit() {
    let env = TestEnv::new();
    let args = ["draft", "--instruction", "-", "--in", "10m"];
    // 10 MB, read only up to the limit: its size is not known, and the cut
    // may fall inside a character.
    for unit in ["x", "é"] {
        let huge = unit.repeat(10_000_000 / unit.len());
        let out = env.run_with_stdin(&args, huge.as_bytes()).fails(2);
        assert_eq!(
            out.stderr.trim_end(),
            "agentcron: error: the instruction on standard input is more than 32768 bytes, \
             the most allowed"
        );
    }
    // The limit itself, with the newline `echo` adds, is fine.
    let exact = format!("{}\n", "x".repeat(32768));
    env.run_with_stdin(&args, exact.as_bytes()).ok();
}

/// Each bad input exits with its code, one error line, and writes nothing.
fn rejects(env: &TestEnv, args: &[&str], code: i32, needle: &str) {
    let before = env.db_bytes();
    let out = env.run(args).fails(code);
    assert!(
        out.stderr.to_lowercase().contains(&needle.to_lowercase()),
        "{args:?}: expected '{needle}' in: {}",
        out.stderr
    );
    assert_eq!(env.db_bytes(), before, "{args:?} changed the database");
}

#[test]
fn bad_drafts_are_refused_with_usage_errors_and_write_nothing() {
    let env = TestEnv::new();
    Task::named("taken")
        .instruction("seed")
        .after("1h")
        .confirm(&env);
    let long = "x".repeat(32769);
    let long_name = "n".repeat(65);
    // `draft --instruction x` and these flags.
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (vec!["--every", "59s"], 2, "60"),
        (vec!["--every", "30s"], 2, "60"),
        (
            vec!["--daily", "09:00", "--tz", "Mars/Olympus"],
            2,
            "time zone",
        ),
        (
            vec!["--daily", "09:00", "--tz", "../../etc/passwd"],
            2,
            "time zone",
        ),
        (vec!["--in", "1h", "--name", "has space"], 2, "--name"),
        (vec!["--in", "1h", "--name", "ünïcode"], 2, "--name"),
        (vec!["--in", "1h", "--name", &long_name], 2, "--name"),
        (vec!["--in", "1h", "--every", "1h"], 2, "cannot be used"),
        (vec![], 2, "required"),
        (vec!["--at", "2020-01-01T00:00:00Z"], 2, "past"),
        (vec!["--at", "2026-02-30 09:00"], 2, ""),
        (vec!["--daily", "24:00"], 2, ""),
        (vec!["--daily", "12:60"], 2, ""),
        (vec!["--daily", "09:00", "--days", "funday"], 2, ""),
        (vec!["--cron", "61 * * * *"], 2, ""),
        (vec!["--cron", "* * * *"], 2, ""),
        (vec!["--cron", "0 0 30 2 *"], 2, "no occurrence"),
        (vec!["--in", "1x"], 2, ""),
        (vec!["--in", "99999999999999999999s"], 2, ""),
        (vec!["--in", "1h", "--max-retries", "-1"], 2, ""),
        (vec!["--in", "1h", "--policy", "anything"], 2, ""),
        (vec!["--in", "1h", "--ttl", "30d"], 2, "ttl"),
        (vec!["--in", "1h", "--name", "taken"], 5, "already exists"),
        (vec!["--in", "1h", "--tenant", ""], 2, "tenant"),
        (vec!["--in", "1h", "--as", "a\u{1b}b"], 2, "control"),
        (vec!["--days", "mon", "--in", "1h"], 2, ""),
    ];
    for (flags, code, needle) in cases {
        let mut args = vec!["draft", "--instruction", "x"];
        args.extend(flags);
        rejects(&env, &args, code, needle);
    }
    // `draft --in 1h` and these instructions.
    let instructions: Vec<(&str, i32, &str)> = vec![
        ("", 2, "empty"),
        ("   \n\t", 2, "empty"),
        (&long, 2, "32768"),
    ];
    for (instruction, code, needle) in instructions {
        let args = ["draft", "--instruction", instruction, "--in", "1h"];
        rejects(&env, &args, code, needle);
    }
}

#[test]
fn nul_bytes_in_the_instruction_are_refused() {
    let env = TestEnv::new();
    let out = env
        .run_with_stdin(&["draft", "--instruction", "-", "--in", "1h"], b"a\0b")
        .fails(2);
    assert_contains(&out.stderr, "NUL");
    let out = env
        .run_with_stdin(&["draft", "--instruction", "-", "--in", "1h"], b"\xff\xfe")
        .fails(2);
    assert_contains(&out.stderr, "UTF-8");
}

#[test]
fn bad_database_paths_are_refused() {
    let env = TestEnv::new();
    let dir = env.path("adir");
    std::fs::create_dir(&dir).unwrap();
    let out = env.run(&["--db", ":memory:", "list"]).fails(2);
    assert!(out.stderr.contains(":memory:"));
    let out = env.run(&["--db", dir.to_str().unwrap(), "list"]).fails(2);
    assert_contains(&out.stderr, "directory");
    let real = env.path("real.db");
    let real_db = real.to_str().unwrap();
    env.run(&["--db", real_db, "draft", "--instruction", "x", "--in", "1h"])
        .ok();
    let link = env.path("link.db");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = env.run(&["--db", link.to_str().unwrap(), "list"]).fails(2);
    assert_contains(&out.stderr, "symbolic link");
    let not_db = env.path("notes.txt");
    std::fs::write(
        &not_db,
        "this is not a database, just text that is long enough to be a header",
    )
    .unwrap();
    let before = std::fs::read(&not_db).unwrap();
    let out = env
        .run(&["--db", not_db.to_str().unwrap(), "list"])
        .fails(1);
    assert_contains(&out.stderr, "not an agentcron database");
    assert_eq!(std::fs::read(&not_db).unwrap(), before);
}

#[test]
fn uri_like_paths_are_plain_file_names() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.path("w")).unwrap();
    let out = env
        .command(&[
            "--db",
            "file:x.db?mode=memory",
            "draft",
            "--instruction",
            "x",
            "--in",
            "1h",
        ])
        .current_dir(env.path("w"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(env.path("w").join("file:x.db?mode=memory").is_file());
}

#[test]
fn new_database_is_private_even_with_a_permissive_umask() {
    let env = TestEnv::new();
    let db = env.path("deep/er/agentcron.db");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask 000; exec \"$0\" --db '{}' draft --instruction x --in 1h",
            db.display()
        ))
        .arg(crate::support::BIN)
        .env("AGENTCRON_NOW", T0.to_string())
        .status()
        .unwrap();
    assert!(status.success());
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&db), 0o600);
    assert_eq!(mode(db.parent().unwrap()), 0o700);
    assert_eq!(mode(db.parent().unwrap().parent().unwrap()), 0o700);
}

#[test]
fn errors_in_json_mode_are_one_json_object_on_stderr() {
    let env = TestEnv::new();
    let out = env.run(&["--json", "show", "nothing-here"]);
    assert_eq!(out.code, 3);
    assert!(out.stdout.is_empty());
    let err = out.stderr_json();
    assert_eq!(err["error"]["kind"], "not_found");
    assert_eq!(err["error"]["exit_code"], 3);
}
