//! Tests: the shape of src/ (issue 31): no file over 600 lines, no function over 70, no
//! `unsafe`, and no import cycle between files or between top-level modules.
//!
//! The import graph is read from the source text: an edge A -> B for every `crate::`, `super::`
//! or `self::` path in A's code (unit tests excluded) that names something in file B. A parent
//! module's own children are its parts, not its imports: a `mod.rs` declaring, re-exporting or
//! calling its children (`pub use child::Item;`, `child::run()`) adds no edge, while a child
//! naming its parent (`use super::Shared;`) or a sibling does. So a ring is two files (or two
//! top-level modules) that each need the other. The checker is tested on small made-up trees
//! below, so a ring it cannot see is a bug in it, not a pass.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 70;

/// Every `.rs` file under `dir`, as (path relative to `dir`, text), sorted.
fn sources(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read src/") {
            let path: PathBuf = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(dir).unwrap().to_string_lossy().replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&path).expect("read source")));
            }
        }
    }
    out.sort();
    out
}

fn src() -> Vec<(String, String)> {
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The module path of a file: `a/b.rs` and `a/b/mod.rs` are `a::b`; `lib.rs`, `main.rs` the root.
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel.trim_end_matches(".rs").split('/').map(String::from).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The code of a file without its unit tests and without comments.
fn code(text: &str) -> String {
    let is_test_module = |at: &usize| {
        let line = text[at + 13..].lines().next().unwrap_or("");
        line.starts_with("mod ") && line.trim_end().ends_with('{')
    };
    let cut = text.match_indices("#[cfg(test)]\n").map(|(at, _)| at).find(is_test_module);
    let body = &text[..cut.unwrap_or(text.len())];
    body.lines()
        .map(|l| match l.find("//") {
            Some(at) if !l[..at].contains('"') => &l[..at],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Expands `use` trees (`a::{b::C, d}`) into full paths; other text passes through.
fn expand_use(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or("").trim().to_string()];
    };
    let prefix = &tree[..open];
    let close = tree.rfind('}').filter(|&c| c > open).unwrap_or(tree.len());
    let inner = &tree[open + 1..close];
    let (mut depth, mut start, mut out) = (0, 0, Vec::new());
    let bytes = inner.as_bytes();
    for i in 0..=bytes.len() {
        let c = bytes.get(i).copied().unwrap_or(b',');
        match c {
            b'{' => depth += 1,
            b'}' => depth -= 1,
            b',' if depth == 0 => {
                let part = inner[start..i].trim();
                if !part.is_empty() {
                    for p in expand_use(part) {
                        out.push(if p == "self" {
                            prefix.trim_end_matches("::").to_string()
                        } else {
                            format!("{prefix}{p}")
                        });
                    }
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    out
}

/// The paths a file's code names: expanded `use` items and every inline `crate::`, `super::`
/// or `self::` path.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lines: Vec<&str> = code.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_start();
        let after_vis = match line.strip_prefix("pub") {
            Some(rest) => rest.split_once(' ').map_or("", |(_, r)| r),
            None => line,
        };
        if let Some(tree) = after_vis.strip_prefix("use ") {
            let mut text = tree.to_string();
            while !text.contains(';') && i + 1 < lines.len() {
                i += 1;
                text.push_str(lines[i]);
            }
            let tree = text.split(';').next().unwrap_or("");
            out.extend(expand_use(tree));
        }
        i += 1;
    }
    let bytes = code.as_bytes();
    for head in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(head).map(|i| from + i) {
            from = i + head.len();
            let prev = if i > 0 { bytes[i - 1] } else { b' ' };
            if prev.is_ascii_alphanumeric() || prev == b'_' || prev == b':' {
                continue;
            }
            let len = code[i..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(code.len() - i);
            out.push(code[i..i + len].trim_end_matches(':').to_string());
        }
    }
    out
}

/// The byte offset of `word` in `text` at a word start (not inside an identifier).
fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(word).map(|i| from + i) {
        let ok = i == 0
            || !text.as_bytes()[i - 1].is_ascii_alphanumeric() && text.as_bytes()[i - 1] != b'_';
        if ok {
            return Some(i);
        }
        from = i + word.len();
    }
    None
}

type Graph = BTreeMap<Vec<String>, BTreeSet<Vec<String>>>;

/// The file-level import graph of a source tree.
fn graph(files: &[(String, String)]) -> Graph {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(rel, _)| module_of(rel)).collect();
    let resolve = |path: &[String]| -> Option<Vec<String>> {
        (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| modules.contains(p))
    };
    let mut g = Graph::new();
    for (rel, text) in files {
        let me = module_of(rel);
        let code = code(text);
        let mut edges = BTreeSet::new();
        for path in paths(&code) {
            let mut segs: Vec<String> = path.split("::").map(String::from).collect();
            let mut base = match segs.first().map(String::as_str) {
                Some("crate") => vec![],
                Some("self") => me.clone(),
                Some("super") => me[..me.len().saturating_sub(1)].to_vec(),
                _ => continue,
            };
            if matches!(segs[0].as_str(), "crate" | "self" | "super") {
                segs.remove(0);
            }
            while segs.first().is_some_and(|s| s == "super") {
                base.pop();
                segs.remove(0);
            }
            base.extend(segs);
            if let Some(target) = resolve(&base) {
                if !target.starts_with(&me) && !target.is_empty() {
                    edges.insert(target);
                }
            }
        }
        g.insert(me, edges);
    }
    g
}

/// The graph between modules `depth` levels deep (1: top-level modules).
fn collapse(g: &Graph, depth: usize) -> Graph {
    let cut = |m: &Vec<String>| m[..m.len().min(depth)].to_vec();
    let mut out = Graph::new();
    for (from, tos) in g {
        let entry = out.entry(cut(from)).or_default();
        entry.extend(tos.iter().map(cut).filter(|t| *t != cut(from)));
    }
    out
}

/// The strongly connected components of `g` with more than one module: each is a set of
/// modules that import one another in a ring (Tarjan's algorithm, in sorted order).
fn rings(g: &Graph) -> Vec<Vec<Vec<String>>> {
    struct Walk<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a Vec<String>, (usize, usize)>,
        stack: Vec<&'a Vec<String>>,
        out: Vec<Vec<Vec<String>>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a Vec<String>) {
        let n = w.index.len();
        w.index.insert(v, (n, n));
        w.stack.push(v);
        for next in w.g.get(v).into_iter().flatten() {
            let next = w.g.get_key_value(next).map_or(next, |(k, _)| k);
            if !w.index.contains_key(next) {
                visit(w, next);
                let low = w.index[next].1.min(w.index[v].1);
                w.index.get_mut(v).unwrap().1 = low;
            } else if w.stack.contains(&next) {
                let low = w.index[next].0.min(w.index[v].1);
                w.index.get_mut(v).unwrap().1 = low;
            }
        }
        if w.index[v].0 == w.index[v].1 {
            let at = w.stack.iter().position(|m| *m == v).unwrap();
            let ring: Vec<Vec<String>> = w.stack.split_off(at).into_iter().cloned().collect();
            if ring.len() > 1 {
                w.out.push(ring);
            }
        }
    }
    let mut w = Walk { g, index: BTreeMap::new(), stack: Vec::new(), out: Vec::new() };
    for v in g.keys() {
        if !w.index.contains_key(v) {
            visit(&mut w, v);
        }
    }
    w.out.iter_mut().for_each(|r| r.sort());
    w.out.sort();
    w.out
}

fn show(ring: &[Vec<String>]) -> String {
    ring.iter().map(|m| m.join("::")).collect::<Vec<_>>().join(", ")
}

/// Functions longer than `max` lines (from `fn` to its closing brace), as `file:line name (n)`.
fn long_functions(rel: &str, text: &str, max: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let indent = &line[..line.len() - line.trim_start().len()];
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "fn");
        let is_fn = at.is_some_and(|a| {
            words[..a].iter().all(|w| {
                w.starts_with("pub")
                    || matches!(*w, "const" | "async" | "unsafe" | "extern" | "\"C\"")
            })
        });
        if !is_fn {
            i += 1;
            continue;
        }
        let Some(open) = (i..lines.len()).find(|&j| lines[j].trim_end().ends_with(['{', ';']))
        else {
            break;
        };
        if lines[open].trim_end().ends_with(';') {
            i = open + 1;
            continue;
        }
        let close_line = format!("{indent}}}");
        let close =
            (open..lines.len()).find(|&j| lines[j] == close_line).unwrap_or(lines.len() - 1);
        if close - i + 1 > max {
            let name = words[at.unwrap() + 1].split(['(', '<']).next().unwrap_or("");
            out.push(format!("src/{rel}:{} {name} ({} lines)", i + 1, close - i + 1));
        }
        i = close + 1;
    }
    out
}

#[test]
fn no_source_file_is_over_600_lines() {
    let long: Vec<String> = src()
        .iter()
        .filter(|(_, text)| text.lines().count() > MAX_FILE_LINES)
        .map(|(rel, text)| format!("src/{rel} ({} lines)", text.lines().count()))
        .collect();
    assert!(long.is_empty(), "files over {MAX_FILE_LINES} lines: {long:#?}");
}

#[test]
fn no_function_is_over_70_lines() {
    let long: Vec<String> =
        src().iter().flat_map(|(rel, text)| long_functions(rel, text, MAX_FN_LINES)).collect();
    assert!(long.is_empty(), "functions over {MAX_FN_LINES} lines: {long:#?}");
}

#[test]
fn no_unsafe_in_src() {
    let hits: Vec<String> = src()
        .iter()
        .flat_map(|(rel, text)| {
            code(text)
                .lines()
                .enumerate()
                .filter(|(_, l)| find_word(l, "unsafe").is_some())
                .map(|(n, _)| format!("src/{rel}:{}", n + 1))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(hits.is_empty(), "`unsafe` in src/: {hits:?}");
}

#[test]
fn no_import_cycle_between_files_or_modules() {
    let g = graph(&src());
    assert!(g.len() > 50, "the checker found only {} files", g.len());
    let modules: Vec<String> = rings(&collapse(&g, 1)).iter().map(|r| show(r)).collect();
    let files: Vec<String> = rings(&g).iter().map(|r| show(r)).collect();
    assert!(
        modules.is_empty() && files.is_empty(),
        "import rings between top-level modules: {modules:#?}\nbetween files: {files:#?}"
    );
}

fn tree(files: &[(&str, &str)]) -> Graph {
    graph(&files.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>())
}

#[test]
fn the_checker_sees_cycles_through_use_trees_super_and_children() {
    let ring = tree(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a/mod.rs", "mod x;\npub use x::Thing;\n"),
        ("a/x.rs", "use crate::{b::{Other, self}};\n"),
        ("b.rs", "fn f() { crate::a::x::Thing::new(); }\n"),
    ]);
    assert_eq!(rings(&ring).iter().map(|r| show(r)).collect::<Vec<_>>(), ["a::x, b"]);
    assert_eq!(rings(&collapse(&ring, 1)).len(), 1);

    let siblings = tree(&[
        ("lib.rs", "mod a;\n"),
        ("a/mod.rs", "mod x;\nmod y;\nfn f() { x::run(); }\n"),
        ("a/y.rs", "use super::x;\nfn g() { x::run(); }\n"),
        ("a/x.rs", "use super::helper;\nfn run() { super::y::g(); }\n"),
    ]);
    assert_eq!(rings(&siblings).iter().map(|r| show(r)).collect::<Vec<_>>(), ["a::x, a::y"]);

    let fine = tree(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a/mod.rs", "mod x;\npub use x::Thing;\nuse self::x::f;\n// crate::b::y in a comment\n"),
        ("a/x.rs", "use super::Shared;\n"),
        ("b.rs", "use crate::a::Thing;\n#[cfg(test)]\nmod tests {\n use crate::b::*; use crate::a::x::*;\n}\n"),
    ]);
    assert!(rings(&fine).is_empty());
}

#[test]
fn the_checker_measures_functions_from_fn_to_closing_brace() {
    let body = "    let x = 1;\n".repeat(69);
    let ok = format!("fn short() {{\n{}}}\n", &body[..body.len() - 15]);
    let long = format!(
        "impl A {{\n    pub(crate) fn long(\n        a: u8,\n    ) -> u8 {{\n{body}    }}\n}}\n"
    );
    assert!(long_functions("x.rs", &ok, 70).is_empty());
    assert_eq!(long_functions("x.rs", &long, 70), vec!["src/x.rs:2 long (73 lines)"]);
}
