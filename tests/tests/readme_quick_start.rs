//! The README's quick start is the compiled example `crates/outbox/examples/quickstart.rs`
//! (CI builds every example): this test fails when the two drift apart.

use std::path::Path;

fn read(relative: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join(relative))
        .unwrap_or_else(|e| panic!("cannot read {relative}: {e}"))
}

#[test]
fn the_readme_quick_start_is_the_compiled_example() {
    let readme = read("README.md");
    let example = read("crates/outbox/examples/quickstart.rs");
    let section = readme
        .split("## Quick start")
        .nth(1)
        .expect("README has a \"## Quick start\" section");
    let block = section
        .split("```rust\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the quick start shows a rust block");
    // The README shows the example from its first `use` on (the file's own doc comment
    // says how to run it).
    let start = example
        .find("use std::time::Duration;")
        .expect("the example starts with its imports");
    assert_eq!(
        block,
        &example[start..],
        "README.md's quick start differs from crates/outbox/examples/quickstart.rs"
    );
}
