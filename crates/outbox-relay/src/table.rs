//! Aligned text tables for the operator commands' output.

use std::fmt::Write as _;

/// `header` and `rows` in left-aligned columns two spaces apart, each line indented by
/// `indent` and trimmed at its end.
pub fn aligned<const N: usize>(indent: &str, header: [&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{indent}{}", padded.join("  ").trim_end());
    };
    line(&header.map(str::to_owned));
    for row in rows {
        line(row);
    }
    out.trim_end().to_owned()
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
