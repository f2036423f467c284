//! Text for people, below every layer that words a message: escaping of
//! untrusted strings, clipping, relative times and durations, wall times in
//! a task's zone, sizes.

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

/// Text another party wrote (an agent's instruction), for a person to read
/// as a quotation: in double quotes, with its backslashes and quotes
/// escaped as well as what `escape` escapes, so it stays one line and
/// cannot close its quotes to speak in agentcron's voice.
pub fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push_str(&escape(c.encode_utf8(&mut [0; 4]))),
        }
    }
    out.push('"');
    out
}

/// The first `max_chars` characters of `text`.
pub fn head(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// Characters that reorder displayed text (Trojan Source).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// "in 14 min", "3 h ago", "now".
pub fn relative(at: i64, now: i64) -> String {
    let delta = at - now;
    // A time in the future is never "now": a run 30 s away has not started.
    if delta <= 0 && delta > -45 {
        return "now".to_string();
    }
    let amount = human_duration(delta.unsigned_abs() as i64);
    if delta > 0 {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

/// A length of time in the unit a person would use: "45 s", "90 min",
/// "5 h", "5 h 30 min", "3 d". Minutes up to two hours, so that "in 90 min"
/// is not rounded to "in 2 h".
pub fn human_duration(seconds: i64) -> String {
    let s = seconds.max(0);
    if s < 60 {
        format!("{s} s")
    } else if s < 600 && s % 60 != 0 {
        // Short spans keep their seconds: a 90 s grace is not "2 min".
        format!("{} min {} s", s / 60, s % 60)
    } else if s < 2 * 3600 {
        format!("{} min", (s + 30) / 60)
    } else if s < 2 * 86400 {
        let minutes = (s + 30) / 60;
        match (minutes / 60, minutes % 60) {
            (h, 0) => format!("{h} h"),
            (h, m) if h < 10 => format!("{h} h {m} min"),
            (h, m) => format!("{} h", h + i64::from(m >= 30)),
        }
    } else {
        format!("{} d", (s + 43200) / 86400)
    }
}

/// The instant on the task's wall clock: "2026-12-03 09:30 CST".
pub fn wall_time(at: i64, zone: Tz) -> String {
    crate::schedule::format_wall(at, zone)
}

/// A size in binary units, one decimal ("3.2 MiB").
pub fn human_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// The first line with something on it, trimmed: what a one-line message
/// quotes of a reason or an executor's summary.
pub fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|l| !l.is_empty())
}

/// Shortens for a table cell, marking the cut. The cut is never inside an
/// escape `escape` wrote (`\x1b`, `\u{202e}`, `\n`): it moves to the
/// escape's start, so a cell never ends in half of one.
pub fn clip(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut cut = max_chars.saturating_sub(1);
    let mut at = 0;
    while at < cut {
        let len = escape_len(&chars[at..]);
        if at + len > cut {
            cut = at;
            break;
        }
        at += len;
    }
    let mut out: String = chars[..cut].iter().collect();
    out.push('…');
    out
}

/// How many characters the escape `escape` wrote at the start of `chars`
/// spans; 1 when none starts there.
fn escape_len(chars: &[char]) -> usize {
    let hex = |c: &char| c.is_ascii_hexdigit();
    match chars {
        ['\\', 'n' | 'r' | 't', ..] => 2,
        ['\\', 'x', a, b, ..] if hex(a) && hex(b) => 4,
        ['\\', 'u', '{', rest @ ..] => {
            let digits = rest.iter().take_while(|c| hex(c)).count();
            match rest.get(digits) {
                Some('}') if digits > 0 => 4 + digits,
                _ => 1,
            }
        }
        _ => 1,
    }
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
    fn a_clip_never_cuts_inside_an_escape() {
        let escaped = escape(&format!("{}\u{1b}[31m", "a".repeat(7)));
        assert_eq!(escaped, "aaaaaaa\\x1b[31m");
        assert_eq!(clip(&escaped, 10), "aaaaaaa…");
        assert_eq!(clip(&escaped, 12), "aaaaaaa\\x1b…");
        let bidi = escape("ab\u{202e}cd");
        assert_eq!(clip(&bidi, 6), "ab…");
        assert_eq!(clip(&bidi, 11), "ab\\u{202e}…");
        assert_eq!(clip("abc\\nd", 5), "abc…");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("值班值班值班", 3), "值班…");
    }

    #[test]
    fn a_quotation_stays_one_line_inside_its_quotes() {
        assert_eq!(quoted("a\"b\\n\nc\x1b[2J"), r#""a\"b\\n\nc\x1b[2J""#);
        assert_eq!(head("值班值班", 2), "值班");
        assert_eq!(head("ab", 5), "ab");
    }

    #[test]
    fn relative_times_read_naturally() {
        assert_eq!(relative(1000, 1000), "now");
        assert_eq!(relative(1000 - 30, 1000), "now");
        assert_eq!(relative(1000 + 30, 1000), "in 30 s");
        assert_eq!(relative(1000 + 1, 1000), "in 1 s");
        assert_eq!(relative(1000 + 14 * 60, 1000), "in 14 min");
        assert_eq!(relative(1000 - 3 * 3600, 1000), "3 h ago");
        assert_eq!(relative(1000 + 3 * 86400, 1000), "in 3 d");
        assert_eq!(relative(1000 + 90 * 60, 1000), "in 90 min");
        assert_eq!(relative(1000 - 52 * 60, 1000), "52 min ago");
    }

    #[test]
    fn durations_use_the_unit_a_person_would() {
        assert_eq!(human_duration(5), "5 s");
        assert_eq!(human_duration(65), "1 min 5 s");
        assert_eq!(human_duration(90), "1 min 30 s");
        assert_eq!(human_duration(120), "2 min");
        assert_eq!(human_duration(11 * 60 + 20), "11 min");
        assert_eq!(human_duration(119 * 60), "119 min");
        assert_eq!(human_duration(5 * 3600 + 30 * 60), "5 h 30 min");
        assert_eq!(human_duration(12 * 3600 + 40 * 60), "13 h");
        assert_eq!(human_duration(3 * 86400), "3 d");
    }
}
