//! The statements of the meta and hosts tables that both stores run as written
//! (see `store::sql`).

/// Run by `MetaTx::meta`.
pub const META: &str = "SELECT value FROM meta WHERE key = $1";

/// Run by `MetaTx::set_meta`.
pub const SET_META: &str = "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value";

/// Run by `MetaTx::hosts`.
pub const HOSTS: &str =
    "SELECT host, build, last_tick_at FROM hosts ORDER BY last_tick_at DESC, host";
