//! Small facts about the store itself, such as the time of the last tick.

use anyhow::Result;

pub trait MetaTx {
    fn meta(&mut self, key: &str) -> Result<Option<String>>;
    fn set_meta(&mut self, key: &str, value: &str) -> Result<()>;
}
