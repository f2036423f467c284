//! Text for people, below every layer that words a message: escaping of
//! untrusted strings, clipping, relative times and durations, wall times in
//! a task's zone, sizes. `lookalike` warns of words that are not what they
//! look like.

mod lookalike;

pub use lookalike::lookalikes;

use unicode_general_category::{get_general_category, GeneralCategory};

use crate::schedule::Tz;

/// Escapes every character a person would not see as itself, so that text
/// from the database, an agent or a child can neither repaint the terminal,
/// reorder what the operator reads, nor hide words in what looks like less
/// (docs/CONTRACT.md §17): newline, carriage return and tab as `\n`, `\r`,
/// `\t`; other control characters (Cc) as `\xNN`; and everything `hidden`
/// names as `\u{NNNN}`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if is_hidden(c) => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Whether `c` shows nothing of itself, or something it is not: format
/// characters (Cf: zero-width spaces and joiners, bidirectional controls,
/// the soft hyphen, TAG characters), private-use (Co) and unassigned (Cn)
/// code points, line and paragraph separators (Zl, Zp), surrogates, and the
/// default-ignorable letters and marks that render as nothing (variation
/// selectors, Hangul fillers, the combining grapheme joiner).
pub fn is_hidden(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    use GeneralCategory as G;
    matches!(
        get_general_category(c),
        G::Control
            | G::Format
            | G::PrivateUse
            | G::Unassigned
            | G::LineSeparator
            | G::ParagraphSeparator
            | G::Surrogate
    ) || is_ignorable_letter_or_mark(c)
}

/// The Default_Ignorable_Code_Points (Unicode's DerivedCoreProperties)
/// whose category is a letter or a mark, not Cf or Cn: they draw nothing,
/// yet a general category alone would pass them as text.
fn is_ignorable_letter_or_mark(c: char) -> bool {
    matches!(c,
        '\u{034f}'                      // combining grapheme joiner
        | '\u{115f}' | '\u{1160}'        // Hangul choseong and jungseong fillers
        | '\u{17b4}' | '\u{17b5}'        // Khmer inherent vowels
        | '\u{180b}'..='\u{180f}'        // Mongolian free variation selectors
        | '\u{3164}' | '\u{ffa0}'        // Hangul filler, halfwidth Hangul filler
        | '\u{fe00}'..='\u{fe0f}'        // variation selectors
        | '\u{e0000}'..='\u{e0fff}'      // TAG characters, variation selectors supplement
    )
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

/// A command for a person to run, `line` (shell-quoted already) behind the
/// prefix that makes it work as printed (`sudo -u agentcron`, in the
/// README's deployment; docs/CONTRACT.md §17).
pub fn command_line(prefix: &[String], line: &str) -> String {
    match prefix.is_empty() {
        true => line.to_string(),
        false => format!("{} {line}", shell_words::join(prefix)),
    }
}

/// The first `max_chars` characters of `text`.
pub fn head(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// Characters that reorder displayed text (Trojan Source): refused in
/// keys, escaped (as `hidden`) wherever text is shown.
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
    fn every_character_a_person_cannot_see_is_escaped() {
        for (hidden, shown) in [
            ("a\u{200b}b", "a\\u{200b}b"),                  // zero-width space (Cf)
            ("\u{e0041}\u{e007f}", "\\u{e0041}\\u{e007f}"), // TAG characters
            ("\u{e0080}", "\\u{e0080}"),                    // unassigned in the TAG block
            ("a\u{2028}b\u{2029}", "a\\u{2028}b\\u{2029}"), // Zl, Zp
            (
                "\u{3164}\u{115f}\u{1160}\u{ffa0}",
                "\\u{3164}\\u{115f}\\u{1160}\\u{ffa0}",
            ),
            ("soft\u{ad}hyphen", "soft\\u{00ad}hyphen"),
            ("\u{2764}\u{fe0f}", "\u{2764}\\u{fe0f}"), // a variation selector
            ("\u{e0100}", "\\u{e0100}"),               // variation selectors supplement
            ("\u{e000}\u{f8ff}", "\\u{e000}\\u{f8ff}"), // private use (Co)
            ("\u{10ffff}", "\\u{10ffff}"),             // a noncharacter (Cn)
            ("\u{0378}", "\\u{0378}"),                 // unassigned (Cn)
            ("\u{feff}\u{2060}\u{034f}", "\\u{feff}\\u{2060}\\u{034f}"),
        ] {
            assert_eq!(escape(hidden), shown, "{hidden:?}");
        }
        // Visible text of every script passes as it is, accents included.
        for plain in [
            "naïve café",
            "Ωμέγα",
            "привет",
            "值班",
            "한국어",
            "🙂",
            "a\u{301}",
        ] {
            assert_eq!(escape(plain), plain);
        }
        assert_eq!(clip(&escape("ab\u{200b}cd"), 6), "ab…");
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
