//! US Social Security numbers: 3-2-4 digits (dashed or spaced), or nine digits after an SSN key or word; never
//! issued numbers refused: python-stdnum's rules (area 000, 666 or 9xx, group 00, serial 0000, and the numbers once
//! printed on wallet inserts and in advertisements), applied to the digits alone.

pub const SHAPE: [usize; 3] = [3, 2, 4];
const NEVER_ISSUED: [&str; 3] = ["078051120", "219099999", "457555462"];

pub fn is_separator(gap: &[char]) -> bool {
    matches!(gap, ['-' | ' ' | '\u{a0}'])
}

pub fn valid(digits: &str) -> bool {
    digits.len() == 9
        && !matches!(&digits[..3], "000" | "666")
        && !digits.starts_with('9')
        && &digits[3..5] != "00"
        && &digits[5..] != "0000"
        && !NEVER_ISSUED.contains(&digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_that_may_have_been_issued() {
        for digits in ["536904399", "123456789", "001010001", "899999999", "665999999", "667010001"] {
            assert!(valid(digits), "{digits}");
        }
    }

    #[test]
    fn never_issued_areas_groups_and_serials() {
        for digits in [
            "000123456", // area 000
            "666123456", // area 666
            "900123456", // 9xx: ITINs, never SSNs
            "999999999",
            "123006789", // group 00
            "123450000", // serial 0000
            "078051120", // the Woolworth wallet insert
            "219099999", // the Social Security card pamphlet's
            "457555462", // Lifelock's advertised number
        ] {
            assert!(!valid(digits), "{digits}");
        }
    }

    #[test]
    fn nine_digits_only() {
        assert!(!valid(""));
        assert!(!valid("53690439"));
        assert!(!valid("5369043990"));
    }

    #[test]
    fn one_dash_space_or_no_break_space_between_groups() {
        for gap in [&['-'][..], &[' '], &['\u{a0}']] {
            assert!(is_separator(gap), "{gap:?}");
        }
        for gap in [&[][..], &['.'], &['/'], &['-', '-'], &[' ', '-'], &['\u{2009}'], &['\u{ff0d}']] {
            assert!(!is_separator(gap), "{gap:?}");
        }
    }
}
