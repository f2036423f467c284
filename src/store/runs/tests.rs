//! Reading a run row back: columns that contradict the row's status are an
//! error the caller quarantines or reports, never a panic or a guess.

use crate::model::RunStatus;
use crate::store::rows::{self, Cells};

/// A row of `RUN_COLUMNS` as plain cells: None is NULL.
#[derive(Clone)]
enum Cell {
    Null,
    Int(i64),
    Text(&'static str),
}

struct Cells29(Vec<Cell>);

impl Cells for Cells29 {
    type Error = String;
    fn text(&self, i: usize) -> Result<String, String> {
        self.opt_text(i)?.ok_or(format!("column {i} is NULL"))
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, String> {
        match &self.0[i] {
            Cell::Null => Ok(None),
            Cell::Text(t) => Ok(Some(t.to_string())),
            Cell::Int(_) => Err(format!("column {i} is not text")),
        }
    }
    fn int(&self, i: usize) -> Result<i64, String> {
        self.opt_int(i)?.ok_or(format!("column {i} is NULL"))
    }
    fn opt_int(&self, i: usize) -> Result<Option<i64>, String> {
        match &self.0[i] {
            Cell::Null => Ok(None),
            Cell::Int(n) => Ok(Some(*n)),
            Cell::Text(_) => Err(format!("column {i} is not an integer")),
        }
    }
    fn invalid(&self, i: usize, what: String) -> String {
        format!("column {i}: {what}")
    }
}

/// A running run as a claim writes it: started, under a lease.
fn running() -> Vec<Cell> {
    use Cell::*;
    vec![
        Text("r1"),
        Text("t1"),
        Text("default"),
        Int(3600),
        Text("01:00"),
        Int(1),
        Int(3600),
        Text("running"),
        Text("hash"),
        Int(3600),
        Int(3600), // started_at
        Null,      // finished_at
        Text("token"),
        Int(3660), // lease_until
        Null,
        Null,
        Int(0),
        Null, // blocked_by
        Null, // wait_kind
        Null, // wait_id
        Null, // wait_deadline
        Int(0),
        Null,
        Null, // the notice's state
        Text("schedule"),
        Null, // approved_at
        Null, // approved_by
        Int(0),
        Null, // usage
    ]
}

#[test]
fn a_running_row_reads_as_running_under_its_lease() {
    let run = rows::run(&Cells29(running())).expect("a sound row");
    assert_eq!(run.status(), RunStatus::Running);
    let lease = run.lease().expect("its lease");
    assert_eq!((lease.token.as_str(), lease.until), ("token", 3660));
}

#[test]
fn a_row_whose_columns_contradict_its_status_is_an_error() {
    let edits: [&[(usize, Cell)]; 4] = [
        // running without a lease
        &[(12, Cell::Null)],
        // running and finished
        &[(11, Cell::Int(3700))],
        // succeeded, never finished
        &[(7, Cell::Text("succeeded"))],
        // parked on no wait
        &[(7, Cell::Text("awaiting_confirmation"))],
    ];
    for edit in edits {
        let mut row = running();
        for (i, cell) in edit {
            row[*i] = cell.clone();
        }
        let err = rows::run(&Cells29(row)).expect_err("a contradiction");
        assert!(err.starts_with("column 7: a "), "{err}");
    }
}
