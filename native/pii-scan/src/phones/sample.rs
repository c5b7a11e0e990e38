//! A sample of phonenumbers' metadata for the crate's tests, as Python hands it over: a few regions with their real
//! trunk prefixes and formats, their number patterns cut down to the ranges the tests dial (tests/unit checks the
//! scanner against all of phonenumbers). One region of each kind the scanner tells apart: a plain trunk prefix
//! (DE, FR, AT, JP), one written or not (US), one with carrier codes in its prefix pattern (GB), one whose prefix
//! rewrites the number (AR: `011 15-...` is `+54 9 11 ...`), none (DK), and a non-geographic code (+800).

use std::collections::HashMap;

use super::{Desc, NumberFormat, Plan, Plans};

fn desc(pattern: &str, lengths: &[i64]) -> Option<Desc> {
    Some(Desc { national_number_pattern: Some(pattern.into()), possible_length: Some(lengths.to_vec()) })
}

/// A format; `rule` is its national prefix formatting rule (`0\1`: the trunk prefix written before the first group).
fn format(pattern: &str, leading: &str, rule: Option<&str>, optional: bool) -> NumberFormat {
    NumberFormat {
        pattern: Some(pattern.into()),
        leading_digits_pattern: Some(vec![leading.into()]),
        national_prefix_formatting_rule: rule.map(Into::into),
        national_prefix_optional_when_formatting: Some(optional),
    }
}

/// A plan with a trunk prefix (and its parsing pattern), fixed-line and mobile numbers and its formats.
fn plan(code: u32, prefix: Option<&str>, numbers: [Option<Desc>; 2], formats: Vec<NumberFormat>) -> Plan {
    let [fixed_line, mobile] = numbers;
    Plan {
        country_code: Some(code),
        national_prefix: prefix.map(Into::into),
        national_prefix_for_parsing: prefix.map(Into::into),
        national_prefix_transform_rule: None,
        general_desc: desc("", &[]),
        fixed_line,
        mobile,
        toll_free: None,
        premium_rate: None,
        shared_cost: None,
        personal_number: None,
        voip: None,
        pager: None,
        uan: None,
        voicemail: None,
        number_format: Some(formats),
    }
}

fn regions() -> HashMap<String, Option<Plan>> {
    let us = Plan {
        toll_free: desc(r"8(?:00|33|44|55|66|77|88)[2-9]\d{6}", &[10]),
        ..plan(
            1,
            Some("1"),
            [desc(r"[2-9]\d{2}[2-9]\d{6}", &[10]), desc(r"[2-9]\d{2}[2-9]\d{6}", &[10])],
            vec![format(r"(\d{3})(\d{3})(\d{4})", "[2-9]", None, true)],
        )
    };
    let de = Plan {
        toll_free: desc(r"800\d{7,12}", &[10, 11, 12, 13, 14, 15]),
        ..plan(
            49,
            Some("0"),
            [
                desc(
                    r"(?:[34]0|[68]9)\d{3,13}|(?:2\d|3[3-9]|[4-9][1-9])\d{4,11}",
                    &[5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
                ),
                desc(r"1(?:5\d|6[023]|7\d)\d{7,8}", &[10, 11]),
            ],
            vec![
                format(r"(\d{2})(\d{3,13})", "3[02]|40|[68]9", Some(r"0\1"), false),
                format(r"(\d{4})(\d{2,11})", "[24-7]|3[3-9]|8[1-8]|9[1-9]", Some(r"0\1"), false),
                format(r"(\d{3})(\d{7,8})", "1[5-7]", Some(r"0\1"), false),
                format(r"(\d{3})(\d{7,12})", "8", Some(r"0\1"), false),
            ],
        )
    };
    let fr = Plan {
        toll_free: desc(r"80[0-5]\d{6}", &[9]),
        ..plan(
            33,
            Some("0"),
            [
                desc(r"(?:26[013-9]|59[1-35-9])\d{6}|(?:[13]\d|2[0-57-9]|4[1-9]|5[0-8])\d{7}", &[9]),
                desc(r"(?:6(?:[0-24-8]\d|3[0-8]|9[589])|7[3-9]\d)\d{6}", &[9]),
            ],
            vec![
                format(r"(\d{3})(\d{2})(\d{2})(\d{2})", "8", Some(r"0 \1"), false),
                format(r"(\d)(\d{2})(\d{2})(\d{2})(\d{2})", "[1-79]", Some(r"0\1"), false),
            ],
        )
    };
    let gb = Plan {
        national_prefix_for_parsing: Some("0|180020".into()),
        ..plan(
            44,
            Some("0"),
            [desc(r"(?:1[1-9]\d|2\d\d)\d{6,7}", &[9, 10]), desc(r"7[1-57-9]\d{8}", &[10])],
            vec![
                format(r"(\d{2})(\d{4})(\d{4})", "[25]", Some(r"0\1"), false),
                format(r"(\d{4})(\d{6})", "7", Some(r"0\1"), false),
                format(r"(\d{3})(\d{3})(\d{4})", "[1389]", Some(r"0\1"), false),
            ],
        )
    };
    let ar = Plan {
        national_prefix_for_parsing: Some("0?(?:(11)15)?".into()),
        national_prefix_transform_rule: Some(r"9\1".into()),
        ..plan(
            54,
            Some("0"),
            [desc(r"11\d{8}", &[10]), desc(r"911\d{8}", &[11])],
            vec![
                format(r"(\d{2})(\d{4})(\d{4})", "1", Some(r"0\1"), true),
                format(r"(\d)(\d{2})(\d{4})(\d{4})", "91", Some(r"0\1"), false),
            ],
        )
    };
    let dk = plan(
        45,
        None,
        [desc(r"[2-9]\d{7}", &[8]), None],
        vec![format(r"(\d{2})(\d{2})(\d{2})(\d{2})", "[2-9]", None, false)],
    );
    let at = plan(
        43,
        Some("0"),
        [desc(r"1(?:11\d|[2-9]\d{3,11})|(?:316|463)\d{3,10}|662\d{3,10}", &[4, 5, 6, 7, 8, 9, 10, 11, 12, 13]), None],
        vec![
            format(r"(\d)(\d{3,12})", "1(?:11|[2-9])", Some(r"0\1"), false),
            format(r"(\d{3})(\d{3,10})", "316|463|66", Some(r"0\1"), false),
        ],
    );
    let jp = plan(
        81,
        Some("0"),
        [desc(r"[1-9]\d{8}", &[9]), desc(r"[7-9]0[1-9]\d{7}", &[10])],
        vec![
            format(r"(\d)(\d{4})(\d{4})", "[36]", Some(r"0\1"), false),
            format(r"(\d{2})(\d{4})(\d{4})", "[7-9]0", Some(r"0\1"), false),
        ],
    );
    let plans = [("US", us), ("DE", de), ("FR", fr), ("GB", gb), ("AR", ar), ("DK", dk), ("AT", at), ("JP", jp)];
    let mut regions: HashMap<String, Option<Plan>> = plans.into_iter().map(|(r, p)| (r.to_string(), Some(p))).collect();
    regions.insert("XX".into(), None); // a region phonenumbers lists without metadata
    regions
}

fn freephone() -> Plan {
    Plan {
        country_code: Some(800),
        toll_free: desc(r"(?:00|[1-9]\d)\d{6}", &[8]),
        ..plan(800, None, [None, None], vec![format(r"(\d{4})(\d{4})", r"\d", None, false)])
    }
}

/// The country calling codes of the sample, each with its regions (its main region first, as phonenumbers lists
/// them).
pub fn country_regions() -> HashMap<u32, Vec<String>> {
    let codes = [(1, "US"), (33, "FR"), (43, "AT"), (44, "GB"), (45, "DK"), (49, "DE"), (54, "AR"), (81, "JP")];
    let mut regions: HashMap<u32, Vec<String>> = codes.into_iter().map(|(c, r)| (c, vec![r.to_string()])).collect();
    regions.insert(800, vec!["001".into()]);
    regions
}

/// The sample as Python hands it over.
pub fn plans() -> Result<Plans, String> {
    Plans::new(regions(), HashMap::from([(800, Some(freephone()))]), country_regions())
}
