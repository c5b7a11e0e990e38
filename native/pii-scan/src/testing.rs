//! What the crate's tests share: the Unicode version of Python 3.11 (a process reads one), samples of the IBAN
//! registry and of phonenumbers' metadata (phones/sample.rs), and the scan of a text as (entity, value) pairs.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use crate::Entity;
use crate::candidates::{self, Checks};
use crate::digit_runs::Found;
use crate::ibans::Registry;
use crate::phones::{National, Plans, sample};
use crate::text::{self, Text};

/// `unicodedata.unidata_version` of Python 3.11, the oldest Python the extension is built for.
pub const UNICODE: &str = "14.0.0";

/// Sets the process's Unicode version (every test that reads characters calls it first).
pub fn unicode() {
    text::use_unicode(UNICODE).expect("the tests' Unicode version");
}

/// python-stdnum's BBAN formats of a few countries.
pub fn registry() -> Registry {
    let formats = [
        ("DE", "8!n10!n"),
        ("GB", "4!a6!n8!n"),
        ("NO", "4!n6!n1!n"),
        ("SA", "2!n18!c"),
        ("AT", "5!n11!n"),
        ("FR", "5!n5!n11!c2!n"),
        ("NL", "4!a10!n"),
    ];
    Registry::new(formats.into_iter().map(|(c, f)| (c.to_string(), f.to_string())).collect::<HashMap<_, _>>())
        .expect("the sample's formats")
}

static PLANS: LazyLock<Arc<Plans>> = LazyLock::new(|| Arc::new(sample::plans().expect("the sample's metadata")));

/// The national formats of these sample regions.
pub fn national(regions: &[&str]) -> National {
    unicode();
    National::new(PLANS.clone(), &regions.iter().map(|r| r.to_string()).collect::<Vec<_>>()).expect("sample regions")
}

/// The regions a scan reads national numbers for unless a test says otherwise: every region of the sample.
pub const REGIONS: &[&str] = &["US", "DE", "FR", "GB", "AR", "DK", "AT", "JP"];

/// The text as code points, as Python hands it over.
pub fn chars(text: &str) -> Vec<char> {
    text.chars().collect()
}

/// The text as a Japanese or Chinese input method types it: full-width digits, plus and hyphen.
pub fn full_width(text: &str) -> String {
    let width = |c: char| match c {
        '0'..='9' => char::from_u32(0xff10 + (c as u32 - '0' as u32)).expect("a full-width digit"),
        '+' => '\u{ff0b}',
        '-' => '\u{ff0d}',
        _ => c,
    };
    text.chars().map(width).collect()
}

/// What a scan of `chars` finds for national numbers of `regions`, by position, and the work it did.
fn scanned(regions: &[&str], chars: &[char]) -> (Vec<Found>, u64) {
    let (national, ibans) = (national(regions), registry());
    let text = Text::new(chars);
    let mut found = candidates::find(&text, &Checks { national: &national, ibans: &ibans });
    found.sort_by_key(|&(start, end, _)| (start, end));
    (found, text.work())
}

/// Every entity found in `text` as (entity, the text it spans), by position, for national numbers of `regions`.
pub fn scan_for(regions: &[&str], text: &str) -> Vec<(Entity, String)> {
    let chars = chars(text);
    let (found, _) = scanned(regions, &chars);
    found.into_iter().map(|(start, end, entity)| (entity, chars[start..end].iter().collect())).collect()
}

/// The same, for every region of the sample.
pub fn scan(text: &str) -> Vec<(Entity, String)> {
    scan_for(REGIONS, text)
}

/// Asserts what a scan of `text` finds, for every region of the sample, as (entity, value) pairs.
#[track_caller]
pub fn assert_found(text: &str, expected: &[(Entity, &str)]) {
    let expected: Vec<(Entity, String)> = expected.iter().map(|&(e, v)| (e, v.to_string())).collect();
    assert_eq!(scan(text), expected, "in {text:?}");
}

/// The work a scan of `text` does (characters read, regex calls over their input), for every region of the sample.
pub fn work(text: &str) -> u64 {
    scanned(REGIONS, &chars(text)).1
}
