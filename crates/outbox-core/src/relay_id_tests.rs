use super::*;

const LEASE: Duration = Duration::from_secs(30);

fn at(s: i64) -> Timestamp {
    Timestamp::from_millis(1_000_000 + s * 1000)
}

#[test]
fn default_id_is_host_dash_outbox_sanitized() {
    assert_eq!(
        default_relay_id("orders-relay-0", "outbox").as_deref(),
        Some("orders-relay-0-outbox")
    );
    assert_eq!(
        default_relay_id(" host name\n", "my outbox/é").as_deref(),
        Some("host-name-my-outbox")
    );
    assert_eq!(default_relay_id("\u{7}--", "outbox"), None);
    assert_eq!(default_relay_id("", "outbox"), None);
    assert_eq!(default_relay_id("h", "///").as_deref(), Some("h"));
}

#[test]
fn a_long_host_is_cut_so_the_outbox_name_stays_whole() {
    let host = "h".repeat(300);
    let id = default_relay_id(&host, "orders").unwrap();
    assert_eq!(id.len(), MAX_RELAY_ID_LEN);
    assert!(id.ends_with("h-orders"), "{id}");
    assert!(crate::validate::validate_label(&id, MAX_RELAY_ID_LEN).is_ok());
    let name = "n".repeat(200);
    let id = default_relay_id("host", &name).unwrap();
    assert_eq!(id.len(), MAX_RELAY_ID_LEN);
    assert!(id.starts_with("h-n"), "{id}");
}

#[test]
fn generated_ids_differ() {
    assert_ne!(generated_relay_id(), generated_relay_id());
    assert!(generated_relay_id().starts_with("relay-"));
}

#[test]
fn own_values_and_empty_rows_are_fine() {
    assert_eq!(
        judge_heartbeat(None, &[], Some(at(0)), at(0), LEASE),
        HeartbeatVerdict::Own
    );
    assert_eq!(
        judge_heartbeat(
            Some(at(5)),
            &[at(1), at(5), at(9)],
            Some(at(1)),
            at(10),
            LEASE
        ),
        HeartbeatVerdict::Own,
        "any value in flight may have landed last"
    );
}

#[test]
fn a_foreign_value_after_joining_is_a_duplicate() {
    assert_eq!(
        judge_heartbeat(Some(at(6)), &[at(5)], Some(at(1)), at(10), LEASE),
        HeartbeatVerdict::Duplicate { found: at(6) }
    );
}

#[test]
fn a_late_write_of_the_predecessor_is_no_duplicate() {
    assert_eq!(
        judge_heartbeat(Some(at(0)), &[at(5)], Some(at(1)), at(10), LEASE),
        HeartbeatVerdict::Own,
        "stamped before this relay joined: the dead process's statement landed late"
    );
}

#[test]
fn before_joining_a_foreign_value_is_the_predecessor() {
    assert_eq!(
        judge_heartbeat(Some(at(9)), &[], None, at(10), LEASE),
        HeartbeatVerdict::RecentPredecessor { last_seen: at(9) }
    );
    assert_eq!(
        judge_heartbeat(Some(at(-20)), &[], None, at(10), LEASE),
        HeartbeatVerdict::Own,
        "a heartbeat a lease old is silent history"
    );
    assert_eq!(
        judge_heartbeat(Some(at(8)), &[at(8)], None, at(10), LEASE),
        HeartbeatVerdict::Own,
        "a failed first acquisition may still have written"
    );
}
