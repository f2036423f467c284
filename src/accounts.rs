//! Unix accounts by name and by uid, read from /etc/passwd: for messages
//! that name whose a store is ("root (uid 0)") and for checking that a unit
//! file's `User=` can open the store. A lookup that finds nothing is None,
//! never an error: the caller then speaks of the uid alone.

use std::fs;

/// The entries of /etc/passwd as (name, uid).
fn entries() -> Vec<(String, u32)> {
    let Ok(passwd) = fs::read_to_string("/etc/passwd") else {
        return Vec::new();
    };
    passwd
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let uid = fields.nth(1)?.parse().ok()?;
            Some((name.to_string(), uid))
        })
        .collect()
}

pub fn name_of(uid: u32) -> Option<String> {
    entries()
        .into_iter()
        .find(|(_, u)| *u == uid)
        .map(|(n, _)| n)
}

pub fn uid_of(name: &str) -> Option<u32> {
    entries()
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, u)| u)
}

/// "alice (uid 1000)", or "uid 1000" for a uid with no entry.
pub fn label(uid: u32) -> String {
    match name_of(uid) {
        Some(name) => format!("{name} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_uid_0_both_ways() {
        assert_eq!(uid_of("root"), Some(0));
        assert_eq!(name_of(0).as_deref(), Some("root"));
        assert_eq!(label(0), "root (uid 0)");
        assert_eq!(label(4_000_000_000), "uid 4000000000");
    }
}
