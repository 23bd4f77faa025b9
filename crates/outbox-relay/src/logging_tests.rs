use super::*;
use std::ffi::OsStr;

#[test]
fn default_shows_our_crates_at_info_and_the_rest_at_warn() {
    let directives = default_directives();
    assert!(directives.starts_with("warn,"), "{directives}");
    for krate in OUR_CRATES {
        assert!(
            directives.contains(&format!("{krate}=info")),
            "{directives}"
        );
    }
    let shown = filter(None).unwrap().to_string();
    assert!(shown.contains("outbox_relay=info"), "{shown}");
    assert!(
        filter(Some("  "))
            .unwrap()
            .to_string()
            .contains("outbox_core=info")
    );
}

#[test]
fn rust_log_replaces_the_default_and_a_bad_one_is_named() {
    let custom = filter(Some("debug")).unwrap().to_string();
    assert_eq!(custom, "debug");
    let e = filter(Some("outbox_core=loud")).unwrap_err();
    assert!(e.contains("RUST_LOG"), "{e}");
}

#[test]
fn formats_parse_and_print() {
    assert_eq!("text".parse(), Ok(LogFormat::Text));
    assert_eq!("JSON".parse(), Ok(LogFormat::Json));
    assert!("yaml".parse::<LogFormat>().unwrap_err().contains("yaml"));
    assert_eq!(LogFormat::Json.to_string(), "json");
    assert_eq!(LogFormat::default(), LogFormat::Text);
}

#[test]
fn colour_only_on_a_terminal_without_no_color() {
    assert!(use_colour(true, None));
    assert!(use_colour(true, Some(OsStr::new(""))));
    assert!(!use_colour(true, Some(OsStr::new("1"))));
    assert!(!use_colour(false, None));
}
