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
