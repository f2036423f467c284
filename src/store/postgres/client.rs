//! A blocking PostgreSQL connection that can pipeline: send several
//! requests before reading the answer to the first (`pipeline`).
//!
//! The `postgres` crate runs `tokio-postgres` one request at a time, so a
//! transaction's BEGIN and COMMIT each cost a round trip of their own: a
//! lone claim or outcome was five round trips where its statements were
//! three. With `pipeline`, `statements::CachedTx` sends BEGIN with the
//! transaction's first statement, COMMIT with its last, and what needs no
//! answer yet with the next statement that does. The server runs them in
//! order, as if each had waited for the one before; only the waiting
//! between them is gone.
//!
//! Like `postgres`, the connection is driven on a one-thread runtime only
//! while a call waits, and an error the connection itself reports (the
//! server's FATAL message when it ends the session) is that call's error.

use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::task::Poll;

use anyhow::Context as _;
use tokio::runtime::Runtime;
use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::types::ToSql;
use tokio_postgres::{
    Config, Error, NoTls, Row, SimpleQueryMessage, Socket, Statement, ToStatement,
};

type Params<'p> = [&'p (dyn ToSql + Sync)];

/// How long closing the session may wait for the server.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The socket's side: reads answers and what the server sends unasked
/// (notices, the end of the session), writes requests.
type Driver = tokio_postgres::Connection<Socket, NoTlsStream>;

pub struct Client {
    runtime: Runtime,
    driver: Driver,
    /// None only while dropping, after the requests' side was closed.
    client: Option<tokio_postgres::Client>,
    /// Calls that waited for the server: round trips, counted for tests.
    #[cfg(test)]
    pub round_trips: u64,
}

impl Client {
    /// Connects; a refusal is the driver's `Error` inside the returned one.
    pub fn connect(config: &Config) -> anyhow::Result<Client> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .context("starting the PostgreSQL client")?;
        let (client, driver) = runtime.block_on(config.connect(NoTls))?;
        Ok(Client {
            runtime,
            driver,
            client: Some(client),
            #[cfg(test)]
            round_trips: 0,
        })
    }

    /// Runs `future` to its end, driving the connection meanwhile. Notices
    /// are dropped: the store reads what it needs from results.
    fn block_on<T>(
        runtime: &Runtime,
        driver: &mut Driver,
        future: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        let mut future = pin!(future);
        runtime.block_on(poll_fn(|cx| {
            loop {
                match driver.poll_message(cx) {
                    Poll::Ready(Some(Ok(_))) => continue,
                    Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                    Poll::Ready(None) | Poll::Pending => break,
                }
            }
            future.as_mut().poll(cx)
        }))
    }

    /// Runs a future of the client's requests (see `block_on`).
    fn wait<'s, T, F>(
        &'s mut self,
        request: impl FnOnce(&'s tokio_postgres::Client) -> F,
    ) -> Result<T, Error>
    where
        F: Future<Output = Result<T, Error>>,
    {
        #[cfg(test)]
        {
            self.round_trips += 1;
        }
        let Client {
            runtime,
            driver,
            client,
            ..
        } = self;
        let client = client
            .as_ref()
            .expect("the client is closed only when dropped");
        Self::block_on(runtime, driver, request(client))
    }

    /// Reads whatever the server sent while the connection sat idle, so
    /// that a session it ended since is seen closed before it is used.
    pub fn notice_closing(&mut self) {
        // One turn of the runtime's poll of its sockets: until it has run,
        // a socket read to its end once reads as empty, whatever arrived.
        let turn = async {
            tokio::task::yield_now().await;
            Ok::<(), Error>(())
        };
        let _ = Self::block_on(&self.runtime, &mut self.driver, turn);
    }

    pub fn is_closed(&self) -> bool {
        self.client
            .as_ref()
            .is_none_or(tokio_postgres::Client::is_closed)
    }

    pub fn prepare(&mut self, sql: &str) -> Result<Statement, Error> {
        self.wait(|c| c.prepare(sql))
    }

    pub fn query_one<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &Params<'_>,
    ) -> Result<Row, Error> {
        self.wait(|c| c.query_one(statement, params))
    }

    pub fn query_opt<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &Params<'_>,
    ) -> Result<Option<Row>, Error> {
        self.wait(|c| c.query_opt(statement, params))
    }

    pub fn execute<T: ?Sized + ToStatement>(
        &mut self,
        statement: &T,
        params: &Params<'_>,
    ) -> Result<u64, Error> {
        self.wait(|c| c.execute(statement, params))
    }

    pub fn simple_query(&mut self, sql: &str) -> Result<Vec<SimpleQueryMessage>, Error> {
        self.wait(|c| c.simple_query(sql))
    }

    pub fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.wait(|c| c.batch_execute(sql))
    }

    /// Sends `requests` together and reads their answers in order: one
    /// round trip. The server runs them one after another, as if each had
    /// waited for the one before; a request after a failed one in a
    /// transaction fails too (or, a COMMIT, rolls it back). The outer
    /// error is the connection's own (it ended).
    pub fn pipeline(
        &mut self,
        requests: &[Request<'_>],
    ) -> Result<Vec<Result<Answer, Error>>, Error> {
        self.wait(|c| {
            let futures: Vec<_> = requests.iter().map(|r| r.send(c)).collect();
            all(futures)
        })
    }

    /// A transaction that BEGIN starts now, for the schema's migrations;
    /// rolled back unless committed.
    pub fn transaction(&mut self) -> Result<Transaction<'_>, Error> {
        self.batch_execute("BEGIN")?;
        Ok(Transaction {
            client: self,
            done: false,
        })
    }
}

/// One request of a `pipeline`.
pub enum Request<'r> {
    /// A statement without parameters, by the simple protocol (BEGIN,
    /// COMMIT).
    Simple(&'r str),
    /// A prepared statement whose changed rows are counted.
    Execute(&'r Statement, &'r Params<'r>),
    /// A prepared statement whose rows are read.
    Query(&'r Statement, &'r Params<'r>),
}

/// A request's answer.
#[derive(Debug)]
pub enum Answer {
    Done,
    Changed(u64),
    Rows(Vec<Row>),
}

type Pending<'f> = Pin<Box<dyn Future<Output = Result<Answer, Error>> + 'f>>;

impl<'r> Request<'r> {
    fn send<'f>(&'f self, client: &'f tokio_postgres::Client) -> Pending<'f> {
        match *self {
            Request::Simple(sql) => {
                Box::pin(async move { client.batch_execute(sql).await.map(|()| Answer::Done) })
            }
            Request::Execute(statement, params) => {
                Box::pin(
                    async move { client.execute(statement, params).await.map(Answer::Changed) },
                )
            }
            Request::Query(statement, params) => {
                Box::pin(async move { client.query(statement, params).await.map(Answer::Rows) })
            }
        }
    }
}

/// Every future's answer, in order. Each request is sent when its future
/// is first polled, so all go out, in order, before any answer is read.
async fn all(mut futures: Vec<Pending<'_>>) -> Result<Vec<Result<Answer, Error>>, Error> {
    let mut answers: Vec<Option<Result<Answer, Error>>> = futures.iter().map(|_| None).collect();
    poll_fn(|cx| {
        for (future, answer) in futures.iter_mut().zip(answers.iter_mut()) {
            if answer.is_none() {
                if let Poll::Ready(done) = future.as_mut().poll(cx) {
                    *answer = Some(done);
                }
            }
        }
        match answers.iter().all(Option::is_some) {
            true => Poll::Ready(()),
            false => Poll::Pending,
        }
    })
    .await;
    Ok(answers.into_iter().flatten().collect())
}

impl Drop for Client {
    /// Closes the session as a client should (a Terminate message), rather
    /// than leaving the server to log an unexpected end of file.
    fn drop(&mut self) {
        drop(self.client.take());
        let Client {
            runtime, driver, ..
        } = self;
        let closed = poll_fn(|cx| loop {
            match driver.poll_message(cx) {
                Poll::Ready(Some(Ok(_))) => continue,
                Poll::Ready(Some(Err(_)) | None) => return Poll::Ready(()),
                Poll::Pending => return Poll::Pending,
            }
        });
        // A server that stopped answering must not hold the process.
        let _ = runtime.block_on(async { tokio::time::timeout(CLOSE_WAIT, closed).await });
    }
}

/// A transaction begun at once (`Client::transaction`).
pub struct Transaction<'a> {
    client: &'a mut Client,
    done: bool,
}

impl Transaction<'_> {
    pub fn commit(mut self) -> Result<(), Error> {
        self.done = true;
        self.client.batch_execute("COMMIT")
    }
}

impl std::ops::Deref for Transaction<'_> {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.client
    }
}

impl std::ops::DerefMut for Transaction<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        self.client
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.client.batch_execute("ROLLBACK");
        }
    }
}
