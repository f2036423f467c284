//! Each statement text parsed once per connection.
//!
//! `postgres`'s `query(&str, …)` prepares the text on every call: a Parse
//! round trip before the Bind/Execute one, so every statement of a
//! transaction cost two round trips to the server. A tick runs a few fixed
//! texts over and over on one connection (claim, outcome, delivery), so the
//! prepared statements are kept by text for the life of the connection and
//! each statement after the first costs one round trip.
//!
//! A statement's result columns are fixed when it is prepared. For most
//! texts they follow from the text; a `FETCH` from a cursor takes them from
//! the query the cursor was declared for, so the same `FETCH` text over
//! another query is another statement: it is kept under its text and that
//! query (`query_over`), never reused for a cursor of another shape.

use std::collections::HashMap;

use postgres::types::ToSql;
use postgres::{Error, Row, Statement, Transaction};

/// Texts kept per connection at most. The store's statements are a fixed
/// set, but a few are assembled at run time (filters); past this many the
/// cache starts over rather than grow.
const CAPACITY: usize = 512;

/// Prepared statements of one connection, by text. Prepared statements
/// belong to the server session, not to a transaction: they survive
/// commits and rollbacks, and are forgotten with the connection.
#[derive(Default)]
pub struct Statements {
    by_text: HashMap<String, Statement>,
}

impl Statements {
    /// Forgets every statement: the connection they belonged to is gone.
    pub fn clear(&mut self) {
        self.by_text.clear();
    }
}

/// A transaction whose statements are prepared once per connection; the
/// same calls as `postgres::Transaction` for what the store uses.
pub struct CachedTx<'a, 'b> {
    tx: &'a mut Transaction<'b>,
    statements: &'a mut Statements,
}

type Params<'p> = [&'p (dyn ToSql + Sync)];

impl<'a, 'b> CachedTx<'a, 'b> {
    pub fn new(tx: &'a mut Transaction<'b>, statements: &'a mut Statements) -> Self {
        CachedTx { tx, statements }
    }

    fn statement(&mut self, sql: &str) -> Result<Statement, Error> {
        self.statement_as(sql, sql)
    }

    /// The statement for `sql`, kept under `key`.
    fn statement_as(&mut self, key: &str, sql: &str) -> Result<Statement, Error> {
        if let Some(statement) = self.statements.by_text.get(key) {
            return Ok(statement.clone());
        }
        let statement = self.tx.prepare(sql)?;
        if self.statements.by_text.len() >= CAPACITY {
            self.statements.by_text.clear();
        }
        self.statements
            .by_text
            .insert(key.to_string(), statement.clone());
        Ok(statement)
    }

    pub fn query(&mut self, sql: &str, params: &Params<'_>) -> Result<Vec<Row>, Error> {
        let statement = self.statement(sql)?;
        self.tx.query(&statement, params)
    }

    /// `sql` (a `FETCH`) whose columns are those of the cursor's query
    /// `declared`: prepared once per connection for each such query.
    pub fn query_over(
        &mut self,
        sql: &str,
        declared: &str,
        params: &Params<'_>,
    ) -> Result<Vec<Row>, Error> {
        let statement = self.statement_as(&format!("{sql}\n-- over: {declared}"), sql)?;
        self.tx.query(&statement, params)
    }

    pub fn execute(&mut self, sql: &str, params: &Params<'_>) -> Result<u64, Error> {
        let statement = self.statement(sql)?;
        self.tx.execute(&statement, params)
    }
}
