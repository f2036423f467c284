//! SQLite side of export and import.

use super::numbered;
use crate::store::sql::transfer as sql;
use anyhow::{Context, Result};
use rusqlite::types::{Type, Value as Sql, ValueRef};
use serde_json::{Map, Value};

use super::SqliteTx;
use crate::store::transfer::{Table, TransferTx, REBUILD_MEMORY_SQL};

impl TransferTx for SqliteTx<'_> {
    fn dump_table(&mut self, table: &Table) -> Result<Vec<Map<String, Value>>> {
        let mut stmt = self.conn.prepare(&table.select_sql())?;
        let rows = stmt.query_map([], |row| {
            let mut object = Map::new();
            for (i, (name, _)) in table.columns.iter().enumerate() {
                // By reference: rusqlite's owned `Value` panics on text
                // that is not UTF-8 (a damaged store); this is an error.
                let value = match row.get_ref(i)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(n) => Value::from(n),
                    ValueRef::Real(f) => Value::from(f),
                    ValueRef::Text(t) => Value::String(
                        std::str::from_utf8(t)
                            .map_err(|e| {
                                rusqlite::Error::FromSqlConversionFailure(
                                    i,
                                    Type::Text,
                                    Box::new(e),
                                )
                            })?
                            .to_string(),
                    ),
                    ValueRef::Blob(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
                };
                object.insert(name.to_string(), value);
            }
            Ok(object)
        })?;
        rows.collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("exporting {}", table.name))
    }

    fn load_row(&mut self, table: &Table, values: &[Value]) -> Result<()> {
        let params: Vec<Sql> = values
            .iter()
            .map(|v| match v {
                Value::Number(n) => match n.as_i64() {
                    Some(i) => Sql::Integer(i),
                    None => Sql::Real(n.as_f64().unwrap_or_default()),
                },
                Value::String(s) => Sql::Text(s.clone()),
                _ => Sql::Null,
            })
            .collect();
        self.conn
            .prepare_cached(&table.insert_sql(|i, _| format!("?{i}")))?
            .execute(rusqlite::params_from_iter(params))
            .with_context(|| format!("importing a row into {}", table.name))?;
        Ok(())
    }

    fn rebuild_task_memory(&mut self) -> Result<()> {
        self.conn
            .execute(REBUILD_MEMORY_SQL, [])
            .context("rebuilding the tasks' memory")?;
        Ok(())
    }

    fn is_empty(&mut self) -> Result<bool> {
        let n: i64 = self
            .conn
            .query_row(&numbered(sql::IS_EMPTY), [], |r| r.get(0))?;
        Ok(n == 0)
    }
}
