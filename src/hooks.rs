//! Deterministic crash points for the reliability suite, compiled only with
//! the `test-hooks` feature (never in release builds).
//!
//! `AGENTCRON_TEST_HOOK=POINT:abort` aborts the process at POINT, as a
//! `kill -9` there would; `POINT:sleep:MS` pauses it; `POINT:signal:FILE`
//! creates FILE and waits there (at most 20 s) until a stop signal has been
//! received, so a test delivers a real signal exactly at POINT. It reads the
//! environment itself (as context.rs does for the options and completion
//! does for the shell's request), and only in test builds.

/// Called at each named point; does nothing unless the hook names it.
pub fn at(point: &str) {
    let Ok(spec) = std::env::var("AGENTCRON_TEST_HOOK") else {
        return;
    };
    let mut parts = spec.splitn(3, ':');
    if parts.next() != Some(point) {
        return;
    }
    match (parts.next(), parts.next()) {
        (Some("abort"), _) => std::process::abort(),
        (Some("sleep"), Some(ms)) => {
            std::thread::sleep(std::time::Duration::from_millis(ms.parse().unwrap_or(0)));
        }
        (Some("signal"), Some(ready)) => {
            let _ = std::fs::write(ready, std::process::id().to_string());
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while crate::interrupt::received().is_none() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
        _ => {}
    }
}
