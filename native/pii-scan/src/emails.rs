//! Email addresses, found at their at-sign: `@`, form-encoded `%40` or JSON-escaped `\u0040`.
//!
//! The local part is read backwards from the at-sign, so the scan never starts a match at every letter of the text.
//! Its characters are ASCII and Latin letters, digits and `._+'-`: CJK text written right against an address
//! (`メールアドレスはchloe.wang@gmail.comです`) is not part of it, an apostrophe is (`o'connor@...`), and so are
//! form-encoded `%2B` (+) and `%27` (') in a form-encoded address. What precedes it may be an escape whose letter
//! looks like the address's first (`\nana@x.com`: the address is `ana@x.com`), or a percent-escape (`%3Cana@x.com`).

use crate::text::{Text, is_hex};

/// ASCII and Latin letters and digits (`A-Za-z0-9\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f`).
fn is_letter(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '\u{c0}'..='\u{d6}' | '\u{d8}'..='\u{f6}' | '\u{f8}'..='\u{24f}')
}

fn is_label(c: char) -> bool {
    is_letter(c) || c == '-'
}

/// File extensions that are no top-level domain: `icon@2x.png` is an image, not an address.
const ASSETS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "svg", "webp", "avif", "ico", "bmp", "tif", "tiff", "heic", "css", "scss", "less",
    "js", "mjs", "jsx", "ts", "tsx", "json", "yaml", "yml", "xml", "txt", "csv", "log", "pdf", "html", "htm", "php",
    "woff", "woff2", "ttf", "otf", "eot", "mp3", "mp4", "wav", "webm", "ogg", "map", "lock",
];
const LOOK_BACK: usize = 80;
const MAX_LOCAL: usize = 64;

/// A top-level domain: 2-24 ASCII letters, or punycode (`xn--` and 1-59 letters, digits or hyphens).
fn top_level(label: &[char]) -> bool {
    if (2..=24).contains(&label.len()) && label.iter().all(char::is_ascii_alphabetic) {
        return true;
    }
    label.len() > 4
        && label.len() <= 63
        && label[..4] == ['x', 'n', '-', '-']
        && label[4..].iter().all(|&c| c.is_ascii_alphanumeric() || c == '-')
}

/// Where the domain after an at-sign ends: labels, then a top-level domain of letters (or punycode); `@here` is a
/// mention, `@2.0.1` a version. The last label that is a top-level domain ends it.
pub fn domain_end(text: &Text, at: usize) -> Option<usize> {
    let mut label_end = at + text.run(at, usize::MAX, is_label);
    if label_end == at {
        return None;
    }
    let mut end = None;
    while text.at(label_end) == '.' {
        let label = label_end + 1;
        let n = text.run(label, usize::MAX, is_label);
        if n == 0 {
            break;
        }
        text.count(n);
        if top_level(text.slice(label, label + n)) {
            end = Some(label + n);
        }
        label_end = label + n;
    }
    end
}

/// A host name of labels of 1-63 letters, digits and inner hyphens, with a top-level domain that is no file extension.
pub fn domain(text: &Text, start: usize, end: usize) -> bool {
    if end - start > 253 {
        return false;
    }
    let host = text.slice(start, end);
    text.count(host.len());
    let mut labels = host.split(|&c| c == '.');
    let Some(tld) = labels.next_back() else { return false };
    let mut count = 0;
    for label in labels {
        let inner = |c: &char| is_label(*c);
        let (Some(first), Some(last)) = (label.first(), label.last()) else { return false };
        if label.len() > 63 || !is_letter(*first) || !is_letter(*last) || !label.iter().all(inner) {
            return false;
        }
        count += 1;
    }
    if count == 0 || !top_level(tld) {
        return false;
    }
    let tld: String = tld.iter().map(char::to_ascii_lowercase).collect();
    !ASSETS.contains(&tld.as_str())
}

/// Where the local part ending at `at` (the at-sign) starts, or None if there is none.
pub fn local_start(text: &Text, at: usize, encoded: bool) -> Option<usize> {
    let available = at.min(LOOK_BACK);
    let back = |k: usize| if k < available { text.at(at - 1 - k) } else { '\0' };
    let mut taken = 0;
    if encoded {
        // `%2B` and `%27` read backwards, or a letter, digit or `._-`, at most 64 of them.
        for _ in 0..MAX_LOCAL {
            let escaped = taken + 3 <= available
                && back(taken + 2) == '%'
                && back(taken + 1) == '2'
                && matches!(back(taken), 'B' | 'b' | '7');
            if escaped {
                taken += 3;
            } else if taken < available && matches!(back(taken), 'A'..='Z' | 'a'..='z' | '0'..='9' | '.' | '_' | '-') {
                taken += 1;
            } else {
                break;
            }
        }
    } else {
        while taken < available.min(MAX_LOCAL)
            && (is_letter(back(taken)) || matches!(back(taken), '.' | '_' | '+' | '\'' | '-'))
        {
            taken += 1;
        }
    }
    text.count(taken + 1);
    if taken == 0 {
        return None;
    }
    let mut start = at - taken;
    let before = text.back(start, 1);
    if before == '\\' {
        let most = start.min(8);
        let backslashes = (1..=most).take_while(|&k| text.back(start, k) == '\\').count();
        if backslashes % 2 == 1 {
            if text.at(start) == 'u' && start + 5 <= at && (1..=4).all(|k| is_hex(text.at(start + k))) {
                start += 5;
            } else if matches!(text.at(start), 'n' | 'r' | 't' | 'b' | 'f') {
                start += 1;
            }
        }
    } else if before == '%' && start + 2 <= at && is_hex(text.at(start)) && is_hex(text.at(start + 1)) {
        start += 2;
    }
    // Leading dots, apostrophes and plus signs (also encoded) are no part of it.
    while start < at {
        let c = text.at(start);
        if matches!(c, '.' | '\'' | '+') {
            start += 1;
        } else if c == '%'
            && start + 3 <= at
            && text.at(start + 1) == '2'
            && matches!(text.at(start + 2), 'B' | 'b' | '7')
        {
            start += 3;
        } else {
            break;
        }
    }
    if start >= at || text.at(at - 1) == '.' {
        return None;
    }
    Some(start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{chars, unicode};

    /// The address at the first at-sign of `text` written as `marker` (`@`, `%40` or `\u0040`), as the scan reads it.
    fn address_at(text: &str, marker: &str) -> Option<String> {
        unicode();
        let (chars, marker) = (chars(text), chars(marker));
        let text = Text::new(&chars);
        let at = chars.windows(marker.len()).position(|w| w == marker)?;
        let host = at + marker.len();
        let end = domain_end(&text, host)?;
        let start = local_start(&text, at, marker == ['%', '4', '0'])?;
        domain(&text, host, end).then(|| chars[start..end].iter().collect())
    }

    fn address(text: &str) -> Option<String> {
        address_at(text, "@")
    }

    #[test]
    fn addresses() {
        for (text, expected) in [
            ("mail jane.doe+x@mail.example.co.uk now", "jane.doe+x@mail.example.co.uk"),
            ("alice@example.com", "alice@example.com"),
            ("o'connor@example.com", "o'connor@example.com"),
            ("<ana@x.com>", "ana@x.com"),
            ("ANA@EXAMPLE.ORG", "ANA@EXAMPLE.ORG"),
            ("josé.garcía@correo.es", "josé.garcía@correo.es"),
            ("ana@xn--bcher-kva.example", "ana@xn--bcher-kva.example"),
            ("ana@mail.example.com.", "ana@mail.example.com"),
            ("ana@sub-domain.example.travel", "ana@sub-domain.example.travel"),
        ] {
            assert_eq!(address(text).as_deref(), Some(expected), "{text}");
        }
    }

    #[test]
    fn no_address() {
        for text in [
            "@",
            "@example.com",
            "user@localhost",
            "@here",
            "react@18.2.0",
            "ana@x.c",
            "ana@-x.com",
            "ana@x-.com",
            "ana.@x.com",
            "...@x.com",
            "ana@x..com",
            "ana@.com",
            "icon@2x.png",
            "logo@3x.WEBP",
            "a@b.json",
            "ana@x.c0m",
        ] {
            assert_eq!(address(text), None, "{text}");
        }
    }

    #[test]
    fn cjk_text_right_against_an_address_is_no_part_of_it() {
        assert_eq!(address("メールアドレスはchloe.wang@gmail.comです").as_deref(), Some("chloe.wang@gmail.com"));
        assert_eq!(address("邮箱ana@qq.com\u{ff0c}谢谢").as_deref(), Some("ana@qq.com"));
    }

    #[test]
    fn url_encoded_and_json_escaped_at_signs() {
        assert_eq!(address_at("user=ANA.PATEL%40ORANGE.FR&t=1", "%40").as_deref(), Some("ANA.PATEL%40ORANGE.FR"));
        assert_eq!(address_at("email=o%27brien%40sky.com&x", "%40").as_deref(), Some("o%27brien%40sky.com"));
        assert_eq!(address_at("to=ana%2Bnews%40x.com", "%40").as_deref(), Some("ana%2Bnews%40x.com"));
        assert_eq!(address_at("q=%2Bana%40x.com", "%40").as_deref(), Some("ana%40x.com"), "a leading plus is no part");
        assert_eq!(address_at(r#""ana\u0040x.com""#, r"\u0040").as_deref(), Some(r"ana\u0040x.com"));
    }

    #[test]
    fn escapes_before_the_local_part_are_no_part_of_it() {
        assert_eq!(address(r#""Contact:\nana@x.com""#).as_deref(), Some("ana@x.com"));
        assert_eq!(address(r#""\tana@x.com""#).as_deref(), Some("ana@x.com"));
        assert_eq!(address(r#""\u003cana@x.com\u003e""#).as_deref(), Some("ana@x.com"));
        assert_eq!(address(r#""\\nana@x.com""#).as_deref(), Some("nana@x.com"), "an escaped backslash, then n");
        assert_eq!(address("%3Cana@x.com%3E").as_deref(), Some("ana@x.com"));
        assert_eq!(address("'.+ana@x.com").as_deref(), Some("ana@x.com"), "leading dots, quotes and plus signs");
    }

    #[test]
    fn a_local_part_is_read_back_at_most_64_characters() {
        let long = format!("{}@example.com", "a".repeat(100));
        assert_eq!(address(&long), Some(format!("{}@example.com", "a".repeat(64))));
    }

    #[test]
    fn a_domain_is_at_most_253_characters_and_a_label_63() {
        let labels = |n: usize, size: usize| vec!["a".repeat(size); n].join(".");
        assert!(address(&format!("ana@{}.com", labels(3, 63))).is_some());
        assert_eq!(address(&format!("ana@{}.com", labels(1, 64))), None);
        assert_eq!(address(&format!("ana@{}.com", labels(5, 60))), None);
    }

    #[test]
    fn a_domain_of_many_labels_and_no_top_level_domain() {
        unicode();
        let labels = chars(&format!("x@{}1", "ab.".repeat(10_000)));
        assert_eq!(domain_end(&Text::new(&labels), 2), Some(2 + 3 * 10_000 - 1), "its last label of letters is one");
        let digits = chars(&format!("x@{}", "1.".repeat(10_000)));
        assert_eq!(domain_end(&Text::new(&digits), 2), None);
    }

    #[test]
    fn top_level_domains() {
        for label in ["com", "uk", "travel", "xn--p1ai", "abcdefghijklmnopqrstuvwx"] {
            assert!(top_level(&chars(label)), "{label}");
        }
        for label in ["c", "c0m", "abcdefghijklmnopqrstuvwxy", "xn--", "été", ""] {
            assert!(!top_level(&chars(label)), "{label}");
        }
    }

    #[test]
    fn an_at_sign_at_either_end_of_the_text() {
        unicode();
        let alone = chars("@");
        let text = Text::new(&alone);
        assert_eq!((domain_end(&text, 1), local_start(&text, 0, false)), (None, None));
        let last = chars("ana@");
        assert_eq!(domain_end(&Text::new(&last), 4), None);
    }
}
