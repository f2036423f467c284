//! Power loss: the database lives on a FUSE file system
//! (`tests/fixtures/lazyfs.py`) that keeps every write in memory until it is
//! fsynced. A tick is SIGKILLed mid-flight together with its executors, and
//! the file system is unmounted: whatever was written but not fsynced is
//! gone — or, every other cut, a random subset of it survives in 4 KiB
//! pieces, as if the kernel had written some dirty pages back. Then the
//! machine "boots": a fresh mount over what reached the disk, recovery ticks.
//!
//! What must hold after every cut:
//! - the database opens, `agentcron check` and `integrity_check` pass;
//! - every executor start in the journal (the outside world, on a real disk)
//!   has its run in the store, because the claim is durable before the spawn,
//!   and no run or occurrence ever starts twice;
//! - every task whose `confirm` had answered is still there;
//! - every notice the notifier received is recorded as sent (never pending,
//!   so it is never sent again), and no run is notified twice.
//!
//! Needs /dev/fuse, `umount` and Python's fusepy (`scripts/ensure-fuse`
//! installs them). Without them the test says so and passes, unless
//! AGENTCRON_REQUIRE_POWERLOSS=1 (set by `.ci/run`) makes their absence a
//! failure. SQLite only: on PostgreSQL the server owns durability.
use crate::support::{fixture, Rig, Task, T0};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{
    assert_invariants, assert_notified_at_most_once, journal_starts, kill, notifier_calls,
    reconcile_unknown, recover, seeded, spawn, stress, SettledRuns,
};

const HOUR: i64 = 3600;

/// The lazy file system mounted over a backing directory.
struct LazyMount {
    mountpoint: PathBuf,
    /// None once the power was cut and the daemon has exited.
    daemon: Option<Child>,
}

impl LazyMount {
    fn mount(backing: &Path, mountpoint: &Path, torn_seed: Option<u64>) -> LazyMount {
        let mut cmd = Command::new("python3");
        cmd.arg(fixture("lazyfs.py")).arg(backing).arg(mountpoint);
        if let Some(seed) = torn_seed {
            cmd.arg("--torn").arg(seed.to_string());
        }
        let mut daemon = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start lazyfs.py");
        let began = Instant::now();
        while !is_mounted(mountpoint) {
            if let Some(status) = daemon.try_wait().unwrap() {
                let out = daemon.wait_with_output().unwrap();
                panic!(
                    "lazyfs.py exited ({status}) before mounting: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            assert!(
                began.elapsed() < Duration::from_secs(10),
                "lazyfs.py did not mount within 10 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        LazyMount {
            mountpoint: mountpoint.to_path_buf(),
            daemon: Some(daemon),
        }
    }

    /// Unmounts, which drops every unsynced write; returns the daemon's
    /// account of what was lost.
    fn cut_power(mut self) -> String {
        // A process SIGKILLed a moment ago may still be closing its files.
        let began = Instant::now();
        loop {
            let out = Command::new("umount")
                .arg(&self.mountpoint)
                .output()
                .expect("run umount");
            if out.status.success() {
                break;
            }
            assert!(
                began.elapsed() < Duration::from_secs(5),
                "umount {} failed: {}; files open there: {:?}",
                self.mountpoint.display(),
                String::from_utf8_lossy(&out.stderr).trim(),
                open_files_under(&self.mountpoint)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let daemon = self.daemon.take().expect("the daemon runs until the cut");
        let out = daemon.wait_with_output().expect("wait for lazyfs.py");
        let report = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            report.contains("power cut"),
            "lazyfs.py ended without its report: {report}"
        );
        report
    }
}

impl Drop for LazyMount {
    fn drop(&mut self) {
        if is_mounted(&self.mountpoint) {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(&self.mountpoint)
                .status();
        }
        if let Some(mut daemon) = self.daemon.take() {
            let _ = daemon.kill();
            let _ = daemon.wait();
        }
    }
}

/// `pid: path` for every file descriptor open under `dir`, for diagnosis.
fn open_files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for proc_entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(fds) = std::fs::read_dir(proc_entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path()) {
                if target.starts_with(dir) {
                    found.push(format!(
                        "{}: {}",
                        proc_entry.file_name().to_string_lossy(),
                        target.display()
                    ));
                }
            }
        }
    }
    found
}

fn is_mounted(path: &Path) -> bool {
    let wanted = path.display().to_string();
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(1) == Some(wanted.as_str()))
}

/// Why this machine cannot run the scenario, if it cannot.
fn missing_prerequisite() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse does not exist".into());
    }
    let fusepy = Command::new("python3")
        .args(["-c", "import fuse"])
        .stderr(Stdio::null())
        .status();
    if !fusepy.is_ok_and(|s| s.success()) {
        return Some("python3 cannot import fuse (fusepy)".into());
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("mounting needs root".into());
    }
    None
}

/// The "N unsynced pieces lost, M kept" figures of the daemon's report.
fn lost_and_kept(report: &str) -> (u64, u64) {
    let figure = |word: &str| {
        report
            .split(',')
            .find(|part| part.contains(word))
            .and_then(|part| part.split_whitespace().find_map(|w| w.parse().ok()))
            .unwrap_or(0)
    };
    (figure("lost"), figure("kept"))
}

#[test]
fn power_loss_never_loses_an_acknowledged_write_or_replays_a_run() {
    if crate::support::on_postgres() {
        eprintln!("power loss: SQLite only, skipped on PostgreSQL");
        return;
    }
    if let Some(why) = missing_prerequisite() {
        assert!(
            std::env::var("AGENTCRON_REQUIRE_POWERLOSS").as_deref() != Ok("1"),
            "power loss scenario required but {why}"
        );
        crate::support::skipped(&format!(
            "power loss: {why} (scripts/ensure-fuse installs what is missing)"
        ));
        return;
    }
    let (mut rng, _guard) = seeded("power_loss", 7);
    let iterations = 12 * stress();

    let mut rig = Rig::new();
    let backing = rig.env.path("disk");
    let mountpoint = rig.env.path("mnt");
    std::fs::create_dir_all(&backing).unwrap();
    std::fs::create_dir_all(&mountpoint).unwrap();
    rig.env.db = mountpoint.join("state").join("agentcron.db");
    rig.with_notifier(0);
    rig.env.set_env("FIXTURE_MODE", "sleep");
    let exec_journal = rig.env.path("exec.journal");
    let calls = rig.env.path("notify.calls");

    let mut mount = Some(LazyMount::mount(&backing, &mountpoint, None));
    let mut settled = SettledRuns::default(); // no database yet
    let began = Instant::now();
    let mut acknowledged_tasks = 0;
    let (mut lost, mut kept, mut unknown) = (0, 0, 0);
    for iteration in 0..iterations {
        rig.env.set_now(T0 + (iteration as i64 + 1) * HOUR);
        // A write the caller saw succeed must survive the cut.
        for _ in 0..1 + rng.below(2) {
            let name = format!("p{acknowledged_tasks}");
            Task::named(&name)
                .instruction("power loss")
                .max_retries("0")
                .confirm(&rig.env);
            acknowledged_tasks += 1;
        }
        let sleep_ms = rng.below(200);
        rig.env
            .set_env("FIXTURE_SLEEP", &format!("0.{sleep_ms:03}"));
        let starts_before = journal_starts(&exec_journal).len();
        let notifiers_before = notifier_calls(&calls).len();
        let ticks: Vec<Child> = (0..1 + rng.below(2))
            .map(|_| {
                let jobs = (1 + rng.below(3)).to_string();
                spawn(&rig.env, &["tick", "--lease", "2s", "--jobs", &jobs])
            })
            .collect();
        std::thread::sleep(Duration::from_millis(rng.below(700)));

        // The power cut: every process dies at once, then the unsynced data.
        for mut tick in ticks {
            kill(tick.id() as i32, libc::SIGKILL);
            let _ = tick.wait();
        }
        for (_, _, pid) in &journal_starts(&exec_journal)[starts_before..] {
            kill(-pid, libc::SIGKILL);
        }
        for (pid, _, _) in &notifier_calls(&calls)[notifiers_before..] {
            kill(-pid, libc::SIGKILL);
        }
        let report = mount.take().unwrap().cut_power();
        let (l, k) = lost_and_kept(&report);
        lost += l;
        kept += k;

        // The reboot: a fresh mount, torn or not, over what reached the disk.
        let torn = rng.chance(50).then(|| rng.next());
        mount = Some(LazyMount::mount(&backing, &mountpoint, torn));
        assert_eq!(
            rig.env.count("SELECT count(*) FROM tasks"),
            acknowledged_tasks as i64,
            "iteration {iteration}: a confirmed task was lost ({report})"
        );
        recover(&rig, 10, &format!("iteration {iteration}"));
        assert_invariants(&rig.env, &exec_journal);
        assert_notified_at_most_once(&rig.env, &calls);
        settled = settled.assert_unchanged(&rig.env);

        unknown += reconcile_unknown(&rig.env, "power loss test");
    }
    let figures = assert_invariants(&rig.env, &exec_journal);
    eprintln!(
        "power loss: {iterations} cuts, {acknowledged_tasks} tasks kept, {} runs, {} executor \
         starts, {unknown} became unknown, {lost} unsynced 4 KiB pieces lost, {kept} kept by \
         torn cuts, 0 replays, {:?}",
        figures.runs,
        figures.starts,
        began.elapsed()
    );
    drop(mount);
}
