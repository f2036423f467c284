//! The statements of `export` and `import` that both stores run as written (see
//! `store::sql`).

/// Run by `TransferTx::is_empty`.
pub const IS_EMPTY: &str = "SELECT (SELECT count(*) FROM tasks) + (SELECT count(*) FROM runs) + (SELECT count(*) FROM events)";
