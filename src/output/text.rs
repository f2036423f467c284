//! Text for people: escaping of untrusted strings, relative times, wall
//! times in a task's zone.

use crate::schedule::Tz;

/// Escapes control characters, escape sequences and bidirectional controls
/// so that text from the database or a child cannot repaint the terminal or
/// reorder what the operator reads.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if is_bidi_control(c) => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Characters that reorder displayed text (Trojan Source).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// "in 14 min", "3 h ago", "now".
pub fn relative(at: i64, now: i64) -> String {
    let delta = at - now;
    let magnitude = delta.unsigned_abs();
    let amount = if magnitude < 45 {
        return "now".to_string();
    } else if magnitude < 90 * 60 {
        format!("{} min", (magnitude + 30) / 60)
    } else if magnitude < 36 * 3600 {
        format!("{} h", (magnitude + 1800) / 3600)
    } else {
        format!("{} d", (magnitude + 43200) / 86400)
    };
    if delta > 0 {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

/// The instant on the task's wall clock: "2026-12-03 09:30 CST".
pub fn wall_time(at: i64, zone: Tz) -> String {
    crate::schedule::format_wall(at, zone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_terminal_controls() {
        assert_eq!(escape("a\x1b[31mred"), "a\\x1b[31mred");
        assert_eq!(escape("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(escape("tab\there"), "tab\\there");
        assert_eq!(escape("\u{9b}"), "\\x9b");
        assert_eq!(escape("值班 ok"), "值班 ok");
    }

    #[test]
    fn relative_times_read_naturally() {
        assert_eq!(relative(1000, 1000), "now");
        assert_eq!(relative(1000 + 14 * 60, 1000), "in 14 min");
        assert_eq!(relative(1000 - 3 * 3600, 1000), "3 h ago");
        assert_eq!(relative(1000 + 3 * 86400, 1000), "in 3 d");
    }
}
