//! The two rules besides circles: production files stay small, and no test asserts a
//! `cfg!(feature = …)` value (such a test restates the build it runs in and cannot fail).

use super::source::{balanced_len, code_only};

/// The most lines a production source file (below `crates/*/src`, tests excluded) may
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
