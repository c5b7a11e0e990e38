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
