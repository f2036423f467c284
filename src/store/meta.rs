//! Small facts about the store itself, such as the time of the last tick,
//! and the hosts that tick it with the build each last ran.

use anyhow::Result;

pub trait MetaTx {
    fn meta(&mut self, key: &str) -> Result<Option<String>>;
    fn set_meta(&mut self, key: &str, value: &str) -> Result<()>;
    /// Records that `host`, running `build`, ticked at `at`.
    fn record_host(&mut self, host: &str, build: &str, at: i64) -> Result<()>;
    /// Every host that ticked this store, the latest tick first.
    fn hosts(&mut self) -> Result<Vec<Host>>;
}

/// A host that ticks the store and the build its last tick ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub host: String,
    pub build: String,
    pub last_tick_at: i64,
}
