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

#[cfg(test)]
mod tests {
    use crate::testing::{chars, registry, unicode};
    use crate::text::Text;

    fn valid(iban: &str) -> bool {
        unicode();
        registry().valid(&chars(iban))
    }

    /// Where the IBAN written from the start of `text` ends.
    fn end(text: &str) -> Option<usize> {
        unicode();
        let chars = chars(text);
        registry().end(&Text::new(&chars), 0, chars.len())
    }

    #[test]
    fn the_checksum_and_structure_of_each_country() {
        for iban in [
            "DE89370400440532013000",
            "GB82WEST12345698765432",
            "NO9386011117947",
            "SA0380000000608010167519",
            "AT611904300234573201",
            "FR1420041010050500013M02606",
            "NL91ABNA0417164300",
        ] {
            assert!(valid(iban), "{iban}");
        }
    }

    #[test]
    fn mod_97_catches_a_changed_digit_and_swapped_neighbours() {
        assert!(!valid("DE89370400440532013001"));
        assert!(!valid("DE98370400440532013000"), "check digits swapped");
        assert!(!valid("DE89370400440532031000"), "two digits swapped");
        assert!(!valid("DE00370400440532013000"));
        assert!(!valid("GB82WEST12345698765433"));
    }

    #[test]
    fn the_bban_must_fit_its_countrys_structure() {
        assert!(!valid("DE8937040044053201300"), "one digit short");
        assert!(!valid("DE893704004405320130000"), "one digit more");
        assert!(!valid("GB82W3ST12345698765432"), "a digit where GB has a bank's letters");
        assert!(!valid("GB82west12345698765432"), "lower case: the caller upper-cases");
        assert!(!valid("XX89370400440532013000"), "no such country");
        assert!(!valid("DEXX370400440532013000"), "check digits are digits");
    }

    #[test]
    fn short_and_empty_input() {
        for iban in ["", "D", "DE", "DE8", "DE89"] {
            assert!(!valid(iban), "{iban:?}");
        }
    }

    #[test]
    fn full_width_check_digits_are_read_as_digits() {
        // The check digits are read with Python's `\d`, as the rest of the scan reads digits.
        assert!(valid("DE\u{ff18}\u{ff19}370400440532013000"));
        assert!(!valid("DE89\u{ff13}70400440532013000"), "the BBAN's digits are ASCII");
    }

    #[test]
    fn countries_in_any_case() {
        let registry = registry();
        assert!(registry.is_country('D', 'E') && registry.is_country('d', 'e') && registry.is_country('n', 'O'));
        assert!(!registry.is_country('X', 'X') && !registry.is_country('E', 'D'));
        assert!(!registry.is_country('\u{ff24}', '\u{ff25}'), "full-width letters are no country code");
    }

    #[test]
    fn the_bban_structures_as_regexes() {
        let patterns = registry().patterns();
        assert_eq!(patterns["DE"], "[0-9]{8}[0-9]{10}");
        assert_eq!(patterns["GB"], "[A-Z]{4}[0-9]{6}[0-9]{8}");
        assert_eq!(patterns["SA"], "[0-9]{2}[A-Z0-9]{18}");
        assert_eq!(patterns.len(), 7);
    }

    #[test]
    fn a_bad_country_code_is_refused() {
        for code in ["D", "DEU", ""] {
            let formats = [(code.to_string(), "8!n10!n".to_string())].into_iter().collect();
            assert!(super::Registry::new(formats).is_err(), "{code:?}");
        }
    }

    #[test]
    fn a_word_after_a_spaced_iban_is_no_group_of_it() {
        assert_eq!(end("DE89 3704 0044 0532 0130 00"), Some(27));
        assert_eq!(end("de89 3704 0044 0532 0130 00 from"), Some(27), "any case");
        assert_eq!(end("AT61 1904 3002 3457 3201 from"), Some(24));
        assert_eq!(end("DE89\u{a0}3704\u{a0}0044\u{a0}0532\u{a0}0130\u{a0}00"), Some(27), "no-break spaces");
        assert_eq!(end("DE89370400440532013000"), Some(22));
        assert_eq!(end("DE89 3704 0044 0532 0130 01 from"), None, "a wrong checksum");
        assert_eq!(end("DE89 3704"), None, "shorter than any IBAN");
        assert_eq!(end(""), None);
    }
}
