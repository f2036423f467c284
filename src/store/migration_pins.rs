//! The migrations stores have applied, pinned. A file of its own: it reads
//! both backends' lists, and `store/schema.rs`, which both backends use,
//! must not.

/// A store in the field has applied every migration: its text never
/// changes (a new one is appended instead). Each list of migrations a
/// release shipped is pinned by the SHA-256 of their texts, each
/// followed by a NUL: appending a migration appends a pin, and no pin
/// ever changes.
#[test]
fn no_applied_migration_changes_its_text() {
    let pinned = |migrations: &[&str]| {
        let texts: Vec<u8> = migrations
            .iter()
            .flat_map(|sql| sql.bytes().chain([0]))
            .collect();
        crate::payload::hash_hex(&texts)
    };
    let sqlite: &[(usize, &str)] = &[
        (
            17,
            "aaf45109a332cbe5fe9c17c9b775b490377b33229756cc52b7aee7659c02db6d",
        ),
        (
            18,
            "f297030aded5044d12bfdedd1aa2641008d004c9e796d9dddd2d05c3892e6134",
        ),
    ];
    let postgres: &[(usize, &str)] = &[
        (
            19,
            "a050cc1865765e30e44af88e90c12339545558f72ff66488d6d54cb4ef32b519",
        ),
        (
            20,
            "be91752d95a0ed5a20d784496cd30fea728fe4274321241113addaf1a50b9100",
        ),
        (
            21,
            "67620a02964a2339b37fb17ac2bedc4c719bfd1cec30a1a61eed16e5f52661fe",
        ),
        (
            22,
            "0f7b2f8d6d706fdb4276ef661ae817cd784e966ddf07a4fe5c275e82ec9a5fe1",
        ),
    ];
    for (backend, migrations, pins) in [
        ("SQLite", crate::store::sqlite::schema::MIGRATIONS, sqlite),
        (
            "PostgreSQL",
            crate::store::postgres::schema::MIGRATIONS,
            postgres,
        ),
    ] {
        for &(count, hash) in pins {
            let applied = &migrations[..count.min(migrations.len())];
            let why = format!("{backend}: one of the first {count} migrations changed");
            assert_eq!(pinned(applied), hash, "{why}");
        }
        let last = pins.last().map_or(0, |(count, _)| *count);
        let why = format!("{backend}: a new migration: append a pin for it");
        assert_eq!(migrations.len(), last, "{why}");
    }
}
