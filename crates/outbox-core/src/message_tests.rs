use super::*;

#[test]
fn store_ref_round_trips_native_ids() {
    #[derive(Debug, PartialEq)]
    struct DocumentId(String);
    let r = StoreRef::new(DocumentId("abc".into()));
    assert_eq!(
        r.downcast_ref::<DocumentId>(),
        Some(&DocumentId("abc".into()))
    );
    assert!(r.downcast_ref::<i64>().is_none());
    assert_eq!(r.clone(), r);
    assert_ne!(StoreRef::new(1_i64), StoreRef::new(1_i64));
}
