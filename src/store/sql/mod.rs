//! The statements both stores run as written: one text per statement, in
//! PostgreSQL's dialect with its `$1`, `$2`… parameters, which SQLite runs
//! with its own numbered ones (`sqlite::numbered`). Each store binds the
//! parameters its own way and reads the rows through the shared decoders
//! (`rows`), as `completion` does for its queries.
//!
//! What stays in a store's own files is what its dialect says differently:
//! PostgreSQL's typed parameters (`$1::text IS NULL`), `RETURNING`,
//! `FOR UPDATE SKIP LOCKED` and advisory locks, `greatest` and `starts_with`,
//! `jsonb` operators and cursors; SQLite's `INDEXED BY` hints, `json_each`,
//! `INSERT OR REPLACE`, temporary tables and `max` of two values.

pub mod tasks;
