//! profiler-core reads bottom-up: every module imports only from modules of its own
//! layer or below, and no two modules import each other, directly or round a loop
//! (a parent module and its children included). This test parses the crate's sources
//! and fails on an import that breaks either rule, naming it, so a cycle cannot creep
//! back. Code under `#[cfg(test)]` is left out: tests may reach anywhere.
//!
//! The layers are listed here, bottom first; the README's Layout section draws them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// Every module of the crate, by layer, bottom first. A new module must be placed
/// here, which is the point: where it sits decides what it may import.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "ground",
        &[
            "clock",
            "error",
            "field",
            "gate",
            "log",
            "options",
            "options::config",
            "options::format",
            "options::tests",
            "peaks",
            "profile",
            "reentry",
            "schema",
            "tags",
            "xspace",
            "xspace::builder",
            "xspace::device",
            "xspace::edit",
            "xspace::event_encoding",
            "xspace::model",
            "xspace::ops",
            "xspace::scopes",
        ],
    ),
    (
        "record buffer",
        &[
            "buffer",
            "buffer::decode",
            "buffer::event_ref",
            "buffer::layout",
            "buffer::registry",
            "buffer::ring",
            "buffer::writer",
        ],
    ),
    ("scope hook", &["handoff", "scope"]),
    (
        "front ends",
        &[
            "alloc",
            "annotation",
            "counter",
            "domain",
            "future",
            "layer",
            "memory",
        ],
    ),
    (
        "collection",
        &[
            "collect",
            "collect::domains",
            "collect::line",
            "collect::memory",
            "collect::seqs",
            "collect::tasks",
        ],
    ),
    (
        "process end",
        &[
            "exit",
            "exit::atexit",
            "exit::ending",
            "exit::panic",
            "exit::report",
            "exit::signals",
        ],
    ),
    ("session control", &["session", "tracer"]),
    (
        "session shapes",
        &[
            "flight_recorder",
            "schedule",
            "schedule::plan",
            "schedule::profiler",
        ],
    ),
];

struct Module {
    file: PathBuf,
    /// Modules declared in the file with `mod name;`.
    children: BTreeSet<String>,
    /// Paths it names, as written: (segments, where).
    paths: Vec<Vec<String>>,
}

fn module_name(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts.join("::")
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// Collects the paths a file names outside `#[cfg(test)]` code.
#[derive(Default)]
struct Paths {
    children: BTreeSet<String>,
    paths: Vec<Vec<String>>,
}

impl Paths {
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut path = prefix.clone();
                if n.ident != "self" {
                    path.push(n.ident.to_string());
                }
                self.paths.push(path);
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                path.push(r.ident.to_string());
                self.paths.push(path);
            }
            syn::UseTree::Glob(_) => self.paths.push(prefix.clone()),
            syn::UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(prefix, tree);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::Type(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if is_test_only(attrs) {
            return;
        }
        match item {
            syn::Item::Use(u) => self.use_tree(&mut Vec::new(), &u.tree),
            syn::Item::Mod(m) if m.content.is_none() => {
                self.children.insert(m.ident.to_string());
            }
            _ => syn::visit::visit_item(self, item),
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        if let syn::ImplItem::Fn(f) = item {
            if is_test_only(&f.attrs) {
                return;
            }
        }
        syn::visit::visit_impl_item(self, item);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.paths
            .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }

    // `pub(in crate::x)` names where an item is visible, not what it uses.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}
}

fn modules(src: &Path) -> BTreeMap<String, Module> {
    let mut files = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file).expect("read source");
            let ast = syn::parse_file(&text)
                .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
            let mut paths = Paths::default();
            paths.visit_file(&ast);
            let name = module_name(src, &file);
            let module = Module {
                file,
                children: paths.children,
                paths: paths.paths,
            };
            (name, module)
        })
        .collect()
}

/// The module a path names from inside module `from`, if it is one of the crate's.
/// `Err` for a path through the crate root's re-exports (`crate::Profile`).
fn resolve(
    modules: &BTreeMap<String, Module>,
    from: &str,
    path: &[String],
) -> Result<Option<String>, String> {
    let here: Vec<String> = if from.is_empty() {
        Vec::new()
    } else {
        from.split("::").map(str::to_owned).collect()
    };
    let mut absolute: Vec<String> = match path.first().map(String::as_str) {
        Some("crate") => path[1..].to_vec(),
        Some("self") => here.iter().chain(&path[1..]).cloned().collect(),
        Some("super") => {
            let mut base = here.clone();
            let mut rest = path;
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
            base.into_iter().chain(rest.iter().cloned()).collect()
        }
        Some(first) if modules[from].children.contains(first) => {
            here.iter().chain(path).cloned().collect()
        }
        _ => return Ok(None),
    };
    while !absolute.is_empty() {
        let name = absolute.join("::");
        if modules.contains_key(&name) {
            return Ok(Some(name));
        }
        absolute.pop();
    }
    if path.first().map(String::as_str) == Some("crate") && path.len() > 1 {
        return Err(path.join("::"));
    }
    Ok(None)
}

#[test]
fn profiler_core_imports_point_down_its_layers_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    let layer_of: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, (_, names))| names.iter().map(move |n| (*n, i)))
        .collect();

    let mut problems = Vec::new();
    let mut edges: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (name, module) in &modules {
        if name.is_empty() {
            continue; // lib.rs declares and re-exports; it is the top.
        }
        let Some(&layer) = layer_of.get(name.as_str()) else {
            problems.push(format!(
                "{name} ({}) is in no layer: add it to LAYERS in tests/layers.rs",
                module.file.display()
            ));
            continue;
        };
        for path in &module.paths {
            match resolve(&modules, name, path) {
                Ok(Some(target)) if &target != name && !target.is_empty() => {
                    let target_layer = layer_of.get(target.as_str()).copied().unwrap_or(0);
                    if target_layer > layer {
                        problems.push(format!(
                            "{name} ({}) imports {} from {target} ({}), a layer above it",
                            LAYERS[layer].0,
                            path.join("::"),
                            LAYERS[target_layer].0
                        ));
                    }
                    edges.entry(name).or_default().insert(target);
                }
                Ok(_) => {}
                Err(through_root) => problems.push(format!(
                    "{name} imports {through_root} through the crate root's re-exports: \
                     import it from its module"
                )),
            }
        }
    }

    problems.extend(cycles(&edges));

    problems.sort();
    problems.dedup();
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// Every import cycle among `edges` (module -> modules it imports), one line each: a
/// module that reaches itself.
fn cycles<K: AsRef<str> + Ord>(edges: &BTreeMap<K, BTreeSet<String>>) -> Vec<String> {
    let edges: BTreeMap<&str, &BTreeSet<String>> =
        edges.iter().map(|(k, v)| (k.as_ref(), v)).collect();
    let mut found = Vec::new();
    for (&start, targets) in &edges {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<(String, Vec<String>)> = targets
            .iter()
            .map(|t| (t.clone(), vec![start.to_owned(), t.clone()]))
            .collect();
        while let Some((at, trail)) = stack.pop() {
            if at == start {
                found.push(format!("import cycle: {}", trail.join(" -> ")));
                break;
            }
            if !seen.insert(at.clone()) {
                continue;
            }
            for next in edges.get(at.as_str()).into_iter().flat_map(|t| t.iter()) {
                let mut trail = trail.clone();
                trail.push(next.clone());
                stack.push((next.clone(), trail));
            }
        }
    }
    found
}

/// The workspace's crates: the root package and each member, by the directory holding
/// its `src`.
fn workspace_crates() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("profiler-core sits in the workspace")
        .to_path_buf();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("read Cargo.toml");
    // `members = ["a", "b", ...]` on one line, as the workspace writes it.
    let members = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("members = ["))
        .expect("a members list in the workspace's Cargo.toml");
    std::iter::once(root.clone())
        .chain(members.split('"').skip(1).step_by(2).map(|m| root.join(m)))
        .collect()
}

/// No crate of the workspace has modules that import each other, directly or round a
/// loop: the rule profiler-core's layers enforce, checked for every crate (each
/// library's modules; a binary under `src/bin` is one file, a crate of its own).
#[test]
fn no_crate_in_the_workspace_has_an_import_cycle() {
    let mut problems = Vec::new();
    let crates = workspace_crates();
    let root = crates[0].clone();
    assert!(crates.len() >= 8, "found only {crates:?}");
    for dir in crates {
        let src = dir.join("src");
        let modules = modules(&src);
        let mut edges: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
        for (name, module) in &modules {
            if name.starts_with("bin") {
                continue;
            }
            for path in &module.paths {
                if let Ok(Some(target)) = resolve(&modules, name, path) {
                    if &target != name && !target.is_empty() {
                        edges.entry(name).or_default().insert(target);
                    }
                }
            }
        }
        let krate = dir
            .strip_prefix(&root)
            .map_or_else(|_| dir.display().to_string(), |p| p.display().to_string());
        let krate = if krate.is_empty() {
            "prof".to_owned()
        } else {
            krate
        };
        problems.extend(cycles(&edges).into_iter().map(|c| format!("{krate}: {c}")));
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// The checker itself: on sources with a cycle and an upward import, it must fail.
#[test]
fn the_checker_finds_cycles_and_upward_imports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "mod gate; mod session;").expect("write");
    std::fs::write(src.join("gate.rs"), "use crate::session::stop;").expect("write");
    std::fs::write(
        src.join("session.rs"),
        "pub fn stop() { crate::gate::close() }",
    )
    .expect("write");
    let modules = modules(src);
    let up = resolve(
        &modules,
        "gate",
        &["crate".into(), "session".into(), "stop".into()],
    );
    assert_eq!(up, Ok(Some("session".to_owned())));
    let down = resolve(
        &modules,
        "session",
        &["crate".into(), "gate".into(), "close".into()],
    );
    assert_eq!(down, Ok(Some("gate".to_owned())));
    let root = resolve(&modules, "session", &["crate".into(), "Profile".into()]);
    assert!(root.is_err());
    let external = resolve(&modules, "session", &["std".into(), "mem".into()]);
    assert_eq!(external, Ok(None));
    let edges: BTreeMap<&str, BTreeSet<String>> = [
        ("gate", BTreeSet::from(["session".to_owned()])),
        ("session", BTreeSet::from(["gate".to_owned()])),
        ("clock", BTreeSet::from(["gate".to_owned()])),
    ]
    .into();
    let found = cycles(&edges);
    assert!(
        found.contains(&"import cycle: gate -> session -> gate".to_owned()),
        "{found:?}"
    );
    assert_eq!(found.len(), 2, "{found:?}");
    edges_without_cycle_pass();
}

fn edges_without_cycle_pass() {
    let edges: BTreeMap<&str, BTreeSet<String>> = [
        ("session", BTreeSet::from(["gate".to_owned()])),
        ("clock", BTreeSet::from(["gate".to_owned()])),
    ]
    .into();
    assert_eq!(cycles(&edges), Vec::<String>::new());
}
