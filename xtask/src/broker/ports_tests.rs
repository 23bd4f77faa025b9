use super::*;

#[test]
fn a_picked_port_is_free_and_below_the_ephemeral_range() {
    let below = ephemeral_low().unwrap_or(PICK_RANGE.1);
    for _ in 0..32 {
        let port = pick_free_port().expect("a free port");
        assert!(port_free(port), "port {port} was handed out taken");
        if below > PICK_RANGE.0 {
            assert!(
                (PICK_RANGE.0..below).contains(&port),
                "port {port} is outside {}..{below}",
                PICK_RANGE.0
            );
        }
    }
}

#[test]
fn picked_ports_avoid_the_ones_taken() {
    let first = pick_free_port().expect("a free port");
    for _ in 0..32 {
        assert_ne!(pick_port_other_than(&[first]).expect("a port"), first);
    }
}

#[test]
fn a_port_is_handed_out_once_while_its_picker_lives() {
    let picked: Vec<u16> = (0..200)
        .map(|_| pick_free_port().expect("a port"))
        .collect();
    let mut unique = picked.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(
        unique.len(),
        picked.len(),
        "a port was picked twice: {picked:?}"
    );
    let mine = std::process::id().to_string();
    for port in &picked {
        let owner = fs::read_to_string(reservations_dir().join(port.to_string()));
        assert_eq!(owner.ok().as_deref(), Some(mine.as_str()), "port {port}");
    }
}

#[test]
fn a_reservation_of_an_exited_process_is_taken_over() {
    let port = pick_free_port().expect("a port");
    // A pid no live process has: beyond the kernel's pid_max.
    let path = reservations_dir().join(port.to_string());
    fs::write(&path, "4194305").unwrap();
    assert!(reserve(port), "the stale reservation was not taken over");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        std::process::id().to_string()
    );
    assert!(!reserve(port), "a live reservation was handed out again");
}
