//! Recording the statements SQLite runs, for the plan and growth tests
//! (tests/cli/plans.rs, tests/cli/growth.rs): every statement a thread's
//! connections prepare to run (its text, once) and the virtual-machine steps
//! each one took. Compiled only in test builds and with the `test-hooks`
//! feature (never in release builds); `open::connect` then calls `watch` on
//! every connection.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::os::raw::{c_int, c_uint, c_void};

use rusqlite::{ffi, Connection};

thread_local! {
    /// The statements this thread ran while recording; None when not.
    static SEEN: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
    /// The virtual-machine steps each statement text took on this thread,
    /// over all its runs, while counting; None when not.
    static STEPS: RefCell<Option<BTreeMap<String, i64>>> = const { RefCell::new(None) };
}

/// Reports each statement as it starts (to `SEEN`) and as it ends (its
/// steps, to `STEPS`), when this thread records.
pub fn watch(conn: &Connection) {
    // SAFETY: registers a callback on our own open handle; the callback
    // only reads the statement's text and counters, which SQLite keeps
    // alive meanwhile.
    unsafe {
        ffi::sqlite3_trace_v2(
            conn.handle(),
            (ffi::SQLITE_TRACE_STMT | ffi::SQLITE_TRACE_PROFILE) as c_uint,
            Some(on_statement),
            std::ptr::null_mut(),
        );
    }
}

unsafe extern "C" fn on_statement(
    event: c_uint,
    _: *mut c_void,
    stmt: *mut c_void,
    _: *mut c_void,
) -> c_int {
    // The prepared text, with its `?N` parameters, not one expanded with the
    // values of this call: the plan SQLite made is the parameterised one.
    let text = ffi::sqlite3_sql(stmt.cast());
    if text.is_null() {
        return 0;
    }
    let sql = std::ffi::CStr::from_ptr(text)
        .to_string_lossy()
        .into_owned();
    if event == ffi::SQLITE_TRACE_PROFILE as c_uint {
        // Steps since the last reset of the counter, which this resets: the
        // run that just ended (a cached statement runs many times).
        let steps = ffi::sqlite3_stmt_status(stmt.cast(), ffi::SQLITE_STMTSTATUS_VM_STEP, 1);
        STEPS.with(|counted| {
            if let Some(counted) = counted.borrow_mut().as_mut() {
                *counted.entry(sql).or_default() += i64::from(steps);
            }
        });
        return 0;
    }
    SEEN.with(|seen| {
        if let Some(seen) = seen.borrow_mut().as_mut() {
            if !seen.contains(&sql) {
                seen.push(sql);
            }
        }
    });
    0
}

/// What `f` made this thread's connections run, each text once.
pub fn recorded(f: impl FnOnce()) -> Vec<String> {
    SEEN.with(|seen| *seen.borrow_mut() = Some(Vec::new()));
    f();
    SEEN.with(|seen| seen.borrow_mut().take())
        .unwrap_or_default()
}

/// The steps of SQLite's virtual machine that `f` made this thread's
/// connections take, per statement text: the work a statement did, the
/// same on any machine and whatever the page cache holds.
pub fn stepped(f: impl FnOnce()) -> BTreeMap<String, i64> {
    STEPS.with(|counted| *counted.borrow_mut() = Some(BTreeMap::new()));
    f();
    STEPS
        .with(|counted| counted.borrow_mut().take())
        .unwrap_or_default()
}
