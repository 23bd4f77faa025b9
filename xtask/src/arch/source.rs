//! Rust source reduced to what the import check reads: comments and literals blanked
//! out, `#[cfg(test)]` items dropped, and the outermost level of a file picked out.
//!
//! This is a lexer, not a parser: it knows comments (nested block comments included),
//! string, raw-string, byte-string and char literals, and lifetimes, which is all it
//! takes to find `use`, `mod` and paths without being fooled by text that only looks
//! like code.

/// `src` with every comment removed and every string or char literal replaced by an
/// empty one, so that later scans see only code. Line breaks inside removed text are
/// kept, so line counts stay right.
pub(crate) fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            let mut depth = 0usize;
            while i < b.len() {
                if src[i..].starts_with("/*") {
                    depth += 1;
                    i += 2;
                } else if src[i..].starts_with("*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == b'\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if let Some(len) = raw_string_len(src, i) {
            keep_newlines(&src[i..i + len], &mut out);
            out.push_str("\"\"");
            i += len;
        } else if b[i] == b'"' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            keep_newlines(&src[start..i], &mut out);
            out.push_str("\"\"");
        } else if b[i] == b'\'' {
            match char_literal_len(&src[i..]) {
                Some(len) => {
                    out.push_str("' '");
                    i += len;
                }
                None => {
                    // A lifetime or label: keep it as it is.
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let ch = rest.chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn keep_newlines(text: &str, out: &mut String) {
    out.extend(text.chars().filter(|&c| c == '\n'));
}

/// The length of a raw string (`r"…"`, `r#"…"#`, `br"…"`) starting at `i`, if one does.
fn raw_string_len(src: &str, i: usize) -> Option<usize> {
    let b = src.as_bytes();
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
        return None;
    }
    let mut j = i;
    if b.get(j) == Some(&b'b') {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = src[j..].bytes().take_while(|&c| c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let close = format!("\"{}", "#".repeat(hashes));
    let end = src[j + 1..].find(&close)? + j + 1 + close.len();
    Some(end - i)
}

/// The length of a char literal at the start of `s` (`'a'`, `'\n'`, `'\u{1F600}'`), or
/// `None` for a lifetime.
fn char_literal_len(s: &str) -> Option<usize> {
    let mut chars = s.char_indices().skip(1);
    let (_, first) = chars.next()?;
    if first == '\\' {
        let close = s[2..].find('\'')? + 2;
        return (close <= 12).then_some(close + 1);
    }
    let (at, next) = chars.next()?;
    (next == '\'').then_some(at + 1)
}

/// `code` (already [`code_only`]) without any item under `#[cfg(test)]`: the attribute up
/// to the end of the item it annotates (`;` or its balanced `{…}` block).
pub(crate) fn without_test_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let end = match item.find(['{', ';']) {
            Some(p) if item.as_bytes()[p] == b';' => p + 1,
            Some(p) => p + balanced_len(&item[p..]),
            None => item.len(),
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// The length of the balanced `{…}` group `s` starts with (all of `s` if unbalanced).
pub(crate) fn balanced_len(s: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    s.len()
}

/// The text of `code` outside every `{…}` block, each block replaced by `{}`: a file's
/// own items (their headers) without their bodies.
pub(crate) fn outer_level(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut depth = 0usize;
    for c in code.chars() {
        match c {
            '{' => {
                if depth == 0 {
                    out.push_str("{}");
                }
                depth += 1;
            }
            '}' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}
