//! `ops::inside_run` (docs/CONTRACT.md §19): the commands that change
//! schedules refuse inside a run: marked by `AGENTCRON_RUN_ID`, or
//! descending from the process a running run records as its runner.

use super::fixture::{daily, refusal, Fixture, Person, T0};
use crate::error::ErrorKind;
use crate::model::short_id;
use crate::ops::inside_run::{refuse_by_ancestry, refuse_marked};

/// How `process::runner_identity` writes this process's parent (the test
/// harness's caller): boot id, pid, start time from /proc.
fn parent_runner() -> String {
    let me = crate::process::runner_identity().expect("/proc says who we are");
    let boot = me.split(' ').next().unwrap();
    let parent = std::os::unix::process::parent_id();
    let stat = std::fs::read_to_string(format!("/proc/{parent}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let start = after_name.split(' ').nth(19).unwrap();
    format!("{boot} {parent} {start}")
}

#[test]
fn a_process_marked_as_a_runs_is_refused() {
    let run_id = "5f3c2a9e-0000-4000-8000-000000000000";
    let (kind, e) = refusal(refuse_marked(Some(run_id)));
    assert_eq!(kind, ErrorKind::Denied);
    assert!(e.message.contains(short_id(run_id)), "{}", e.message);
    refuse_marked(None).unwrap();
}

#[test]
fn a_descendant_of_a_running_runs_process_is_refused_and_no_one_else() {
    let (mut f, alice) = (Fixture::new(), Person::alice());
    let c = f.task(&alice, &daily("09:00"));
    let task = f.read_task(&c.task_id);
    refuse_by_ancestry(f.store.as_mut()).unwrap();
    // A run this process runs itself is no ancestor of it.
    let own = crate::process::runner_identity().unwrap();
    f.running_run(&task, T0 + 3600, T0 + 4200, Some(own));
    refuse_by_ancestry(f.store.as_mut()).unwrap();
    let day = T0 + 3600 + 86_400;
    let run = f.running_run(&task, day, day + 600, Some(&parent_runner()));
    let (kind, e) = refusal(refuse_by_ancestry(f.store.as_mut()));
    assert_eq!(kind, ErrorKind::Denied);
    assert!(e.message.contains(short_id(&run.run_id)), "{}", e.message);
}
