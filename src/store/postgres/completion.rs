//! PostgreSQL side of what shell completion reads: the shared SQL with the
//! prefix typed as text.

use anyhow::{Context, Result};

use super::{col, PgTx};
use crate::store::completion::{self, CompletionTx, KnownKey, Row, RunCandidate, RunKind};
use crate::store::completion::{TaskCandidate, LIMIT};

impl CompletionTx for PgTx<'_, '_> {
    fn task_candidates(
        &mut self,
        tenant_key: &str,
        owner_keys: &[String],
        prefix: &str,
    ) -> Result<Vec<TaskCandidate>> {
        let rows = self.candidate_rows(completion::TASKS, tenant_key, prefix)?;
        Ok(completion::decode_tasks(rows, owner_keys))
    }

    fn run_candidates(
        &mut self,
        tenant_key: &str,
        owner_keys: &[String],
        kind: RunKind,
        prefix: &str,
    ) -> Result<Vec<RunCandidate>> {
        let Some(sql) = completion::runs_sql(kind, prefix) else {
            return Ok(Vec::new());
        };
        let rows = self.candidate_rows(&sql, tenant_key, prefix)?;
        Ok(completion::decode_runs(rows, owner_keys))
    }

    fn known_keys(&mut self, tenant_key: &str, prefix: &str) -> Result<Vec<KnownKey>> {
        let rows = self.candidate_rows(completion::KNOWN_KEYS, tenant_key, prefix)?;
        Ok(completion::decode_keys(rows))
    }
}

impl PgTx<'_, '_> {
    /// The rows of `sql` ($1 the tenant, $2 the prefix, $3 the cap), every
    /// column as text or null.
    fn candidate_rows<const N: usize>(
        &mut self,
        sql: &str,
        tenant_key: &str,
        prefix: &str,
    ) -> Result<Vec<Row<N>>> {
        // substr/length on text, the cap as bigint: the same SQL as SQLite's.
        let sql = sql.replace("length($2)", "length($2::text)");
        let rows = self
            .tx
            .query(&sql, &[&tenant_key, &prefix, &LIMIT])
            .context("reading completion candidates")?;
        rows.iter()
            .map(|row| {
                let mut columns: Row<N> = std::array::from_fn(|_| None);
                for (i, column) in columns.iter_mut().enumerate() {
                    *column = col(row, i)?;
                }
                Ok(columns)
            })
            .collect()
    }
}
