//! `outbox-relay --help` shows every option's default.

use std::process::Command;

use crate::common::BIN;

/// The options that have no default (required, or their absence means something their
/// help describes).
const WITHOUT_DEFAULT: [&str; 11] = [
    "--config",
    "--database-url",
    "--schema",
    "--brokers",
    "--tls-ca-file",
    "--sasl-mechanism",
    "--sasl-username",
    "--sasl-password",
    "--relay-id",
    "--max-publish-duration",
    "--notify-url",
];

/// `(option, its help text)` for each option of a clap long help.
fn options(help: &str) -> Vec<(String, String)> {
    let mut options: Vec<(String, String)> = Vec::new();
    for line in help.lines() {
        let trimmed = line.trim_start();
        let option_line =
            line.starts_with("  ") && trimmed.starts_with('-') && line.len() - trimmed.len() <= 6;
        if option_line {
            let name = trimmed
                .split([' ', ','])
                .find(|w| w.starts_with("--"))
                .unwrap_or(trimmed)
                .to_owned();
            options.push((name, String::new()));
        } else if let Some((_, text)) = options.last_mut() {
            text.push_str(line.trim());
            text.push(' ');
        }
    }
    options
}

#[test]
fn help_shows_the_default_of_every_option_that_has_one() {
    let output = Command::new(BIN).arg("--help").output().unwrap();
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    let options = options(&help);
    assert!(options.len() > 30, "too few options parsed:\n{help}");
    for name in WITHOUT_DEFAULT {
        assert!(
            options.iter().any(|(n, _)| n == name),
            "{name} is not an option any more: update the list\n{help}"
        );
    }
    for (name, text) in &options {
        if name == "--help" || name == "--version" || WITHOUT_DEFAULT.contains(&name.as_str()) {
            continue;
        }
        assert!(
            text.contains("[default: "),
            "{name} shows no default: {text}"
        );
    }
    // The defaults are the library's: a few spot checks against its constants.
    let defaults = outbox_core::RelayOptions::default();
    let text_of = |name: &str| {
        options
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
            .unwrap()
    };
    assert!(text_of("--batch-size").contains(&format!("[default: {}]", defaults.batch_size())));
    assert!(text_of("--bucket-count").contains(&format!(
        "[default: {}]",
        outbox_core::options::DEFAULT_BUCKET_COUNT
    )));
    assert!(text_of("--messages-table").contains(&format!(
        "[default: {}]",
        outbox_core::schema::DEFAULT_MESSAGES_TABLE
    )));
    assert!(text_of("--log-format").contains("[default: text]"));
    assert!(text_of("--notify").contains("[default: none]"));
}
