//! Every reference case in `tests/vectors/next_occurrence.json` (vendored;
//! its README says how it was computed: Python zoneinfo, IANA 2025b).

use serde_json::Value;

use super::{next_after, parse_instant, Schedule};

const VECTORS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/next_occurrence.json"
);

#[test]
fn every_reference_vector_passes() {
    let text =
        std::fs::read_to_string(VECTORS).unwrap_or_else(|e| panic!("reading {VECTORS}: {e}"));
    let doc: Value = serde_json::from_str(&text).unwrap();
    let vectors = doc["vectors"].as_array().unwrap();
    let mut failures = Vec::new();
    for v in vectors {
        let schedule = Schedule::from_json(&v["schedule"])
            .unwrap_or_else(|e| panic!("{}: {e}", v["schedule"]));
        let tz = super::parse_zone(v["timezone"].as_str().unwrap()).unwrap();
        let mut cursor = parse_instant(v["after"].as_str().unwrap()).unwrap();
        for expected in v["next"].as_array().unwrap() {
            let got = next_after(&schedule, tz, cursor).map(|o| super::format_utc(o.at));
            let want = expected.as_str().map(str::to_string);
            if got != want {
                failures.push(format!(
                    "{} in {} after {}: expected {want:?}, got {got:?}",
                    v["schedule"],
                    v["timezone"],
                    super::format_utc(cursor)
                ));
                break;
            }
            match want {
                Some(text) => cursor = parse_instant(&text).unwrap(),
                None => break,
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} vectors failed:\n{}",
        failures.len(),
        vectors.len(),
        failures.join("\n")
    );
    assert_eq!(vectors.len(), 772, "the vector file changed size");
}
