//! `tick --env-file`: what it refuses, and that its password is the one
//! the store connection sends.
use crate::support::{assert_contains, assert_starts_with, Task, TestEnv};

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::private_file;

#[test]
fn tick_refuses_an_env_file_others_may_read_a_link_or_another_name() {
    let env = TestEnv::new();
    env.set_env("AGENTCRON_EXECUTOR", "/bin/true");
    Task::named("t").confirm(&env);
    env.advance(3600);
    let refused = |file: &Path, says: &str| {
        let out = env
            .run(&["tick", "--env-file", file.to_str().unwrap()])
            .fails(2);
        assert_starts_with(
            &out.stderr,
            &format!("agentcron: error: --env-file {}: {says}", file.display()),
        );
        assert_eq!(out.stderr.lines().count(), 2, "{}", out.stderr);
        assert!(!out.stderr.contains("hunter2"), "{}", out.stderr);
    };
    let file = private_file(&env, "store.env", "PGPASSWORD=hunter2\n");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    refused(&file, "mode 0640 lets others read or write it");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = env.path("link.env");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    refused(&link, "is a symbolic link");
    let other = private_file(&env, "other.env", "# for the agent\nAPI_KEY=hunter2\n");
    refused(
        &other,
        "line 2 sets API_KEY, which the tick does not read from it",
    );
    refused(&env.path("missing.env"), "No such file or directory");
    refused(&env.path(""), "is not a regular file");
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(&file, Some(65534), None).unwrap();
        refused(&file, "belongs to ");
    }
    // Nothing was claimed; with a private file of its own the tick runs.
    assert_eq!(env.count("SELECT count(*) FROM runs"), 0);
    let good = private_file(&env, "good.env", "PGPASSWORD=hunter2\n");
    env.run(&["tick", "--env-file", good.to_str().unwrap()])
        .ok();
    assert_eq!(env.count("SELECT count(*) FROM runs"), 1);
}

/// A PostgreSQL server of one question: it asks each client for its
/// password in clear text, notes it, and refuses it. So a test can see
/// which password a tick sends, which the suite's server (trust for
/// 127.0.0.1) never asks for.
fn password_catcher() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let noted = heard.clone();
    std::thread::spawn(move || {
        for mut client in listener.incoming().map_while(Result::ok) {
            let read_message = |client: &mut std::net::TcpStream| -> Option<Vec<u8>> {
                let mut len = [0u8; 4];
                client.read_exact(&mut len).ok()?;
                let mut body = vec![0u8; (u32::from_be_bytes(len) as usize).checked_sub(4)?];
                client.read_exact(&mut body).ok()?;
                Some(body)
            };
            // The startup message (after an SSL request, answered "no").
            let Some(mut startup) = read_message(&mut client) else {
                continue;
            };
            if startup == [4, 210, 22, 47] {
                let _ = client.write_all(b"N");
                let Some(next) = read_message(&mut client) else {
                    continue;
                };
                startup = next;
            }
            let _ = startup;
            // AuthenticationCleartextPassword.
            let _ = client.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 3]);
            let mut kind = [0u8; 1];
            if client.read_exact(&mut kind).is_err() || kind[0] != b'p' {
                continue;
            }
            let Some(password) = read_message(&mut client) else {
                continue;
            };
            let password = String::from_utf8_lossy(&password)
                .trim_end_matches('\0')
                .to_string();
            noted.lock().unwrap().push(password);
            let fields = b"SFATAL\0C28P01\0Mpassword authentication failed\0\0";
            let mut error = vec![b'E'];
            error.extend_from_slice(&((fields.len() + 4) as u32).to_be_bytes());
            error.extend_from_slice(fields);
            let _ = client.write_all(&error);
        }
    });
    (port, heard)
}

/// The file's password is the one the tick's store connection sends,
/// ahead of PGPASSWORD in its environment; without the file, the
/// environment's (so the catcher itself is shown to hear what is sent).
#[test]
fn the_env_files_password_reaches_the_store_connection() {
    let env = TestEnv::new();
    let (port, heard) = password_catcher();
    let db = format!("postgresql://agentcron@127.0.0.1:{port}/agentcron");
    env.set_env("PGPASSWORD", "from-the-environment");
    let file = private_file(
        &env,
        "store.env",
        "# the store's role\nPGPASSWORD=from-the-file\n",
    );
    let out = env
        .run(&["--db", &db, "tick", "--env-file", file.to_str().unwrap()])
        .fails(1);
    assert_contains(&out.stderr, "password authentication failed");
    assert!(!out.stderr.contains("from-the-file"), "{}", out.stderr);
    assert_eq!(*heard.lock().unwrap(), ["from-the-file"]);
    env.run(&["--db", &db, "tick"]).fails(1);
    assert_eq!(
        *heard.lock().unwrap(),
        ["from-the-file", "from-the-environment"]
    );
}

/// On PostgreSQL, a role with a password: the tick given its password in
/// an env file connects and runs. (The suite's server trusts 127.0.0.1, so
/// a wrong password would connect too: which password is sent is shown
/// by `the_env_files_password_reaches_the_store_connection`.)
#[test]
fn a_tick_with_an_env_file_runs_as_a_role_with_a_password() {
    let env = TestEnv::new();
    let Some(schema) = env.pg_schema().map(str::to_string) else {
        return;
    };
    // The tables exist once the task is confirmed: then the role may use them.
    env.set_env("AGENTCRON_EXECUTOR", "/bin/true");
    Task::named("t").confirm(&env);
    env.advance(3600);
    let role = format!("ac_pw_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    env.sql(&format!(
        "CREATE ROLE {role} LOGIN PASSWORD 'role-secret'; \
         GRANT ALL ON SCHEMA {schema} TO {role}; \
         GRANT ALL ON ALL TABLES IN SCHEMA {schema} TO {role}; \
         GRANT ALL ON ALL SEQUENCES IN SCHEMA {schema} TO {role}"
    ));
    struct Dropped<'e>(&'e TestEnv, String);
    impl Drop for Dropped<'_> {
        fn drop(&mut self) {
            let role = &self.1;
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.0
                    .sql(&format!("DROP OWNED BY {role}; DROP ROLE {role}"))
            }));
        }
    }
    let _dropped = Dropped(&env, role.clone());
    let db = env.db_arg().replacen("postgres@", &format!("{role}@"), 1);
    assert!(db.contains(&role), "{db}");
    let file = private_file(&env, "store.env", "PGPASSWORD=role-secret\n");
    env.run(&["--db", &db, "tick", "--env-file", file.to_str().unwrap()])
        .ok();
    assert_eq!(
        env.count("SELECT count(*) FROM runs WHERE status = 'succeeded'"),
        1
    );
}
