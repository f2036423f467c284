//! The one digest agentcron writes: lower-case hex SHA-256, as `sha256sum`
//! prints it. Below every value it hashes (payloads, profiles, one-time
//! codes), so that they can share it without naming each other.

use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of the bytes: `printf %s "$payload" | sha256sum`.
pub fn hash_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    // Every task read hashes its payload: no allocation per byte.
    for byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    out
}
