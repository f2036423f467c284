//! PostgreSQL side of export and import.

use crate::store::sql::transfer as sql;
use anyhow::{Context, Result};
use postgres::types::ToSql;
use serde_json::{Map, Value};

use super::{col, PgTx};
use crate::store::transfer::{Kind, Table, TransferTx, REBUILD_MEMORY_SQL};

impl TransferTx for PgTx<'_, '_> {
    fn dump_table(&mut self, table: &Table) -> Result<Vec<Map<String, Value>>> {
        let rows = self
            .tx
            .query(&table.select_sql(), &[])
            .with_context(|| format!("exporting {}", table.name))?;
        rows.iter()
            .map(|row| {
                let mut object = Map::new();
                for (i, (name, kind)) in table.columns.iter().enumerate() {
                    let value = match kind {
                        Kind::Int => col::<Option<i64>>(row, i)?.map(Value::from),
                        Kind::Real => col::<Option<f64>>(row, i)?.map(Value::from),
                        Kind::Text => col::<Option<String>>(row, i)?.map(Value::String),
                    }
                    .unwrap_or(Value::Null);
                    object.insert(name.to_string(), value);
                }
                Ok(object)
            })
            .collect()
    }

    fn load_row(&mut self, table: &Table, values: &[Value]) -> Result<()> {
        let params: Vec<Box<dyn ToSql + Sync>> = table
            .columns
            .iter()
            .zip(values)
            .map(|((_, kind), v)| -> Box<dyn ToSql + Sync> {
                match kind {
                    Kind::Int => Box::new(v.as_i64()),
                    Kind::Real => Box::new(v.as_f64()),
                    Kind::Text => Box::new(v.as_str().map(str::to_string)),
                }
            })
            .collect();
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        let sql = table.insert_sql(|i, kind| {
            let cast = match kind {
                Kind::Int => "bigint",
                Kind::Real => "double precision",
                Kind::Text => "text",
            };
            format!("${i}::{cast}")
        });
        self.tx
            .execute(&sql, &refs)
            .with_context(|| format!("importing a row into {}", table.name))?;
        Ok(())
    }

    fn rebuild_task_memory(&mut self) -> Result<()> {
        self.tx
            .execute(REBUILD_MEMORY_SQL, &[])
            .context("rebuilding the tasks' memory")?;
        Ok(())
    }

    fn is_empty(&mut self) -> Result<bool> {
        let row = self.tx.query_one(sql::IS_EMPTY, &[])?;
        Ok(col::<i64>(&row, 0)? == 0)
    }
}
