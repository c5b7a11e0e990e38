//! The candidate scan: one pass finds everything that may be a built-in entity (a digit run, a dotted quad, an IBAN's
//! check digits, an IPv6 address's first colon, an email's at-sign), and each candidate goes to its validator.
//!
//! Linear time: only a digit or one of `@ : % \` can start a candidate, and at each the scan tries only that
//! character's shapes, after a constant number of looks around it (a digit inside a run of digits is turned away
//! by the digit before it). A shape reads ahead only over what it then consumes (a run, an address, a domain) or a
//! bounded number of characters, and what a candidate consumes is not scanned again (but for the few characters
//! after an IBAN that its candidate took for a group). The validators see each candidate once and do bounded work
//! per digit group (digit_runs.rs), per character (emails.rs) or per address.

use crate::Entity;
use crate::addresses;
use crate::context::says_version;
use crate::digit_runs::{self, Found};
use crate::emails;
use crate::ibans::Registry;
use crate::phones::National;
use crate::text::{Text, is_digit, is_escape_letter, is_hex, is_plus, is_punctuation, is_space, is_word};

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Run,
    Ipv4,
    Iban,
    Ipv6,
    Email,
    EncodedEmail,
    EscapedEmail,
}

struct Candidate {
    kind: Kind,
    start: usize,
    end: usize,
}

/// Everything the scan validates against: the phone regions asked for (and every country's numbers) and the IBAN
/// registry.
pub struct Checks<'a> {
    pub national: &'a National,
    pub ibans: &'a Registry,
}

/// Every built-in entity in the text as (start, end, entity); spans of different candidates may overlap (an email's
/// local part is read backwards over what came before its at-sign).
pub fn find(text: &Text, checks: &Checks) -> Vec<Found> {
    let mut found = Vec::new();
    let (mut done, mut from) = (0, 0);
    while let Some(candidate) = search(text, checks, from, text.len()) {
        if candidate.start >= done {
            done = read(text, checks, &candidate, &mut found);
        }
        from = candidate.end;
    }
    found
}

/// The first candidate starting in [from, stop).
fn search(text: &Text, checks: &Checks, from: usize, stop: usize) -> Option<Candidate> {
    let mut at = from;
    while at < stop {
        let c = text.at(at);
        text.count(1);
        let found = match c {
            '0'..='9' => digit(text, checks, at),
            ':' => ipv6(text, at).map(|end| (Kind::Ipv6, end)),
            '@' => emails::domain_end(text, at + 1).map(|end| (Kind::Email, end)),
            '%' if text.at(at + 1) == '4' && text.at(at + 2) == '0' => {
                emails::domain_end(text, at + 3).map(|end| (Kind::EncodedEmail, end))
            }
            '\\' if ['u', '0', '0', '4', '0'].iter().enumerate().all(|(k, &u)| text.at(at + 1 + k) == u) => {
                emails::domain_end(text, at + 6).map(|end| (Kind::EscapedEmail, end))
            }
            c if !c.is_ascii() && is_digit(c) => digit(text, checks, at),
            _ => None,
        };
        if let Some((kind, end)) = found {
            return Some(Candidate { kind, start: at, end });
        }
        at += 1;
    }
    None
}

/// Validates one candidate; returns how far the text is read (past the candidate when an IBAN took less of it).
fn read(text: &Text, checks: &Checks, candidate: &Candidate, found: &mut Vec<Found>) -> usize {
    let Candidate { kind, start, end } = *candidate;
    match kind {
        Kind::Run => digit_runs::read(text, start, end, checks.national, found),
        Kind::Ipv4 => {
            let host = addresses::ipv4(text.slice(start, end));
            if host.is_none() && text.at(start) == '0' {
                // 012.20.66.10: a Belgian phone number written with dots
                digit_runs::read(text, start, end, checks.national, found);
            } else if host == Some(true) && !says_version(text, start) {
                found.push((start, end, Entity::IpAddress));
            }
        }
        Kind::Iban => {
            if let Some(iban_end) = checks.ibans.end(text, start - 2, end) {
                found.push((start - 2, iban_end, Entity::Iban));
                if iban_end < end {
                    // It took a word after the IBAN for a group: what that holds is read again.
                    return read_between(text, checks, iban_end, end, found);
                }
            }
        }
        Kind::Ipv6 => addresses::read_ipv6(text, start, end, found),
        Kind::Email | Kind::EncodedEmail | Kind::EscapedEmail => {
            let domain = match kind {
                Kind::Email => start + 1,
                Kind::EncodedEmail => start + 3,
                _ => start + 6,
            };
            let local = emails::local_start(text, start, kind == Kind::EncodedEmail);
            if let Some(local) = local
                && emails::domain(text, domain, end)
            {
                found.push((local, end, Entity::Email));
            }
        }
    }
    end
}

fn read_between(text: &Text, checks: &Checks, start: usize, stop: usize, found: &mut Vec<Found>) -> usize {
    let mut done = start;
    while done < stop {
        match search(text, checks, done, stop) {
            Some(candidate) => done = read(text, checks, &candidate, found),
            None => break,
        }
    }
    done.max(stop)
}

/// A digit that starts something: none inside a run of digits. An IBAN's check digits first, then (if a fifth
/// digit or a separator follows within five digits, and no word is glued to it) a dotted quad or a digit run.
fn digit(text: &Text, checks: &Checks, at: usize) -> Option<(Kind, usize)> {
    if is_digit(text.back(at, 1)) {
        return None;
    }
    if let Some(end) = iban(text, checks.ibans, at) {
        return Some((Kind::Iban, end));
    }
    if !more(text, at + 1) || !free_digit(text, at) {
        return None;
    }
    if let Some(end) = ipv4(text, at) {
        return Some((Kind::Ipv4, end));
    }
    run(text, at).map(|end| (Kind::Run, end))
}

/// What may follow a digit that starts anything: at most four more digits, then a fifth or a separator. Cheap: it
/// turns most numbers in a text (1-5 digits, then a space, quote or letter) away before any other test.
fn more(text: &Text, at: usize) -> bool {
    let n = text.run(at, 4, is_digit);
    let next = text.at(at + n);
    is_digit(next) || is_punctuation(next) || is_plus(next) || next == '%'
}

/// Not glued to a word: no ASCII letter, digit or underscore right before the first digit, unless it is a JSON
/// escape's letter (`\n0301234567` in raw JSON text starts a line with the number) or an encoded plus (`%2B49...`).
fn free_digit(text: &Text, at: usize) -> bool {
    let before = text.back(at, 1);
    !is_word(before)
        || (text.back(at, 2) == '\\' && is_escape_letter(before))
        || (text.back(at, 3) == '%' && text.back(at, 2) == '2' && matches!(before, 'B' | 'b'))
}

/// Where the digit after a gap between digit groups is, if a gap at `at` is followed by a digit: one to three
/// blanks, dashes, dots, slashes or brackets (full-width too), or a lone plus sign or percent-encoded space or plus
/// (form-encoding: 4266+7607+4871+3187, %2B1+713+396+7854).
pub fn gap_digit(text: &Text, at: usize) -> Option<usize> {
    let c = text.at(at);
    let digit_at = if is_punctuation(c) {
        at + text.run(at, 4, is_punctuation)
    } else if is_plus(c) {
        at + 1
    } else if c == '%' && text.at(at + 1) == '2' && matches!(text.at(at + 2), '0' | 'B' | 'b') {
        at + 3
    } else {
        return None;
    };
    (digit_at - at <= 3 && is_digit(text.at(digit_at))).then_some(digit_at)
}

/// `:digit` follows: an hour or a minute (`18 May 2023 17:44`), or a time's seconds.
fn clock(text: &Text, at: usize) -> bool {
    text.at(at) == ':' && is_digit(text.at(at + 1))
}

/// A digit run from its first digit `at` (the plus sign or bracket before it is read back by digit_runs.rs): not
/// inside an identifier (`ORD-2025-769159`, `v1.2`, `0x7f`) or a time (`09:33:51`). A path segment is no
/// identifier: `/customers/4111111111111111` holds a card (but `22/01/2020` is one date, not a run from `01`, and
/// `curl/15.19.101` a product's version). At least six digits, not all in a date (and hour) or a decimal number.
fn run(text: &Text, at: usize) -> Option<usize> {
    let (b1, b2) = (text.back(at, 1), text.back(at, 2));
    if (matches!(b1, '-' | '_' | '.') && is_word(b2))
        || (b1 == '/' && (b2.is_ascii_digit() || b2 == '_'))
        || (b1 == ':' && is_digit(b2))
    {
        return None;
    }
    let digits_end = at + 1 + text.digits(at + 1);
    if b1 == '/' && b2.is_ascii_alphabetic() && text.at(digits_end) == '.' {
        return None;
    }
    if !six_digits(text, at + 1) || date(text, at + 1) || decimal(text, digits_end) || clock(text, digits_end) {
        return None;
    }
    // Groups after the first, while no group is right before `:digit` (the hour of a date: it is not part of it).
    let mut end = digits_end;
    while let Some(digit_at) = gap_digit(text, end) {
        let group_end = digit_at + text.digits(digit_at);
        if clock(text, group_end) {
            break;
        }
        end = group_end;
    }
    Some(end)
}

/// Five more digits from `at` (the run's first is before it), each maybe after a gap.
fn six_digits(text: &Text, mut at: usize) -> bool {
    for _ in 0..digit_runs::MIN_DIGITS - 1 {
        if is_digit(text.at(at)) {
            at += 1;
        } else if let Some(digit_at) = gap_digit(text, at) {
            at = digit_at + 1;
        } else {
            return false;
        }
    }
    true
}

/// A date alone (and its hour) from `at`, the run's second character: a year then month and day (`2023-05-18`), or
/// a day, month and year (`18.05.2023`, `1/2/23`), with one separator.
fn date(text: &Text, at: usize) -> bool {
    // The year's other three digits, then the rest.
    if text.run(at, 3, is_digit) == 3
        && let Some(day) = separated(text, at + 3)
        && matches!(text.digits(day), 1 | 2)
        && alone(text, day + text.digits(day))
    {
        return true;
    }
    // The day's second digit if it has one, then the rest.
    let month = at + usize::from(is_digit(text.at(at)));
    if let Some(year) = separated(text, month) {
        let n = text.digits(year);
        return (n == 4 || n == 2) && alone(text, year + n);
    }
    false
}

/// `-d-`, `.d.` or `/d/` with one or two digits at `at`: where the digits after it start.
fn separated(text: &Text, at: usize) -> Option<usize> {
    let separator = text.at(at);
    if !matches!(separator, '-' | '.' | '/') || !is_digit(text.at(at + 1)) {
        return None;
    }
    if is_digit(text.at(at + 2)) && text.at(at + 3) == separator {
        return Some(at + 4);
    }
    (text.at(at + 2) == separator).then_some(at + 3)
}

/// Nothing more of a figure after a date at `at`: no digit, maybe an hour (` 10`, `T10`), then no further group.
fn alone(text: &Text, at: usize) -> bool {
    if is_digit(text.at(at)) {
        return false;
    }
    if matches!(text.at(at), ' ' | 'T') && matches!(text.digits(at + 1), 1 | 2) {
        let hour_end = at + 1 + text.digits(at + 1);
        if gap_digit(text, hour_end).is_none() {
            return true;
        }
    }
    gap_digit(text, at).is_none()
}

/// A decimal number: the digits to `at`, a dot, digits, and no further group.
fn decimal(text: &Text, at: usize) -> bool {
    if text.at(at) != '.' {
        return false;
    }
    let n = text.digits(at + 1);
    n > 0 && gap_digit(text, at + 1 + n).is_none()
}

/// A dotted quad from its first digit `at`, the whole of what is dotted (`1.3.6.1.4.1` is an OID).
fn ipv4(text: &Text, at: usize) -> Option<usize> {
    if text.back(at, 1) == '.' {
        return None;
    }
    let first = text.digits(at + 1);
    if first > 2 {
        return None;
    }
    let mut end = at + 1 + first;
    for _ in 0..2 {
        let n = text.digits(end + 1);
        if text.at(end) != '.' || !(1..=3).contains(&n) {
            return None;
        }
        end += 1 + n;
    }
    if text.at(end) != '.' {
        return None;
    }
    // The last octet's digits, fewer if more follow that are no ASCII digit (what the lookahead allows).
    (1..=text.digits(end + 1).min(3)).rev().map(|n| end + 1 + n).find(|&quad_end| {
        let next = text.at(quad_end);
        !(is_word(next) || (next == '.' && is_digit(text.at(quad_end + 1))))
    })
}

/// Check digits right after an IBAN country code that starts a word, then its groups: compact, or in groups of four.
fn iban(text: &Text, ibans: &Registry, at: usize) -> Option<usize> {
    let (b1, b2, b3) = (text.back(at, 1), text.back(at, 2), text.back(at, 3));
    if !b1.is_ascii_alphabetic() || !b2.is_ascii_alphabetic() || !ibans.is_country(b2, b1) {
        return None;
    }
    if (is_word(b3) && !(text.back(at, 4) == '\\' && is_escape_letter(b3))) || !is_digit(text.at(at + 1)) {
        return None;
    }
    let body = at + 2;
    let alnum = |c: char| c.is_ascii_alphanumeric();
    let compact = text.run(body, 31, alnum);
    if (11..=30).contains(&compact) {
        return Some(body + compact);
    }
    // Groups of a space and four characters (two to seven of them), then maybe a shorter last one, then no letter
    // or digit: tried from the most groups and the longest last one, as a backtracking regex would.
    let group = |at: usize| is_space(text.at(at)) && text.run(at + 1, 4, alnum) == 4;
    let mut groups = 0;
    while groups < 7 && group(body + 5 * groups) {
        groups += 1;
    }
    for groups in (2..=groups).rev() {
        let end = body + 5 * groups;
        if is_space(text.at(end)) {
            let last = text.run(end + 1, 5, alnum);
            if (1..=4).contains(&last) {
                return Some(end + 1 + last); // alnum stops it: no letter or digit follows
            }
        }
        if !alnum(text.at(end)) {
            return Some(end);
        }
    }
    None
}

/// From an IPv6 address's first colon (later ones of the same run are not tried: `a:a:a:...` costs one attempt): a
/// `::` within its first seven groups, or six colons (MACs and times have fewer), and a decimal digit ahead
/// (`std::vector` is none; a digit may also be in the group before the colon).
fn ipv6(text: &Text, colon: usize) -> Option<usize> {
    let hex_before = (1..=5).take_while(|&k| is_hex(text.back(colon, k))).count();
    if hex_before <= 4 && text.back(colon, hex_before + 1) == ':' {
        return None; // not its first colon
    }
    let at = colon + 1;
    if text.at(at) != ':' {
        let (mut groups, mut group_end, mut compressed) = (0, at, false);
        while groups < 6 {
            let n = text.run(group_end, 5, is_hex);
            if !(1..=4).contains(&n) || text.at(group_end + n) != ':' {
                break;
            }
            groups += 1;
            group_end += n + 1;
            if text.at(group_end) == ':' {
                compressed = true;
                break;
            }
        }
        if !compressed && groups < 5 {
            return None;
        }
    }
    let address = |c: char| is_hex(c) || c == ':' || c == '.';
    let ahead = text.run(at, 45, |c| address(c) && !is_digit(c));
    if ahead > 44 || !is_digit(text.at(at + ahead)) {
        return None;
    }
    Some(at + text.run(at, usize::MAX, address))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Entity::{CreditCard, Email, Iban, IpAddress, Phone, UsSsn};
    use crate::testing::{assert_found, chars, scan, scan_for, unicode, work};

    #[test]
    fn each_entity_type() {
        assert_found("mail jane.doe+x@mail.example.co.uk now", &[(Email, "jane.doe+x@mail.example.co.uk")]);
        assert_found("call +1 202-555-0143 today", &[(Phone, "+1 202-555-0143")]);
        assert_found("card 4111 1111 1111 1111 ok", &[(CreditCard, "4111 1111 1111 1111")]);
        assert_found("ssn 536-90-4399.", &[(UsSsn, "536-90-4399")]);
        assert_found("iban DE89370400440532013000", &[(Iban, "DE89370400440532013000")]);
        assert_found("iban GB82 WEST 1234 5698 7654 32 end", &[(Iban, "GB82 WEST 1234 5698 7654 32")]);
        assert_found("from 203.0.113.17:443", &[(IpAddress, "203.0.113.17")]);
        assert_found("v6 2001:db8::42 here", &[(IpAddress, "2001:db8::42")]);
        assert_found("v6 2001:db8:0:0:0:0:2:1 in full", &[(IpAddress, "2001:db8:0:0:0:0:2:1")]);
        assert_found("link-local fe80::1%eth0", &[(IpAddress, "fe80::1")]);
    }

    #[test]
    fn look_alikes() {
        for text in [
            "iban DE89370400440532013001 fails its checksum",
            "bad iban DE12370400440532013000",
            "version 1.2.3.4.5 and 999.1.1.1 are not addresses",
            "at 12:30:45 on 2024-01-02, order 12345, id C001",
            r#"[{"created": "2026-11-23 08:27:00"}, {"t": "1:2:3:4:5:6:7"}]"#,
            "not an email: user@localhost, @here, react@18.2.0",
            "loopback ::1 and a slice x[1::2], std::vector<int>, Foo::Bar, cafe::beef",
            "mask 255.255.255.0, wildcard 0.0.0.255, any 0.0.0.0, LDAP cn is OID 2.5.4.3",
            r#"AssemblyVersion("1.2.3.4") and IOS XE Software, Version 17.9.4.1"#,
            "mac 00:1a:2b:3c:4d:5e and 00-1A-2B-3C-4D-5E",
            "uuid 550e8400-e29b-41d4-a716-446655440000",
            "account 012345678901 arn:aws:iam::123456789012:user/ana",
            r#"<img src="/img/icon@2x.png"> logo@3x.webp avatar@1.5x.jpg"#,
            "durations 12:34:56.123456 and 2024-05-06T10:00:00Z",
        ] {
            assert_found(text, &[]);
        }
    }

    #[test]
    fn url_and_form_encoded_values() {
        assert_found("user=ANA.PATEL%40ORANGE.FR&t=1", &[(Email, "ANA.PATEL%40ORANGE.FR")]);
        assert_found("email=o%27brien%40sky.com&x", &[(Email, "o%27brien%40sky.com")]);
        assert_found("tel=%2B1+713+396+7854&cc", &[(Phone, "%2B1+713+396+7854")]);
        assert_found("cc-number=4266+7607+4871+3187&cc-exp", &[(CreditCard, "4266+7607+4871+3187")]);
        assert_found("q=4266%204871%203187&x", &[]);
    }

    #[test]
    fn ibans_of_any_case_spacing_and_script_around_them() {
        assert_found("iban de89 3704 0044 0532 0130 00", &[(Iban, "de89 3704 0044 0532 0130 00")]);
        assert_found("iban de89370400440532013000", &[(Iban, "de89370400440532013000")]);
        assert_found("Norway NO9386011117947", &[(Iban, "NO9386011117947")]);
        assert_found("Saudi SA03 8000 0000 6080 1016 7519 from", &[(Iban, "SA03 8000 0000 6080 1016 7519")]);
        assert_found("振込先はDE89370400440532013000です", &[(Iban, "DE89370400440532013000")]);
        assert_found("xDE89370400440532013000", &[]);
        assert_found(
            "iban AT61 1904 3002 3457 3201 4111 1111 1111 1111",
            &[(Iban, "AT61 1904 3002 3457 3201"), (CreditCard, "4111 1111 1111 1111")],
        );
    }

    #[test]
    fn addresses_at_a_sentences_end() {
        assert_found("blocked traffic from 10.0.0.1.", &[(IpAddress, "10.0.0.1")]);
        assert_found("and from 2001:db8::42.", &[(IpAddress, "2001:db8::42")]);
        assert_found("client ::ffff:10.0.0.1 - -", &[(IpAddress, "::ffff:10.0.0.1")]);
        assert_found(
            "timed out to 2a00:1450::9f55:5885:b460:ef46:8080",
            &[(IpAddress, "2a00:1450::9f55:5885:b460:ef46")],
        );
        assert_found("ver 10.0.0.1 and version 10.0.0.1", &[(IpAddress, "10.0.0.1")]);
    }

    #[test]
    fn escapes_in_raw_json_text() {
        assert_found(r#""Contact:\nana@x.com""#, &[(Email, "ana@x.com")]);
        assert_found(r#""\tana@x.com \"bob@y.org\"""#, &[(Email, "ana@x.com"), (Email, "bob@y.org")]);
        assert_found(r#""ana\u0040x.com""#, &[(Email, r"ana\u0040x.com")]);
        assert_found(r#""\u003cana@x.com\u003e""#, &[(Email, "ana@x.com")]);
        assert_found(r#""Phone:\t+46796229608\t#647015""#, &[]); // +46: no Swedish numbers in the sample
        assert_found(r#""Phone:\t+4915146734012\t#647015""#, &[(Phone, "+4915146734012")]);
        assert_found(r#""Lines:\n0301 2345 6789 0123 and \n10.0.0.1""#, &[(IpAddress, "10.0.0.1")]);
        assert_found(r#""\nDE89370400440532013000""#, &[(Iban, "DE89370400440532013000")]);
        assert_found(r#""\n2001:db8::42""#, &[(IpAddress, "2001:db8::42")]);
    }

    #[test]
    fn an_email_and_the_phone_number_in_its_local_part_are_both_found() {
        // The detector ranks them (the email wins); the scan reports both.
        assert_found("202.555.0143@mail.org", &[(Phone, "202.555.0143"), (Email, "202.555.0143@mail.org")]);
    }

    #[test]
    fn national_numbers_for_the_regions_asked_for_international_ones_for_all() {
        let text = "030 1234567, +49 30 1234567, +81 3-1234-5678, (415) 555-0199";
        let values = |regions: &[&str]| scan_for(regions, text).into_iter().map(|f| f.1).collect::<Vec<_>>();
        assert_eq!(values(&["US"]), ["+49 30 1234567", "+81 3-1234-5678", "(415) 555-0199"]);
        assert_eq!(values(&["DE"]), ["030 1234567", "+49 30 1234567", "+81 3-1234-5678"]);
        assert_eq!(values(&[]), ["+49 30 1234567", "+81 3-1234-5678"]);
    }

    #[test]
    fn empty_blank_and_unreadable_text() {
        for text in [
            "",
            " ",
            "\0",
            "\0\0\0",
            "\u{ffff}",
            "\u{ffff}4111111111111111",
            "@",
            ":",
            "%",
            "%4",
            "%40",
            "\\",
            "\\u004",
        ] {
            assert_eq!(scan(text).len(), usize::from(text.contains("4111")), "{text:?}");
        }
    }

    #[test]
    fn what_ends_the_text_ends_the_candidate() {
        for text in [
            "a@b",
            "a@b.",
            "a%40b.c",
            "a\\u0040",
            "1.2.3.",
            "2001:db8:",
            "DE89",
            "DE89 3704",
            "+",
            "+1",
            "(",
            "4111 1111",
        ] {
            assert_found(text, &[]);
        }
    }

    #[test]
    fn non_ascii_text_around_values() {
        assert_found("メールアドレスはchloe.wang@gmail.comです", &[(Email, "chloe.wang@gmail.com")]);
        assert_found("Тел. 030 1234567, почта ana@x.ru", &[(Phone, "030 1234567"), (Email, "ana@x.ru")]);
        assert_found("🙂 4111 1111 1111 1111 🙂", &[(CreditCard, "4111 1111 1111 1111")]);
        assert_found("عنوان 10.0.0.1 هنا", &[(IpAddress, "10.0.0.1")]);
        // Arabic-Indic digits are decimal digits: a card written in them is a card (offsets in code points).
        let arabic: String =
            "4111 1111 1111 1111".chars().map(|c| if c == ' ' { c } else { arabic_indic(c) }).collect();
        assert_found(&format!("رقم {arabic}"), &[(CreditCard, &arabic)]);
    }

    #[test]
    fn huge_inputs_find_nothing_they_do_not_hold() {
        for text in [
            "@".repeat(100_000),
            ":".repeat(100_000),
            "a:".repeat(50_000),
            "%40".repeat(30_000),
            "1.".repeat(50_000),
            "DE89 3704 ".repeat(10_000),
            format!("x@{}", "ab.".repeat(30_000)),
            "\u{ff11}".repeat(100_000),
            "\\n".repeat(50_000),
        ] {
            assert_eq!(scan(&text), [], "{}...", &text[..10]);
        }
        let many = "ana@x.com ".repeat(10_000);
        assert_eq!(scan(&many).len(), 10_000);
    }

    /// Units repeated into values that reach every branch of the scan: doubling one at most doubles the work (the
    /// linear-time test of tests/unit, at a smaller size).
    #[test]
    fn doubling_a_crafted_value_at_most_doubles_the_work() {
        for unit in [
            "4111 ",
            "1",
            "1 ",
            "00 ",
            "1-",
            "1/2/",
            "1.1.1.1.",
            "10.0.0.1 ",
            "2024-01-02 ",
            "12 34-56.78/90(12)34 ",
            "a@",
            "a@b.cd ",
            "a%40b.cd&",
            "a\\u0040b.cd ",
            ":",
            "1:",
            "a:",
            "::1 ",
            "1::",
            "0123456789abcdef",
            "+1 ",
            "(",
            "(1",
            "%2B1",
            "DE89",
            "DE89 3704 ",
            "de89370400440532013000 ",
            "phone 0301234567 ",
            "+49 30 1234567 ",
            "0049 30 123456 ",
            "4111111111111111 ",
            "536-90-4399 ",
            "\\n",
            "\u{ff11} ",
            "ORD-2025-",
        ] {
            let repeated = |n: usize| unit.repeat(n.div_ceil(unit.len()));
            let (half, full) = (work(&repeated(2_048)), work(&repeated(4_096)));
            assert!(full as f64 <= 2.5 * half as f64 + 100.0, "{unit:?}: {half} then {full}");
            assert!(full <= 150 * repeated(4_096).chars().count() as u64, "{unit:?}: {full}");
        }
    }

    #[test]
    fn one_long_candidate_costs_linear_work() {
        for (head, unit, tail) in [("x@", "ab.", "1"), ("+", "1 ", "x"), ("de89", " 3704", " from")] {
            let text = |n: usize| format!("{head}{}{tail}", unit.repeat(n));
            let (half, full) = (work(&text(2_000)), work(&text(4_000)));
            assert!(full as f64 <= 2.5 * half as f64 + 100.0, "{head}{unit}...: {half} then {full}");
        }
    }

    #[test]
    fn a_gap_between_digit_groups() {
        unicode();
        for (text, digit_at) in [
            ("1 2", Some(2)),
            ("1 - 2", Some(4)),
            ("1-/.2", Some(4)),
            ("1-/. 2", None), // four separators: too many
            ("1+2", Some(2)),
            ("1%202", Some(4)),
            ("1%2B2", Some(4)),
            ("1%2b2", Some(4)),
            ("1%2C2", None),
            ("1\u{ff0d}2", Some(2)),
            ("1\u{3000}\u{ff12}", Some(2)),
            ("1,2", None),
            ("1\t2", None),
            ("1 a", None),
            ("1 ", None),
        ] {
            let chars = chars(text);
            assert_eq!(gap_digit(&Text::new(&chars), 1), digit_at, "{text:?}");
        }
    }

    #[test]
    fn a_digit_glued_to_a_word_starts_nothing() {
        unicode();
        for (text, free) in
            [(" 1", true), ("a1", false), ("_1", false), ("é1", true), ("\\n1", true), ("%2B1", true), ("x1", false)]
        {
            let chars = chars(text);
            let at = chars.len() - 1;
            assert_eq!(free_digit(&Text::new(&chars), at), free, "{text:?}");
        }
    }

    #[test]
    fn only_an_ipv6_addresss_first_colon_is_tried() {
        unicode();
        let address = chars("2001:db8::42");
        let text = Text::new(&address);
        assert_eq!(ipv6(&text, 4), Some(12));
        assert_eq!(ipv6(&text, 8), None, "a later colon of the same address");
        let path = chars("std::vector");
        assert_eq!(ipv6(&Text::new(&path), 3), None, "no decimal digit ahead");
    }

    fn arabic_indic(c: char) -> char {
        char::from_u32(0x660 + (c as u32 - '0' as u32)).expect("an Arabic-Indic digit")
    }
}
