//! The words that say what a bare number is: a phone key or word before compact national digits, an SSN key or word
//! before nine digits, a version word before a dotted quad. Nothing else tells `0301234567` or `613288261` from the
//! order numbers, counters and ids that look the same; with the word they are what it says.
//!
//! The word must come right before the number: at most a few characters between, and no digit (in `"phone": "+49 30
//! 1234", "ts": 1712345678` the phone word belongs to the phone, not to the timestamp after it).

use std::sync::LazyLock;

use regex::Regex;

use crate::text::{Text, lowercase, unicode_age};

const WINDOW: usize = 40;
// Python's `\s` (str.isspace), which the words were written with.
const SPACE: &str =
    r"[\t\n\x0B\x0C\r\x1C-\x1F \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]";
const BETWEEN: &str = r"[^\d\n]{0,16}\z";

/// Lower case: matched in the lowered text. Python's `\w` (letters, numbers, underscore) and `\d` are those of its
/// Unicode version.
fn words(alternatives: &str, after: &str) -> Regex {
    let age = unicode_age();
    let pattern = format!("(?:{alternatives}){after}")
        .replace(r"\w", &format!(r"[\p{{L}}\p{{N}}_&&\p{{Age={age}}}]"))
        .replace(r"\s", SPACE)
        .replace(r"\d", &format!(r"[\d&&\p{{Age={age}}}]"));
    Regex::new(&pattern).expect("the context words compile")
}

static PHONE: LazyLock<Regex> = LazyLock::new(|| {
    words(
        concat!(
            r"phone|tel|cell|fax|call|sms|whatsapp|msisdn|handy|telefon\w*|rufnummer|mobil\w*|t[ée]l[ée]phone|t[ée]l|",
            r"portable|tel[ée]fono|tfno|m[óo]vil|celular|cellulare|telem[óo]vel|telefone|telefoon\w*|mobiel|kom[óo]rka|",
            r"电话|電話|手机|手機|携帯|전화|휴대폰|연락처|телефон|тел",
        ),
        BETWEEN,
    )
});
static SSN: LazyLock<Regex> =
    LazyLock::new(|| words(r"ssn|social[\s_-]*security(?:[\s_-]*(?:number|no))?|soc\.?\s*sec\.?", BETWEEN));
static VERSION: LazyLock<Regex> = LazyLock::new(|| words(r"version|ver\.", r#"[\s:=("'v/]{0,4}\z"#));

/// Whether the pattern ends at `at`, its word not inside a longer word ("hotel", "recall") unless as a camelCase
/// key's part (oncallPhone, customerSSN).
fn before(pattern: &Regex, text: &Text, at: usize) -> bool {
    let window = text.slice(at.saturating_sub(WINDOW), at);
    text.count(window.len());
    let mut lowered = String::with_capacity(window.len());
    for &c in window {
        match lowercase(c) {
            Some(lower) => lowered.push(lower),
            None => return false, // a letter whose lower case is longer (İ): rare enough to skip
        }
    }
    let mut from = 0;
    loop {
        text.count(1 + window.len());
        let Some(found) = pattern.find_at(&lowered, from) else { return false };
        let start = lowered[..found.start()].chars().count();
        let word_start = lowered[found.start()..].chars().next().expect("a match starts at a character");
        match start.checked_sub(1).map(|k| (window[k], lowered[..found.start()].chars().next_back())) {
            None => return true,
            Some((_, Some(lower))) if !lower.is_ascii_lowercase() => return true,
            Some((before, _)) if before.is_lowercase() && window[start].is_uppercase() => return true,
            _ => from = found.start() + word_start.len_utf8(),
        }
    }
}

pub fn says_phone(text: &Text, at: usize) -> bool {
    before(&PHONE, text, at)
}

pub fn says_ssn(text: &Text, at: usize) -> bool {
    before(&SSN, text, at)
}

pub fn says_version(text: &Text, at: usize) -> bool {
    before(&VERSION, text, at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{chars, unicode};

    /// Whether `says` holds for a number written right after `before`.
    fn said(says: fn(&Text, usize) -> bool, before: &str) -> bool {
        unicode();
        let chars = chars(&format!("{before}0301234567"));
        says(&Text::new(&chars), before.chars().count())
    }

    #[test]
    fn phone_words_and_keys_in_the_corpuss_languages() {
        for before in [
            "phone ",
            r#""phone": ""#,
            "Tel. ",
            "TEL;TYPE=CELL:",
            "Handy: ",
            "Telefonnummer: ",
            "téléphone : ",
            "móvil ",
            "telefoon ",
            "電話\u{ff1a}",
            "手机：",
            "전화 ",
            "телефон ",
            "oncallPhone: \"",
            "call me on ",
            "MOBILE ",
        ] {
            assert!(said(says_phone, before), "{before:?}");
        }
    }

    #[test]
    fn no_phone_word() {
        for before in [
            "",
            r#""order": ""#,
            "hotel ",
            "recall ",
            r#""phone": "+49 30 1", "ts": "#, // a digit between the word and the number
            "phone\n",
            "phone: a long sentence of more than sixteen ", // too far from the number
            "İphone ",                                      // İ lowers to two characters: the window is skipped
        ] {
            assert!(!said(says_phone, before), "{before:?}");
        }
    }

    #[test]
    fn the_window_is_forty_characters_back() {
        let far = format!("phone{}", " ".repeat(WINDOW));
        assert!(!said(says_phone, &far));
        assert!(said(says_phone, &format!("{}phone ", "x ".repeat(100))));
    }

    #[test]
    fn ssn_words_and_keys() {
        for before in ["ssn ", r#"{"ssn": ""#, "SSN is ", "customerSSN=", "Social Security Number: ", "soc. sec. "] {
            assert!(said(says_ssn, before), "{before:?}");
        }
        for before in ["member ", "badge ", "lessn ", "phone "] {
            assert!(!said(says_ssn, before), "{before:?}");
        }
    }

    #[test]
    fn version_words() {
        for before in ["version ", "Version: ", "ver. ", "AssemblyVersion(\"", "version=v", "VERSION/"] {
            assert!(said(says_version, before), "{before:?}");
        }
        for before in ["from ", "version is now ", "conversion "] {
            assert!(!said(says_version, before), "{before:?}");
        }
    }
}
