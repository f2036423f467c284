//! PostgreSQL's side of `store::connection`: arguments bound as the type
//! the server inferred for each parameter, rows read by their columns'
//! types, statements prepared once per connection (`statements.rs`).

use std::error::Error;

use anyhow::{anyhow, Context, Result};
use bytes::BytesMut;
use tokio_postgres::types::{IsNull, ToSql, Type};

use super::{Held, PgTx};
use crate::store::connection::{
    Arg, Cell, Connection, Dialect, EachRow, LaterInsert, Only, OwnedArg, Read, Row,
};

/// Parameters one statement may bind (the protocol counts them in 16 bits).
const MOST_PARAMETERS: usize = 65_535;

/// Rows one deferred INSERT sends at most when the held rows do not fit in
/// one statement (7 arguments a row for an event).
const LATER_ROWS_PER_STATEMENT: usize = 256;

impl PgTx<'_> {
    /// Writes the rows `insert_later` holds in one statement, which goes
    /// out with the transaction's next one (`CachedTx::defer`): each
    /// table's rows are one INSERT, in a data-modifying `WITH` before the
    /// last (however many tables a transaction's held rows go to; foreign
    /// keys are checked when the whole statement ends). Rows of a table
    /// keep their order. Held rows too many for one statement's parameters
    /// go now, in the order they were held, a table's run at a time.
    pub(super) fn send_later(&mut self) -> Result<()> {
        let later = std::mem::take(&mut self.later);
        if !fits(&later, 0) {
            return self.send_later_in_runs(&later);
        }
        let Some(held) = HeldStatement::of(later, None) else {
            return Ok(());
        };
        self.tx.defer(&held.sql, held.args, held.what, None)
    }

    /// The held rows and the commit `marker` in one statement, and COMMIT
    /// sent with it: the end of every write transaction, one round trip.
    /// When the connection is lost here, whether it committed is the
    /// marker's to say.
    pub(super) fn send_later_and_commit(&mut self, marker: &str) -> Result<()> {
        let mut later = std::mem::take(&mut self.later);
        if !fits(&later, 1) {
            self.send_later_in_runs(&later)?;
            later.clear();
        }
        let held = HeldStatement::of(later, Some(marker)).expect("a marker is a statement");
        let args: Vec<Arg<'_>> = held.args.iter().map(OwnedArg::as_arg).collect();
        self.tx
            .execute_and_commit(&held.sql, &bound(&args), &held.what)?;
        Ok(())
    }

    /// `held` in the order it was held, each run of one table's rows in as
    /// few statements as it can.
    fn send_later_in_runs(&mut self, held: &[Held]) -> Result<()> {
        let mut rest = held;
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
        self.send_later_for_only(sql, &[])
    }

    /// `send_later_for` of a statement that reads the tables of `only` by
    /// one key each: rows held for other keys may wait.
    fn send_later_for_only(&mut self, sql: &str, only: &[Only<'_>]) -> Result<()> {
        if self
            .later
            .iter()
            .any(|(insert, row)| sql.contains(insert.table) && insert.seen_by(row, only))
        {
            self.send_later()?;
        }
        Ok(())
    }
}

/// Whether `held` and `more` parameters fit in one statement.
fn fits(held: &[Held], more: usize) -> bool {
    let parameters: usize = held.iter().map(|(insert, _)| insert.columns()).sum();
    parameters + more <= MOST_PARAMETERS
}

/// Held rows, and a commit marker, as one statement (see `send_later`).
struct HeldStatement {
    sql: String,
    /// Each table's rows in turn, then the marker.
    args: Vec<OwnedArg>,
    /// What it does, for its error.
    what: String,
}

impl HeldStatement {
    /// None when there is nothing to send.
    fn of(held: Vec<Held>, marker: Option<&str>) -> Option<HeldStatement> {
        let mut tables: Vec<(&'static LaterInsert, Vec<Vec<OwnedArg>>)> = Vec::new();
        for (insert, row) in held {
            match tables.iter_mut().find(|(t, _)| std::ptr::eq(*t, insert)) {
                Some((_, rows)) => rows.push(row),
                None => tables.push((insert, vec![row])),
            }
        }
        let mut parts = Vec::with_capacity(tables.len() + 1);
        let mut numbered = 0;
        for (insert, rows) in &tables {
            parts.push(insert.statement_from(rows.len(), numbered));
            numbered += rows.len() * insert.columns();
        }
        if marker.is_some() {
            parts.push(format!("{}(${})", super::commit::MARK_INTO, numbered + 1));
        }
        let last = parts.pop()?;
        let sql = match parts.is_empty() {
            true => last,
            false => {
                let with: Vec<String> = parts
                    .iter()
                    .enumerate()
                    .map(|(i, part)| format!("held{i} AS ({part})"))
                    .collect();
                format!("WITH {} {last}", with.join(", "))
            }
        };
        let names = tables.iter().map(|(insert, _)| insert.table);
        let names = names.collect::<Vec<_>>().join(", ");
        let mut args: Vec<OwnedArg> = tables
            .into_iter()
            .flat_map(|(_, rows)| rows)
            .flatten()
            .collect();
        args.extend(marker.map(|m| OwnedArg::Text(m.to_string())));
        let what = match (marker, names.is_empty()) {
            (None, _) => format!("writing to {names}"),
            (Some(_), true) => "marking the commit".to_string(),
            (Some(_), false) => format!("writing to {names} and marking the commit"),
        };
        Some(HeldStatement { sql, args, what })
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

    tokio_postgres::types::to_sql_checked!();
}

/// The arguments as the driver takes them.
fn bound<'a>(args: &'a [Arg<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    args.iter().map(|a| a as &(dyn ToSql + Sync)).collect()
}

/// A row as the operations read it.
pub(super) fn row_of(row: &tokio_postgres::Row) -> Result<Row> {
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

impl Connection for PgTx<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64> {
        self.send_later_for(sql)?;
        self.tx.execute(sql, &bound(args))
    }

    fn query_two(&mut self, first: Read<'_>, second: Read<'_>) -> Result<[Vec<Row>; 2]> {
        self.send_later_for(first.sql)?;
        self.send_later_for(second.sql)?;
        let doing = [first.doing, second.doing];
        let (a, b) = (bound(first.args), bound(second.args));
        let [a, b] = self
            .tx
            .query_two((first.sql, &a), (second.sql, &b))
            .map_err(|(index, e)| match index {
                Some(index) => e.context(doing[index]),
                None => e,
            })?;
        let rows = |found: Vec<tokio_postgres::Row>| {
            found.iter().map(row_of).collect::<Result<Vec<Row>>>()
        };
        Ok([rows(a)?, rows(b)?])
    }

    fn guarded_later(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
        doing: &'static str,
        conflict: String,
    ) -> Result<()> {
        self.send_later_for(sql)?;
        let args = args.iter().map(OwnedArg::of).collect();
        self.tx.defer(sql, args, doing.to_string(), Some(conflict))
    }

    fn insert_later(&mut self, insert: &'static LaterInsert, args: &[Arg<'_>]) -> Result<()> {
        let row: Vec<OwnedArg> = args.iter().map(OwnedArg::of).collect();
        if self
            .later
            .iter()
            .any(|(held, other)| std::ptr::eq(*held, insert) && insert.same_row(other, &row))
        {
            self.send_later()?;
        }
        self.later.push((insert, row));
        Ok(())
    }

    fn query(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>> {
        self.query_only(sql, args, &[])
    }

    fn query_only(&mut self, sql: &str, args: &[Arg<'_>], only: &[Only<'_>]) -> Result<Vec<Row>> {
        self.send_later_for_only(sql, only)?;
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
