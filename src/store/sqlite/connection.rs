//! SQLite's side of `store::connection`: statements renumbered from `$n`
//! to `?n` and prepared once per connection, values read as they are.

use anyhow::{anyhow, Context, Result};
use rusqlite::types::{ToSqlOutput, Value, ValueRef};

use super::{numbered, SqliteTx};
use crate::store::connection::{Arg, Cell, Connection, Dialect, EachRow, Row};

impl rusqlite::ToSql for Arg<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match *self {
            Arg::Null => ToSqlOutput::Owned(Value::Null),
            Arg::Int(v) => ToSqlOutput::Owned(Value::Integer(v)),
            Arg::Real(v) => ToSqlOutput::Owned(Value::Real(v)),
            Arg::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Arg::Bool(b) => ToSqlOutput::Owned(Value::Integer(i64::from(b))),
        })
    }
}

/// A row as the operations read it.
fn row_of(row: &rusqlite::Row<'_>) -> Result<Row> {
    let count = row.as_ref().column_count();
    let mut cells = Vec::with_capacity(count);
    for i in 0..count {
        cells.push(match row.get_ref(i)? {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(v) => Cell::Int(v),
            ValueRef::Real(v) => Cell::Real(v),
            ValueRef::Text(bytes) => Cell::Text(
                std::str::from_utf8(bytes)
                    .with_context(|| format!("reading column {i}: not UTF-8"))?
                    .to_string(),
            ),
            ValueRef::Blob(_) => return Err(anyhow!("reading column {i}: a blob, not a value")),
        });
    }
    Ok(Row::new(cells))
}

impl Connection for SqliteTx<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64> {
        let changed = self
            .conn
            .prepare_cached(&numbered(sql))?
            .execute(rusqlite::params_from_iter(args))?;
        Ok(changed as u64)
    }

    fn query(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>> {
        let mut stmt = self.conn.prepare_cached(&numbered(sql))?;
        let mut rows = stmt.query(rusqlite::params_from_iter(args))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            out.push(row_of(row)?);
        }
        Ok(out)
    }

    fn each_row(&mut self, sql: &str, args: &[Arg<'_>], each: &mut EachRow<'_>) -> Result<()> {
        let conn = self.conn;
        let mut stmt = conn.prepare_cached(&numbered(sql))?;
        let mut rows = stmt.query(rusqlite::params_from_iter(args))?;
        // SQLite steps this statement while `each` runs others on the same
        // connection: reads inside one transaction may nest.
        while let Some(row) = rows.next()? {
            let row = row_of(row)?;
            if each(&mut SqliteTx { conn }, &row)?.is_break() {
                break;
            }
        }
        Ok(())
    }
}
