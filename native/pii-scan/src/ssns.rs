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
