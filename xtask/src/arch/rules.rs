//! The rules besides circles: production files stay small and keep their unit tests in a
//! sibling `*_tests.rs` file, and no test asserts a
//! `cfg!(feature = …)` value (such a test restates the build it runs in and cannot fail).

use super::source::{balanced_len, code_only};

/// The most lines a source file of any member (its `src/`, unit-test files excluded) may
/// have.
pub(crate) const MAX_PRODUCTION_LINES: usize = 600;

/// The 1-based lines of `src` where an `assert!`, `assert_eq!` or `assert_ne!` (or a
/// `debug_` one) has a `cfg!(feature = …)` among its arguments. (A `cfg!(debug_assertions)`
/// beside a call that really runs, say one that panics only in debug builds, tests
/// behaviour and is allowed.)
pub(crate) fn cfg_assertions(src: &str) -> Vec<usize> {
    let code = code_only(src);
    let mut lines = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("assert") {
        let start = from + at;
        from = start + "assert".len();
        let rest = &code[from..];
        let after_name = rest
            .strip_prefix("_eq")
            .or_else(|| rest.strip_prefix("_ne"))
            .unwrap_or(rest);
        let Some(args) = after_name.strip_prefix("!(") else {
            continue;
        };
        // The argument list, parentheses balanced the same way as braces.
        let swapped: String = args
            .chars()
            .map(|c| match c {
                '(' => '{',
                ')' => '}',
                '{' | '}' => ' ',
                other => other,
            })
            .collect();
        let len = balanced_len(&format!("{{{swapped}")).saturating_sub(1);
        if args[..len.min(args.len())].contains("cfg!(feature") {
            lines.push(code[..start].matches('\n').count() + 1);
        }
    }
    lines
}

/// The 1-based lines of `src` where a `#[cfg(test)]` module is written inline
/// (`mod tests { … }`) instead of in a sibling file (`#[path = "foo_tests.rs"] mod tests;`).
pub(crate) fn inline_test_modules(src: &str) -> Vec<usize> {
    let code = code_only(src);
    let mut lines = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]") {
        let start = from + at;
        from = start + "#[cfg(test)]".len();
        // Skip further attributes, then look at the item.
        let mut item = code[from..].trim_start();
        while item.starts_with("#[") {
            let Some(close) = item.find(']') else { break };
            item = item[close + 1..].trim_start();
        }
        let Some(rest) = item.strip_prefix("mod ") else {
            continue;
        };
        let name_len = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .count();
        if rest.trim_start()[name_len..].trim_start().starts_with('{') {
            lines.push(code[..start].matches('\n').count() + 1);
        }
    }
    lines
}
