//! agentcron library.
