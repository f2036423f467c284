//! Tasks as the suites need them: drafted and confirmed in one call.
use serde_json::Value;

use super::{Outcome, TestEnv, HOUR, T0};

/// A task to draft and confirm: `--instruction x --every 1h --notify
/// always` unless the test says otherwise. Every suite that needs a task
/// but does not test `draft` or `confirm` themselves builds it here, so a
/// test says only what it is about (its schedule, policy, limits, notice
/// mode, or any other draft flag).
#[derive(Clone, Debug)]
pub struct Task {
    name: Option<String>,
    instruction: String,
    schedule: Vec<String>,
    notify: Option<String>,
    flags: Vec<String>,
}

/// What a confirmed task came from: its ids and the hash a person
/// confirmed; `task["key"]` reads confirm's JSON.
#[derive(Clone, Debug)]
pub struct Confirmed {
    pub task_id: String,
    pub draft_id: String,
    pub hash: String,
    pub json: Value,
}

impl std::fmt::Display for Confirmed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.json.fmt(f)
    }
}

impl std::ops::Index<&str> for Confirmed {
    type Output = Value;

    fn index(&self, key: &str) -> &Value {
        &self.json[key]
    }
}

impl Task {
    /// An unnamed task.
    pub fn new() -> Task {
        Task {
            name: None,
            instruction: "x".to_string(),
            schedule: vec!["--every".to_string(), "1h".to_string()],
            notify: Some("always".to_string()),
            flags: Vec::new(),
        }
    }

    /// A task called `name`.
    pub fn named(name: &str) -> Task {
        Task {
            name: Some(name.to_string()),
            ..Task::new()
        }
    }

    pub fn instruction(mut self, text: &str) -> Task {
        self.instruction = text.to_string();
        self
    }

    /// The schedule's flags, in place of `--every 1h`.
    pub fn schedule(mut self, flags: &[&str]) -> Task {
        self.schedule = flags.iter().map(|f| f.to_string()).collect();
        self
    }

    pub fn every(self, interval: &str) -> Task {
        self.schedule(&["--every", interval])
    }

    pub fn daily(self, at: &str) -> Task {
        self.schedule(&["--daily", at])
    }

    pub fn cron(self, expr: &str) -> Task {
        self.schedule(&["--cron", expr])
    }

    /// Once, at `time`.
    pub fn at(self, time: &str) -> Task {
        self.schedule(&["--at", time])
    }

    /// Once, `duration` from now.
    pub fn after(self, duration: &str) -> Task {
        self.schedule(&["--in", duration])
    }

    pub fn tz(self, zone: &str) -> Task {
        self.flags(&["--tz", zone])
    }

    /// `--policy read_only` or `confirm_writes`.
    pub fn policy(self, policy: &str) -> Task {
        self.flags(&["--policy", policy])
    }

    pub fn timeout(self, limit: &str) -> Task {
        self.flags(&["--timeout", limit])
    }

    /// A spend limit, `KEY=N/PERIOD`.
    pub fn budget(self, limit: &str) -> Task {
        self.flags(&["--budget", limit])
    }

    pub fn max_retries(self, n: &str) -> Task {
        self.flags(&["--max-retries", n])
    }

    /// The notice mode (`always` unless set): `attention`, `failures`,
    /// `never`.
    pub fn notify(mut self, mode: &str) -> Task {
        self.notify = Some(mode.to_string());
        self
    }

    /// No `--notify`: the product's default mode (`attention`).
    pub fn default_notify(mut self) -> Task {
        self.notify = None;
        self
    }

    /// Drafted and confirmed `--as` this caller.
    pub fn by(self, key: &str) -> Task {
        self.flags(&["--as", key])
    }

    pub fn tenant(self, key: &str) -> Task {
        self.flags(&["--tenant", key])
    }

    /// At this store (`--db`), drafted and confirmed there.
    pub fn db(self, db: &str) -> Task {
        self.flags(&["--db", db])
    }

    /// Any other draft flags, as spelled on the command line (a
    /// `--notify` among them sets the notice mode).
    pub fn flags(mut self, flags: &[&str]) -> Task {
        let mut rest = flags.iter();
        while let Some(flag) = rest.next() {
            if *flag == "--notify" {
                self.notify = rest.next().map(|mode| mode.to_string());
            } else {
                self.flags.push(flag.to_string());
            }
        }
        self
    }

    /// The draft's arguments.
    pub fn args(&self) -> Vec<String> {
        let mut args = vec!["--instruction".to_string(), self.instruction.clone()];
        if let Some(name) = &self.name {
            args.extend(["--name".to_string(), name.clone()]);
        }
        args.extend(self.schedule.iter().cloned());
        if let Some(mode) = &self.notify {
            args.extend(["--notify".to_string(), mode.clone()]);
        }
        args.extend(self.flags.iter().cloned());
        args
    }

    /// Runs `draft` with its arguments, as it comes out (for refusals and
    /// the human output).
    #[track_caller]
    pub fn try_draft(&self, env: &TestEnv) -> Outcome {
        let mut args = vec!["draft".to_string()];
        args.extend(self.args());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        env.run(&args)
    }

    /// Drafts it, and returns the draft's JSON.
    #[track_caller]
    pub fn draft(&self, env: &TestEnv) -> Value {
        let args = self.args();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        env.draft(&args)
    }

    /// Drafts and confirms it, as the caller and in the tenant it names.
    #[track_caller]
    pub fn confirm(&self, env: &TestEnv) -> Confirmed {
        let draft = self.draft(env);
        let draft_id = draft["draft_id"].as_str().unwrap().to_string();
        let hash = draft["payload_hash"].as_str().unwrap().to_string();
        let mut confirm = vec!["confirm", draft_id.as_str(), "--hash", hash.as_str()];
        for pair in self
            .flags
            .windows(2)
            .filter(|w| ["--as", "--tenant", "--db"].contains(&w[0].as_str()))
        {
            confirm.extend([pair[0].as_str(), pair[1].as_str()]);
        }
        let json = env.json(&confirm);
        Confirmed {
            task_id: json["task_id"].as_str().unwrap_or_default().to_string(),
            draft_id,
            hash,
            json,
        }
    }
}

impl Default for Task {
    fn default() -> Task {
        Task::new()
    }
}

/// A confirmed task `name` running daily at 09:00 UTC.
pub fn daily(env: &TestEnv, name: &str) -> Value {
    env.task(&[
        "--instruction",
        "summarize",
        "--daily",
        "09:00",
        "--tz",
        "UTC",
        "--name",
        name,
    ])
}

/// A draft's id and payload hash, as `confirm` takes them.
#[track_caller]
pub fn draft_ids(draft: &Value) -> (&str, &str) {
    (
        draft["draft_id"].as_str().unwrap(),
        draft["payload_hash"].as_str().unwrap(),
    )
}

/// Drafts a replacement; returns (draft_id, payload_hash).
pub fn replace_draft(env: &TestEnv, args: &[&str]) -> (String, String) {
    let mut all = vec!["draft", "--replace"];
    all.extend_from_slice(args);
    let d = env.json(&all);
    let (id, hash) = draft_ids(&d);
    (id.to_string(), hash.to_string())
}

pub fn rfc3339(at: i64) -> String {
    chrono::DateTime::from_timestamp(at, 0)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// 2026-12-03 09:30 in Shanghai.
pub const SHANGHAI_0930: i64 = T0 + 17 * HOUR + 30 * 60;

/// A store (made by a first draft) where unix:tester is in Shanghai and
/// task `standup` follows them, daily at 09:30.
pub fn standup_following_shanghai(env: &TestEnv) {
    env.draft(&["--instruction", "first", "--every", "1h"]);
    env.run(&["zone", "set", "unix:tester", "Asia/Shanghai"])
        .ok();
    env.task(&[
        "--instruction",
        "stand-up",
        "--daily",
        "09:30",
        "--tz",
        "follow",
        "--name",
        "standup",
    ]);
}
