//! The file-level import graph of one crate target and its circles.
//!
//! A crate target (its `lib.rs`, `main.rs` or `src/bin/*.rs`) is walked through its `mod`
//! declarations. File A depends on file B when A names an item *defined* in B: by a `use`
//! or by an inline `crate::`, `super::` or `self::` path, with re-exports followed to the
//! file that defines the item. A facade (`mod.rs`, `lib.rs`) that re-exports a child's
//! items therefore depends on that child, and a child that uses an item defined in its
//! facade closes a circle. Test code (`#[cfg(test)]` items, and so the `*_tests.rs` files
//! they declare) is not part of the graph.

use super::paths::{Import, imports, inline_paths};
use super::source::{code_only, outer_level, without_test_items};
use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// One source file of a crate target.
#[derive(Debug)]
pub(crate) struct SourceFile {
    /// The file, relative to the workspace root.
    pub(crate) path: PathBuf,
    /// Its module path below the crate root (empty for the root).
    module: Vec<String>,
    /// Names of the items it defines itself (inline modules included).
    defs: HashSet<String>,
    /// Its child modules that live in files of their own.
    children: HashMap<String, usize>,
    imports: Vec<Import>,
    inline: Vec<Vec<String>>,
}

/// A crate target's files and who depends on whom.
#[derive(Debug)]
pub(crate) struct ImportGraph {
    pub(crate) files: Vec<SourceFile>,
    /// `edges[a][b]`: the paths in file `a` that name items defined in file `b`.
    pub(crate) edges: Vec<BTreeMap<usize, BTreeSet<String>>>,
}

/// Finds the names an item keyword introduces in `outer`: `struct X`, `fn x`, `mod x {}`...
fn defined_names(outer: &str, code: &str) -> HashSet<String> {
    const KEYWORDS: [&str; 9] = [
        "struct", "enum", "fn", "trait", "type", "const", "static", "union", "mod",
    ];
    let mut names = HashSet::new();
    let words: Vec<&str> = outer
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    for pair in words.windows(2) {
        if KEYWORDS.contains(&pair[0]) {
            names.insert(pair[1].to_owned());
        }
    }
    let mut rest = code;
    while let Some(at) = rest.find("macro_rules!") {
        rest = &rest[at + "macro_rules!".len()..];
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        names.insert(name);
    }
    names
}

/// The names of the `mod NAME;` declarations (modules in files of their own) in `outer`.
fn file_modules(outer: &str) -> Vec<String> {
    let mut mods = Vec::new();
    let mut rest = outer;
    while let Some(at) = rest.find("mod ") {
        let before = outer.len() - rest.len() + at;
        rest = &rest[at + 4..];
        if outer[..before]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = rest.trim_start()[name.len()..].trim_start();
        if !name.is_empty() && after.starts_with(';') {
            mods.push(name);
        }
    }
    mods
}

impl ImportGraph {
    /// Reads the crate target rooted at `root` (a path below `workspace`).
    pub(crate) fn read(workspace: &Path, root: &Path) -> Result<Self> {
        let mut files: Vec<SourceFile> = Vec::new();
        let mut queue = vec![(
            root.to_path_buf(),
            Vec::<String>::new(),
            None::<(usize, String)>,
        )];
        while let Some((path, module, parent)) = queue.pop() {
            let full = workspace.join(&path);
            let src = std::fs::read_to_string(&full)
                .with_context(|| format!("reading {}", full.display()))?;
            let code = without_test_items(&code_only(&src));
            let outer = outer_level(&code);
            let index = files.len();
            if let Some((p, name)) = parent {
                files[p].children.insert(name, index);
            }
            let dir = module_dir(&path);
            for name in file_modules(&outer) {
                let flat = dir.join(format!("{name}.rs"));
                let nested = dir.join(&name).join("mod.rs");
                let child = if workspace.join(&flat).is_file() {
                    flat
                } else {
                    nested
                };
                let mut m = module.clone();
                m.push(name.clone());
                queue.push((child, m, Some((index, name))));
            }
            files.push(SourceFile {
                path,
                module,
                defs: defined_names(&outer, &code),
                children: HashMap::new(),
                imports: imports(&code),
                inline: inline_paths(&code),
            });
        }
        let mut graph = ImportGraph {
            edges: vec![BTreeMap::new(); files.len()],
            files,
        };
        graph.link();
        Ok(graph)
    }

    fn link(&mut self) {
        for a in 0..self.files.len() {
            let file = &self.files[a];
            let named = file
                .imports
                .iter()
                .map(|i| &i.path)
                .chain(file.inline.iter());
            let mut found = Vec::new();
            for path in named {
                let Some(abs) = self.absolute(a, path) else {
                    continue;
                };
                if let Some(b) = self.resolve(&abs, 0)
                    && b != a
                {
                    found.push((b, path.join("::")));
                }
            }
            for (b, path) in found {
                self.edges[a].entry(b).or_default().insert(path);
            }
        }
    }

    /// `path` as written in file `at`, made absolute from the crate root; `None` for a
    /// path into another crate.
    fn absolute(&self, at: usize, path: &[String]) -> Option<Vec<String>> {
        self.absolute_via(at, path, true)
    }

    /// [`Self::absolute`]; `via_imports` also reads a path through a name the file
    /// imported (one level: the import's own path is taken as written).
    fn absolute_via(&self, at: usize, path: &[String], via_imports: bool) -> Option<Vec<String>> {
        let first = path.first()?;
        let file = &self.files[at];
        match first.as_str() {
            "crate" => Some(path[1..].to_vec()),
            "super" | "self" => {
                let mut module = file.module.clone();
                let mut rest = path;
                while let Some(seg) = rest.first() {
                    match seg.as_str() {
                        "super" => {
                            module.pop();
                        }
                        "self" => {}
                        _ => break,
                    }
                    rest = &rest[1..];
                }
                module.extend(rest.iter().cloned());
                Some(module)
            }
            name if file.children.contains_key(name) => {
                let mut module = file.module.clone();
                module.extend(path.iter().cloned());
                Some(module)
            }
            // A path through a name the file imported (`use crate::wire;` ... `wire::X`).
            name if via_imports && path.len() > 1 => {
                let import = file.imports.iter().find(|i| i.name == name)?;
                let mut full = self.absolute_via(at, &import.path, false)?;
                full.extend(path[1..].iter().cloned());
                Some(full)
            }
            _ => None,
        }
    }

    /// The file that defines what the absolute `path` names (following re-exports);
    /// `None` when it leads out of the crate.
    fn resolve(&self, path: &[String], depth: usize) -> Option<usize> {
        if depth > 32 {
            return None;
        }
        let mut at = 0;
        for (i, seg) in path.iter().enumerate() {
            let file = &self.files[at];
            if let Some(&child) = file.children.get(seg) {
                at = child;
                continue;
            }
            if file.defs.contains(seg) {
                return Some(at);
            }
            if let Some(import) = file.imports.iter().find(|imp| &imp.name == seg) {
                let mut abs = self.absolute(at, &import.path)?;
                abs.extend(path[i + 1..].iter().cloned());
                return self.resolve(&abs, depth + 1);
            }
            for glob in file.imports.iter().filter(|imp| imp.name == "*") {
                let Some(mut abs) = self.absolute(at, &glob.path) else {
                    continue;
                };
                abs.extend(path[i..].iter().cloned());
                if let Some(found) = self.resolve(&abs, depth + 1)
                    && self.files[found].defs.contains(seg)
                {
                    return Some(found);
                }
            }
            // An enum variant, an associated item or a macro: this file's own.
            return Some(at);
        }
        Some(at)
    }

    /// Every circle: the sets of two or more files that reach each other (Tarjan), each
    /// sorted by path.
    pub(crate) fn circles(&self) -> Vec<Vec<usize>> {
        struct Tarjan<'a> {
            g: &'a ImportGraph,
            index: Vec<Option<usize>>,
            low: Vec<usize>,
            stack: Vec<usize>,
            on_stack: Vec<bool>,
            next: usize,
            out: Vec<Vec<usize>>,
        }
        impl Tarjan<'_> {
            fn visit(&mut self, v: usize) {
                self.index[v] = Some(self.next);
                self.low[v] = self.next;
                self.next += 1;
                self.stack.push(v);
                self.on_stack[v] = true;
                for &w in self.g.edges[v].keys() {
                    match self.index[w] {
                        None => {
                            self.visit(w);
                            self.low[v] = self.low[v].min(self.low[w]);
                        }
                        Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                        Some(_) => {}
                    }
                }
                if Some(self.low[v]) == self.index[v] {
                    let mut component = Vec::new();
                    while let Some(w) = self.stack.pop() {
                        self.on_stack[w] = false;
                        component.push(w);
                        if w == v {
                            break;
                        }
                    }
                    if component.len() > 1 {
                        component.sort_by(|&a, &b| self.g.files[a].path.cmp(&self.g.files[b].path));
                        self.out.push(component);
                    }
                }
            }
        }
        let n = self.files.len();
        let mut t = Tarjan {
            g: self,
            index: vec![None; n],
            low: vec![0; n],
            stack: Vec::new(),
            on_stack: vec![false; n],
            next: 0,
            out: Vec::new(),
        };
        for v in 0..n {
            if t.index[v].is_none() {
                t.visit(v);
            }
        }
        t.out
    }
}

/// The directory a file's `mod NAME;` children live in: beside a `mod.rs`, `lib.rs` or
/// `main.rs` (or a `src/bin/*.rs` root), below `foo/` for `foo.rs`.
fn module_dir(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new(""));
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let is_root =
        matches!(stem, "mod" | "lib" | "main") || dir.file_name().is_some_and(|d| d == "bin");
    if is_root {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    }
}
