//! Phone numbers checked against phonenumbers' metadata (handed over by Python as its PhoneMetadata objects),
//! compiled once per region: its number patterns merged into one regex per national-number length, its trunk
//! prefix, and its formats (how the region groups its numbers).
//!
//! A number written with its country code (after a plus sign or an exit code: `+49 30 1234567`, `0049 30 1234567`)
//! is checked against every country's metadata, whatever the regions asked for. A national number (`030 1234567`)
//! only against those regions, and only as its region writes it: with the trunk prefix where the region writes one,
//! and broken into groups at least where the region's format breaks it (its area code a group of its own:
//! `2025-769159` is no US number), or compact where the caller saw a phone word before it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::FromPyObject;
use regex::{Captures, Regex, RegexBuilder};
use regex_automata::util::primitives::NonMaxUsize;
use regex_automata::util::syntax;
use regex_automata::{Input, meta};

use crate::text::Work;

#[cfg(test)]
pub mod sample;

/// A number description of phonenumbers' metadata (PhoneNumberDesc).
#[derive(FromPyObject)]
pub struct Desc {
    national_number_pattern: Option<String>,
    possible_length: Option<Vec<i64>>,
}

/// How a region groups some of its numbers (phonenumbers' NumberFormat).
#[derive(FromPyObject)]
pub struct NumberFormat {
    pattern: Option<String>,
    leading_digits_pattern: Option<Vec<String>>,
    national_prefix_formatting_rule: Option<String>,
    national_prefix_optional_when_formatting: Option<bool>,
}

/// A region's numbering plan (phonenumbers' PhoneMetadata).
#[derive(FromPyObject)]
pub struct Plan {
    country_code: Option<u32>,
    national_prefix: Option<String>,
    national_prefix_for_parsing: Option<String>,
    national_prefix_transform_rule: Option<String>,
    general_desc: Option<Desc>,
    fixed_line: Option<Desc>,
    mobile: Option<Desc>,
    toll_free: Option<Desc>,
    premium_rate: Option<Desc>,
    shared_cost: Option<Desc>,
    personal_number: Option<Desc>,
    voip: Option<Desc>,
    pager: Option<Desc>,
    uan: Option<Desc>,
    voicemail: Option<Desc>,
    number_format: Option<Vec<NumberFormat>>,
}

impl Plan {
    /// Every kind of number the plan describes (the matcher's VALID leniency accepts each of them).
    fn kinds(&self) -> [&Option<Desc>; 10] {
        [
            &self.fixed_line,
            &self.mobile,
            &self.toll_free,
            &self.premium_rate,
            &self.shared_cost,
            &self.personal_number,
            &self.voip,
            &self.pager,
            &self.uan,
            &self.voicemail,
        ]
    }
}

const NON_GEOGRAPHIC: &str = "001";
/// More groups than any format has, its whole match included (phonenumbers' have up to five).
const MAX_FORMAT_GROUPS: usize = 16;
const MAX_WRITTEN: usize = 20;

fn compile(pattern: &str) -> Result<Regex, String> {
    // phonenumbers' patterns are ASCII digit classes: no Unicode tables needed.
    RegexBuilder::new(pattern).unicode(false).build().map_err(|e| format!("phone metadata pattern {pattern:?}: {e}"))
}

/// A pattern matched from the number's first digit (Python's `re.match`).
fn prefix_pattern(pattern: &str) -> Result<Regex, String> {
    compile(&format!("^(?:{pattern})"))
}

/// A pattern matching the whole number (Python's `re.fullmatch`).
fn whole_pattern(pattern: &str) -> Result<Regex, String> {
    compile(&format!("^(?:{pattern})$"))
}

/// National-number length -> one regex of every kind of number of that length.
struct ByLength(Vec<Option<Regex>>);

impl ByLength {
    fn new<'a>(plans: impl IntoIterator<Item = &'a Plan>) -> Result<Self, String> {
        let mut by_length: Vec<Vec<&str>> = Vec::new();
        for plan in plans {
            let general = plan.general_desc.as_ref().and_then(|g| g.possible_length.as_deref()).unwrap_or_default();
            for desc in plan.kinds().into_iter().flatten() {
                let Some(pattern) = desc.national_number_pattern.as_deref().filter(|p| !p.is_empty()) else { continue };
                let lengths = desc.possible_length.as_deref().filter(|l| !l.is_empty()).unwrap_or(general);
                for &length in lengths.iter().filter(|&&l| l > 0) {
                    let length = length as usize;
                    if by_length.len() <= length {
                        by_length.resize(length + 1, Vec::new());
                    }
                    if !by_length[length].contains(&pattern) {
                        by_length[length].push(pattern);
                    }
                }
            }
        }
        let merged = |patterns: &Vec<&str>| {
            let alternatives: Vec<String> = patterns.iter().map(|p| format!("(?:{p})")).collect();
            (!patterns.is_empty()).then(|| whole_pattern(&alternatives.join("|"))).transpose()
        };
        Ok(Self(by_length.iter().map(merged).collect::<Result<_, _>>()?))
    }

    fn valid(&self, number: &str, work: &Work) -> bool {
        work.regex(number);
        self.0.get(number.len()).and_then(Option::as_ref).is_some_and(|p| p.is_match(number))
    }

    fn lengths(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().filter(|(_, p)| p.is_some()).map(|(n, _)| n)
    }
}

/// One way a region groups some of its numbers.
struct Format {
    leading: Option<Regex>,      // the number's first digits that select this format
    groups: meta::Regex,         // matched into slots on the stack: no allocation per number
    prefix_required: bool,       // the national form writes the trunk prefix ("030 ...", not "30 ...")
    first_group: (usize, usize), // the first group's fewest and most digits
}

impl Format {
    fn new(format: &NumberFormat, prefix: &str) -> Result<Self, String> {
        let rule = format.national_prefix_formatting_rule.as_deref().unwrap_or_default();
        let shown = !prefix.is_empty() && rule.replace("\\1", "").contains(prefix);
        let pattern = format.pattern.as_deref().unwrap_or_default();
        let groups = meta::Regex::builder()
            .syntax(syntax::Config::new().unicode(false))
            .build(&format!("^(?:{pattern})$"))
            .map_err(|e| format!("phone metadata pattern {pattern:?}: {e}"))?;
        if groups.group_info().slot_len() > 2 * MAX_FORMAT_GROUPS {
            return Err(format!("phone number format {pattern:?}: more than {} groups", MAX_FORMAT_GROUPS - 1));
        }
        Ok(Self {
            leading: format
                .leading_digits_pattern
                .as_ref()
                .and_then(|l| l.last())
                .map(|l| prefix_pattern(l))
                .transpose()?,
            groups,
            prefix_required: shown && !format.national_prefix_optional_when_formatting.unwrap_or(false),
            first_group: first_group(pattern).unwrap_or((1, MAX_WRITTEN)),
        })
    }

    /// Where this format ends the number's groups but the last, or None if it does not group `number`.
    fn breaks(&self, number: &str, work: &Work) -> Option<Vec<usize>> {
        work.regex(number);
        if self.leading.as_ref().is_some_and(|l| !l.is_match(number)) {
            return None;
        }
        work.regex(number);
        let mut slots = [None::<NonMaxUsize>; 2 * MAX_FORMAT_GROUPS];
        let wanted = self.groups.group_info().slot_len();
        self.groups.search_slots(&Input::new(number), &mut slots[..wanted])?;
        // Python's lastindex: the last group that took part (formats are sequences of groups).
        let ends: Vec<Option<usize>> = slots[..wanted].chunks(2).skip(1).map(|s| s[1].map(NonMaxUsize::get)).collect();
        let last = ends.iter().rposition(Option::is_some).map_or(0, |g| g + 1);
        Some(ends[..last.saturating_sub(1)].iter().map(|end| end.unwrap_or(usize::MAX)).collect())
    }
}

/// A format's first group, `(\d{3})`, `(\d{2,4})` or `(\d)`: its fewest and most digits.
fn first_group(pattern: &str) -> Option<(usize, usize)> {
    let rest = pattern.strip_prefix("(\\d")?;
    if rest.starts_with(')') {
        return Some((1, 1));
    }
    let (counts, _) = rest.strip_prefix('{')?.split_once("})")?;
    let number = |s: &str| (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten();
    match counts.split_once(',') {
        Some((low, high)) => Some((number(low)?, number(high)?)),
        None => number(counts).map(|n| (n, n)),
    }
}

/// Offsets below this fit the masks of a region's first breaks and lengths (no number has half as many digits).
const MASK_BITS: usize = 64;

fn mask(values: impl IntoIterator<Item = usize>) -> u64 {
    values.into_iter().filter(|&v| v < MASK_BITS).fold(0, |m, v| m | 1 << v)
}

fn in_mask(mask: u64, value: usize) -> bool {
    value < MASK_BITS && mask & (1 << value) != 0
}

/// A region's national numbering: its trunk prefix, its valid numbers, its formats.
pub struct Region {
    for_parsing: Option<Regex>,
    transform: Option<String>,
    valid: ByLength,
    formats: Vec<Format>,
    first_breaks: u64,
    /// A trunk prefix read as it is written (most regions), else a pattern with carrier codes or rewrites.
    plain_prefix: String,
    /// Some numbers are written without the prefix.
    bare: bool,
    first_digits: u16,
    lengths: u64,
}

impl Region {
    fn new(plan: &Plan, main: &Plan) -> Result<Self, String> {
        let prefix = plan.national_prefix.clone().unwrap_or_default();
        let for_parsing = plan.national_prefix_for_parsing.as_deref();
        let transform = plan.national_prefix_transform_rule.clone().filter(|t| !t.is_empty());
        let valid = ByLength::new([plan])?;
        let formats = match plan.number_format.as_deref() {
            Some(formats) if !formats.is_empty() => formats,
            _ => main.number_format.as_deref().unwrap_or_default(),
        };
        let formats = formats.iter().map(|f| Format::new(f, &prefix)).collect::<Result<Vec<_>, _>>()?;
        let bare = formats.iter().any(|f| !f.prefix_required);
        let plain_prefix = if for_parsing == Some(prefix.as_str()) { prefix.clone() } else { String::new() };
        let first_digits = if bare || plain_prefix.is_empty() {
            0x3ff
        } else {
            prefix.bytes().next().and_then(|b| b.checked_sub(b'0')).filter(|&d| d < 10).map_or(0, |d| 1 << d)
        };
        // How many digits a written national number has: with a plain trunk prefix, with it or not; any, where the
        // prefix comes with carrier codes or is rewritten.
        let lengths = if transform.is_some() || (!prefix.is_empty() && for_parsing != Some(prefix.as_str())) {
            mask(1..MAX_WRITTEN)
        } else {
            mask(valid.lengths().chain(valid.lengths().map(|n| n + prefix.len())))
        };
        // Every offset where a written national number's first group may end: its format's first group (after the
        // trunk prefix, glued to it), or the prefix alone (`0 30 ...`); any, where the prefix can be rewritten.
        let first_breaks = if transform.is_some() {
            mask(1..MAX_WRITTEN)
        } else {
            let mut breaks = if prefix.is_empty() { 0 } else { mask([prefix.len()]) };
            for format in &formats {
                let (low, high) = format.first_group;
                for length in low..=high.min(MASK_BITS) {
                    breaks |= mask([length + prefix.len()]);
                    if !format.prefix_required {
                        breaks |= mask([length]);
                    }
                }
            }
            breaks & !1
        };
        Ok(Self {
            for_parsing: if prefix.is_empty() { None } else { Some(prefix_pattern(for_parsing.unwrap_or_default())?) },
            transform,
            valid,
            formats,
            first_breaks,
            plain_prefix,
            bare,
            first_digits,
            lengths,
        })
    }

    fn format(&self, number: &str, work: &Work) -> Option<(&Format, Vec<usize>)> {
        self.formats.iter().find_map(|f| f.breaks(number, work).map(|b| (f, b)))
    }

    /// Whether `digits` are a valid national number of this region as written: with its trunk prefix (and carrier
    /// code) or, where the region writes none, without; `breaks` are the offsets where the text splits the digits
    /// into groups (none: written compact).
    fn written(&self, digits: &str, breaks: &[usize], work: &Work) -> bool {
        if !self.plain_prefix.is_empty() {
            let shift = self.plain_prefix.len();
            if digits.starts_with(&self.plain_prefix) && self.grouped(&digits[shift..], shift, breaks, true, work) {
                return true;
            }
        } else if let Some(prefix) = self.for_parsing.as_ref()
            && let Some(shift) = {
                work.regex(digits);
                prefix.find(digits).map(|m| m.end()).filter(|&end| end > 0)
            }
        {
            // Its groups only where a transform rule may rewrite them.
            let rewritten = self.transform.as_deref().and_then(|transform| {
                let prefixed = prefix.captures(digits)?;
                prefixed.iter().skip(1).any(|g| g.is_some()).then(|| expand(transform, &prefixed))
            });
            if let Some(rewritten) = rewritten {
                // A carrier code or mobile token rewritten (AR: 0 11 15-xxxx-xxxx is 9 11 xxxx-xxxx): no grouping
                // check.
                let number = rewritten + &digits[shift..];
                if self.valid.valid(&number, work) && self.format(&number, work).is_some() {
                    return true;
                }
            } else if self.grouped(&digits[shift..], shift, breaks, true, work) {
                return true;
            }
        }
        self.bare && self.grouped(digits, 0, breaks, false, work)
    }

    fn grouped(&self, number: &str, shift: usize, breaks: &[usize], prefixed: bool, work: &Work) -> bool {
        if !self.valid.valid(number, work) {
            return false;
        }
        let Some((format, groups)) = self.format(number, work) else { return false };
        if format.prefix_required && !prefixed {
            return false;
        }
        if breaks.is_empty() {
            return true;
        }
        // The text breaks the number where its region's format does, its area code a group of its own, and may break
        // the rest more (`030 123 456 78`), or right after the prefix (`1 800 ...`); never across a group:
        // `2025-769159`, `200 1103427` (an HTTP status and a byte count) are no US numbers.
        let written: Vec<usize> = breaks.iter().copied().filter(|&b| b != shift).collect();
        !groups.is_empty()
            && written.first() == Some(&(shift + groups[0]))
            && groups.iter().all(|b| written.contains(&(shift + b)))
    }
}

/// A transform rule (`9\1`) with its group references replaced (an unmatched group is empty, as in Python).
fn expand(template: &str, groups: &Captures) -> String {
    let mut out = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().and_then(|d| d.to_digit(10))) {
            ('\\', Some(group)) => {
                chars.next();
                out.push_str(groups.get(group as usize).map_or("", |m| m.as_str()));
            }
            _ => out.push(c),
        }
    }
    out
}

/// A country calling code's numbers, all its regions together: what an international number is checked against.
struct Country {
    valid: ByLength,
    trunk: Option<Regex>,
}

impl Country {
    /// The national number after the country code; a trunk prefix written anyway (`+49 (0)30 ...`) is dropped.
    fn valid(&self, number: &str, work: &Work) -> bool {
        if self.valid.valid(number, work) {
            return true;
        }
        work.regex(number);
        let trunk = self.trunk.as_ref().and_then(|t| t.find(number)).map_or(0, |m| m.end());
        trunk > 0 && self.valid.valid(&number[trunk..], work)
    }
}

/// phonenumbers' metadata of every region, and every country calling code's numbers: built once per process and
/// shared by its scanners.
pub struct Plans {
    regions: HashMap<String, Plan>,
    country_regions: HashMap<u32, Vec<String>>,
    compiled: Mutex<HashMap<String, Arc<Region>>>,
    countries: HashMap<u32, Country>,
}

impl Plans {
    pub fn new(
        regions: HashMap<String, Option<Plan>>,
        non_geographic: HashMap<u32, Option<Plan>>,
        country_regions: HashMap<u32, Vec<String>>,
    ) -> Result<Self, String> {
        let regions: HashMap<String, Plan> = regions.into_iter().filter_map(|(r, p)| Some((r, p?))).collect();
        let mut countries = HashMap::new();
        for (&code, members) in &country_regions {
            let plans = members
                .iter()
                .map(|r| match r.as_str() {
                    NON_GEOGRAPHIC => Ok(non_geographic.get(&code).and_then(Option::as_ref)),
                    _ => regions.get(r).map(Some).ok_or_else(|| format!("no phone number metadata for region {r:?}")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            // A trunk prefix written anyway after the country code is read as the main region reads it.
            let trunk = plans
                .first()
                .copied()
                .flatten()
                .filter(|main| main.national_prefix.as_deref().is_some_and(|p| !p.is_empty()))
                .and_then(|main| main.national_prefix_for_parsing.as_deref())
                .filter(|p| !p.is_empty())
                .map(prefix_pattern)
                .transpose()?;
            countries.insert(code, Country { valid: ByLength::new(plans.into_iter().flatten())?, trunk });
        }
        Ok(Self { regions, country_regions, compiled: Mutex::default(), countries })
    }

    fn plan(&self, region: &str) -> Result<&Plan, String> {
        self.regions.get(region).ok_or_else(|| format!("no phone number metadata for region {region:?}"))
    }

    /// A region's national numbering (compiled once).
    pub fn region(&self, region: &str) -> Result<Arc<Region>, String> {
        if let Some(compiled) = self.compiled.lock().expect("no panic holds the lock").get(region) {
            return Ok(compiled.clone());
        }
        let plan = self.plan(region)?;
        // Regions sharing a country code (CA, the Caribbean) are formatted by its main region (US), as in
        // phonenumbers.
        let main = match plan.country_code.and_then(|c| self.country_regions.get(&c)).and_then(|r| r.first()) {
            Some(main) => self.plan(main)?,
            None => plan,
        };
        let compiled = Arc::new(Region::new(plan, main)?);
        self.compiled.lock().expect("no panic holds the lock").insert(region.to_string(), compiled.clone());
        Ok(compiled)
    }

    /// Whether `digits` (after a plus or an exit code) are a country code and a valid number of that country.
    pub fn international(&self, digits: &str, work: &Work) -> bool {
        if digits.is_empty() || digits.starts_with('0') {
            return false;
        }
        work.count(3);
        // Country codes are prefix-free: at most one length matches.
        (1..=3.min(digits.len()))
            .find_map(|n| self.countries.get(&digits[..n].parse().ok()?).map(|c| (n, c)))
            .is_some_and(|(n, country)| country.valid(&digits[n..], work))
    }
}

/// The national formats of a set of regions, and numbers dialled from them with an exit code (`0049 30 ...`).
pub struct National {
    plans: Arc<Plans>,
    regions: Vec<Arc<Region>>,
    exit_codes: &'static [&'static str],
    /// (first break or 0 for compact digits, number of digits, first digit) -> the regions that may write it.
    candidates: Vec<OnceLock<Vec<usize>>>,
}

/// The most digits a national number is checked with (the longest phone number, with a trunk prefix and carrier
/// digit written anyway); longer ones find no region here.
const MAX_CHECKED: usize = 20;

impl National {
    pub fn new(plans: Arc<Plans>, regions: &[String]) -> Result<Self, String> {
        let mut codes: Vec<String> = Vec::new();
        for region in regions.iter().map(|r| r.to_uppercase()) {
            if !codes.contains(&region) {
                codes.push(region);
            }
        }
        let compiled = codes.iter().map(|c| plans.region(c)).collect::<Result<_, _>>()?;
        let north_america = codes.iter().any(|c| c == "US" || c == "CA");
        Ok(Self {
            plans,
            regions: compiled,
            exit_codes: if north_america { &["00", "011"] } else { &["00"] },
            candidates: (0..MAX_CHECKED * MAX_CHECKED * 10).map(|_| OnceLock::new()).collect(),
        })
    }

    pub fn international(&self, digits: &str, work: &Work) -> bool {
        self.plans.international(digits, work)
    }

    /// The regions that may write `digits` with this first break (each one yielded counted as work; which they are
    /// is worked out once per scanner).
    fn regions_for(&self, first_break: usize, digits: &str, work: &Work) -> impl Iterator<Item = &Region> {
        let first = usize::from(digits.as_bytes()[0] - b'0');
        let fits = move |r: &Region| {
            in_mask(r.lengths, digits.len())
                && r.first_digits & (1 << first) != 0
                && (first_break == 0 || in_mask(r.first_breaks, first_break))
        };
        let cached = (first_break < MAX_CHECKED && digits.len() < MAX_CHECKED).then(|| {
            self.candidates[(first_break * MAX_CHECKED + digits.len()) * 10 + first]
                .get_or_init(|| (0..self.regions.len()).filter(|&k| fits(&self.regions[k])).collect())
        });
        let listed = cached.into_iter().flatten().map(|&k| &*self.regions[k]);
        let unlisted = self.regions.iter().filter(move |r| cached.is_none() && fits(r)).map(|r| &**r);
        listed.chain(unlisted).inspect(|_| work.count(1))
    }

    /// Digits written without separators (the caller saw a phone word before them).
    pub fn compact(&self, digits: &str, work: &Work) -> bool {
        self.regions_for(0, digits, work).any(|r| r.written(digits, &[], work)) || self.dialled(digits, work)
    }

    /// Digits the text splits into groups at `breaks` (offsets into `digits`).
    pub fn grouped(&self, digits: &str, breaks: &[usize], work: &Work) -> bool {
        self.regions_for(breaks[0], digits, work).any(|r| r.written(digits, breaks, work))
    }

    /// Whether the digits start with an exit code of these regions (`00`, and `011` in North America).
    pub fn dialling(&self, digits: &str) -> bool {
        self.exit_codes.iter().any(|code| digits.starts_with(code))
    }

    /// An international number dialled with an exit code (`0049 30 1234567`).
    pub fn dialled(&self, digits: &str, work: &Work) -> bool {
        self.exit_codes.iter().any(|code| digits.starts_with(code) && self.international(&digits[code.len()..], work))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::*;
    use crate::testing::national;

    fn work() -> Work {
        Work::default()
    }

    #[test]
    fn a_formats_first_group() {
        assert_eq!(first_group(r"(\d{3})(\d{4})"), Some((3, 3)));
        assert_eq!(first_group(r"(\d{2,4})(\d{4})"), Some((2, 4)));
        assert_eq!(first_group(r"(\d)(\d{4})"), Some((1, 1)));
        for pattern in [
            r"(\d{3,})(\d{4})",
            r"(\d{,3})",
            r"(\d{a})",
            r"(?:\d{3})",
            r"([2-9]\d{2})",
            "",
            r"(\d{99999999999999999999})",
        ] {
            assert_eq!(first_group(pattern), None, "{pattern}");
        }
    }

    #[test]
    fn a_transform_rule_with_its_groups() {
        let prefix = prefix_pattern("0?(?:(11)15)?").expect("compiles");
        let groups = prefix.captures("01115").expect("matches");
        assert_eq!(expand(r"9\1", &groups), "911");
        assert_eq!(expand("\\2x\\", &groups), "x\\", "an unmatched group is empty, a lone backslash stays");
        assert_eq!(expand("", &groups), "");
    }

    #[test]
    fn masks_keep_offsets_below_64() {
        let m = mask([0, 3, 63, 64, 1000]);
        assert!(in_mask(m, 0) && in_mask(m, 3) && in_mask(m, 63));
        assert!(!in_mask(m, 1) && !in_mask(m, 64) && !in_mask(m, usize::MAX));
        assert_eq!(mask([]), 0);
    }

    fn format(pattern: &str, leading: &str) -> Format {
        let format = NumberFormat {
            pattern: Some(pattern.into()),
            leading_digits_pattern: Some(vec!["9".into(), leading.into()]), // the last one is the most precise
            national_prefix_formatting_rule: Some(r"0\1".into()),
            national_prefix_optional_when_formatting: None,
        };
        Format::new(&format, "0").expect("compiles")
    }

    #[test]
    fn where_a_format_breaks_a_number() {
        let berlin = format(r"(\d{2})(\d{3,13})", "3[02]|40|[68]9");
        assert_eq!(berlin.breaks("301234567", &work()), Some(vec![2]));
        assert_eq!(berlin.breaks("331234567", &work()), None, "its leading digits do not select it");
        assert_eq!(berlin.breaks("30", &work()), None, "too short for its groups");
        assert!(berlin.prefix_required);
        assert_eq!(berlin.first_group, (2, 2));
        let france = format(r"(\d)(\d{2})(\d{2})(\d{2})(\d{2})", "[1-79]");
        assert_eq!(france.breaks("612345678", &work()), Some(vec![1, 3, 5, 7]));
        let optional = format(r"(\d{3})(\d{4})(\d{4})?", "1");
        assert_eq!(optional.breaks("1234567", &work()), Some(vec![3]), "the last group that took part ends it");
    }

    #[test]
    fn a_format_with_more_groups_than_any_is_refused() {
        let pattern = r"(\d)".repeat(MAX_FORMAT_GROUPS);
        let format = NumberFormat {
            pattern: Some(pattern),
            leading_digits_pattern: None,
            national_prefix_formatting_rule: None,
            national_prefix_optional_when_formatting: None,
        };
        let refused = Format::new(&format, "").err().expect("refused");
        assert!(refused.contains("more than 15 groups"), "{refused}");
    }

    #[test]
    fn a_bad_pattern_is_refused_with_its_text() {
        let refused = compile(r"(\d{3}").expect_err("refused");
        assert!(refused.starts_with(r#"phone metadata pattern "(\\d{3}""#), "{refused}");
    }

    #[test]
    fn international_numbers_of_every_country_whatever_the_regions() {
        let us_only = national(&["US"]);
        for digits in [
            "4930123456",    // +49 30 123456
            "49030123456",   // +49 (0)30 123456: a trunk prefix written anyway
            "4915146734012", // a German mobile number
            "12025550143",   // +1 202 555 0143
            "33612345678",   // +33 6 12 34 56 78
            "431110",        // +43 1110: the shortest
            "5491112345678", // +54 9 11 1234-5678
            "80012345678",   // +800 1234 5678
        ] {
            assert!(us_only.international(digits, &work()), "+{digits}");
        }
        for digits in [
            "",
            "0",
            "0049301234567",
            "1202555014",   // one digit short
            "120255501430", // one digit more
            "12021550143",  // no US exchange starts with 1
            "99912345678",  // no such country code
            "3361234567",   // FR: nine digits
            "4",
            "999999999999999999999999999999",
        ] {
            assert!(!us_only.international(digits, &work()), "+{digits}");
        }
    }

    #[test]
    fn national_numbers_only_for_the_regions_asked_for() {
        let (german, us) = (national(&["DE"]), national(&["US"]));
        assert!(german.grouped("0301234567", &[3], &work()), "030 1234567");
        assert!(!us.grouped("0301234567", &[3], &work()));
        assert!(us.grouped("4155550199", &[3, 6], &work()), "(415) 555-0199");
        assert!(us.grouped("14155550199", &[1, 4, 7], &work()), "1 415 555 0199: the trunk prefix alone");
        assert!(!german.grouped("4155550199", &[3, 6], &work()));
    }

    #[test]
    fn a_national_number_is_broken_where_its_region_breaks_it() {
        let regions = national(&["DE", "US", "FR", "GB", "AT", "JP", "DK"]);
        for (digits, breaks) in [
            ("0301234567", &[3][..]),      // 030 1234567
            ("0301234567", &[3, 6]),       // 030 123 4567: the rest broken more
            ("0301234567", &[1, 3]),       // 0 30 1234567: after the trunk prefix
            ("0742263986", &[2, 4, 6, 8]), // 07 42 26 39 86
            ("01618459014", &[4, 7]),      // 0161 845 9014
            ("0662123456", &[4]),          // 0662 123456
            ("0369084061", &[2, 6]),       // 03-6908-4061
            ("32123456", &[2, 4, 6]),      // 32 12 34 56: no trunk prefix
            ("0800123456", &[1, 4, 6, 8]), // 0 800 12 34 56: FR's toll-free numbers
        ] {
            assert!(regions.grouped(digits, breaks, &work()), "{digits} at {breaks:?}");
        }
        for (digits, breaks) in [
            ("0301234567", &[2][..]), // 03 01234567: across the area code
            ("0301234567", &[4]),     // 0301 234567
            ("2025769159", &[4]),     // 2025-769159: a year and a sequence, no US number
            ("2001103427", &[3]),     // 200 1103427: an HTTP status and a byte count
            ("4155550199", &[3, 5]),  // 415 55 50199
            ("301234567", &[2]),      // 30 1234567: DE writes its trunk prefix
        ] {
            assert!(!regions.grouped(digits, breaks, &work()), "{digits} at {breaks:?}");
        }
    }

    #[test]
    fn compact_national_numbers() {
        let regions = national(&["DE", "US"]);
        assert!(regions.compact("0301234567", &work()));
        assert!(regions.compact("4155552671", &work()));
        assert!(regions.compact("0049301234567", &work()), "dialled with an exit code");
        assert!(!regions.compact("9301234567", &work()));
        assert!(!regions.compact("030123456789012345678901", &work()), "longer than any number");
    }

    #[test]
    fn a_trunk_prefix_that_rewrites_the_number() {
        // Argentina: 011 15-1234-5678 is the mobile number +54 9 11 1234-5678.
        let argentina = national(&["AR"]);
        assert!(argentina.grouped("0111512345678", &[3, 5, 9], &work()));
        assert!(argentina.compact("0111512345678", &work()));
        assert!(argentina.grouped("01112345678", &[3, 7], &work()), "011 1234-5678, a fixed line");
        assert!(!argentina.grouped("0111612345678", &[3, 5, 9], &work()), "16 is no mobile token");
    }

    #[test]
    fn a_trunk_prefix_pattern_with_carrier_codes() {
        // GB parses `0|180020` as its prefix: no plain prefix, any length and first break.
        let britain = national(&["GB"]);
        assert!(britain.grouped("02070313000", &[3, 7], &work()), "020 7031 3000");
        assert!(britain.grouped("07400123456", &[5], &work()), "07400 123456");
        assert!(!britain.grouped("2070313000", &[2, 6], &work()), "GB writes its trunk prefix");
    }

    #[test]
    fn exit_codes_of_the_regions_asked_for() {
        let (europe, north_america) = (national(&["DE", "FR"]), national(&["DE", "US"]));
        assert!(europe.dialling("0049301234567") && !europe.dialling("011493012345"));
        assert!(north_america.dialling("011493012345") && north_america.dialling("0049301234567"));
        assert!(north_america.dialled("01149301234567", &work()));
        assert!(!europe.dialled("01149301234567", &work()));
        assert!(europe.dialled("0033612345678", &work()));
        assert!(!europe.dialled("00", &work()) && !europe.dialled("", &work()));
    }

    #[test]
    fn regions_are_named_in_any_case_once_each() {
        let regions = national(&["de", "DE", "fr"]);
        assert_eq!(regions.regions.len(), 2);
        assert!(regions.grouped("0301234567", &[3], &work()));
    }

    #[test]
    fn a_region_without_metadata_is_refused() {
        let plans = Arc::new(sample::plans().expect("the sample"));
        for region in ["XX", "ZZ", ""] {
            let refused = National::new(plans.clone(), &[region.to_string()]).err().expect("refused");
            assert_eq!(refused, format!("no phone number metadata for region {region:?}"));
        }
    }

    #[test]
    fn a_country_code_listing_a_region_without_metadata_is_refused() {
        let refused = Plans::new(HashMap::new(), HashMap::new(), HashMap::from([(49, vec!["DE".to_string()])]))
            .err()
            .expect("refused");
        assert_eq!(refused, r#"no phone number metadata for region "DE""#);
        assert!(Plans::new(HashMap::new(), HashMap::new(), HashMap::new()).is_ok(), "no metadata at all");
    }

    #[test]
    fn a_region_is_compiled_once() {
        let plans = sample::plans().expect("the sample");
        let (first, again) = (plans.region("DE").expect("DE"), plans.region("DE").expect("DE"));
        assert!(Arc::ptr_eq(&first, &again));
    }

    #[test]
    fn the_work_of_a_check_is_counted() {
        let nothing = crate::text::Text::new(&[]);
        assert!(national(&["DE"]).compact("0301234567", &nothing.work));
        assert!(nothing.work() > 0);
    }
}
