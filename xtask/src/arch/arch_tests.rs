//! The shape check on small crates written to a temporary directory: each rule finds
//! what it should and nothing else.

use super::graph::ImportGraph;
use super::paths::{Import, imports, inline_paths};
use super::rules::{cfg_assertions, inline_test_modules};
use super::source::{code_only, without_test_items};
use std::path::{Path, PathBuf};

/// A throwaway crate: `files` are (path below `src/`, text).
fn write_crate(files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "xtask-arch-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, text) in files {
        let p = dir.join("src").join(path);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    dir
}

fn circles(files: &[(&str, &str)]) -> Vec<Vec<String>> {
    let dir = write_crate(files);
    let graph = ImportGraph::read(&dir, Path::new("src/lib.rs")).expect("read");
    let out = graph
        .circles()
        .into_iter()
        .map(|c| {
            c.into_iter()
                .map(|f| graph.files[f].path.display().to_string())
                .collect()
        })
        .collect();
    std::fs::remove_dir_all(&dir).expect("cleanup");
    out
}

#[test]
fn a_child_using_an_item_its_facade_defines_closes_a_circle() {
    let found = circles(&[
        ("lib.rs", "mod store;\npub use store::Store;\n"),
        (
            "store/mod.rs",
            "mod leases;\npub use leases::acquire;\npub struct Store;\n",
        ),
        (
            "store/leases.rs",
            "use super::Store;\npub fn acquire(_: &Store) {}\n",
        ),
    ]);
    assert_eq!(found, [["src/store/leases.rs", "src/store/mod.rs"]]);
}

#[test]
fn the_same_item_in_a_file_of_its_own_leaves_no_circle() {
    let found = circles(&[
        ("lib.rs", "mod store;\npub use store::Store;\n"),
        (
            "store/mod.rs",
            "mod leases;\nmod state;\npub use leases::acquire;\npub use state::Store;\n",
        ),
        ("store/state.rs", "pub struct Store;\n"),
        // Named through the facade's re-export: followed to where it is defined.
        (
            "store/leases.rs",
            "use super::Store;\npub fn acquire(_: &Store) {}\n",
        ),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn inline_paths_and_imported_module_names_count_as_imports() {
    let found = circles(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "pub fn f() { crate::b::g() }\n"),
        ("b.rs", "use crate::a;\npub fn g() { a::f() }\n"),
    ]);
    assert_eq!(found, [["src/a.rs", "src/b.rs"]]);
}

#[test]
fn test_code_comments_and_strings_are_not_imports() {
    let found = circles(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "// crate::b::g\n/* crate::b::g */\npub fn f() -> &'static str { \"crate::b::g\" }\n",
        ),
        (
            "b.rs",
            "pub fn g() { crate::a::f(); }\n#[cfg(test)]\nmod tests { use crate::a; }\n",
        ),
    ]);
    assert!(found.is_empty(), "{found:?}");
    let found = circles(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "pub fn f() { crate::b::g() }\n"),
        (
            "b.rs",
            "pub fn g() {}\n#[cfg(test)]\nmod tests { use crate::a::f; }\n",
        ),
    ]);
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn use_trees_expand_to_their_leaves() {
    let got = imports("use crate::{a::{self, B as C}, d::*};\npub(crate) use e::F;");
    let want = [
        Import {
            name: "a".into(),
            path: vec!["crate".into(), "a".into()],
        },
        Import {
            name: "C".into(),
            path: vec!["crate".into(), "a".into(), "B".into()],
        },
        Import {
            name: "*".into(),
            path: vec!["crate".into(), "d".into()],
        },
        Import {
            name: "F".into(),
            path: vec!["e".into(), "F".into()],
        },
    ];
    assert_eq!(got, want);
    let paths = inline_paths("let x = super :: y::Z::new(); reuse::me;");
    assert_eq!(paths, [vec!["super", "y", "Z", "new"], vec!["reuse", "me"]]);
}

#[test]
fn literals_and_lifetimes_survive_the_lexer() {
    let code = code_only("fn f<'a>(x: &'a str) -> char { let _ = r#\"a \" b\"#; '{' }");
    assert_eq!(code, "fn f<'a>(x: &'a str) -> char { let _ = \"\"; ' ' }");
    let kept = without_test_items("a();\n#[cfg(test)]\nmod t { fn x() { } }\nb();");
    assert_eq!(kept, "a();\n\nb();");
}

#[test]
fn an_assertion_on_a_feature_cfg_is_found_and_a_debug_one_is_not() {
    let src = "fn t() {\n    assert_eq!(on(), cfg!(feature = \"gzip\"));\n    assert_eq!(panics(), cfg!(debug_assertions));\n    assert!(on());\n}\n";
    assert_eq!(cfg_assertions(src), [2]);
}

#[test]
fn an_inline_test_module_is_found_and_one_in_its_own_file_is_not() {
    let src = "fn f() {}\n#[cfg(test)]\n#[path = \"f_tests.rs\"]\nmod tests;\n#[cfg(test)]\nmod more {\n}\n";
    assert_eq!(inline_test_modules(src), [5]);
    assert!(inline_test_modules("#[cfg(test)]\nfn helper() {}\n").is_empty());
}
