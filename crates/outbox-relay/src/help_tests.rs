use super::*;

/// Options that have no default: required ones, and those whose absence means something
/// (described in their help).
pub const WITHOUT_DEFAULT: [&str; 11] = [
    "config",
    "database-url",
    "schema",
    "brokers",
    "tls-ca-file",
    "sasl-mechanism",
    "sasl-username",
    "sasl-password",
    "relay-id",
    "max-publish-duration",
    "notify-url",
];

#[test]
fn every_option_has_a_default_or_is_listed_without_one() {
    let command = command();
    let defaults = defaults();
    let mut seen = Vec::new();
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if long == "help" || long == "version" {
            continue;
        }
        seen.push(long.to_owned());
        let has_default = defaults.iter().any(|(id, _)| *id == long);
        assert_ne!(
            has_default,
            WITHOUT_DEFAULT.contains(&long),
            "--{long}: give it a default in help::defaults or list it in WITHOUT_DEFAULT"
        );
        if has_default {
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            assert!(help.contains("[default: "), "--{long}: {help}");
        }
    }
    for (id, _) in &defaults {
        assert!(seen.iter().any(|s| s == id), "no option --{id}");
    }
    for id in WITHOUT_DEFAULT {
        assert!(seen.iter().any(|s| s == id), "no option --{id}");
    }
}

#[test]
fn defaults_come_from_the_library() {
    let defaults = defaults();
    let get = |id: &str| {
        defaults
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    assert_eq!(get("batch-size"), "500");
    assert_eq!(get("poll-interval"), "1s");
    assert_eq!(get("lease-duration"), "30s");
    assert_eq!(get("bucket-count"), "8");
    assert_eq!(get("max-publish-attempts"), "3");
    assert_eq!(get("park-policy"), "hold-key");
    assert_eq!(get("listen"), "127.0.0.1:9464");
    assert_eq!(get("messages-table"), "outbox_messages");
    assert_eq!(get("max-request-size"), "1048576");
}
