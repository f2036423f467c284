//! Issue 44 item 7: `status` says the deployment either way, and every
//! time in one zone (`AGENTCRON_TZ`, as `list` and `show` do).
use crate::support::{Rig, Task, T0};

#[test]
fn status_says_the_deployment_either_way_and_every_time_in_one_zone() {
    let rig = Rig::new();
    let env = &rig.env;
    env.set_env("AGENTCRON_TZ", "Europe/Berlin");
    Task::named("x").confirm(env);
    let line = |stdout: &str, subject: &str| -> String {
        (stdout.lines())
            .find(|l| l.starts_with(subject))
            .unwrap_or_else(|| panic!("no {subject} line: {stdout}"))
            .to_string()
    };
    let before = env.run(&["status"]).ok().stdout;
    assert_eq!(
        line(&before, "deployment"),
        "deployment runs hold the store's authority: not known before a tick"
    );
    env.set_now(T0 + 3600);
    rig.tick(&[]).ok();
    let status = env.run(&["status"]).ok().stdout;
    // 09:00 UTC is 10:00 in Berlin in December.
    assert!(
        line(&status, "last tick").starts_with("last tick  2026-12-02 10:00 CET"),
        "{status}"
    );
    assert!(!status.contains("UTC"), "one zone: {status}");
    let deployment = line(&status, "deployment");
    assert!(
        deployment.starts_with("deployment runs hold the store's authority: yes"),
        "{deployment}"
    );
    env.sql("UPDATE meta SET value = '4242424' WHERE key = 'runs_uid'");
    let status = env.run(&["status"]).ok().stdout;
    let deployment = line(&status, "deployment");
    assert!(
        deployment
            .starts_with("deployment runs hold the store's authority: no (the last tick ran them as uid 4242424;"),
        "{deployment}"
    );
}
