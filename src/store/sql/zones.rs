//! The statements of the owners' zones that both stores run as written (see
//! `store::sql`).

/// Run by `ZoneTx::owner_zone`.
pub const OWNER_ZONE: &str = "SELECT identity_key, zone, set_at, set_by FROM zones
    WHERE tenant_key = $1 AND identity_key = $2";

/// Run by `ZoneTx::put_owner_zone`.
pub const INSERT_OWNER_ZONE: &str =
    "INSERT INTO zones (tenant_key, identity_key, zone, set_at, set_by)
    VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING";

/// Run by `ZoneTx::put_owner_zone`.
pub const UPDATE_OWNER_ZONE: &str = "UPDATE zones SET zone = $1, set_at = $2, set_by = $3
    WHERE tenant_key = $4 AND identity_key = $5 AND zone = $6";

/// Run by `ZoneTx::put_owner_zone`.
pub const DELETE_OWNER_ZONE: &str =
    "DELETE FROM zones WHERE tenant_key = $1 AND identity_key = $2 AND zone = $3";
