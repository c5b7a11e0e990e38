//! Payment card numbers: a card brand's issuer range (IIN) and length, then the Luhn checksum.
//!
//! Luhn alone passes one digit run in ten: epoch milliseconds, IMEIs, ISBNs and EANs, loyalty references. Every card
//! scheme issues from its own prefixes with its own lengths, and those prefixes exclude all of these (1, 7, 9, the
//! GS1 prefixes 0, 76-99), so a run must fit one before its checksum is looked at.

/// (lowest prefix, highest prefix, lengths): the prefixes have the same number of digits.
const BRANDS: &[(&str, &str, &[usize])] = &[
    ("4", "4", &[13, 16, 19]),           // Visa
    ("51", "55", &[16]),                 // Mastercard
    ("2221", "2720", &[16]),             // Mastercard 2-series
    ("2200", "2204", &[16, 17, 18, 19]), // Mir
    ("34", "34", &[15]),                 // American Express
    ("37", "37", &[15]),
    ("300", "305", &[14, 15, 16, 17, 18, 19]), // Diners Club
    ("36", "36", &[14, 15, 16, 17, 18, 19]),
    ("38", "39", &[14, 15, 16, 17, 18, 19]),
    ("3528", "3589", &[16, 17, 18, 19]), // JCB
    ("6011", "6011", &[16, 17, 18, 19]), // Discover
    ("644", "649", &[16, 17, 18, 19]),
    ("65", "65", &[16, 17, 18, 19]),
    ("62", "62", &[16, 17, 18, 19]), // UnionPay
    ("50", "50", &[16, 17, 18, 19]), // Maestro (its rare 12-15 digit numbers collide with EAN-13s)
    ("56", "69", &[16, 17, 18, 19]),
];
/// How cards are printed: groups of four (the last shorter), or 4-6-5 (15 digits), 4-6-4 (14), 4-4-5 and 4-3-3-3 (13).
const SPLIT_GROUPINGS: &[&[usize]] = &[&[4, 6, 5], &[4, 6, 4], &[4, 4, 5], &[4, 3, 3, 3]];
pub const MIN_DIGITS: usize = 13;
pub const MAX_DIGITS: usize = 19;

/// The Luhn checksum: every second digit from the right doubled (its digits summed).
pub fn luhn(digits: &str) -> bool {
    let sum: u32 = digits
        .bytes()
        .rev()
        .enumerate()
        .map(|(k, b)| {
            let d = u32::from(b - b'0');
            if k % 2 == 1 { [0, 2, 4, 6, 8, 1, 3, 5, 7, 9][d as usize] } else { d }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Whether a card brand issues numbers of this length from this prefix.
fn branded(digits: &str) -> bool {
    BRANDS
        .iter()
        .any(|&(low, high, lengths)| lengths.contains(&digits.len()) && (low..=high).contains(&&digits[..low.len()]))
}

/// Whether digit groups of these sizes are how a card number is printed (or one compact run).
fn printed(sizes: &[usize]) -> bool {
    match sizes {
        [_] => true,
        [head @ .., last] => {
            SPLIT_GROUPINGS.contains(&sizes) || (head.iter().all(|&s| s == 4) && (1..=4).contains(last))
        }
        [] => false,
    }
}

pub fn card(digits: &str, sizes: &[usize]) -> bool {
    (MIN_DIGITS..=MAX_DIGITS).contains(&digits.len()) && printed(sizes) && branded(digits) && luhn(digits)
}
