//! Words that are not what they look like (docs/CONTRACT.md §17): an
//! agent's instruction read by a person who confirms it may say
//! "аpprovеd" with two Cyrillic letters, or "рау" in Cyrillic alone, and
//! read as English. `lookalikes` finds such words and says, in one line,
//! which letters they hold.
//!
//! The detection is Unicode's own (UTS 39, through `unicode-security`): a
//! word's resolved script set (Japanese mixing Han and kana is one
//! script), each letter's confusable prototype, and a word's skeleton. Two
//! findings:
//! - a word that mixes scripts, when a letter of the fewer is confusable
//!   with another script's (so "用Python写" passes, "pаypal" does not);
//! - a word of one script, not ASCII, whose letters' prototypes are all
//!   ASCII: it reads
//!   as a Latin word it is not (Cyrillic "рау", fullwidth "ｐａｙ",
//!   "admın" with a dotless i). Accented words keep their marks in the
//!   skeleton and pass.

use unicode_script::{Script, UnicodeScript};
use unicode_security::{is_potential_mixed_script_confusable_char, skeleton, MixedScript};

use super::{is_hidden, quoted};

/// How many words one warning names; more are counted.
const WORDS_NAMED: usize = 4;
/// How many letters a word's finding names.
const LETTERS_NAMED: usize = 6;

/// The one-line warning `text` deserves, without its `warning: ` label:
/// `"аpprovеd" mixes Latin and Cyrillic letters (а U+0430, е U+0435)`;
/// None when every word is what it looks like.
pub fn lookalikes(text: &str) -> Option<String> {
    if text.is_ascii() {
        return None;
    }
    // Each distinct word once: a repeated word is one finding, looked at once.
    let mut seen = std::collections::HashSet::new();
    let findings: Vec<String> = words(text)
        .filter(|w| seen.insert(*w))
        .filter_map(finding)
        .collect();
    if findings.is_empty() {
        return None;
    }
    let mut line = findings
        .iter()
        .take(WORDS_NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if findings.len() > WORDS_NAMED {
        line.push_str(&format!(
            "; and {} more such word(s)",
            findings.len() - WORDS_NAMED
        ));
    }
    Some(line)
}

/// The words of `text`: runs of letters, digits and marks. A hidden
/// character inside a run (a zero-width space, a TAG character) stays in
/// it, as the person reads the word whole; a line separator ends it.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let in_word = |c: char| {
        c.is_alphanumeric() || is_mark(c) || (is_hidden(c) && !c.is_whitespace() && !c.is_control())
    };
    text.split(move |c: char| !in_word(c))
        .filter(|w| !w.is_ascii() && w.chars().any(char::is_alphanumeric))
}

fn is_mark(c: char) -> bool {
    use unicode_general_category::{get_general_category, GeneralCategory as G};
    matches!(
        get_general_category(c),
        G::NonspacingMark | G::SpacingMark | G::EnclosingMark
    )
}

/// What is wrong with `word`, if anything.
fn finding(word: &str) -> Option<String> {
    // What the person sees of it: a hidden character is no letter (a
    // Hangul filler is a letter to Unicode, yet draws nothing).
    let letters: Vec<char> = word
        .chars()
        .filter(|c| c.is_alphanumeric() && !is_hidden(*c))
        .collect();
    if !word.is_single_script() {
        let scripts = scripts_by_count(&letters);
        let main = scripts.first()?.0;
        let odd: Vec<char> = letters
            .iter()
            .copied()
            .filter(|c| script_of(*c) != Some(main))
            .collect();
        if !odd
            .iter()
            .any(|c| is_potential_mixed_script_confusable_char(*c))
        {
            return None;
        }
        let names: Vec<&str> = scripts.iter().map(|(s, _)| s.full_name()).collect();
        return Some(format!(
            "{} mixes {} letters ({})",
            quoted(word),
            and_list(&names),
            named(&odd)
        ));
    }
    // Each letter as the one it is confusable with (ASCII as itself: the
    // skeleton would also read "m" as "rn").
    let looks: String = word
        .chars()
        .filter(|c| !is_hidden(*c))
        .map(|c| match c.is_ascii() {
            true => c.to_string(),
            false => skeleton(c.encode_utf8(&mut [0; 4])).collect(),
        })
        .collect();
    if !looks.is_ascii() || !looks.chars().any(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let odd: Vec<char> = letters.iter().copied().filter(|c| !c.is_ascii()).collect();
    if odd.is_empty() {
        // Latin letters with hidden characters between them: escaped, not
        // look-alikes.
        return None;
    }
    Some(format!(
        "{} looks like the Latin {} ({})",
        quoted(word),
        quoted(&looks),
        named(&odd)
    ))
}

/// The script of a letter; None for those every script uses (digits,
/// marks).
fn script_of(c: char) -> Option<Script> {
    match c.script() {
        Script::Common | Script::Inherited | Script::Unknown => None,
        script => Some(script),
    }
}

/// The scripts of `letters`, the most used first (the first seen on a tie).
fn scripts_by_count(letters: &[char]) -> Vec<(Script, usize)> {
    let mut counts: Vec<(Script, usize)> = Vec::new();
    for script in letters.iter().filter_map(|c| script_of(*c)) {
        match counts.iter_mut().find(|(s, _)| *s == script) {
            Some((_, n)) => *n += 1,
            None => counts.push((script, 1)),
        }
    }
    // A stable sort keeps the first seen first among equals.
    counts.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    counts
}

/// "а U+0430, е U+0435": each distinct letter once, in order.
fn named(letters: &[char]) -> String {
    let mut seen = Vec::new();
    for c in letters {
        if !seen.contains(c) {
            seen.push(*c);
        }
    }
    let mut text = seen
        .iter()
        .take(LETTERS_NAMED)
        .map(|c| format!("{c} U+{:04X}", *c as u32))
        .collect::<Vec<_>>()
        .join(", ");
    if seen.len() > LETTERS_NAMED {
        text.push_str(", …");
    }
    text
}

/// "Latin and Cyrillic", "Latin, Greek and Cyrillic".
fn and_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_that_mixes_cyrillic_into_latin_is_named_with_its_letters() {
        assert_eq!(
            lookalikes("mark it \u{430}pprov\u{435}d today").as_deref(),
            Some(r#""аpprovеd" mixes Latin and Cyrillic letters (а U+0430, е U+0435)"#)
        );
    }

    #[test]
    fn a_word_wholly_of_lookalikes_reads_as_the_latin_word_it_is_not() {
        assert_eq!(
            lookalikes("\u{440}\u{430}\u{443} now").as_deref(),
            Some(r#""рау" looks like the Latin "pay" (р U+0440, а U+0430, у U+0443)"#)
        );
        let fullwidth = lookalikes("\u{ff50}\u{ff41}\u{ff59}").unwrap();
        assert!(
            fullwidth.contains(r#"looks like the Latin "pay""#),
            "{fullwidth}"
        );
        assert!(lookalikes("adm\u{131}n").unwrap().contains("\"admin\""));
    }

    #[test]
    fn ordinary_text_of_any_script_passes() {
        for text in [
            "summarize the inbox",
            "naïve café Ångström",
            "привет, мир",
            "Ωμέγα",
            "值班 on-call channel",
            "用Python写",
            "日本語のテキスト",
            "한국어 텍스트",
            "🙂 ok",
        ] {
            assert_eq!(lookalikes(text), None, "{text}");
        }
    }

    #[test]
    fn a_hidden_character_stays_in_its_word_and_is_shown_escaped() {
        let said = lookalikes("\u{430}pp\u{200b}roved").unwrap();
        assert!(said.starts_with(r#""аpp\u{200b}roved" mixes"#), "{said}");
    }

    #[test]
    fn hidden_characters_around_plain_letters_are_no_lookalike() {
        assert_eq!(
            lookalikes("x.\u{200b}\u{e0041}\u{2028}and forward\u{3164}every"),
            None
        );
    }

    #[test]
    fn a_repeated_word_is_named_once() {
        let said = lookalikes(&"\u{430}pprov\u{435}d ".repeat(50)).unwrap();
        assert_eq!(said.matches("mixes").count(), 1, "{said}");
    }

    #[test]
    fn many_words_make_one_line() {
        let words: Vec<String> = (0..6).map(|i| format!("\u{430}b{i}")).collect();
        let said = lookalikes(&words.join(" ")).unwrap();
        assert!(!said.contains('\n'));
        assert!(said.ends_with("; and 2 more such word(s)"), "{said}");
    }
}
