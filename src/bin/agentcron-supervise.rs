//! `agentcron-supervise`: the supervisor every executor, gate and notifier
//! starts under (docs/CONTRACT.md §19.4), as a binary of its own. It links
//! only the supervisor, so it starts in about a third of the time the whole
//! `agentcron` takes: one more process per child is then nearly free.
//! `agentcron supervise` does the same where this binary is not installed.

fn main() {
    agentcron::process::supervisor::main()
}
