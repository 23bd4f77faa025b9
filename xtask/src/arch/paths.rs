//! The paths a file names: the leaves of its `use` trees (with the name each one binds)
//! and the `crate::`, `super::` and `self::` paths written inline in its code.

/// One binding of a `use` tree: `use a::b::{c as d, e::*}` binds `d` to `a::b::c` and a
/// glob (`*`) over `a::b::e`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Import {
    /// The name bound in the importing module, `*` for a glob.
    pub(crate) name: String,
    /// The path as written, segment by segment (`self` at the end dropped; for a glob the
    /// path of the module globbed).
    pub(crate) path: Vec<String>,
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every `use` declaration of `code` (comment- and literal-free), expanded to its leaves.
pub(crate) fn imports(code: &str) -> Vec<Import> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("use") {
        let start = from + at;
        from = start + 3;
        let before_ok = code[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !is_ident(c));
        let after_ok = code[from..].chars().next().is_some_and(char::is_whitespace);
        if !(before_ok && after_ok) {
            continue;
        }
        let Some(end) = code[from..].find(';') else {
            break;
        };
        let tree: String = code[from..from + end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        expand(&[], tree.trim(), &mut out);
        from += end;
    }
    out
}

/// Expands one use tree `tree` under `prefix`.
fn expand(prefix: &[String], tree: &str, out: &mut Vec<Import>) {
    let tree = tree.trim().trim_start_matches("::");
    if tree.is_empty() {
        return;
    }
    if let Some(inner) = tree.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        for part in split_top_level(inner) {
            expand(prefix, part, out);
        }
        return;
    }
    if let Some(brace) = tree.find('{') {
        let head = tree[..brace].trim().trim_end_matches("::");
        let mut p = prefix.to_vec();
        p.extend(segments(head));
        expand(&p, &tree[brace..], out);
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((p, a)) => (p.trim(), Some(a.trim())),
        None => (tree, None),
    };
    let mut p = prefix.to_vec();
    p.extend(segments(path));
    if p.last().is_some_and(|s| s == "self") {
        p.pop();
    }
    let Some(last) = p.last().cloned() else {
        return;
    };
    if last == "*" {
        p.pop();
    }
    let name = alias.map_or(last, str::to_owned);
    if name != "_" || alias.is_none() {
        out.push(Import { name, path: p });
    }
}

fn segments(path: &str) -> impl Iterator<Item = String> + '_ {
    path.split("::")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// `s` split at the commas outside every `{…}`.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// Every path of two or more segments written in `code` (`crate::a::b`, `super::x`,
/// `child::f`, `Vec::new`...), `use` declarations included (found again, harmlessly);
/// which of them lead into the crate is for the graph to tell.
pub(crate) fn inline_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = code.char_indices().collect();
    let mut k = 0;
    while k < chars.len() {
        let c = chars[k].1;
        let prev = k.checked_sub(1).map(|p| chars[p].1);
        let starts = is_ident(c) && prev.is_none_or(|p| !is_ident(p) && p != ':');
        if !starts {
            k += 1;
            continue;
        }
        // Read `ident (:: ident)*`.
        let mut segs = Vec::new();
        let mut j = k;
        loop {
            let s = j;
            while j < chars.len() && is_ident(chars[j].1) {
                j += 1;
            }
            let begin = chars[s].0;
            let end = chars.get(j).map_or(code.len(), |&(e, _)| e);
            segs.push(code[begin..end].to_owned());
            let rest = &code[end..];
            let trimmed = rest.trim_start();
            if let Some(after) = trimmed.strip_prefix("::") {
                let after_trim = after.trim_start();
                if after_trim.starts_with(is_ident) {
                    let skip = code.len() - after_trim.len();
                    j = chars.partition_point(|&(p, _)| p < skip);
                    continue;
                }
            }
            break;
        }
        if segs.len() > 1 {
            out.push(segs);
        }
        k = j.max(k + 1);
    }
    out
}
