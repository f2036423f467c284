//! The server's stdio transport: one JSON-RPC message a line, as rmcp's
//! own, but with every line's read bounded and an overlong line answered.
//!
//! rmcp drops a line past its 16 MiB cap without a word, so the agent that
//! sent it waits forever for an answer. Here a line past `LINE_MAX_BYTES`
//! is never held whole (its head is kept to find its id; the rest is
//! discarded as it arrives) and gets a JSON-RPC Invalid Request error —
//! with its id when the head has one at the top level, else none — and the
//! session reads on. Writing is rmcp's (its framing, one message at a time).

use rmcp::model::{ErrorData, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::Transport;
use rmcp::RoleServer;
use tokio::io::{AsyncBufReadExt, BufReader, Empty, Stdin, Stdout};

/// The longest line read: a draft's instruction is at most 32 KiB, six
/// times that escaped, so no valid call comes near it.
pub const LINE_MAX_BYTES: usize = 1 << 20;

/// How much of an overlong line is kept to find its id.
const HEAD_BYTES: usize = 4096;

pub struct BoundedStdio {
    read: BufReader<Stdin>,
    /// The line read so far; kept across a cancelled `receive` (rmcp polls
    /// it in a `select!`), cleared once a whole line is handled.
    line: Vec<u8>,
    /// Set while the rest of an overlong line is skipped.
    discarding: bool,
    write: AsyncRwTransport<RoleServer, Empty, Stdout>,
}

impl BoundedStdio {
    pub fn new() -> BoundedStdio {
        BoundedStdio {
            read: BufReader::new(tokio::io::stdin()),
            line: Vec::new(),
            discarding: false,
            write: AsyncRwTransport::new(tokio::io::empty(), tokio::io::stdout()),
        }
    }

    /// Reads up to the end of the next line. `Some(true)`: a whole line is
    /// in `self.line`; `Some(false)`: the line was longer than the bound,
    /// its head is in `self.line`; `None`: the end of input.
    async fn read_line(&mut self) -> Option<bool> {
        loop {
            let available = self.read.fill_buf().await.ok()?;
            if available.is_empty() {
                return None;
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let room = if self.discarding {
                HEAD_BYTES
            } else {
                LINE_MAX_BYTES
            };
            let keep = take.min(room.saturating_sub(self.line.len()));
            self.line.extend_from_slice(&available[..keep]);
            if keep < take && !self.discarding {
                // Past the bound: only the head stays, to find the id.
                self.discarding = true;
                self.line.truncate(HEAD_BYTES);
            }
            self.read.consume(take);
            if newline.is_some() {
                let whole = !self.discarding;
                self.discarding = false;
                return Some(whole);
            }
        }
    }

    /// Answers a message that could not be taken, in the background (a
    /// send's future stands alone; the answer goes out between messages).
    fn refuse(&mut self, error: ErrorData, id: Option<RequestId>) {
        let sent = self
            .write
            .send(TxJsonRpcMessage::<RoleServer>::error(error, id));
        tokio::spawn(sent);
    }
}

impl Transport<RoleServer> for BoundedStdio {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.write.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let whole = self.read_line().await?;
            let line = std::mem::take(&mut self.line);
            if !whole {
                let message = format!(
                    "the message is longer than {} MiB, the most agentcron mcp reads in one \
                     line; nothing was done",
                    LINE_MAX_BYTES >> 20
                );
                self.refuse(ErrorData::invalid_request(message, None), id_in_head(&line));
                continue;
            }
            let line = line.strip_suffix(b"\n").unwrap_or(&line);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice(line) {
                Ok(message) => return Some(message),
                // Not JSON: nothing to answer to (rmcp's own rule: an answer
                // to garbage can start an error storm with a peer that
                // echoes).
                Err(e) if e.is_syntax() || e.is_eof() => continue,
                // JSON of another shape: a request is answered, a
                // notification (no id) is ignored, as rmcp does.
                Err(_) => {
                    let value: serde_json::Value = serde_json::from_slice(line).unwrap_or_default();
                    if let Some(id) = value.get("id") {
                        let id = serde_json::from_value(id.clone()).ok();
                        self.refuse(ErrorData::invalid_request("Invalid request", None), id);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.close().await
    }
}

/// The `id` member of the top-level object that `head` begins, when the
/// head holds all of it.
fn id_in_head(head: &[u8]) -> Option<RequestId> {
    let mut depth = 0usize;
    let mut at = 0;
    while at < head.len() {
        match head[at] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b'"' => {
                let end = string_end(head, at)?;
                // A key is a string followed by ':' (a value never is).
                let rest = head[end + 1..].trim_ascii_start();
                if depth == 1 && &head[at..=end] == b"\"id\"" {
                    if let Some(value) = rest.strip_prefix(b":") {
                        return id_value(value.trim_ascii_start());
                    }
                }
                at = end;
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// The index of the quote that ends the string opening at `start`.
fn string_end(text: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    while at < text.len() {
        match text[at] {
            b'\\' => at += 2,
            b'"' => return Some(at),
            _ => at += 1,
        }
    }
    None
}

/// A JSON-RPC id (a string or an integer) at the start of `text`, when it
/// ends within `text`.
fn id_value(text: &[u8]) -> Option<RequestId> {
    let end = match text.first()? {
        b'"' => string_end(text, 0)? + 1,
        _ => text
            .iter()
            .position(|b| matches!(b, b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n'))?,
    };
    serde_json::from_slice(&text[..end]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(head: &str) -> Option<String> {
        id_in_head(head.as_bytes()).map(|id| id.to_string())
    }

    #[test]
    fn the_id_is_found_at_the_top_level_only_and_whole() {
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":77,"method":"x","params":{"a":"#).as_deref(),
            Some("77")
        );
        assert_eq!(
            id(r#"{ "id" : "a\"b", "params": "#).as_deref(),
            Some("a\"b")
        );
        // An "id" inside the params, or as a value, is not the message's.
        assert_eq!(
            id(r#"{"params":{"id":5},"method":"id","id":6}"#).as_deref(),
            Some("6")
        );
        assert_eq!(id(r#"{"params":{"id":5,"text":"aaaa"#), None);
        // Cut inside the id: unknown, not a wrong id.
        assert_eq!(id(r#"{"id":12"#), None);
        assert_eq!(id(r#"{"id":"abc"#), None);
        assert_eq!(id("not json at all"), None);
    }
}
