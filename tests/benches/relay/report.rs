//! Figures collected by the sections: printed as they arrive, summarised as a table at
//! the end, and written as JSON.

use std::path::Path;

use serde_json::{Map, Value, json};

#[derive(Debug)]
struct Line {
    section: String,
    label: String,
    value: String,
}

#[derive(Debug)]
struct Target {
    name: String,
    wanted: String,
    measured: String,
    met: Option<bool>,
}

#[derive(Debug, Default)]
pub struct Report {
    facts: Map<String, Value>,
    sections: Map<String, Value>,
    lines: Vec<Line>,
    targets: Vec<Target>,
}

impl Report {
    pub fn fact(&mut self, key: &str, value: impl Into<Value>) {
        self.facts.insert(key.to_owned(), value.into());
    }

    /// A machine-readable figure of `section` (JSON only).
    pub fn set(&mut self, section: &str, key: &str, value: impl Into<Value>) {
        let entry = self
            .sections
            .entry(section.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(map) = entry {
            map.insert(key.to_owned(), value.into());
        }
    }

    /// A line of the printed table (also echoed now, so a long run shows progress).
    pub fn line(&mut self, section: &str, label: &str, value: String) {
        println!("  {label:<58} {value}");
        self.lines.push(Line {
            section: section.to_owned(),
            label: label.to_owned(),
            value,
        });
    }

    /// A target of the issue and how this run compares; `met` is `None` when the run
    /// could not measure it.
    pub fn target(&mut self, name: &str, wanted: &str, measured: String, met: Option<bool>) {
        self.targets.push(Target {
            name: name.to_owned(),
            wanted: wanted.to_owned(),
            measured,
            met,
        });
    }

    pub fn print_table(&self) {
        println!();
        println!("| section | figure | value |");
        println!("|---|---|---|");
        for l in &self.lines {
            println!("| {} | {} | {} |", l.section, l.label, l.value);
        }
        println!();
        println!("| target | wanted | measured | met |");
        println!("|---|---|---|---|");
        for t in &self.targets {
            let met = match t.met {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "n/a",
            };
            println!("| {} | {} | {} | {met} |", t.name, t.wanted, t.measured);
        }
    }

    pub fn write_json(&self, path: &Path) -> std::io::Result<()> {
        let targets: Vec<Value> = self
            .targets
            .iter()
            .map(|t| {
                json!({"name": t.name, "wanted": t.wanted, "measured": t.measured, "met": t.met})
            })
            .collect();
        let doc = json!({
            "machine": self.facts,
            "sections": self.sections,
            "targets": targets,
        });
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_string_pretty(&doc).map_err(std::io::Error::other)?;
        std::fs::write(path, text + "\n")
    }
}

/// `12345.6` as `12,346`.
pub fn int(v: f64) -> String {
    let n = v.round() as i64;
    let digits = n.abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// Milliseconds with two decimals.
pub fn ms(d: std::time::Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}
