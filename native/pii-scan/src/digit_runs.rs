//! Digit runs: groups of digits joined by short separators (spaces, dashes, dots, slashes, brackets, a lone plus),
//! as the candidate scan finds them. A run may hold several values or none: its groups are read from left to right,
//! each trying a card, an SSN and a phone number over the groups that follow it (at most seven groups, longest
//! first); what is found is skipped over. Each group starts a bounded number of bounded checks: linear in the run.
//!
//! A value must be the whole of what it spans: not glued to a word (the scan starts no run after a letter and a
//! dash, `ORD-2025-769159`; a run followed by a letter loses its last group), and not a piece of a longer figure
//! written the same way (the first 16 digits of `9400 1000 0000 0000 0000 00`, the middle of `978-3-16-148410-0`).

use std::collections::HashMap;

use crate::Entity;
use crate::cards;
use crate::context::{says_phone, says_ssn};
use crate::phones::National;
use crate::ssns;
use crate::text::{
    Text, ascii_digit, is_blank, is_close, is_digit, is_escape_letter, is_open, is_plus, is_space, is_word,
};

pub type Found = (usize, usize, Entity);
/// What a check found at a group: the last group it spans and the value.
type Read = (usize, Found);

/// The fewest digits of any value (the shortest phone number: +43 1110).
pub const MIN_DIGITS: usize = 6;
/// The most digits of a phone number (15, and a trunk 0 and a carrier digit written anyway).
const MAX_PHONE: usize = 17;
const MAX_GROUPS: usize = 7;
/// A national number has at most five groups (07 42 26 39 86) and two kinds of separator ((415) 555-0199).
const MAX_NATIONAL_GROUPS: usize = 5;
const CARD_SEPARATORS: [&[char]; 4] = [&[' '], &['-'], &['+'], &['\u{a0}']]; // `+`: a form-encoded space
const FORM_SPACES: [&[char]; 4] = [&['+'], &['%', '2', 'B'], &['%', '2', 'b'], &['%', '2', '0']];

/// Appends the values in the digit run from its first digit text[start] to text[end], with the plus sign or
/// bracket that may open it.
pub fn read(text: &Text, start: usize, end: usize, national: &National, out: &mut Vec<Found>) {
    let mut before = start.checked_sub(1);
    if let Some(at) = before
        && is_blank(text.at(at))
    {
        before = at.checked_sub(1);
    }
    // What may open a run before its first digit: a plus sign (`+`, full-width, or form-encoded `%2B`) and brackets.
    let opens = |c: char| matches!(c, ' ' | '\u{a0}' | 'B' | 'b') || is_open(c) || is_plus(c);
    let lead = match before {
        Some(at) if opens(text.at(at)) => lead_start(text, start.saturating_sub(8), start).unwrap_or(start),
        _ => start,
    };
    if lead == start && text.run(start, end - start, is_digit) == end - start {
        let digits: String = text.slice(start, end).iter().map(|&c| ascii_digit(c)).collect();
        compact(text, start, end, &digits, national, out);
        return;
    }
    if lead < start && signed(text, lead, start, end, national, out) {
        return;
    }
    let run = Run::new(text, lead, end);
    let (count, total) = (run.starts.len(), run.cum[run.starts.len()]);
    let mut i = 0;
    while i < count && total - run.cum[i] >= MIN_DIGITS {
        text.count(1);
        if i > 0 && (i + 1 == count || run.same_gap(i, i + 1)) && !(9..=cards::MAX_DIGITS).contains(&run.size(i)) {
            // Inside a run of one separator only a group alone can be a value (a card, an SSN; see Run::alone).
            i += 1;
            continue;
        }
        match run.card(i).or_else(|| run.ssn(i)).or_else(|| run.phone(i, national)) {
            Some((last, found)) => {
                i = last + 1;
                out.push(found);
            }
            None => i += 1,
        }
    }
}

/// Where the plus sign or bracket that opens the run at `to` starts, searched from `from`: not glued to a word
/// (`x+1`), unless to a JSON escape's letter (`\t+49`).
fn lead_start(text: &Text, from: usize, to: usize) -> Option<usize> {
    text.count(to - from);
    let at = |k: usize| if k < to { text.at(k) } else { '\0' };
    // A space, an opening bracket, both, or nothing, then the end.
    let closes = |y: usize| {
        y == to
            || (is_space(at(y)) && (y + 1 == to || (is_open(at(y + 1)) && y + 2 == to)))
            || (is_open(at(y)) && y + 1 == to)
    };
    let signed = |s: usize| {
        let mut signs = vec![s];
        if is_open(at(s)) {
            signs.push(s + 1);
            if is_space(at(s + 1)) {
                signs.push(s + 2);
            }
        }
        signs.into_iter().any(|x| {
            if is_plus(at(x)) {
                closes(x + 1)
            } else {
                at(x) == '%' && at(x + 1) == '2' && matches!(at(x + 2), 'B' | 'b') && closes(x + 3)
            }
        })
    };
    let bracketed = |s: usize| is_open(at(s)) && (s + 1 == to || (is_space(at(s + 1)) && s + 2 == to));
    let free = |s: usize| !is_word(text.back(s, 1)) || (text.back(s, 2) == '\\' && is_escape_letter(text.back(s, 1)));
    (from..to).find(|&s| free(s) && (signed(s) || bracketed(s)))
}

/// The common case of a run after a plus sign, without reading its groups: the whole run is one international
/// number (`+49 30 1234567`, `(+44) 20 7031 3000`). False when it is not, or not simply (the run reader decides).
fn signed(text: &Text, lead: usize, start: usize, end: usize, national: &National, out: &mut Vec<Found>) -> bool {
    let (sign, body) = (text.slice(lead, start), text.slice(start, end));
    text.count(body.len());
    if !sign.iter().any(|&c| is_plus(c)) || body.iter().any(|&c| is_plus(c) || c == '%') {
        return false; // a bracket alone, an encoded plus, another number in the run, form-encoding
    }
    let extension = extension(text, end);
    if extension.is_none() && glued(text, end) {
        return false;
    }
    let digits: String = body.iter().filter(|&&c| is_digit(c)).map(|&c| ascii_digit(c)).collect();
    if !(MIN_DIGITS..=MAX_PHONE).contains(&digits.len()) || !national.international(&digits, &text.work) {
        return false;
    }
    let span_end = extension.unwrap_or(end);
    let mut lead = lead;
    if is_open(text.at(lead)) && !closed(text, lead + 1, span_end) {
        // `(+32 (0)473 ...)`: its bracket is the text's
        lead += sign.iter().take_while(|&&c| is_open(c) || is_blank(c)).count();
    }
    out.push((lead, span_end, Entity::Phone));
    true
}

/// Whether the bracket opened right before `start` is closed by `end`.
fn closed(text: &Text, start: usize, end: usize) -> bool {
    let mut depth = 1;
    for (k, &c) in text.slice(start, end).iter().enumerate() {
        depth += i32::from(is_open(c)) - i32::from(is_close(c));
        if depth == 0 {
            text.count(k + 1);
            return true;
        }
    }
    text.count(end - start);
    false
}

/// One group of digits: a card by its brand and checksum; an SSN or a phone number only after its word.
fn compact(text: &Text, start: usize, end: usize, digits: &str, national: &National, out: &mut Vec<Found>) {
    if digits.len() < MIN_DIGITS {
        return;
    }
    let mut ext = None;
    if glued(text, end) {
        // an identifier's digits, or a phone number's extension (x12)
        ext = extension(text, end);
        if ext.is_none() {
            return;
        }
    } else if cards::card(digits, &[digits.len()]) {
        out.push((start, end, Entity::CreditCard));
        return;
    } else if digits.len() == 9 && ssns::valid(digits) && says_ssn(text, start) {
        out.push((start, end, Entity::UsSsn));
        return;
    }
    if digits.len() <= MAX_PHONE && says_phone(text, start) && national.compact(digits, &text.work) {
        let end = ext.or_else(|| extension(text, end)).unwrap_or(end);
        out.push((start, end, Entity::Phone));
    }
}

/// Python's `(?i)` matches these for the letters of `ext`, `extension` and `x` (it folds `ſ` to s, `İ` and `ı` to i).
fn folds_to(c: char, letter: char) -> bool {
    c.to_ascii_lowercase() == letter || (letter == 's' && c == 'ſ') || (letter == 'i' && matches!(c, 'İ' | 'ı'))
}

fn word_end(text: &Text, at: usize, word: &str) -> Option<usize> {
    word.chars().enumerate().all(|(k, letter)| folds_to(text.at(at + k), letter)).then(|| at + word.len())
}

/// `x 123`, `ext. 123`, `;ext=123` right after a number (where it ends); never across a tab or comma (`\t#123456` is
/// an order).
fn extension(text: &Text, at: usize) -> Option<usize> {
    text.count(1);
    let number = |z: usize| {
        let n = text.run(z, 7, is_digit);
        (1..=6).contains(&n).then_some(z + n)
    };
    let spaced = |y: usize| [y + 1, y].into_iter().filter(|&z| z == y || text.at(y) == ' ').find_map(number);
    for x in [at + 1, at].into_iter().filter(|&x| x == at || text.at(at) == ' ') {
        for (word, dot) in [("ext", true), ("extension", false), ("x", false)] {
            let Some(y) = word_end(text, x, word) else { continue };
            let dotted = (dot && text.at(y) == '.').then_some(y + 1);
            if let Some(end) = dotted.into_iter().chain([y]).find_map(spaced) {
                return Some(end);
            }
        }
    }
    if text.at(at) == ';' && word_end(text, at + 1, "ext").is_some() && text.at(at + 4) == '=' {
        return number(at + 5);
    }
    None
}

/// A letter, digit or underscore follows (an identifier's digits); a path segment after a value is no glue.
fn glued(text: &Text, at: usize) -> bool {
    let (c, next) = (text.at(at), text.at(at + 1));
    is_word(c) || (matches!(c, '-' | '_' | '.') && next.is_ascii_alphanumeric()) || (c == '/' && next.is_ascii_digit())
}

/// A date, then no digit and no more of its separator (06.27.51.36.67 is a French phone number): text[start..end]
/// begins with one.
fn date(text: &Text, start: usize, end: usize) -> bool {
    let at = |k: usize| if k < end { text.at(k) } else { '\0' };
    let digit = |k: usize| is_digit(at(k));
    // The ends of one or two digits from k.
    let one_or_two = |k: usize| [k + 2, k + 1].into_iter().filter(move |&n| (k..n).all(digit));
    let alone = |k: usize, separator: char| !digit(k) && at(k) != separator;
    let is_separator = |c: char| matches!(c, '-' | '.' | '/');
    text.count(16);
    // 2023-05-18
    let separator = at(start + 4);
    let year_first = (start..start + 4).all(digit)
        && is_separator(separator)
        && one_or_two(start + 5).any(|m| at(m) == separator && one_or_two(m + 1).any(|d| alone(d, separator)));
    // 18.05.2023, 1/2/23
    year_first
        || one_or_two(start).any(|m| {
            let separator = at(m);
            is_separator(separator)
                && one_or_two(m + 1).any(|n| {
                    at(n) == separator
                        && [n + 5, n + 3].into_iter().any(|y| (n + 1..y).all(digit) && alone(y, separator))
                })
        })
}

/// A run's digit groups, where they are and what separates them.
struct Run<'t, 'a> {
    text: &'t Text<'a>,
    /// gaps[k] precedes group k (for the first: a bracket or plus sign), as (start, end) in the text.
    gaps: Vec<(usize, usize)>,
    /// The same number for the same gap text (compared more often than read).
    gap_ids: Vec<usize>,
    starts: Vec<usize>,
    ends: Vec<usize>,
    /// The digits of the groups, as ASCII, one after the other; group k is joined[cum[k]..cum[k + 1]].
    joined: String,
    cum: Vec<usize>,
    extension: Option<usize>,
    glued: bool,
    /// Where the plus sign before each group is, if it has one.
    plus: Vec<Option<usize>>,
    /// next_plus[k]: the first group after k that a plus sign opens (the group count if none).
    next_plus: Vec<usize>,
}

impl<'t, 'a> Run<'t, 'a> {
    fn new(text: &'t Text<'a>, lead: usize, end: usize) -> Self {
        let mut run = Run {
            text,
            gaps: Vec::new(),
            gap_ids: Vec::new(),
            starts: Vec::new(),
            ends: Vec::new(),
            joined: String::new(),
            cum: vec![0],
            extension: extension(text, end),
            glued: false,
            plus: Vec::new(),
            next_plus: Vec::new(),
        };
        run.glued = run.extension.is_none() && glued(text, end);
        let mut ids: HashMap<&[char], usize> = HashMap::new();
        let (mut gap_start, mut at) = (lead, lead);
        while at < end {
            text.count(1);
            // The digits of a percent-encoded separator (`%20`, `%2B`) are no group.
            let encoded = (at > lead && text.at(at - 1) == '%')
                || (at >= lead + 2 && text.at(at - 2) == '%' && is_digit(text.at(at - 1)));
            if !is_digit(text.at(at)) || encoded {
                at += 1;
                continue;
            }
            let n = text.run(at, end - at, is_digit);
            let next_id = ids.len();
            run.gap_ids.push(*ids.entry(text.slice(gap_start, at)).or_insert(next_id));
            run.gaps.push((gap_start, at));
            run.starts.push(at);
            run.ends.push(at + n);
            run.joined.extend(text.slice(at, at + n).iter().map(|&c| ascii_digit(c)));
            run.cum.push(run.cum[run.cum.len() - 1] + n);
            at += n;
            gap_start = at;
        }
        let count = run.starts.len();
        run.plus = (0..count).map(|k| run.plus_sign(k)).collect();
        run.next_plus = vec![count; count];
        for k in (0..count.saturating_sub(1)).rev() {
            run.next_plus[k] = if run.plus[k + 1].is_some() { k + 1 } else { run.next_plus[k + 1] };
        }
        run
    }

    fn gap(&self, k: usize) -> &'a [char] {
        let (start, end) = self.gaps[k];
        self.text.slice(start, end)
    }

    fn same_gap(&self, a: usize, b: usize) -> bool {
        self.gap_ids[a] == self.gap_ids[b]
    }

    fn size(&self, k: usize) -> usize {
        self.cum[k + 1] - self.cum[k]
    }

    fn sizes(&self, i: usize, j: usize) -> Vec<usize> {
        (i..=j).map(|k| self.size(k)).collect()
    }

    /// Where the plus sign before group k is, if it has one (a lone `+` between groups is a form-encoded space).
    fn plus_sign(&self, k: usize) -> Option<usize> {
        let gap = self.gap(k);
        if gap.is_empty() || (k > 0 && FORM_SPACES.contains(&gap)) {
            return None;
        }
        self.text.count(gap.len());
        let trimmed = gap.len() - gap.iter().rev().take_while(|&&c| is_blank(c) || is_open(c)).count();
        let sign = match gap[..trimmed] {
            [.., c] if is_plus(c) => 1,
            [.., '%', '2', 'B' | 'b'] => 3,
            _ => return None,
        };
        Some(self.gaps[k].0 + trimmed - sign)
    }

    fn span_digits(&self, i: usize, j: usize) -> &str {
        &self.joined[self.cum[i]..self.cum[j + 1]]
    }

    /// The last groups j of spans i..j with `least` to `most` digits, longest first (a glued last group is the end of
    /// a word: no value ends there; a plus sign opens another number).
    fn spans(&self, i: usize, most: usize, least: usize) -> std::iter::Rev<std::ops::Range<usize>> {
        let cum = &self.cum;
        // One past the last group a span may end at, then past the last of those too short for a value.
        let mut end = (self.starts.len() - usize::from(self.glued)).min(i + MAX_GROUPS).min(self.next_plus[i]);
        while end > i && cum[end] - cum[i] > most {
            self.text.count(1);
            end -= 1;
        }
        let mut low = end;
        while low > i && cum[low] - cum[i] >= least {
            self.text.count(1);
            low -= 1;
        }
        (low..end).rev()
    }

    /// Where a value of groups i.. ending at `end` starts: at its plus sign, and at an opening bracket before it only
    /// if the value closes it (`(415) 555-0199`, not the `(` of `(030 1234567)` or `(+32 (0)473 ...)`).
    fn start(&self, i: usize, end: usize) -> usize {
        let start = self.plus[i].unwrap_or(self.starts[i]);
        let lead = self.gaps[i].0;
        let mut at = start;
        while at > lead && is_blank(self.text.at(at - 1)) {
            at -= 1;
        }
        if at > lead && is_open(self.text.at(at - 1)) && closed(self.text, at, end) {
            return at - 1;
        }
        start
    }

    /// Whether groups i..j are not a piece of a longer figure written the same way (`9400 1000 0000 0000 0000`,
    /// `978-3-16-148410-0`, `1.2.840.113549.1`): the same separator continues on neither side, except before one last
    /// group of at most two digits (`030 1234567 12:30`). In a run of one separator, only the spans at its ends are
    /// read: crafted runs (`"00 " * 10_000`) cost no phone check per group.
    fn alone(&self, i: usize, j: usize) -> bool {
        if j == i {
            return true;
        }
        let inside = |k: usize| {
            self.text.count(j - i);
            (i + 1..=j).any(|g| self.same_gap(g, k))
        };
        let count = self.starts.len();
        if j + 1 < count && inside(j + 1) {
            let isolated = j + 2 == count || !inside(j + 2);
            if !isolated || matches!(self.gap(j + 1), ['.' | '-']) || self.size(j + 1) > 2 {
                return false;
            }
        }
        i == 0 || !inside(i)
    }

    fn card(&self, i: usize) -> Option<Read> {
        if self.plus[i].is_some() || self.cum[self.starts.len()] - self.cum[i] < cards::MIN_DIGITS {
            return None; // +4915146734012 is a phone number
        }
        for j in self.spans(i, cards::MAX_DIGITS, cards::MIN_DIGITS) {
            let one_separator =
                (i + 1..=j).all(|g| self.same_gap(g, i + 1)) && (i == j || CARD_SEPARATORS.contains(&self.gap(i + 1)));
            if !one_separator || !self.alone(i, j) {
                continue;
            }
            if cards::card(self.span_digits(i, j), &self.sizes(i, j)) {
                return Some((j, (self.starts[i], self.ends[j], Entity::CreditCard)));
            }
        }
        None
    }

    /// 3-2-4 digits with one separator, or nine digits written right after an SSN key or word.
    fn ssn(&self, i: usize) -> Option<Read> {
        if self.plus[i].is_some() {
            return None;
        }
        let count = self.starts.len();
        let (j, found) = if self.size(i) == 9 {
            (i, (i + 1 < count || !self.glued) && says_ssn(self.text, self.starts[i]))
        } else {
            let j = i + 2;
            let shaped = j < count - usize::from(self.glued)
                && self.sizes(i, j) == ssns::SHAPE
                && ssns::is_separator(self.gap(j))
                && self.same_gap(i + 1, j);
            (j, shaped && self.alone(i, j))
        };
        (found && ssns::valid(self.span_digits(i, j))).then(|| (j, (self.starts[i], self.ends[j], Entity::UsSsn)))
    }

    fn phone(&self, i: usize, national: &National) -> Option<Read> {
        let plus = self.plus[i];
        for j in self.spans(i, MAX_PHONE, MIN_DIGITS) {
            let digits = self.span_digits(i, j);
            let valid = if plus.is_some() {
                national.international(digits, &self.text.work)
            } else if j == i {
                // a group alone, at the start of its run (`0301234567 / 0301234568` after a phone word)
                i == 0 && says_phone(self.text, self.starts[i]) && national.compact(digits, &self.text.work)
            } else if !self.alone(i, j) {
                false
            } else {
                // dialled with an exit code (`0049 30 ...`; 011 is also Buenos Aires' area code), or national
                let dialled = national.dialling(digits);
                let other = (i + 2..=j).find(|&g| !self.same_gap(g, i + 1));
                let two_separators =
                    other.is_none_or(|other| (other..=j).all(|g| self.same_gap(g, i + 1) || self.same_gap(g, other)));
                let grouped = j - i < MAX_NATIONAL_GROUPS && two_separators;
                let breaks: Vec<usize> = (i + 1..=j).map(|g| self.cum[g] - self.cum[i]).collect();
                (dialled || grouped)
                    && !self.figure(i, j)
                    && ((dialled && national.dialled(digits, &self.text.work))
                        || (grouped && national.grouped(digits, &breaks, &self.text.work)))
            };
            if valid {
                let end = match self.extension {
                    Some(extension) if j == self.starts.len() - 1 => extension,
                    _ => self.ends[j],
                };
                return Some((j, (self.start(i, end), end, Entity::Phone)));
            }
        }
        None
    }

    /// A decimal number (`52.245003`), thousands grouped with dots (`937.937.105`), a version or build number (a
    /// dotted group of one digit after the first: `120.0.6099.109`, `950.0.1000.950`; no region writes a national
    /// number so), something after a date (`05.12.2023 98.501`), or what an SSN looks like (`015-62-0000`: one never
    /// issued is no phone number either), however its digits read.
    fn figure(&self, i: usize, j: usize) -> bool {
        let dotted = (i + 1..=j).all(|g| self.gap(g) == ['.']);
        let sizes = self.sizes(i, j);
        if dotted && (j == i + 1 || (sizes[0] <= 3 && sizes[1..].iter().all(|&s| s == 3)) || sizes[1..].contains(&1)) {
            return true;
        }
        if j >= i + 2 && date(self.text, self.starts[i], self.ends[j]) {
            return true;
        }
        sizes == [3, 2, 4] && (i + 1..=j).all(|g| self.gap(g) == ['-'])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Entity::{CreditCard, Phone, UsSsn};
    use crate::testing::{assert_found, chars, full_width, scan, unicode, work};

    /// Where the extension written at the end of `number` (the number's last digit ends at `at`) ends.
    fn extension_of(text: &str, at: usize) -> Option<usize> {
        unicode();
        let chars = chars(text);
        extension(&Text::new(&chars), at)
    }

    #[test]
    fn extensions_after_a_number() {
        for (text, end) in [
            ("1234567 x12", 11),
            ("1234567x12", 10),
            ("1234567 ext. 1234", 17),
            ("1234567 Ext 1234", 16),
            ("1234567 extension 123456", 24),
            ("1234567;ext=89", 14),
            ("1234567 extenſİon 12", 20), // Python's case-insensitive match folds ſ to s and İ to i
        ] {
            assert_eq!(extension_of(text, 7), Some(end), "{text}");
        }
        for text in ["1234567 x", "1234567 x1234567", "1234567\tx12", "1234567, x12", "1234567 xt 12", "1234567"] {
            assert_eq!(extension_of(text, 7), None, "{text}");
        }
    }

    #[test]
    fn what_glues_a_number_to_a_word() {
        unicode();
        for (text, glued_to) in [("1a", true), ("1_", true), ("1-a", true), ("1.x", true), ("1/2", true)] {
            let chars = chars(text);
            assert_eq!(glued(&Text::new(&chars), 1), glued_to, "{text}");
        }
        for text in ["1 a", "1-", "1.", "1/a", "1", "1é", "1\u{ff10}"] {
            let chars = chars(text);
            assert!(!glued(&Text::new(&chars), 1), "{text}");
        }
    }

    #[test]
    fn dates_at_the_start_of_a_run() {
        unicode();
        for text in ["2023-05-18", "18.05.2023", "1/2/23", "2023-5-8 ", "18.05.2023 10"] {
            let chars = chars(text);
            assert!(date(&Text::new(&chars), 0, chars.len()), "{text}");
        }
        for text in ["06.27.51.36.67", "2023-05-18-1", "0301234567", "18.05.202", "2023.05/18"] {
            let chars = chars(text);
            assert!(!date(&Text::new(&chars), 0, chars.len()), "{text}");
        }
    }

    #[test]
    fn cards_as_they_are_printed() {
        assert_found("card 4111-1111-1111-1111", &[(CreditCard, "4111-1111-1111-1111")]);
        assert_found("amex 3782 822463 10005", &[(CreditCard, "3782 822463 10005")]);
        assert_found("4111111111111111", &[(CreditCard, "4111111111111111")]);
        assert_found("card 4111\u{a0}1111\u{a0}1111\u{a0}1111", &[(CreditCard, "4111\u{a0}1111\u{a0}1111\u{a0}1111")]);
        let card = full_width("4111 1111 1111 1111");
        assert_found(&card, &[(CreditCard, &card)]);
    }

    #[test]
    fn runs_that_are_no_cards() {
        for text in [
            "card 4111 1111 1111 1112 fails Luhn",
            "4111.1111.1111.1111", // dots: no card is printed so
            "4111 1111-1111 1111", // two separators
            "41111 11111 11111 1", // groups no issuer prints
            "epoch 1735689600000 and lastLogon 133497819000000000",
            "isbn 9780306406157 and imei 356938035643809",
            "usps 9400100000000000000000, 9400 1000 0000 0000 0000 00",
            "sha 5f3a9b1c4e7d8a2b4111111111111111", // glued to a word
            "id4111111111111111",
            "4111111111111111x",
        ] {
            assert_found(text, &[]);
        }
    }

    #[test]
    fn a_card_in_a_path_segment() {
        assert_found("demo://resource/blob/4111111111111111 end", &[(CreditCard, "4111111111111111")]);
        assert_found("/reports/22/01/2020 and /v1/2025-769159/items", &[]);
    }

    #[test]
    fn ssns_dashed_spaced_or_after_their_word() {
        assert_found("ssn 123-45-6789.", &[(UsSsn, "123-45-6789")]);
        assert_found("ssn 437 68 8725", &[(UsSsn, "437 68 8725")]);
        assert_found(r#"{"ssn": "613288261"}"#, &[(UsSsn, "613288261")]);
        assert_found("customerSSN=530141367", &[(UsSsn, "530141367")]);
        assert_found("member 613288261, badge 530141367", &[]);
        assert_found("ssn 000-12-3456 and 666-12-3456 are never issued", &[]);
        assert_found("536-90-4399-1", &[]);
        assert_found("536-90 4399", &[]);
    }

    #[test]
    fn phones_national_and_international() {
        for (text, phone) in [
            ("or (415) 555-0199", "(415) 555-0199"),
            ("Berlin 030 1234567", "030 1234567"),
            ("portable 07 42 26 39 86", "07 42 26 39 86"),
            ("Manchester 0161 845 9014", "0161 845 9014"),
            ("東京 03-6908-4061", "03-6908-4061"),
            ("Wien 0662 123456", "0662 123456"),
            ("trunk in brackets +49 (0)30 123456", "+49 (0)30 123456"),
            ("dialled 0049 30 123456", "0049 30 123456"),
            ("slash 030/1234567 end", "030/1234567"),
            ("Vienna desk +43 1110 today", "+43 1110"),
            ("+1 (650) 253-0000 ext. 1234", "+1 (650) 253-0000 ext. 1234"),
            ("tel:+49-30-1234567;ext=89", "+49-30-1234567;ext=89"),
            ("+4915146734012", "+4915146734012"),
            ("+1\u{a0}617\u{a0}555\u{a0}0199", "+1\u{a0}617\u{a0}555\u{a0}0199"),
            (
                "+33\u{202f}6\u{202f}12\u{202f}34\u{202f}56\u{202f}78",
                "+33\u{202f}6\u{202f}12\u{202f}34\u{202f}56\u{202f}78",
            ),
            ("the courier calls (030 1234567) first", "030 1234567"),
            ("ou (+33 (0)6 12 34 56 78), sinon", "+33 (0)6 12 34 56 78"),
            ("Phone:\t+1 202 555 0143\t#123456", "+1 202 555 0143"),
            ("mobile 011 15-1234-5678", "011 15-1234-5678"),
            ("+800 1234 5678", "+800 1234 5678"),
        ] {
            assert_found(text, &[(Phone, phone)]);
        }
    }

    #[test]
    fn full_width_phone_numbers() {
        let berlin = full_width("030 1234567");
        assert_found(&format!("電話{berlin}"), &[(Phone, &berlin)]);
        let tokyo = full_width("+81 3-1234-5678");
        assert_found(&format!("{tokyo}です"), &[(Phone, &tokyo)]);
    }

    #[test]
    fn a_phone_word_makes_compact_digits_a_number() {
        for text in
            [r#""phone": "0301234567""#, "TEL;TYPE=CELL:0301234567", "電話\u{ff1a}0301234567", "call me on 4155552671"]
        {
            assert_eq!(scan(text).iter().map(|f| f.0).collect::<Vec<_>>(), [Phone], "{text}");
        }
        for text in [r#""order": "0301234567""#, "hotel 0301234567", "phone 0301234567abc"] {
            assert_found(text, &[]);
        }
    }

    #[test]
    fn identifiers_counters_and_figures_are_no_phones() {
        for text in [
            "order ORD-2025-769159 and INV-2024-03-0471",
            "refs 4155552671, 20251234567, 748912345678",
            "FedEx 748912345678, UPS 1Z999AA10123456784, bytes=1048576000",
            r#""GET /cart HTTP/1.1" 200 1103427 "-""#,
            "isbn 978-3-16-148410-0, zip 94103-1234, build 120.0.6099.109",
            "sent 2024-01-15 10:00:00, took 52.245003s",
            "Betrag 937.937.105,10 €, am 01.12.2023 22.401,35 €, Chrome/166.0.83.927",
            "chrome/950.0.1000.950 ok",
            "oid 1.3.6.1.4.1.12345.1.1",
            "ssn-like 015-62-0000",
            "at 12:30:45 on 2024-01-02, order 12345",
        ] {
            assert_found(text, &[]);
        }
    }

    #[test]
    fn several_values_in_one_run() {
        assert_found("slash 030/1234567, dots 06.12.34.56.78", &[(Phone, "030/1234567"), (Phone, "06.12.34.56.78")]);
        assert_found("0301234567 / 0301234568", &[]);
        assert_found("phone 0301234567 / 0301234568", &[(Phone, "0301234567")]);
        assert_found("+49 30 1234567 +33 6 12 34 56 78", &[(Phone, "+49 30 1234567"), (Phone, "+33 6 12 34 56 78")]);
    }

    #[test]
    fn runs_too_short_too_long_or_empty() {
        assert_found("12345", &[]);
        assert_found("+43 111", &[]);
        assert_found(&"1".repeat(100_000), &[]);
        assert_found(&"00 ".repeat(10_000), &[]);
        assert_found(&"4111 ".repeat(10_000), &[]);
        assert_found(&format!("+{}", "1 ".repeat(10_000)), &[]);
    }

    #[test]
    fn a_run_of_one_separator_costs_no_check_per_group() {
        let (half, full) = (work(&"12 ".repeat(5_000)), work(&"12 ".repeat(10_000)));
        assert!(full <= 2 * half + 100, "{half} then {full}");
    }
}
