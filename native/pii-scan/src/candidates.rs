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
