//! A TCP proxy in front of the test PostgreSQL server that can lose the
//! acknowledgement of one COMMIT: the COMMIT reaches the server, the server
//! commits and answers, and the proxy drops both sockets instead of relaying
//! the answer. That is the ambiguous commit of docs/CONTRACT.md §12. It can also
//! lose the COMMIT itself: the client's socket is closed, the server's
//! session stays open, idle in its transaction, holding its locks.
//!
//! It reads the client's side of the protocol only as far as it must: the
//! untyped startup (and SSL/GSS request) messages, then typed messages,
//! remembering the statement texts of the current transaction (those each
//! `Bind` runs, by the text their `Parse` prepared, and simple `Query`
//! messages) so that a trap can pick a transaction by what it does ("the
//! one that inserted a run").

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Where the real server listens.
const UPSTREAM: &str = "127.0.0.1:5432";

pub struct Proxy {
    port: u16,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    /// Lose the answer to (or, when `.1` is false, the very) COMMIT of the
    /// next transaction that ran a statement containing `.0`; disarmed once
    /// it fires.
    trap: Mutex<Option<(String, bool)>>,
    fired: AtomicUsize,
    /// The server is "down": new connections are closed at once.
    down: AtomicBool,
    /// The clients' sockets, to cut when the server goes down.
    clients: Mutex<Vec<TcpStream>>,
    /// Connections being relayed now.
    live: AtomicUsize,
}

impl Proxy {
    pub fn start() -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        let accepting = shared.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                if accepting.down.load(Ordering::SeqCst) {
                    continue; // dropped: the client reads the end at once
                }
                if let Ok(copy) = client.try_clone() {
                    accepting.clients.lock().unwrap().push(copy);
                }
                let shared = accepting.clone();
                shared.live.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let _ = relay(client, &shared);
                    shared.live.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Proxy { port, shared }
    }

    /// `url` (a URL of the test server) through the proxy.
    pub fn url(&self, url: &str) -> String {
        assert!(
            url.contains(UPSTREAM),
            "the proxy forwards to {UPSTREAM}: {url}"
        );
        url.replacen(UPSTREAM, &format!("127.0.0.1:{}", self.port), 1)
    }

    /// Arms the trap for the next transaction that runs a statement
    /// containing `statement`.
    pub fn lose_commit_ack_of(&self, statement: &str) {
        *self.shared.trap.lock().unwrap() = Some((statement.to_string(), true));
    }

    /// Arms the trap to lose the COMMIT itself: it never reaches the server.
    pub fn lose_commit_of(&self, statement: &str) {
        *self.shared.trap.lock().unwrap() = Some((statement.to_string(), false));
    }

    /// The server goes away as in a restart: every connection through the
    /// proxy is cut, and new ones are refused until `come_up`.
    pub fn go_down(&self) {
        self.shared.down.store(true, Ordering::SeqCst);
        for client in self.shared.clients.lock().unwrap().drain(..) {
            let _ = client.shutdown(Shutdown::Both);
        }
    }

    /// The server is back: connections are relayed again.
    pub fn come_up(&self) {
        self.shared.down.store(false, Ordering::SeqCst);
    }

    /// How many connections it relays now (one that the server ended is
    /// over once the server's last words reached the client).
    pub fn live(&self) -> usize {
        self.shared.live.load(Ordering::SeqCst)
    }

    /// How many acknowledgements the proxy has lost.
    pub fn fired(&self) -> usize {
        self.shared.fired.load(Ordering::SeqCst)
    }
}

/// One client connection: the server's bytes are copied back in a thread
/// (until the trap fires), the client's are parsed here.
fn relay(mut client: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let mut server = TcpStream::connect(UPSTREAM)?;
    let cut = Arc::new(AtomicBool::new(false));
    let (mut from_server, mut to_client) = (server.try_clone()?, client.try_clone()?);
    let back_cut = cut.clone();
    let back = std::thread::spawn(move || {
        let mut buf = [0u8; 16384];
        loop {
            let n = match from_server.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            // Everything the server says after the trapped COMMIT is its
            // answer to it (the client waits for that answer): lose it.
            if back_cut.load(Ordering::SeqCst) || to_client.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to_client.shutdown(Shutdown::Both);
        let _ = from_server.shutdown(Shutdown::Both);
    });
    let outcome = client_to_server(&mut client, &mut server, shared, &cut);
    // A client gone without a goodbye: tell the server, so its session ends.
    if !cut.load(Ordering::SeqCst) {
        let _ = server.shutdown(Shutdown::Both);
    }
    let _ = back.join();
    outcome
}

/// Copies the client's messages to the server until the client leaves or
/// the trap fires (then the trapped COMMIT is the last message sent).
fn client_to_server(
    client: &mut TcpStream,
    server: &mut TcpStream,
    shared: &Shared,
    cut: &AtomicBool,
) -> std::io::Result<()> {
    // Untyped messages until the startup message (SSL and GSS encryption
    // requests come first, each answered by one byte the server sends).
    loop {
        let message = read_untyped(client)?;
        server.write_all(&message)?;
        let code = u32::from_be_bytes(message[4..8].try_into().unwrap());
        if code != 80_877_103 && code != 80_877_104 {
            break;
        }
    }
    // The transaction's statements are those it runs (Bind), whenever
    // they were prepared (Parse): a statement is prepared once per
    // connection, maybe before the BEGIN of the transaction that first
    // runs it.
    let mut prepared: std::collections::HashMap<String, String> = Default::default();
    let mut statements: Vec<String> = Vec::new();
    loop {
        let (kind, message) = read_typed(client)?;
        let body = &message[5..];
        match kind {
            b'P' => {
                // Parse: statement name, NUL, query text, NUL, …
                let mut fields = body.split(|b| *b == 0);
                let name = fields.next().unwrap_or_default();
                let text = fields.next().unwrap_or_default();
                prepared.insert(
                    String::from_utf8_lossy(name).into_owned(),
                    String::from_utf8_lossy(text).into_owned(),
                );
            }
            b'B' => {
                // Bind: portal name, NUL, statement name, NUL, …
                let name = body.split(|b| *b == 0).nth(1).unwrap_or_default();
                let name = String::from_utf8_lossy(name);
                statements.extend(prepared.get(name.as_ref()).cloned());
            }
            b'Q' => {
                let text = body.split(|b| *b == 0).next().unwrap_or_default();
                let text = String::from_utf8_lossy(text).into_owned();
                let upper = text.trim().to_ascii_uppercase();
                let trap = (upper == "COMMIT").then(|| trapped(shared, &statements));
                if let Some(Some(forward)) = trap {
                    cut.store(true, Ordering::SeqCst);
                    if forward {
                        // The server's answer reaches the copier, which
                        // drops it and closes both sockets.
                        return server.write_all(&message);
                    }
                    // The session stays open until the server ends it.
                    return client.shutdown(Shutdown::Both);
                }
                let ends = ["BEGIN", "START", "COMMIT", "ROLLBACK"];
                if ends.iter().any(|e| upper.starts_with(e)) {
                    statements.clear();
                } else {
                    statements.push(text);
                }
            }
            _ => {}
        }
        server.write_all(&message)?;
        if kind == b'X' {
            return Ok(());
        }
    }
}

/// Whether this transaction is the one the trap waits for (then whether
/// to forward its COMMIT); disarms it.
fn trapped(shared: &Shared, statements: &[String]) -> Option<bool> {
    let mut trap = shared.trap.lock().unwrap();
    let forward = trap
        .as_ref()
        .filter(|(t, _)| statements.iter().any(|s| s.contains(t.as_str())))
        .map(|(_, forward)| *forward)?;
    *trap = None;
    shared.fired.fetch_add(1, Ordering::SeqCst);
    Some(forward)
}

fn read_untyped(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len)?;
    let n = u32::from_be_bytes(len) as usize;
    let mut message = len.to_vec();
    message.resize(n.max(8), 0);
    stream.read_exact(&mut message[4..])?;
    Ok(message)
}

fn read_typed(stream: &mut TcpStream) -> std::io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    stream.read_exact(&mut head)?;
    let n = u32::from_be_bytes(head[1..5].try_into().unwrap()) as usize;
    let mut message = head.to_vec();
    message.resize(1 + n.max(4), 0);
    stream.read_exact(&mut message[5..])?;
    Ok((head[0], message))
}
