//! PostgreSQL's side of `store::connection`: arguments bound as the type
//! the server inferred for each parameter, rows read by their columns'
//! types, statements prepared once per connection (`statements.rs`).

use std::error::Error;

use anyhow::{anyhow, Context, Result};
use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type};

use super::PgTx;
use crate::store::connection::{
    Arg, Cell, Connection, Dialect, EachRow, LaterInsert, OwnedArg, Row,
};

/// Rows one deferred INSERT sends at most (7 arguments a row for an event:
/// well under the protocol's 65,535 parameters).
const LATER_ROWS_PER_STATEMENT: usize = 256;

impl PgTx<'_, '_> {
    /// Sends the rows `insert_later` holds, each kind's in as few
    /// statements as it can, in the order they were inserted.
    pub(super) fn send_later(&mut self) -> Result<()> {
        let later = std::mem::take(&mut self.later);
        let mut rest = later.as_slice();
        while let Some((insert, _)) = rest.first() {
            let same = rest
                .iter()
                .take(LATER_ROWS_PER_STATEMENT)
                .take_while(|(other, _)| std::ptr::eq(*other, *insert))
                .count();
            let (rows, after) = rest.split_at(same);
            let args: Vec<Arg<'_>> = rows
                .iter()
                .flat_map(|(_, row)| row.iter().map(OwnedArg::as_arg))
                .collect();
            self.tx
                .execute(&insert.statement(rows.len()), &bound(&args))
                .with_context(|| format!("writing to {}", insert.table))?;
            rest = after;
        }
        Ok(())
    }

    /// Sends the rows held when `sql` names one of their tables: a
    /// statement sees every row inserted before it.
    fn send_later_for(&mut self, sql: &str) -> Result<()> {
        if self
            .later
            .iter()
            .any(|(insert, _)| sql.contains(insert.table))
        {
            self.send_later()?;
        }
        Ok(())
    }
}

impl ToSql for Arg<'_> {
    /// The server decides each parameter's type from the statement (a
    /// column compared, a cast); an argument is encoded as that type when
    /// it can be without loss, and is an error otherwise.
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match *self {
            Arg::Null => Ok(IsNull::Yes),
            Arg::Int(v) => match *ty {
                Type::INT8 => v.to_sql(ty, out),
                Type::INT4 => i32::try_from(v)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(v)?.to_sql(ty, out),
                Type::FLOAT8 => (v as f64).to_sql(ty, out),
                Type::BOOL => (v != 0).to_sql(ty, out),
                _ => Err(format!("an integer passed where the server expects {ty}").into()),
            },
            Arg::Real(v) => match *ty {
                Type::FLOAT8 => v.to_sql(ty, out),
                Type::FLOAT4 => (v as f32).to_sql(ty, out),
                _ => Err(format!("a number passed where the server expects {ty}").into()),
            },
            Arg::Text(s) => s.to_sql(ty, out),
            Arg::Bool(b) => match *ty {
                Type::BOOL => b.to_sql(ty, out),
                Type::INT8 => i64::from(b).to_sql(ty, out),
                Type::INT4 => i32::from(b).to_sql(ty, out),
                _ => Err(format!("a truth value passed where the server expects {ty}").into()),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        // Every type: `to_sql` refuses what it cannot encode.
        true
    }

    postgres::types::to_sql_checked!();
}

/// The arguments as the driver takes them.
fn bound<'a>(args: &'a [Arg<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    args.iter().map(|a| a as &(dyn ToSql + Sync)).collect()
}

/// A row as the operations read it.
pub(super) fn row_of(row: &postgres::Row) -> Result<Row> {
    let mut cells = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let ty = column.type_();
        let cell = match *ty {
            Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Cell::Int),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(i)?
                .map(|v| Cell::Int(v.into())),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(i)?
                .map(|v| Cell::Int(v.into())),
            Type::BOOL => row
                .try_get::<_, Option<bool>>(i)?
                .map(|v| Cell::Int(v.into())),
            Type::FLOAT8 => row.try_get::<_, Option<f64>>(i)?.map(Cell::Real),
            Type::FLOAT4 => row
                .try_get::<_, Option<f32>>(i)?
                .map(|v| Cell::Real(v.into())),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                row.try_get::<_, Option<String>>(i)?.map(Cell::Text)
            }
            _ => {
                return Err(anyhow!(
                    "reading column {i}: type {ty} is not read (cast it to text or bigint)"
                ))
            }
        };
        cells.push(cell.unwrap_or(Cell::Null));
    }
    Ok(Row::new(cells))
}

impl Connection for PgTx<'_, '_> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64> {
        self.send_later_for(sql)?;
        Ok(self.tx.execute(sql, &bound(args))?)
    }

    fn insert_later(&mut self, insert: &'static LaterInsert, args: &[Arg<'_>]) -> Result<()> {
        self.later
            .push((insert, args.iter().map(OwnedArg::of).collect()));
        Ok(())
    }

    fn query(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>> {
        self.send_later_for(sql)?;
        self.tx
            .query(sql, &bound(args))?
            .iter()
            .map(row_of)
            .collect()
    }

    fn each_row(&mut self, sql: &str, args: &[Arg<'_>], each: &mut EachRow<'_>) -> Result<()> {
        self.send_later_for(sql)?;
        self.each_pg_row(sql, &bound(args), &mut |tx, row| {
            let row = row_of(row).context("reading a row")?;
            each(tx, &row)
        })
    }
}
