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

use anyhow::{anyhow, Context};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Error, Row, Statement};

use super::client::{Answer, Client, Request};
use crate::store::connection::{Arg, OwnedArg};

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

/// A transaction whose statements are prepared once per connection, and
/// whose requests that need no answer yet (its BEGIN, a change whose
/// outcome nothing before the commit depends on) wait to go out with the
/// next one that does (`client::pipeline`): one round trip for them all.
/// A transaction that sends nothing never begins.
pub struct CachedTx<'a> {
    client: &'a mut Client,
    statements: &'a mut Statements,
    /// The BEGIN not sent yet.
    begin: Option<&'static str>,
    /// Changes waiting for the next request, in order.
    deferred: Vec<Deferred>,
    /// BEGIN was sent and no COMMIT or ROLLBACK since.
    open: bool,
    /// BEGIN itself failed: nothing of the transaction ran on the server.
    not_begun: bool,
    /// A deferred guarded change found its row moved on. The server saw
    /// no error, so this stands for the abort it would have been: every
    /// later request of the transaction fails with it, and it never
    /// commits, even when a caller let the Conflict pass.
    conflicted: Option<String>,
}

/// A change sent with the next request.
struct Deferred {
    statement: Statement,
    args: Vec<OwnedArg>,
    /// What it does, for its error.
    doing: String,
    /// A guarded change: the Conflict to report when it changes no row.
    conflict: Option<String>,
}

type Params<'p> = [&'p (dyn ToSql + Sync)];

/// The last request of a send, after what waited.
enum Last<'l> {
    Query(&'l Statement, &'l Params<'l>),
    Execute(&'l Statement, &'l Params<'l>),
}

impl<'a> CachedTx<'a> {
    /// A transaction that `begin` (a BEGIN statement) will start.
    pub fn new(
        client: &'a mut Client,
        statements: &'a mut Statements,
        begin: &'static str,
    ) -> Self {
        CachedTx {
            client,
            statements,
            begin: Some(begin),
            deferred: Vec::new(),
            open: false,
            not_begun: false,
            conflicted: None,
        }
    }

    /// Whether BEGIN failed, so that the transaction may start over.
    pub fn not_begun(&self) -> bool {
        self.not_begun
    }

    fn statement(&mut self, sql: &str) -> Result<Statement, Error> {
        self.statement_as(sql, sql)
    }

    /// The statement for `sql`, kept under `key`. Preparing needs no
    /// transaction: it may come before BEGIN.
    fn statement_as(&mut self, key: &str, sql: &str) -> Result<Statement, Error> {
        if let Some(statement) = self.statements.by_text.get(key) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        if self.statements.by_text.len() >= CAPACITY {
            self.statements.by_text.clear();
        }
        self.statements
            .by_text
            .insert(key.to_string(), statement.clone());
        Ok(statement)
    }

    pub fn query(&mut self, sql: &str, params: &Params<'_>) -> anyhow::Result<Vec<Row>> {
        let statement = self.statement(sql)?;
        self.query_statement(&statement, params)
    }

    /// `sql` (a `FETCH`) whose columns are those of the cursor's query
    /// `declared`: prepared once per connection for each such query.
    pub fn query_over(
        &mut self,
        sql: &str,
        declared: &str,
        params: &Params<'_>,
    ) -> anyhow::Result<Vec<Row>> {
        let statement = self.statement_as(&format!("{sql}\n-- over: {declared}"), sql)?;
        self.query_statement(&statement, params)
    }

    fn query_statement(
        &mut self,
        statement: &Statement,
        params: &Params<'_>,
    ) -> anyhow::Result<Vec<Row>> {
        match self.send(&[Last::Query(statement, params)], false)?.pop() {
            Some(Answer::Rows(rows)) => Ok(rows),
            other => Err(anyhow!("a query answered {other:?}")),
        }
    }

    /// Two queries sent together; an error says which of them (0 or 1)
    /// failed, when it was one of them.
    pub fn query_two(
        &mut self,
        first: (&str, &Params<'_>),
        second: (&str, &Params<'_>),
    ) -> Result<[Vec<Row>; 2], (Option<usize>, anyhow::Error)> {
        let a = self.statement(first.0).map_err(|e| (Some(0), e.into()))?;
        let b = self.statement(second.0).map_err(|e| (Some(1), e.into()))?;
        let lasts = [Last::Query(&a, first.1), Last::Query(&b, second.1)];
        match self.send(&lasts, false) {
            Ok(answers) => match <[Answer; 2]>::try_from(answers) {
                Ok([Answer::Rows(a), Answer::Rows(b)]) => Ok([a, b]),
                other => Err((None, anyhow!("queries answered {other:?}"))),
            },
            Err(SendError::Last(index, e)) => Err((Some(index), e.into())),
            Err(SendError::Other(e)) => Err((None, e)),
        }
    }

    pub fn execute(&mut self, sql: &str, params: &Params<'_>) -> anyhow::Result<u64> {
        let statement = self.statement(sql)?;
        changed(self.send(&[Last::Execute(&statement, params)], false)?)
    }

    /// `sql` with `args` goes out with the next request. Its error, or
    /// its `conflict` when it changes no row, is that request's.
    pub fn defer(
        &mut self,
        sql: &str,
        args: Vec<OwnedArg>,
        doing: String,
        conflict: Option<String>,
    ) -> anyhow::Result<()> {
        let statement = self.statement(sql).with_context(|| doing.clone())?;
        self.deferred.push(Deferred {
            statement,
            args,
            doing,
            conflict,
        });
        Ok(())
    }

    /// `sql` as the transaction's last statement, COMMIT sent with it: one
    /// round trip. A transaction that ran nothing before it needs neither
    /// BEGIN nor COMMIT: `sql` alone is its own transaction.
    /// `doing` names it in its error, not in COMMIT's.
    pub fn execute_and_commit(
        &mut self,
        sql: &str,
        params: &Params<'_>,
        doing: &str,
    ) -> anyhow::Result<u64> {
        let statement = self.statement(sql).context(doing.to_string())?;
        match self.send(&[Last::Execute(&statement, params)], true) {
            Ok(answers) => changed(answers),
            Err(SendError::Last(_, e)) => Err(anyhow::Error::new(e).context(doing.to_string())),
            Err(SendError::Other(e)) => Err(e),
        }
    }

    /// What waits, then COMMIT (when the transaction began).
    pub fn commit(&mut self) -> anyhow::Result<()> {
        self.send(&[], true)?;
        Ok(())
    }

    /// Sends BEGIN if it has not gone out, the deferred changes, `last`
    /// and, if `commit`, COMMIT, together; returns the answers to `lasts`.
    ///
    /// A guarded change that changed no row has not failed on the server:
    /// a COMMIT sent with it would commit without it. So COMMIT waits for
    /// the answers when a guarded change goes out with it.
    fn send(&mut self, lasts: &[Last<'_>], commit: bool) -> Result<Vec<Answer>, SendError> {
        if let Some(conflict) = &self.conflicted {
            let e = crate::error::CmdError::conflict(conflict.clone());
            return Err(SendError::Other(e.into()));
        }
        let deferred = std::mem::take(&mut self.deferred);
        let begin = self.begin.take();
        // The lone statement of a transaction is a transaction of its own.
        let alone = begin.is_some() && deferred.is_empty() && lasts.len() == 1 && commit;
        if begin.is_some() && deferred.is_empty() && lasts.is_empty() {
            return Ok(Vec::new());
        }
        let begin = begin.filter(|_| !alone);
        let commit_after = commit && !alone && !deferred.iter().any(|d| d.conflict.is_some());
        let args: Vec<Vec<Arg<'_>>> = deferred
            .iter()
            .map(|d| d.args.iter().map(OwnedArg::as_arg).collect())
            .collect();
        let bound: Vec<Vec<&(dyn ToSql + Sync)>> = args
            .iter()
            .map(|args| args.iter().map(|a| a as &(dyn ToSql + Sync)).collect())
            .collect();
        let mut requests = Vec::with_capacity(deferred.len() + 3);
        requests.extend(begin.map(Request::Simple));
        for (d, params) in deferred.iter().zip(&bound) {
            requests.push(Request::Execute(&d.statement, params));
        }
        requests.extend(lasts.iter().map(|last| match *last {
            Last::Query(statement, params) => Request::Query(statement, params),
            Last::Execute(statement, params) => Request::Execute(statement, params),
        }));
        if commit_after {
            requests.push(Request::Simple("COMMIT"));
        }
        let sent = self.client.pipeline(&requests);
        if commit_after {
            // Whatever comes back, COMMIT ended the transaction (a failed
            // one is rolled back by it), or the connection ended.
            self.open = false;
        }
        let mut answers = match sent {
            Ok(answers) => answers.into_iter(),
            Err(e) => {
                // The connection ended: a transaction whose COMMIT went
                // out may have committed (the marker says), any other
                // did not.
                self.not_begun = begin.is_some() && !commit_after;
                return Err(SendError::Other(e.into()));
            }
        };
        if begin.is_some() {
            let begun = answers.next().expect("an answer to each request");
            self.not_begun = begun.is_err();
            self.open = begun.is_ok() && !commit_after;
            begun.map_err(|e| SendError::Other(e.into()))?;
        }
        for d in &deferred {
            match answers.next().expect("an answer to each request") {
                Err(e) => {
                    let e = anyhow::Error::new(e).context(d.doing.clone());
                    return Err(SendError::Other(e));
                }
                Ok(Answer::Changed(n)) if n != 1 => {
                    if let Some(conflict) = &d.conflict {
                        self.conflicted = Some(conflict.clone());
                        let e = crate::error::CmdError::conflict(conflict.clone());
                        return Err(SendError::Other(e.into()));
                    }
                }
                Ok(_) => {}
            }
        }
        let mut answered = Vec::with_capacity(lasts.len());
        for index in 0..lasts.len() {
            match answers.next().expect("an answer to each request") {
                Ok(answer) => answered.push(answer),
                Err(e) => return Err(SendError::Last(index, e)),
            }
        }
        if commit_after {
            let committed = answers.next().expect("an answer to each request");
            committed.map_err(|e| SendError::Other(anyhow::Error::new(e).context("committing")))?;
        } else if commit && !alone {
            self.open = false;
            let committed = self.client.batch_execute("COMMIT");
            committed.map_err(|e| SendError::Other(anyhow::Error::new(e).context("committing")))?;
        }
        Ok(answered)
    }
}

/// The rows the one change of a send changed.
fn changed(mut answers: Vec<Answer>) -> anyhow::Result<u64> {
    match answers.pop() {
        Some(Answer::Changed(n)) => Ok(n),
        other => Err(anyhow!("a change answered {other:?}")),
    }
}

/// Why a send failed: its last request (which the caller names), or
/// anything else, named already.
enum SendError {
    /// The request of `lasts` at this index failed.
    Last(usize, Error),
    Other(anyhow::Error),
}

impl From<SendError> for anyhow::Error {
    fn from(e: SendError) -> anyhow::Error {
        match e {
            SendError::Last(_, e) => e.into(),
            SendError::Other(e) => e,
        }
    }
}

impl Drop for CachedTx<'_> {
    /// A transaction left open (an error on the way) is rolled back here,
    /// as `postgres`'s transactions were when dropped.
    fn drop(&mut self) {
        if self.open {
            let _ = self.client.batch_execute("ROLLBACK");
        }
    }
}
