//! mcpexec's built-in PII detector: one linear-time candidate scan over the text (candidates.rs), then a validator
//! per family: emails, IP addresses, IBANs, and digit runs (cards, SSNs, phone numbers, checked against
//! phonenumbers' metadata). The words that make bare digits a phone number or an SSN are in context.rs.
//!
//! Python hands over the data (phonenumbers' numbering plans, python-stdnum's IBAN registry) and gets spans back in
//! code points, as `str` offsets; the scan itself runs without the GIL.

mod addresses;
mod candidates;
mod cards;
mod context;
mod digit_runs;
mod emails;
mod ibans;
mod phones;
mod ssns;
#[cfg(test)]
mod testing;
mod text;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::candidates::Checks;
use crate::ibans::Registry;
use crate::phones::{National, Plan, Plans};
use crate::text::Text;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Entity {
    Email,
    Iban,
    CreditCard,
    UsSsn,
    IpAddress,
    Phone,
}

impl Entity {
    const ALL: [Entity; 6] =
        [Entity::Email, Entity::Iban, Entity::CreditCard, Entity::UsSsn, Entity::IpAddress, Entity::Phone];

    /// Its name in Python (mcpexec.api.pii.PiiEntity's values).
    fn name(self) -> &'static str {
        match self {
            Entity::Email => "EMAIL",
            Entity::Iban => "IBAN",
            Entity::CreditCard => "CREDIT_CARD",
            Entity::UsSsn => "US_SSN",
            Entity::IpAddress => "IP_ADDRESS",
            Entity::Phone => "PHONE",
        }
    }

    /// The same, as a Python string made once.
    fn py_name<'py>(self, py: Python<'py>) -> &'py Bound<'py, PyString> {
        match self {
            Entity::Email => pyo3::intern!(py, "EMAIL"),
            Entity::Iban => pyo3::intern!(py, "IBAN"),
            Entity::CreditCard => pyo3::intern!(py, "CREDIT_CARD"),
            Entity::UsSsn => pyo3::intern!(py, "US_SSN"),
            Entity::IpAddress => pyo3::intern!(py, "IP_ADDRESS"),
            Entity::Phone => pyo3::intern!(py, "PHONE"),
        }
    }
}

/// Detections for Python: (start, end, entity) in code points.
type Spans<'py> = Vec<(usize, usize, Bound<'py, PyString>)>;

/// The data the scanners check against, built once per process: phonenumbers' PhoneMetadata of every region and
/// non-geographic country code, its country code -> regions table, each IBAN country's BBAN format, and the Unicode
/// version of Python's `re` (which characters are digits, letters and numbers).
#[pyclass(frozen, module = "mcpexec_pii_scan")]
struct Metadata {
    plans: Arc<Plans>,
    ibans: Arc<Registry>,
}

#[pymethods]
impl Metadata {
    #[new]
    fn new(
        regions: HashMap<String, Option<Plan>>,
        non_geographic: HashMap<u32, Option<Plan>>,
        country_regions: HashMap<u32, Vec<String>>,
        bban_formats: HashMap<String, String>,
        unicode_version: &str,
    ) -> PyResult<Self> {
        text::use_unicode(unicode_version).map_err(PyValueError::new_err)?;
        Ok(Self {
            plans: Arc::new(Plans::new(regions, non_geographic, country_regions).map_err(PyValueError::new_err)?),
            ibans: Arc::new(Registry::new(bban_formats).map_err(PyValueError::new_err)?),
        })
    }

    /// Each IBAN country's BBAN structure as a regex (what tests draw IBANs from).
    fn bban_patterns(&self) -> BTreeMap<String, String> {
        self.ibans.patterns()
    }

    /// An IBAN without spaces, upper case: its country's BBAN structure and its checksum.
    fn iban_valid(&self, compact: &str) -> bool {
        self.ibans.valid(&compact.chars().collect::<Vec<_>>())
    }

    /// Where the IBAN written at text[start:end] ends, if it is one (a word after it may have been taken for a group).
    fn iban_end(&self, text: &str, start: usize, end: usize) -> Option<usize> {
        let chars: Vec<char> = text.chars().collect();
        (start <= end && end <= chars.len()).then(|| self.ibans.end(&Text::new(&chars), start, end)).flatten()
    }
}

/// The built-in detector for a set of phone regions and the entities it reports.
#[pyclass(frozen, module = "mcpexec_pii_scan")]
struct Scanner {
    national: National,
    ibans: Arc<Registry>,
    wanted: Vec<Entity>,
}

/// A Python string's code points. One with lone surrogates (no UTF-8 form) has each read as U+FFFF, which is in
/// none of the scan's classes either.
enum CodePoints<'a> {
    Utf8(std::borrow::Cow<'a, str>),
    Wide(Vec<char>),
}

impl<'a> CodePoints<'a> {
    fn of(text: &'a Bound<'_, PyString>) -> PyResult<Self> {
        if let Ok(utf8) = text.to_cow() {
            return Ok(Self::Utf8(utf8));
        }
        let wide = text.call_method1("encode", ("utf-32-le", "surrogatepass"))?;
        let bytes = wide.extract::<&[u8]>()?;
        let char_of = |b: &[u8]| char::from_u32(u32::from_le_bytes([b[0], b[1], b[2], b[3]])).unwrap_or('\u{ffff}');
        Ok(Self::Wide(bytes.chunks_exact(4).map(char_of).collect()))
    }

    fn chars(&self) -> std::borrow::Cow<'_, [char]> {
        match self {
            Self::Utf8(text) => text.chars().collect::<Vec<_>>().into(),
            Self::Wide(chars) => chars.into(),
        }
    }
}

impl Scanner {
    fn scan(&self, text: &CodePoints) -> (Vec<digit_runs::Found>, u64) {
        let chars = text.chars();
        let text = Text::new(&chars);
        let found = candidates::find(&text, &Checks { national: &self.national, ibans: &self.ibans });
        (found, text.work())
    }
}

#[pymethods]
impl Scanner {
    #[new]
    fn new(metadata: &Metadata, phone_regions: Vec<String>, entities: HashSet<String>) -> PyResult<Self> {
        let national = National::new(metadata.plans.clone(), &phone_regions).map_err(PyValueError::new_err)?;
        let wanted = Entity::ALL.into_iter().filter(|e| entities.contains(e.name())).collect();
        Ok(Self { national, ibans: metadata.ibans.clone(), wanted })
    }

    /// The wanted entities in `text` as (start, end, entity), sorted, and whether any two of them overlap (an email's
    /// local part read back over digits that were also a phone number: rare).
    fn find<'py>(&self, text: &Bound<'py, PyString>) -> PyResult<(Spans<'py>, bool)> {
        let py = text.py();
        let code_points = CodePoints::of(text)?;
        let (mut found, _) = py.detach(|| self.scan(&code_points));
        found.retain(|f| self.wanted.contains(&f.2));
        found.sort_unstable_by_key(|&(start, end, entity)| (start, end, entity.name()));
        let overlapping = found.windows(2).any(|pair| pair[0].1 > pair[1].0);
        let found = found.into_iter().map(|(start, end, entity)| (start, end, entity.py_name(py).clone())).collect();
        Ok((found, overlapping))
    }

    /// The work a scan of `text` does: characters read by its loops and regex calls over their input, a count that
    /// is the same on every run (for the linear-time test).
    fn work(&self, text: &Bound<'_, PyString>) -> PyResult<u64> {
        let code_points = CodePoints::of(text)?;
        Ok(text.py().detach(|| self.scan(&code_points).1))
    }
}

/// The Luhn checksum of ASCII digits.
#[pyfunction]
fn luhn(digits: &str) -> PyResult<bool> {
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(PyValueError::new_err("ASCII digits only"));
    }
    Ok(cards::luhn(digits))
}

/// Whether nine ASCII digits are an SSN that may have been issued.
#[pyfunction]
fn ssn_valid(digits: &str) -> bool {
    digits.is_ascii() && ssns::valid(digits)
}

/// Whether `text` is an IPv6 address in one of RFC 4291's text forms.
#[pyfunction]
fn ipv6_grammar(text: &str) -> bool {
    addresses::IPV6.is_match(text)
}

#[pymodule]
fn mcpexec_pii_scan(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Metadata>()?;
    module.add_class::<Scanner>()?;
    module.add_function(wrap_pyfunction!(luhn, module)?)?;
    module.add_function(wrap_pyfunction!(ssn_valid, module)?)?;
    module.add_function(wrap_pyfunction!(ipv6_grammar, module)?)?;
    module.add("MIN_DIGITS", digit_runs::MIN_DIGITS)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_are_named_as_python_names_them() {
        let names: Vec<&str> = Entity::ALL.iter().map(|e| e.name()).collect();
        assert_eq!(names, ["EMAIL", "IBAN", "CREDIT_CARD", "US_SSN", "IP_ADDRESS", "PHONE"]);
    }

    #[test]
    fn the_python_checks_refuse_what_is_no_ascii_digit() {
        assert!(luhn("4111111111111111").expect("digits") && !luhn("4111111111111112").expect("digits"));
        for digits in ["4111-1111", "41a1", "\u{ff14}111111111111111", " 4111"] {
            assert!(luhn(digits).is_err(), "{digits:?}");
        }
        assert!(luhn("").expect("no digits"));
        assert!(ssn_valid("536904399"));
        for digits in ["\u{ff15}36904399", "53690439\u{e9}", "", "536-90-4399"] {
            assert!(!ssn_valid(digits), "{digits:?}");
        }
        assert!(ipv6_grammar("2001:db8::42") && !ipv6_grammar("2001:db8::42%eth0"));
    }
}
