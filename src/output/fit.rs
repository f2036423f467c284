//! Fitting a table to the terminal's width (docs/CONTRACT.md §9): a cell is
//! never wrapped, so no word is ever broken across lines. Below the width,
//! the columns a person can do without go first (PAYLOAD, ATTEMPT, DELIVERY,
//! LAST RUN), then the long free-text columns (SUMMARY, INSTRUCTION,
//! SCHEDULE, DETAIL, WHY) are cut with `…`, at a word's end where one is
//! near. A table that still does not fit is printed whole: the terminal
//! folds its lines, but no cell is cut further than a person can read.

use unicode_width::UnicodeWidthChar;

use super::width;

/// Dropped in this order, one at a time, until the table fits.
const DROPPABLE: [&str; 4] = ["payload", "attempt", "delivery", "last run"];
/// Dropped next, only when the rest cannot fit even with every cut column
/// at its narrowest (`show` still has them in full).
const DROPPABLE_WHEN_NARROW: [&str; 3] = ["instruction", "result", "at"];
/// Cut with `…` to share the width that is left.
const CUTTABLE: [&str; 6] = [
    "summary",
    "instruction",
    "schedule",
    "detail",
    "why",
    "task",
];
/// A cut column keeps at least this many columns (or its header's width).
const MIN_CUT_WIDTH: usize = 12;
/// Columns between two cells (comfy-table's padding on either side).
const GAP: usize = 2;

/// The header and rows fitted to a terminal `columns` wide.
pub fn fit(
    header: &[&str],
    rows: Vec<Vec<String>>,
    columns: usize,
) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header: Vec<String> = header.iter().map(|h| h.to_lowercase()).collect();
    let mut rows = rows;
    for name in DROPPABLE {
        if line_width(&natural_widths(&header, &rows)) <= columns {
            break;
        }
        drop_column(&mut header, &mut rows, name);
    }
    for name in DROPPABLE_WHEN_NARROW {
        if narrowest_width(&header, &natural_widths(&header, &rows)) <= columns {
            break;
        }
        drop_column(&mut header, &mut rows, name);
    }
    let widths = natural_widths(&header, &rows);
    if line_width(&widths) > columns {
        let limits = shares(&header, &widths, columns);
        for row in &mut rows {
            for (cell, limit) in row.iter_mut().zip(&limits) {
                if let Some(limit) = limit {
                    *cell = cut(cell, *limit);
                }
            }
        }
    }
    (header, rows)
}

fn drop_column(header: &mut Vec<String>, rows: &mut [Vec<String>], name: &str) {
    if let Some(column) = header.iter().position(|h| h == name) {
        header.remove(column);
        for row in rows {
            if column < row.len() {
                row.remove(column);
            }
        }
    }
}

/// The table's width with every cuttable column cut to its floor.
fn narrowest_width(header: &[String], widths: &[usize]) -> usize {
    let narrowest: Vec<usize> = header
        .iter()
        .zip(widths)
        .map(|(name, &w)| match is_cuttable(name) {
            true => w.min(floor(name)),
            false => w,
        })
        .collect();
    line_width(&narrowest)
}

fn is_cuttable(name: &str) -> bool {
    CUTTABLE.contains(&name)
}

fn floor(name: &str) -> usize {
    MIN_CUT_WIDTH.max(width(name))
}

fn natural_widths(header: &[String], rows: &[Vec<String>]) -> Vec<usize> {
    let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(width(cell));
        }
    }
    widths
}

fn line_width(widths: &[usize]) -> usize {
    widths.iter().sum::<usize>() + GAP * widths.len().saturating_sub(1)
}

/// How wide each cuttable column may be (None: not cut): the width the
/// other columns leave, shared so that a narrow column keeps all it needs
/// and the rest is split evenly among the wider ones.
fn shares(header: &[String], widths: &[usize], columns: usize) -> Vec<Option<usize>> {
    let cuttable: Vec<usize> = (0..header.len())
        .filter(|&c| is_cuttable(&header[c]))
        .collect();
    let fixed: usize = (0..header.len())
        .filter(|c| !cuttable.contains(c))
        .map(|c| widths[c])
        .sum();
    let gaps = GAP * header.len().saturating_sub(1);
    let mut left = columns.saturating_sub(fixed + gaps);
    let mut by_width = cuttable.clone();
    by_width.sort_by_key(|&c| widths[c]);
    let mut limits = vec![None; header.len()];
    for (taken, &column) in by_width.iter().enumerate() {
        let share = left / (by_width.len() - taken);
        let limit = widths[column].min(share.max(floor(&header[column])));
        limits[column] = Some(limit);
        left = left.saturating_sub(limit);
    }
    limits
}

/// `text` in at most `limit` columns: whole, or cut with `…` after the last
/// whole word that fits (mid-word when that would give up over a third),
/// never inside an escape such as `\x1b` or `\u{202e}`.
pub fn cut(text: &str, limit: usize) -> String {
    if width(text) <= limit {
        return text.to_string();
    }
    let room = limit.saturating_sub(1);
    let mut end = 0;
    let mut used = 0;
    for (at, c) in text.char_indices() {
        let w = c.width().unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        end = at + c.len_utf8();
    }
    let mut kept = &text[..end];
    if let Some(space) = kept.rfind(' ') {
        if space * 3 >= kept.len() * 2 {
            kept = kept[..space].trim_end();
        }
    }
    // An escape cut in half reads as a different one: keep it whole or drop it.
    if let Some(slash) = kept.rfind('\\') {
        let tail = &kept[slash..];
        let whole = tail.len() >= 4 && (tail.starts_with("\\x") || tail.ends_with('}'));
        if !whole && !matches!(tail, "\\n" | "\\t" | "\\r" | "\\\\") {
            kept = &kept[..slash];
        }
    }
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cells: &[&str]) -> Vec<String> {
        cells.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn a_table_that_fits_is_unchanged() {
        let rows = vec![row(&["a1", "every day", "say hi"])];
        let (header, fitted) = fit(&["id", "schedule", "instruction"], rows.clone(), 80);
        assert_eq!(header, ["id", "schedule", "instruction"]);
        assert_eq!(fitted, rows);
    }

    #[test]
    fn low_value_columns_go_before_any_cell_is_cut() {
        let rows = vec![row(&["a1", "3", "0123456789abcdef", "summary text"])];
        let (header, fitted) = fit(&["run", "attempt", "payload", "summary"], rows, 20);
        assert_eq!(header, ["run", "summary"]);
        assert_eq!(fitted, vec![row(&["a1", "summary text"])]);
        // Then the instruction, when even cut it leaves no room.
        let rows = vec![row(&[
            "a1",
            "2026-12-04 09:30 CST (in 3 d)",
            "every weekday",
            "x y",
        ])];
        let (header, _) = fit(&["id", "next run", "schedule", "instruction"], rows, 50);
        assert_eq!(header, ["id", "next run", "schedule"]);
    }

    #[test]
    fn long_text_is_cut_at_a_word_end() {
        let long = "summarize the on-call channel and post the digest to the team";
        let rows = vec![row(&["a1", long])];
        let (_, fitted) = fit(&["id", "instruction"], rows, 30);
        assert_eq!(fitted[0][1], "summarize the on-call…");
        assert!(width(&fitted[0][1]) <= 26);
    }

    #[test]
    fn cuts_never_split_an_escape() {
        assert_eq!(cut("abcdefgh\\x1b[2J", 11), "abcdefgh…");
        assert_eq!(cut("abcdef\\x1b[2J more", 13), "abcdef\\x1b[2…");
        assert_eq!(cut("a\\u{202e}bcdefghijkl", 7), "a…");
    }
}
