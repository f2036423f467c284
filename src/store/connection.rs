//! The one face both drivers show the store's operations: run a statement,
//! read its rows, walk many rows a page at a time, and say which dialect
//! the statement must be spelled in.
//!
//! Every store operation (`store/ops/`) is written once over `Connection`.
//! A statement is written with PostgreSQL's numbered parameters (`$1`,
//! `$2`…); SQLite's side renumbers them (`?1`, `?2`…). Where the two
//! servers truly differ (`FOR UPDATE SKIP LOCKED` against a file-wide
//! write lock, advisory locks, `json_each` against `jsonb`), the operation
//! asks `dialect()` and the difference stays one `match` beside the rest of
//! the operation, so that the guard, the message and the decoding around
//! it are never written twice. Arguments and rows are plain values (`Arg`,
//! `Row`), so neither driver's types leave its own folder.

use std::ops::ControlFlow;

use anyhow::{anyhow, Context, Result};

use super::Tx;

/// Which server a statement is spelled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// One file; every write transaction holds the whole file
    /// (`BEGIN IMMEDIATE`), so no row is ever locked by another writer.
    Sqlite,
    /// A server shared by several hosts at READ COMMITTED: rows are locked
    /// one by one, and a claim skips those another session holds.
    Postgres,
}

impl Dialect {
    /// `sqlite` or `postgres`, whichever this dialect is: the one place an
    /// operation's two spellings of a statement meet.
    pub fn pick<'s>(self, sqlite: &'s str, postgres: &'s str) -> &'s str {
        match self {
            Dialect::Sqlite => sqlite,
            Dialect::Postgres => postgres,
        }
    }
}

/// An INSERT of one row whose rows may be sent to the server together
/// (`Connection::insert_later`): `INSERT INTO {table} ({column_names})
/// VALUES (…) {then}`, an argument a column.
#[derive(Debug)]
pub struct LaterInsert {
    /// The table, as statements that must see the rows name it.
    pub table: &'static str,
    /// `column, …`: the columns each row gives, in order.
    pub column_names: &'static str,
    /// What follows the `VALUES` list: an `ON CONFLICT` clause, or nothing.
    pub then: &'static str,
    /// The column (0-based) by which reads select this table's rows, for
    /// `Connection::query_only`; None when reads select them otherwise.
    pub read_by: Option<usize>,
    /// How many leading columns are the row's conflict key (0: rows never
    /// meet). One statement may not change a row twice, so a row whose key
    /// a held row has is not held beside it: the held rows are sent first.
    pub key_columns: usize,
}

/// A table a statement reads the rows of one key of (`query_only`).
#[derive(Debug, Clone, Copy)]
pub struct Only<'a> {
    pub table: &'static str,
    pub key: &'a str,
}

impl LaterInsert {
    /// Whether a statement naming this table, which reads the tables of
    /// `only` by one key each, must see `row`.
    pub fn seen_by(&self, row: &[OwnedArg], only: &[Only<'_>]) -> bool {
        let key = only.iter().find(|o| o.table == self.table).map(|o| o.key);
        match (key, self.read_by) {
            (Some(key), Some(column)) => {
                matches!(&row[column], OwnedArg::Text(held) if held == key)
            }
            _ => true,
        }
    }

    /// Arguments a row.
    pub fn columns(&self) -> usize {
        self.column_names.split(',').count()
    }

    /// The statement inserting `rows` rows.
    pub fn statement(&self, rows: usize) -> String {
        self.statement_from(rows, 0)
    }

    /// The statement inserting `rows` rows whose placeholders follow the
    /// `before` a statement it is part of has already numbered.
    pub fn statement_from(&self, rows: usize, before: usize) -> String {
        let columns = self.columns();
        let values = (0..rows)
            .map(|r| {
                let first = before + r * columns + 1;
                let row: Vec<String> = (first..first + columns).map(|n| format!("${n}")).collect();
                format!("({})", row.join(", "))
            })
            .collect::<Vec<_>>()
            .join(", ");
        let (table, names, then) = (self.table, self.column_names, self.then);
        format!("INSERT INTO {table} ({names}) VALUES {values}{then}")
    }

    /// Whether two rows of this insert are the same row.
    pub fn same_row(&self, a: &[OwnedArg], b: &[OwnedArg]) -> bool {
        self.key_columns > 0 && a[..self.key_columns] == b[..self.key_columns]
    }
}

/// The rows of a `VALUES` list taking `columns` arguments a row, in order
/// (`($1, $2), ($3, $4)`): `cell` writes each from its column (1-based)
/// and its placeholder, so a column may be cast.
pub fn values_rows(rows: usize, columns: usize, cell: impl Fn(usize, String) -> String) -> String {
    let each: Vec<String> = (0..rows)
        .map(|r| {
            let row: Vec<String> = (1..=columns)
                .map(|c| cell(c, format!("${}", r * columns + c)))
                .collect();
            format!("({})", row.join(", "))
        })
        .collect();
    each.join(", ")
}

/// An `Arg` that owns its text, kept until a deferred statement is sent.
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedArg {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Bool(bool),
}

impl OwnedArg {
    pub fn of(arg: &Arg<'_>) -> OwnedArg {
        match *arg {
            Arg::Null => OwnedArg::Null,
            Arg::Int(v) => OwnedArg::Int(v),
            Arg::Real(v) => OwnedArg::Real(v),
            Arg::Text(t) => OwnedArg::Text(t.to_string()),
            Arg::Bool(b) => OwnedArg::Bool(b),
        }
    }

    pub fn as_arg(&self) -> Arg<'_> {
        match self {
            OwnedArg::Null => Arg::Null,
            OwnedArg::Int(v) => Arg::Int(*v),
            OwnedArg::Real(v) => Arg::Real(*v),
            OwnedArg::Text(t) => Arg::Text(t),
            OwnedArg::Bool(b) => Arg::Bool(*b),
        }
    }
}

/// One argument of a statement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'a str),
    Bool(bool),
}

/// `From` for the plain values an `Arg` is made of, by value and by
/// reference: `arg_from!(type => Variant(how))`.
macro_rules! arg_from {
    ($($ty:ty => $variant:ident($convert:expr)),* $(,)?) => {$(
        impl From<$ty> for Arg<'_> {
            fn from(v: $ty) -> Self {
                Arg::$variant($convert(v))
            }
        }
    )*};
}

arg_from! {
    i64 => Int(|v| v),
    &i64 => Int(|v: &i64| *v),
    i32 => Int(i64::from),
    u32 => Int(i64::from),
    f64 => Real(|v| v),
    &f64 => Real(|v: &f64| *v),
    bool => Bool(|v| v),
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(v)
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Arg::Text(v)
    }
}

impl<'a> From<&'a &'a str> for Arg<'a> {
    fn from(v: &'a &'a str) -> Self {
        Arg::Text(v)
    }
}

impl<'a, T> From<Option<T>> for Arg<'a>
where
    T: Into<Arg<'a>>,
{
    fn from(v: Option<T>) -> Self {
        v.map_or(Arg::Null, Into::into)
    }
}

impl<'a> From<&'a Option<String>> for Arg<'a> {
    fn from(v: &'a Option<String>) -> Self {
        v.as_deref().map_or(Arg::Null, Arg::Text)
    }
}

impl From<&Option<i64>> for Arg<'_> {
    fn from(v: &Option<i64>) -> Self {
        v.map_or(Arg::Null, Arg::Int)
    }
}

impl From<&Option<f64>> for Arg<'_> {
    fn from(v: &Option<f64>) -> Self {
        v.map_or(Arg::Null, Arg::Real)
    }
}

/// The arguments of a statement, each turned into an `Arg`:
/// `args![task_id, now, reason]`.
macro_rules! args {
    ($($value:expr),* $(,)?) => {
        &[$($crate::store::connection::Arg::from($value)),*][..]
    };
}
pub(crate) use args;

/// One value of a row, as either driver read it.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

/// One row a statement returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    cells: Vec<Cell>,
}

impl Row {
    pub fn new(cells: Vec<Cell>) -> Row {
        Row { cells }
    }

    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// Column `i` as a `T`; a cell of another type (or a missing column)
    /// is an error naming the column, never a panic.
    pub fn get<T: FromCell>(&self, i: usize) -> Result<T> {
        let cell = self
            .cells
            .get(i)
            .ok_or_else(|| anyhow!("reading column {i}: the row has {}", self.cells.len()))?;
        T::from_cell(cell).with_context(|| format!("reading column {i}"))
    }
}

/// A Rust value a cell can be read as.
pub trait FromCell: Sized {
    fn from_cell(cell: &Cell) -> Result<Self>;
}

impl FromCell for i64 {
    fn from_cell(cell: &Cell) -> Result<Self> {
        match cell {
            Cell::Int(v) => Ok(*v),
            other => Err(anyhow!("expected an integer, found {other:?}")),
        }
    }
}

impl FromCell for f64 {
    fn from_cell(cell: &Cell) -> Result<Self> {
        match cell {
            Cell::Real(v) => Ok(*v),
            // SQLite keeps a whole REAL as an integer when it can.
            Cell::Int(v) => Ok(*v as f64),
            other => Err(anyhow!("expected a number, found {other:?}")),
        }
    }
}

impl FromCell for bool {
    fn from_cell(cell: &Cell) -> Result<Self> {
        match cell {
            Cell::Int(v) => Ok(*v != 0),
            other => Err(anyhow!("expected a truth value, found {other:?}")),
        }
    }
}

impl FromCell for String {
    fn from_cell(cell: &Cell) -> Result<Self> {
        match cell {
            Cell::Text(v) => Ok(v.clone()),
            other => Err(anyhow!("expected text, found {other:?}")),
        }
    }
}

impl<T: FromCell> FromCell for Option<T> {
    fn from_cell(cell: &Cell) -> Result<Self> {
        match cell {
            Cell::Null => Ok(None),
            other => T::from_cell(other).map(Some),
        }
    }
}

/// What `each_row` calls per row, with the transaction for the row's own
/// statements; `Break` ends the walk there.
pub type EachRow<'e> = dyn FnMut(&mut dyn Tx, &Row) -> Result<ControlFlow<()>> + 'e;

/// One read of `query_two`.
pub struct Read<'a> {
    pub sql: &'a str,
    pub args: &'a [Arg<'a>],
    /// What it is for, in its error.
    pub doing: &'static str,
}

/// A transaction on either server, as the store's operations use it.
pub trait Connection {
    /// How statements must be spelled here.
    fn dialect(&self) -> Dialect;

    /// Runs `sql` (with `$n` parameters); the number of rows it changed.
    fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64>;

    /// Runs `sql` and returns every row.
    fn query(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>>;

    /// Hands `each` the rows of `sql` as they are read (a page at a time
    /// on PostgreSQL, a step at a time on SQLite), with the transaction for
    /// the row's own statements in between: memory holds a page however
    /// many rows match.
    fn each_row(&mut self, sql: &str, args: &[Arg<'_>], each: &mut EachRow<'_>) -> Result<()>;

    /// `query` of a statement that reads each `only` table's rows of one
    /// key alone (`WHERE run_id = $1`): rows held for other keys of those
    /// tables need not be written before it (`LaterInsert::read_by`).
    fn query_only(&mut self, sql: &str, args: &[Arg<'_>], only: &[Only<'_>]) -> Result<Vec<Row>> {
        let _ = only;
        self.query(sql, args)
    }

    /// Inserts one row of `insert`, now or with the next rows held: the
    /// row is written before any later statement that names its table
    /// runs (`query_only` aside), and before the transaction commits.
    /// PostgreSQL sends such rows together (one statement for what a
    /// transaction held, with its commit marker); SQLite, a library call
    /// away, inserts at once.
    fn insert_later(&mut self, insert: &'static LaterInsert, args: &[Arg<'_>]) -> Result<()> {
        self.execute(&insert.statement(1), args).map(|_| ())
    }

    /// Two reads that do not wait on each other: PostgreSQL sends them
    /// together (one round trip); SQLite reads one, then the other.
    fn query_two(&mut self, first: Read<'_>, second: Read<'_>) -> Result<[Vec<Row>; 2]> {
        let a = self.query(first.sql, first.args).context(first.doing)?;
        let b = self.query(second.sql, second.args).context(second.doing)?;
        Ok([a, b])
    }

    /// `guarded` for a change whose outcome nothing later in the
    /// transaction waits on: PostgreSQL sends it with the transaction's
    /// next statement or its commit (one round trip fewer), and a
    /// conflict there is that statement's error, the transaction rolled
    /// back all the same; SQLite runs it at once.
    fn guarded_later(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
        doing: &'static str,
        conflict: String,
    ) -> Result<()>
    where
        Self: Sized,
    {
        self.guarded(sql, args, doing, || conflict)
    }

    /// The first row of `sql`, if any.
    fn query_opt(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Option<Row>> {
        Ok(self.query(sql, args)?.into_iter().next())
    }

    /// The one row `sql` must return.
    fn query_one(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Row> {
        self.query_opt(sql, args)?
            .ok_or_else(|| anyhow!("the statement returned no row"))
    }

    /// Column 0 of the one row `sql` returns.
    fn value<T: FromCell>(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<T>
    where
        Self: Sized,
    {
        self.query_one(sql, args)?.get(0)
    }

    /// Serializes this write transaction, until it ends, with every other
    /// one that holds `name`. SQLite's write transactions are serial
    /// already (each is IMMEDIATE: it holds the one write lock); PostgreSQL
    /// takes a transaction-scoped advisory lock on the name's hash,
    /// released at commit or rollback.
    fn hold_until_end(&mut self, name: &str) -> Result<()> {
        if self.dialect() == Dialect::Postgres {
            self.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                args![name],
            )?;
        }
        Ok(())
    }

    /// Runs a guarded change: exactly one row must match, else a Conflict
    /// saying `conflict` (someone else changed the row first). `doing`
    /// names the statement for a driver's error only; the Conflict stands
    /// alone, so its line says what moved and nothing else.
    fn guarded(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
        doing: &'static str,
        conflict: impl FnOnce() -> String,
    ) -> Result<()>
    where
        Self: Sized,
    {
        let changed = self.execute(sql, args).context(doing)?;
        expect_one(changed, conflict)
    }
}

/// Turns "no row matched the guard" into a Conflict with `message`.
pub fn expect_one(changed: u64, message: impl FnOnce() -> String) -> Result<()> {
    if changed == 1 {
        Ok(())
    } else {
        Err(crate::error::CmdError::conflict(message()).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_values_list_numbers_its_placeholders_row_after_row() {
        assert_eq!(values_rows(2, 2, |_, arg| arg), "($1, $2), ($3, $4)");
        let cast = |column, arg| match column {
            1 => arg,
            _ => format!("CAST({arg} AS BIGINT)"),
        };
        assert_eq!(
            values_rows(2, 2, cast),
            "($1, CAST($2 AS BIGINT)), ($3, CAST($4 AS BIGINT))"
        );
        assert_eq!(values_rows(0, 3, |_, arg| arg), "");
    }

    #[test]
    fn a_cell_of_another_type_is_an_error_naming_its_column() {
        let row = Row::new(vec![Cell::Text("x".into()), Cell::Null]);
        let err = row.get::<i64>(0).unwrap_err();
        assert!(format!("{err:#}").contains("column 0"), "{err:#}");
        assert_eq!(row.get::<Option<i64>>(1).unwrap(), None);
        assert!(row.get::<String>(2).is_err());
    }

    #[test]
    fn arguments_take_options_references_and_numbers() {
        let name = String::from("n");
        let none: Option<&str> = None;
        let args = args![&name, none, 3u32, Some(4i64), 0.5, true];
        assert_eq!(
            args,
            &[
                Arg::Text("n"),
                Arg::Null,
                Arg::Int(3),
                Arg::Int(4),
                Arg::Real(0.5),
                Arg::Bool(true)
            ]
        );
    }
}
