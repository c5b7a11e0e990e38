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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_accepts_the_test_numbers_of_every_brand() {
        for number in [
            "4111111111111111", // Visa
            "4222222222222",    // Visa, 13 digits
            "5555555555554444", // Mastercard
            "2223003122003222", // Mastercard 2-series
            "378282246310005",  // American Express
            "36227206271667",   // Diners Club
            "6011111111111117", // Discover
            "3530111333300000", // JCB
            "6200000000000005", // UnionPay
        ] {
            assert!(luhn(number), "{number}");
            assert!(card(number, &[number.len()]), "{number}");
        }
        let visa_19 = with_check_digit("411111111111111111");
        assert!(card(&visa_19, &[19]) && card(&visa_19, &[4, 4, 4, 4, 3]));
    }

    #[test]
    fn luhn_refuses_a_changed_digit_and_swapped_neighbours() {
        assert!(!luhn("4111111111111112"));
        assert!(!luhn("4111111111111121"));
        assert!(luhn("79927398713") && !luhn("79927398710")); // the classic example
        assert!(!luhn("97927398713")); // neighbours swapped (not 0 and 9: Luhn misses that one)
        assert!(luhn("0000000000000000"));
        assert!(luhn(""), "no digits sum to zero (the callers check lengths first)");
    }

    #[test]
    fn a_luhn_valid_run_without_a_brands_prefix_is_no_card() {
        let imei = "356938035643809";
        assert!(luhn(imei) && !card(imei, &[15]), "an IMEI: Luhn-valid, 35 is no card prefix of 15 digits");
        for body in [
            "173568960000",      // epoch milliseconds
            "13349781900000000", // an LDAP timestamp's first digits
            "978030640615",      // an ISBN's
            "000000000000000",   // GS1 0
            "700000000000000",   // 7: petroleum cards, loyalty numbers
            "940010000000000",   // USPS tracking digits
            "800000000000000",   // 8: telecom and airline numbers, no card brand
        ] {
            let number = with_check_digit(body);
            assert!(!card(&number, &[number.len()]), "{number}");
        }
    }

    #[test]
    fn a_brand_issues_only_its_lengths() {
        assert!(!card("411111111111116", &[15]), "Visa has no 15-digit numbers");
        assert!(!card("37828224631000", &[14]), "American Express has 15 digits only");
        assert!(!card("555555555555444", &[15]), "Mastercard: 16 digits only");
        assert!(!card("5555555555554444000", &[19]));
    }

    #[test]
    fn prefixes_at_the_edges_of_their_ranges() {
        for (prefix, branded) in [
            ("2220", false),
            ("2221", true),
            ("2720", true),
            ("2721", false),
            ("2205", false),
            ("3527", false),
            ("3528", true),
            ("3589", true),
            ("3590", false),
            ("6440", true),
            ("6499", true),
            ("5000", true),
            ("5100", true),
            ("5599", true),
            ("5600", true),
            ("6999", true),
            ("7000", false),
            ("1000", false),
            ("3060", false),
            ("3050", true),
        ] {
            let number = with_check_digit(&format!("{prefix}00000000000"));
            assert_eq!(card(&number, &[16]), branded, "{number}");
        }
    }

    #[test]
    fn how_a_card_is_printed() {
        assert!(printed(&[16]));
        assert!(printed(&[4, 4, 4, 4]));
        assert!(printed(&[4, 4, 4, 4, 3]), "19 digits: the last group shorter");
        assert!(printed(&[4, 6, 5]) && printed(&[4, 6, 4]) && printed(&[4, 4, 5]) && printed(&[4, 3, 3, 3]));
        assert!(!printed(&[]));
        assert!(!printed(&[2, 4, 4, 4, 2]), "groups no issuer prints");
        assert!(!printed(&[4, 4, 4, 4, 0]));
        assert!(!printed(&[8, 8]));
        assert!(!card("4111111111111111", &[8, 8]));
        assert!(card("4111111111111111", &[4, 4, 4, 4]));
    }

    #[test]
    fn lengths_outside_every_brand() {
        assert!(!card("", &[]));
        assert!(!card("4", &[1]));
        assert!(!card(&with_check_digit("41111111111"), &[12]), "12 digits");
        assert!(!card(&with_check_digit("4111111111111111111"), &[20]), "20 digits");
    }

    /// The digits and the check digit that makes them Luhn-valid.
    fn with_check_digit(body: &str) -> String {
        (0..10).map(|d| format!("{body}{d}")).find(|n| luhn(n)).expect("one check digit fits")
    }
}
