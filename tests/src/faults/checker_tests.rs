//! Tests of the checker on hand-made topics: each property it checks, found or not.

use super::*;
use crate::faults::Committed;

fn rec(key: &str, seq: u64) -> Committed {
    Committed {
        key: key.into(),
        seq,
        message_id: Uuid::new_v4(),
    }
}

fn publ(c: &Committed, offset: i64) -> Published {
    Published {
        partition: 0,
        offset,
        key: Some(c.key.clone()),
        value: Some(format!("{}:{}", c.key, c.seq)),
        message_id: Some(c.message_id),
    }
}

#[test]
fn finds_loss_duplicates_disorder_and_strangers() {
    let (a0, a1, a2, b0) = (rec("a", 0), rec("a", 1), rec("a", 2), rec("b", 0));
    let report = WriterReport {
        committed: vec![a0.clone(), a1.clone(), a2.clone(), b0.clone()],
        ..WriterReport::default()
    };
    let good = [
        publ(&a0, 0),
        publ(&a1, 1),
        publ(&a0, 2),
        publ(&a2, 3),
        publ(&b0, 4),
    ];
    let v = check(&report, &[&good]);
    v.assert_sound("good");
    assert_eq!((v.distinct_published, v.duplicates), (4, 1));

    let lossy = [publ(&a0, 0), publ(&a2, 1)];
    let v = check(&report, &[&lossy]);
    assert_eq!(v.missing, vec![a1.message_id, b0.message_id]);

    let swapped = [publ(&a1, 0), publ(&a0, 1), publ(&a2, 2), publ(&b0, 3)];
    let v = check(&report, &[&swapped]);
    assert_eq!(v.out_of_order.get("a"), Some(&vec![1, 0, 2]));

    let mut no_id = publ(&b0, 9);
    no_id.message_id = None;
    let mut wrong_value = publ(&a0, 10);
    wrong_value.value = Some("a:7".into());
    let stranger = publ(&rec("c", 0), 11);
    let v = check(&report, &[&good, &[no_id, wrong_value, stranger]]);
    assert_eq!((v.without_id, v.foreign), (1, 2));
    assert!(v.missing.is_empty(), "found across views");
}
