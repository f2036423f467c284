//! Ids by prefix: what a person types for a draft, task or run is looked
//! up as a range on the table's primary key, in the tenant.

use anyhow::{Context, Result};

use super::connection::{args, Connection, Dialect};

/// At most this many ids match a prefix: enough to name an ambiguous
/// prefix's candidates to a person.
pub const PREFIX_MATCHES: u32 = 6;

pub trait IdTx {
    /// The ids of the tenant's drafts, tasks or runs that begin with
    /// `prefix`, at most `PREFIX_MATCHES`, in order: a range on the primary
    /// key, so the prefix is only ever a bound, never SQL.
    fn ids_with_prefix(&mut self, ids: Ids, tenant_key: &str, prefix: &str) -> Result<Vec<String>>;
}

impl<C: Connection> IdTx for C {
    fn ids_with_prefix(&mut self, ids: Ids, tenant_key: &str, prefix: &str) -> Result<Vec<String>> {
        let (table, id) = ids.table_and_key();
        let (starts, tenant) = match self.dialect() {
            // `+tenant_key`: walk the id range, not every row of the tenant
            // sorted by id (which SQLite chose without the `+`).
            Dialect::Sqlite => (String::new(), "+tenant_key"),
            // `starts_with` keeps a collation that orders '-' oddly from
            // ever matching an id that does not begin so.
            Dialect::Postgres => (format!("AND starts_with({id}, $1)"), "tenant_key"),
        };
        let sql = format!(
            "SELECT {id} FROM {table}
             WHERE {id} >= $1 AND {id} < $2 {starts} AND {tenant} = $3
             ORDER BY {id} LIMIT $4"
        );
        let upper = format!("{prefix}\u{10FFFF}");
        let rows = self
            .query(&sql, args![prefix, &upper, tenant_key, PREFIX_MATCHES])
            .with_context(|| format!("looking up {table} by id prefix"))?;
        rows.iter().map(|r| r.get(0)).collect()
    }
}

/// What an id prefix is looked up among.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ids {
    Drafts,
    Tasks,
    Runs,
}

impl Ids {
    fn table_and_key(self) -> (&'static str, &'static str) {
        match self {
            Ids::Drafts => ("drafts", "draft_id"),
            Ids::Tasks => ("tasks", "task_id"),
            Ids::Runs => ("runs", "run_id"),
        }
    }
}
