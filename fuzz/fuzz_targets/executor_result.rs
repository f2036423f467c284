//! Fuzz target `executor_result`: the properties live in `agentcron::fuzzing`, shared
//! with the corpus replay test that `cargo test` runs on stable.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentcron::fuzzing::check_executor_result(data));
