//! How a statement asks whether a caller's owner keys see a row: the keys
//! are one parameter, a JSON list of strings, in either dialect (arguments
//! are plain values, never arrays), and a task's `owner_keys` is a JSON
//! list kept as text on both servers.

use super::connection::Dialect;

/// A subquery yielding the keys of the JSON list in parameter `$param`.
pub fn keys(dialect: Dialect, param: usize) -> String {
    match dialect {
        Dialect::Sqlite => format!("(SELECT value FROM json_each(${param}))"),
        // Cast to text first: a parameter the server takes as jsonb would
        // have to be sent in jsonb's own binary form.
        Dialect::Postgres => {
            format!("(SELECT jsonb_array_elements_text(CAST(${param} AS TEXT)::jsonb))")
        }
    }
}

/// True when the task `alias` has one of the keys in `$param` among its
/// owners.
pub fn owned(dialect: Dialect, alias: &str, param: usize) -> String {
    let keys = keys(dialect, param);
    match dialect {
        Dialect::Sqlite => format!(
            "EXISTS (SELECT 1 FROM json_each({alias}.owner_keys) AS o WHERE o.value IN {keys})"
        ),
        // `?|` over the keys gathered once (an InitPlan), not per row.
        Dialect::Postgres => format!("({alias}.owner_keys::jsonb ?| ARRAY{keys})"),
    }
}
