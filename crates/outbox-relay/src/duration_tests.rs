use super::*;

#[test]
fn units() {
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
    assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
    assert_eq!(parse_duration(" 1h "), Ok(Duration::from_secs(3_600)));
    assert!(parse_duration("30").unwrap_err().contains("unit"));
    assert!(parse_duration("3d").unwrap_err().contains("unknown unit"));
    assert!(parse_duration("s").is_err());
    assert!(parse_duration("99999999999999999999h").is_err());
}

#[test]
fn formats_in_the_largest_exact_unit_and_parses_back() {
    for (millis, text) in [
        (0, "0ms"),
        (250, "250ms"),
        (1_000, "1s"),
        (1_500, "1500ms"),
        (30_000, "30s"),
        (120_000, "2m"),
        (90_000, "90s"),
        (3_600_000, "1h"),
        (5_400_000, "90m"),
    ] {
        let d = Duration::from_millis(millis);
        assert_eq!(format_duration(d), text);
        assert_eq!(parse_duration(text), Ok(d));
    }
}
