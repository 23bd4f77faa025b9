use super::*;
use crate::headers::codec::tests::sample;

#[test]
fn accessors_and_conversions() {
    let headers = sample();
    assert_eq!(headers.len(), 2);
    assert!(!headers.is_empty());
    assert!(Headers::new().is_empty());
    assert_eq!(headers.get("a").unwrap().value.as_deref(), Some(&b"xy"[..]));
    assert!(headers.get("missing").is_none());
    let names: Vec<&str> = (&headers).into_iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["a", ""]);
    let owned: Vec<Header> = headers.clone().into_iter().collect();
    assert_eq!(Headers::from(owned.clone()), headers);
    assert_eq!(owned.into_iter().collect::<Headers>(), headers);
}

#[test]
fn get_returns_the_first_duplicate() {
    let mut headers = Headers::new();
    headers.push("dup", Some(b"1".to_vec()));
    headers.push("dup", Some(b"2".to_vec()));
    assert_eq!(
        headers.get("dup").unwrap().value.as_deref(),
        Some(&b"1"[..])
    );
}
