//! IBANs of every country in python-stdnum's IBAN registry, any case, compact or in groups of four: the country's
//! BBAN structure (so its length) and the ISO 13616 mod-97 checksum.

use std::collections::{BTreeMap, HashMap};

use regex::Regex;

use crate::text::{Text, ascii_digit, is_digit, is_space};

/// A run of characters of one kind in a BBAN: `n` digits, `a` upper-case letters, `c` either.
#[derive(Clone, Copy)]
struct Field {
    count: usize,
    kind: char,
}

/// Country code -> its BBAN (the IBAN after the country code and check digits), as the registry writes it
/// (`8!n10!n`: eight digits, then ten).
pub struct Registry {
    structures: HashMap<[char; 2], Vec<Field>>,
}

/// No IBAN is shorter than Norway's.
const MIN_LENGTH: usize = 15;

impl Registry {
    /// `formats`: country code -> BBAN format (stdnum's registry's `bban`).
    pub fn new(formats: HashMap<String, String>) -> Result<Self, String> {
        let field = Regex::new(r"(\d+)!([nac])").expect("the field pattern compiles");
        let mut structures = HashMap::new();
        for (country, format) in formats {
            let code: Vec<char> = country.chars().collect();
            let [first, second] = code[..] else { return Err(format!("{country:?} is no country code")) };
            let fields = field
                .captures_iter(&format)
                .map(|c| Field { count: c[1].parse().unwrap_or(usize::MAX), kind: c[2].chars().next().unwrap_or('n') })
                .collect();
            structures.insert([first, second], fields);
        }
        Ok(Self { structures })
    }

    /// Whether two ASCII letters are a country code of the registry, in any case.
    pub fn is_country(&self, first: char, second: char) -> bool {
        self.structures.contains_key(&[first.to_ascii_uppercase(), second.to_ascii_uppercase()])
    }

    /// The BBAN structures as regexes (for tests drawing IBANs of each country).
    pub fn patterns(&self) -> BTreeMap<String, String> {
        let class = |kind| match kind {
            'n' => "[0-9]",
            'a' => "[A-Z]",
            _ => "[A-Z0-9]",
        };
        let pattern = |fields: &[Field]| fields.iter().map(|f| format!("{}{{{}}}", class(f.kind), f.count)).collect();
        self.structures.iter().map(|(code, fields)| (code.iter().collect(), pattern(fields))).collect()
    }

    /// An IBAN without spaces, upper case: its BBAN fits its country's structure and its checksum holds.
    pub fn valid(&self, compact: &[char]) -> bool {
        let Some(fields) = compact.get(..2).and_then(|code| self.structures.get(code)) else { return false };
        if !compact[2..].iter().take(2).all(|&c| is_digit(c)) || compact.len() < 4 {
            return false;
        }
        let mut bban = compact[4..].iter();
        for field in fields {
            let fits = |c: &char| match field.kind {
                'n' => c.is_ascii_digit(),
                'a' => c.is_ascii_uppercase(),
                _ => c.is_ascii_uppercase() || c.is_ascii_digit(),
            };
            if bban.by_ref().take(field.count).filter(|c| fits(c)).count() != field.count {
                return false;
            }
        }
        if bban.next().is_some() {
            return false;
        }
        // The check digits and country code moved to the end; letters count as 10 (A) to 35 (Z).
        let remainder = compact[4..].iter().chain(&compact[..4]).fold(0u32, |r, &c| {
            if c.is_ascii_uppercase() {
                (r * 100 + c as u32 - 55) % 97
            } else {
                (r * 10 + ascii_digit(c) as u32 - 48) % 97
            }
        });
        remainder == 1
    }

    /// Where the IBAN written at text[start..end] ends, if it is one. The candidate may have taken a word after a
    /// spaced IBAN for its last group (`AT26 1076 7286 9950 5383 from`): shorter ones, group by group, are tried.
    pub fn end(&self, text: &Text, start: usize, mut end: usize) -> Option<usize> {
        while end - start >= MIN_LENGTH {
            let written = text.slice(start, end);
            text.count(written.len());
            let compact: Vec<char> = written.iter().filter(|&&c| !is_space(c)).flat_map(|c| c.to_uppercase()).collect();
            if self.valid(&compact) {
                return Some(end);
            }
            end = start + written.iter().rposition(|&c| is_space(c))?;
        }
        None
    }
}
