//! IP addresses: IPv4 dotted quads that are not masks, versions or OIDs' look-alikes, and IPv6 addresses that are
//! not C++/Rust paths (`std::fmt`), Python slices (`[1::2]`) or MAC addresses.

use std::sync::LazyLock;

use regex::Regex;

use crate::Entity;
use crate::digit_runs::Found;
use crate::text::{Text, Work, ascii_digit, is_digit, is_escape_letter, is_hex, is_word};

/// A decimal octet, no leading zeros (010 is octal to some parsers): `25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d`.
fn octet(digits: &[char]) -> Option<u32> {
    let value = |c: char| ascii_digit(c) as u32 - 48;
    match *digits {
        [a] if is_digit(a) => Some(value(a)),
        [a @ '1'..='9', b] if is_digit(b) => Some(value(a) * 10 + value(b)),
        ['1', b, c] if is_digit(b) && is_digit(c) => Some(100 + value(b) * 10 + value(c)),
        ['2', b @ '0'..='4', c] if is_digit(c) => Some(200 + value(b) * 10 + value(c)),
        ['2', '5', c @ '0'..='5'] => Some(250 + value(c)),
        _ => None,
    }
}

/// None if `quad` writes no IPv4 address; else whether it is a host's: not a netmask (255.255.255.0) or its inverse
/// (an ACL's wildcard mask 0.0.0.255), not in 0.0.0.0/8 (`0.0.0.0` binds every address), and not in 2.5.0.0/16,
/// where X.500 object identifiers look like addresses (2.5.4.3 is an LDAP attribute, commonName).
pub fn ipv4(quad: &[char]) -> Option<bool> {
    let octets: Vec<&[char]> = quad.split(|&c| c == '.').collect();
    if octets.len() != 4 {
        return None;
    }
    let mut address = 0u32;
    for digits in &octets {
        address = address << 8 | octet(digits)?;
    }
    if quad.starts_with(&['0', '.']) || quad.starts_with(&['2', '.', '5', '.']) {
        return Some(false);
    }
    if !quad.starts_with(&['2', '5', '5', '.']) {
        return Some(true);
    }
    let hosts = !address;
    Some(hosts & hosts.wrapping_add(1) != 0)
}

/// Reads the IPv6 candidate from its first colon `colon` to `end`.
pub fn read_ipv6(text: &Text, colon: usize, end: usize, found: &mut Vec<Found>) {
    let Some(start) = ipv6_start(text, colon) else { return };
    if is_word(text.at(end)) {
        return; // continues a word (CJK text right after an address does not)
    }
    let mut end = end;
    while end > start + 2 && (text.at(end - 1) == '.' || (text.at(end - 1) == ':' && text.at(end - 2) != ':')) {
        end -= 1; // a sentence's end
    }
    let address = text.string(start, end);
    let length = ipv6_end(&address, &text.work);
    if ipv6(&address[..length], &text.work) {
        found.push((start, start + length, Entity::IpAddress));
    }
}

/// Where an IPv6 address whose first colon is at `colon` starts: after at most four hex digits, which must not
/// continue a word (`std::fmt`, `Foo::Bar`).
fn ipv6_start(text: &Text, colon: usize) -> Option<usize> {
    let start = colon - (1..=4).take_while(|&k| is_hex(text.back(colon, k))).count();
    let before = text.back(start, 1);
    let escaped = start > 1 && text.back(start, 2) == '\\' && is_escape_letter(before); // `\n` in raw JSON text
    if start > 0 && (is_word(before) || before == ':' || before == '.') && !escaped {
        return None;
    }
    Some(start)
}

/// How much of `text` is the address when a port follows it unbracketed (`2001:db8::42:8080`, as some logs write
/// it): a last decimal group that makes no address (nine groups, five digits), or that only an address compressing
/// a single zero group with `::` would hold (RFC 5952 forbids that; ipaddress never writes it).
fn ipv6_end(text: &str, work: &Work) -> usize {
    let (head, port) = text.rsplit_once(':').unwrap_or(("", text));
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) || !ipv6(head, work) {
        return text.len();
    }
    let compressed = text.contains("::");
    let groups = text.matches(':').count() + 1 - usize::from(compressed);
    if !ipv6(text, work) || (compressed && groups == 7) {
        return head.len();
    }
    text.len()
}

const H16: &str = "[0-9A-Fa-f]{1,4}";
const OCTET: &str = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)";

/// RFC 4291's text forms (RFC 3986's grammar): eight groups, or fewer around one `::`, the last two maybe an IPv4.
pub static IPV6: LazyLock<Regex> = LazyLock::new(|| {
    let ls32 = format!(r"(?:{H16}:{H16}|{OCTET}(?:\.{OCTET}){{3}})");
    let mut forms = vec![
        format!("(?:{H16}:){{6}}{ls32}"),
        format!("::(?:{H16}:){{5}}{ls32}"),
        format!("(?:{H16})?::(?:{H16}:){{4}}{ls32}"),
    ];
    forms.extend((1..4).map(|k| format!("(?:(?:{H16}:){{0,{k}}}{H16})?::(?:{H16}:){{{}}}{ls32}", 4 - k)));
    forms.push(format!("(?:(?:{H16}:){{0,4}}{H16})?::{ls32}"));
    forms.push(format!("(?:(?:{H16}:){{0,5}}{H16})?::{H16}"));
    forms.push(format!("(?:(?:{H16}:){{0,6}}{H16})?::"));
    Regex::new(&format!("^(?:{})$", forms.join("|"))).expect("the IPv6 grammar compiles")
});

/// An address with at least four hex digits, one of them decimal (`1::2` in a slice, `cafe::beef` are none).
fn ipv6(text: &str, work: &Work) -> bool {
    work.regex(text);
    let (head, tail) = text.rsplit_once(':').unwrap_or(("", text));
    let tail_digits = if tail.contains('.') { 0 } else { tail.chars().count() };
    let hex_digits = head.chars().filter(|&c| is_hex(c)).count() + tail_digits;
    hex_digits >= 4 && text.chars().any(|c| c.is_ascii_digit()) && IPV6.is_match(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{chars, unicode};

    fn quad(text: &str) -> Option<bool> {
        unicode();
        ipv4(&chars(text))
    }

    #[test]
    fn host_addresses() {
        for address in ["203.0.113.17", "10.0.0.1", "192.168.1.254", "1.1.1.1", "255.0.0.1", "255.255.0.255"] {
            assert_eq!(quad(address), Some(true), "{address}");
        }
    }

    #[test]
    fn masks_wildcards_this_network_and_x500_identifiers_are_no_hosts() {
        for address in ["255.255.255.0", "255.255.255.255", "255.0.0.0", "255.255.255.252", "0.0.0.255", "0.0.0.0"] {
            assert_eq!(quad(address), Some(false), "{address}");
        }
        assert_eq!(quad("2.5.4.3"), Some(false), "an LDAP attribute's OID (commonName)");
        assert_eq!(quad("2.50.4.3"), Some(true));
    }

    #[test]
    fn what_writes_no_ipv4_address() {
        for text in
            ["256.1.1.1", "1.2.3", "1.2.3.4.5", "010.0.0.1", "1.02.3.4", "1..2.3", "", "...", "a.b.c.d", "1.2.3.4."]
        {
            assert_eq!(quad(text), None, "{text}");
        }
    }

    #[test]
    fn octets_are_read_as_pythons_regex_read_them() {
        // `25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d`: `\d` is any decimal digit, the others ASCII.
        assert_eq!(quad("\u{ff11}.\u{ff10}.0.\u{ff11}"), Some(true));
        assert_eq!(quad("1\u{ff10}.0.0.1"), Some(true));
        assert_eq!(quad("\u{ff11}\u{ff10}.0.0.1"), None, "a full-width digit before another");
        assert_eq!(quad("25\u{ff16}.0.0.1"), None, "256 with a full-width 6: `25[0-5]` is ASCII");
    }

    #[test]
    fn the_ipv6_grammar_is_rfc_4291s() {
        for address in [
            "2001:db8::42",
            "2001:db8:0:0:0:0:2:1",
            "::",
            "::1",
            "1::",
            "fe80::1",
            "::ffff:10.0.0.1",
            "1:2:3:4:5:6:1.2.3.4",
            "1:2:3:4:5:6:7::",
            "::2:3:4:5:6:7:8",
            "ABCD:EF01:2345:6789:ABCD:EF01:2345:6789",
        ] {
            assert!(IPV6.is_match(address), "{address}");
        }
        for text in [
            "",
            ":",
            ":::",
            "1:2:3:4:5:6:7:8:9",
            "1::2::3",
            "12345::",
            "g::1",
            "::01.2.3.4",
            "::256.1.1.1",
            "1:2:3:4:5:6:7:1.2.3.4",
            "2001:db8::42 ",
        ] {
            assert!(!IPV6.is_match(text), "{text}");
        }
    }

    #[test]
    fn an_ipv6_address_has_four_hex_digits_and_a_decimal_one() {
        let work = Work::default();
        assert!(ipv6("2001:db8::42", &work));
        assert!(!ipv6("1::2", &work), "a Python slice");
        assert!(!ipv6("cafe::beef", &work), "no decimal digit");
        assert!(!ipv6("::1", &work), "loopback: no one's address");
        assert!(ipv6("::ffff:10.0.0.1", &work));
    }

    #[test]
    fn a_port_written_after_an_unbracketed_address_is_no_group() {
        fn end(text: &str) -> &str {
            &text[..ipv6_end(text, &Work::default())]
        }
        assert_eq!(end("2a00:1450::9f55:5885:b460:ef46:8080"), "2a00:1450::9f55:5885:b460:ef46");
        assert_eq!(end("2001:db8:1:2:3:4:5:6:8080"), "2001:db8:1:2:3:4:5:6", "nine groups");
        assert_eq!(end("2001:db8::42:8080"), "2001:db8::42:8080", "as likely an address of its own");
        assert_eq!(end("2001:db8::42"), "2001:db8::42");
        assert_eq!(end("2001:db8::cafe"), "2001:db8::cafe");
        assert_eq!(end(""), "");
    }
}
