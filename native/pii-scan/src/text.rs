//! The scanned text as Python sees it, a slice of code points (so every offset is a Python `str` offset), the
//! character classes of the scan, and the work counter that the linear-time test reads.

use std::cell::Cell;
use std::sync::OnceLock;

use regex_syntax::hir::{Class, HirKind};

/// The work a scan does: every character a loop reads, and every regex call, as long as its input (the regex crate
/// matches in linear time).
#[derive(Default)]
pub struct Work(Cell<u64>);

impl Work {
    pub fn count(&self, steps: usize) {
        self.0.set(self.0.get() + steps as u64);
    }

    /// A regex call over `input`.
    pub fn regex(&self, input: &str) {
        self.count(1 + input.len());
    }
}

pub struct Text<'a> {
    chars: &'a [char],
    pub work: Work,
}

impl<'a> Text<'a> {
    pub fn new(chars: &'a [char]) -> Self {
        let work = Work::default();
        work.count(chars.len()); // read into code points
        Self { chars, work }
    }

    pub fn len(&self) -> usize {
        self.chars.len()
    }

    /// text[i], or NUL past the end: NUL is in none of the classes the scan tests, so a missing character and a NUL
    /// read alike (a lookahead at the end of the text).
    pub fn at(&self, i: usize) -> char {
        self.chars.get(i).copied().unwrap_or('\0')
    }

    /// text[i - k], or NUL before the start (a lookbehind at the start of the text).
    pub fn back(&self, i: usize, k: usize) -> char {
        i.checked_sub(k).map_or('\0', |j| self.at(j))
    }

    pub fn slice(&self, start: usize, end: usize) -> &'a [char] {
        &self.chars[start.min(self.len())..end.min(self.len())]
    }

    /// Counts `steps` of work: characters read by a loop.
    pub fn count(&self, steps: usize) {
        self.work.count(steps);
    }

    pub fn work(&self) -> u64 {
        self.work.0.get()
    }

    /// How many characters from `i` on are in the class (at most `most`).
    pub fn run(&self, i: usize, most: usize, class: impl Fn(char) -> bool) -> usize {
        let mut n = 0;
        while n < most && class(self.at(i + n)) {
            n += 1;
        }
        self.count(n + 1);
        n
    }

    /// The run of decimal digits from `i` (Python's `\d`).
    pub fn digits(&self, i: usize) -> usize {
        self.run(i, usize::MAX, is_digit)
    }

    /// text[start..end] as a String (for the regex crate), counted.
    pub fn string(&self, start: usize, end: usize) -> String {
        let chars = self.slice(start, end);
        self.count(chars.len());
        chars.iter().collect()
    }
}

/// The characters of the Unicode version Python's `re` and `str` methods know (`unicodedata.unidata_version`, 14.0 in
/// Python 3.11): a character assigned later is no digit, letter or number to Python, nor lowered, so not here either.
struct Unicode {
    /// The version, as regex classes write it (`14.0`).
    age: String,
    /// `\d` (category Nd): whole blocks of ten digits, 0 to 9.
    decimal: Vec<(char, char)>,
    assigned: Vec<(char, char)>,
}

static UNICODE: OnceLock<Unicode> = OnceLock::new();

fn ranges(class: &str) -> Result<Vec<(char, char)>, String> {
    match regex_syntax::parse(class).map_err(|e| e.to_string())?.kind() {
        HirKind::Class(Class::Unicode(class)) => Ok(class.ranges().iter().map(|r| (r.start(), r.end())).collect()),
        _ => Err(format!("{class} is no class of characters")),
    }
}

/// Reads characters as Python of this Unicode version (`14.0.0`) does, for the rest of the process.
pub fn use_unicode(version: &str) -> Result<(), String> {
    let age = version.splitn(3, '.').take(2).collect::<Vec<_>>().join(".");
    let newer = |e: String| format!("Unicode {version}: newer than the scanner's tables? {e}");
    let unicode = Unicode {
        decimal: ranges(&format!(r"[\d&&\p{{Age={age}}}]")).map_err(newer)?,
        assigned: ranges(&format!(r"\p{{Age={age}}}")).map_err(newer)?,
        age,
    };
    let set = UNICODE.get_or_init(|| unicode);
    if set.age != version.splitn(3, '.').take(2).collect::<Vec<_>>().join(".") {
        return Err(format!("this process reads Unicode {}, not {version}", set.age));
    }
    Ok(())
}

fn unicode() -> &'static Unicode {
    UNICODE.get().expect("a Metadata sets the Unicode version before anything is scanned")
}

/// The Unicode version as a regex class's age (`14.0`).
pub fn unicode_age() -> &'static str {
    &unicode().age
}

fn containing(ranges: &[(char, char)], c: char) -> Option<char> {
    let at = ranges.partition_point(|&(_, end)| end < c);
    ranges.get(at).filter(|&&(start, _)| start <= c).map(|&(start, _)| start)
}

fn decimal_range(c: char) -> Option<char> {
    containing(&unicode().decimal, c)
}

/// The lower case of a character, if it is one character (it is two for İ); a character Python's Unicode does not
/// know yet stays as it is.
pub fn lowercase(c: char) -> Option<char> {
    if !c.is_ascii() && containing(&unicode().assigned, c).is_none() {
        return Some(c);
    }
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(l), None) => Some(l),
        _ => None,
    }
}

pub fn is_digit(c: char) -> bool {
    if c.is_ascii() { c.is_ascii_digit() } else { decimal_range(c).is_some() }
}

/// The ASCII digit of a decimal digit (full-width, Arabic-Indic...).
pub fn ascii_digit(c: char) -> char {
    if c.is_ascii_digit() {
        return c;
    }
    let zero = decimal_range(c).expect("a decimal digit") as u32;
    char::from(b'0' + ((c as u32 - zero) % 10) as u8)
}

/// `[A-Za-z0-9_]`: what glues a value to a word.
pub fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

pub fn is_hex(c: char) -> bool {
    c.is_ascii_hexdigit()
}

/// The letter of a JSON escape (`\n`, `\t`...), which may stand right before a value in raw JSON text.
pub fn is_escape_letter(c: char) -> bool {
    matches!(c, 'n' | 'r' | 't' | 'b' | 'f')
}

/// Between two digit groups of a run: blanks, dashes, dots, slashes and brackets (full-width too). Not a tab,
/// comma, colon or newline: those separate values.
pub fn is_punctuation(c: char) -> bool {
    matches!(
        c,
        ' ' | '\u{a0}' | '\u{2007}' | '\u{2009}' | '\u{202f}' | '\u{3000}' | '-' | '\u{2010}'
            ..='\u{2015}'
                | '\u{2212}'
                | '\u{30fc}'
                | '\u{ff0d}'
                | '.'
                | '\u{ff0e}'
                | '/'
                | '\u{ff0f}'
                | '('
                | ')'
                | '\u{ff08}'
                | '\u{ff09}'
    )
}

pub fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\u{a0}' | '\u{2007}' | '\u{2009}' | '\u{202f}' | '\u{3000}')
}

/// A space inside a written value: `[ \u00a0]`.
pub fn is_space(c: char) -> bool {
    c == ' ' || c == '\u{a0}'
}

pub fn is_open(c: char) -> bool {
    c == '(' || c == '\u{ff08}'
}

pub fn is_close(c: char) -> bool {
    c == ')' || c == '\u{ff09}'
}

pub fn is_plus(c: char) -> bool {
    c == '+' || c == '\u{ff0b}'
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{chars, unicode};

    #[test]
    fn reading_past_either_end_reads_nul() {
        let chars = chars("ab");
        let text = Text::new(&chars);
        assert_eq!((text.at(0), text.at(1), text.at(2), text.at(usize::MAX)), ('a', 'b', '\0', '\0'));
        assert_eq!((text.back(1, 1), text.back(1, 2), text.back(0, 1)), ('a', '\0', '\0'));
        assert_eq!(text.slice(1, 99), ['b']);
        assert_eq!(text.slice(5, 9), [] as [char; 0]);
        let empty = Text::new(&[]);
        assert_eq!((empty.len(), empty.at(0), empty.back(0, 1), empty.work()), (0, '\0', '\0', 0));
    }

    #[test]
    fn the_work_counter_counts_what_is_read() {
        unicode();
        let chars = chars("12345 abc");
        let text = Text::new(&chars);
        assert_eq!(text.work(), 9, "reading the text into code points");
        assert_eq!(text.digits(0), 5);
        assert_eq!(text.work(), 9 + 6, "five digits and the character that ends them");
        assert_eq!(text.run(0, 2, is_digit), 2, "at most `most`");
        assert_eq!(text.work(), 15 + 3);
        assert_eq!(text.string(6, 9), "abc");
        assert_eq!(text.work(), 18 + 3);
        text.work.regex("abcd");
        assert_eq!(text.work(), 21 + 5, "a regex call: one, and its input");
    }

    #[test]
    fn digits_are_pythons_decimal_digits() {
        unicode();
        for c in ['0', '9', '\u{ff10}', '\u{ff19}', '\u{660}', '\u{669}', '\u{966}', '\u{1d7ce}', '\u{1d7ff}'] {
            assert!(is_digit(c), "{c:?}");
        }
        // Superscripts, fractions and circled digits are numbers, not decimal digits; Kawi digits came in Unicode 15.
        for c in ['a', '\0', '²', '½', '\u{2460}', '\u{3007}', '\u{11f50}', '\u{ffff}', '/', ':'] {
            assert!(!is_digit(c), "{c:?}");
        }
    }

    #[test]
    fn every_decimal_digit_has_its_ascii_digit() {
        unicode();
        assert_eq!(ascii_digit('7'), '7');
        assert_eq!(ascii_digit('\u{ff17}'), '7', "full-width");
        assert_eq!(ascii_digit('\u{663}'), '3', "Arabic-Indic");
        assert_eq!(ascii_digit('\u{96f}'), '9', "Devanagari");
        // Mathematical digits: five blocks of ten in one range of code points.
        assert_eq!(ascii_digit('\u{1d7e5}'), '3', "sans-serif three");
        assert_eq!(ascii_digit('\u{1d7ff}'), '9', "monospace nine");
        let all: String = ('\u{ff10}'..='\u{ff19}').map(ascii_digit).collect();
        assert_eq!(all, "0123456789");
    }

    #[test]
    fn lower_case_as_pythons_unicode_has_it() {
        unicode();
        assert_eq!(lowercase('A'), Some('a'));
        assert_eq!(lowercase('Σ'), Some('σ'));
        assert_eq!(lowercase('\u{ff21}'), Some('\u{ff41}'), "full-width A");
        assert_eq!(lowercase('7'), Some('7'));
        assert_eq!(lowercase('İ'), None, "two characters in lower case");
        assert_eq!(lowercase('\u{a7cb}'), Some('\u{a7cb}'), "a capital of Unicode 16: Python 3.11 does not lower it");
    }

    #[test]
    fn one_unicode_version_per_process() {
        unicode();
        assert!(use_unicode("14.0.0").is_ok());
        let other = use_unicode("15.0.0").expect_err("another version");
        assert!(other.contains("reads Unicode 14.0, not 15.0.0"), "{other}");
        let unknown = use_unicode("99.0.0").expect_err("newer than the tables");
        assert!(unknown.contains("newer than the scanner's tables"), "{unknown}");
        assert_eq!(unicode_age(), "14.0");
    }

    #[test]
    fn the_scans_character_classes() {
        for c in [' ', '\u{a0}', '\u{2009}', '\u{202f}', '\u{3000}', '-', '\u{2013}', '\u{2212}', '.', '/', '(', ')'] {
            assert!(is_punctuation(c), "{c:?}");
        }
        for c in ['\u{ff0d}', '\u{ff0e}', '\u{ff0f}', '\u{ff08}', '\u{ff09}', '\u{30fc}'] {
            assert!(is_punctuation(c), "full-width {c:?}");
        }
        for c in ['\t', '\n', ',', ':', ';', '+', '_', 'a', '1', '\0'] {
            assert!(!is_punctuation(c), "{c:?} separates values");
        }
        assert!(is_blank('\u{3000}') && !is_blank('-') && !is_blank('\t'));
        assert!(is_space(' ') && is_space('\u{a0}') && !is_space('\u{2009}'));
        assert!(is_open('(') && is_open('\u{ff08}') && !is_open('['));
        assert!(is_close(')') && is_close('\u{ff09}') && !is_close(']'));
        assert!(is_plus('+') && is_plus('\u{ff0b}') && !is_plus('-'));
        assert!(is_word('_') && is_word('Z') && is_word('0') && !is_word('é') && !is_word('\u{ff10}'));
        assert!(is_hex('f') && is_hex('F') && !is_hex('g') && !is_hex('\u{ff41}'));
        assert!(['n', 'r', 't', 'b', 'f'].into_iter().all(is_escape_letter) && !is_escape_letter('u'));
    }
}
