//! The code's shape, checked: data flows one way through the stages (ARCHITECTURE.md), so no
//! module may import from a stage above its own, and no two modules may import each other
//! (directly or round a longer loop), a submodule's use of its parent excepted.
//!
//! The checker reads every `src/**/*.rs` as text: it drops comments, strings and character
//! literals, follows inline `mod name { … }` blocks (so `super::` in a test module means the
//! file's own module), and resolves every path that starts with `crate::` or `super::` —
//! in `use` trees (with their `{…}` groups) and in expressions alike — to the module it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The stages from the bottom up: a module may use its own stage and the stages before it.
/// `ingest` sits above `model` because it builds a `Trace`; the data still flows
/// ingest → model → window → analysis → diagnose → report → cli.
const STAGES: &[(&str, &[&str])] = &[
    // leaf helpers with no `crate::` import of their own: any stage may use them
    ("support", &["text", "par", "timings", "advice"]),
    ("model", &["model"]),
    ("ingest", &["ingest"]),
    // the window and the facts of the trace it needs: steps, annotation tree, compile work
    ("window", &["window"]),
    ("analysis", &["analysis"]),
    ("diagnose", &["diagnose"]),
    ("report", &["report"]),
    // runners of the whole pipeline: per rank of a folder, and a window written back out
    ("runners", &["multirank", "slice"]),
    // two reports compared, and the comparison rendered
    ("compare", &["diff"]),
    // the library's front door, the API boundary: typed requests, one load-options value, one
    // input dispatch and the one single-file pipeline; only the front doors above call it
    ("api", &["api"]),
    // the MCP server: a front end for agents that the command starts (`stallscope mcp`)
    ("agents", &["mcp"]),
    ("cli", &["cli"]),
];

/// The front doors: the only modules that may import the api (the Python crate, outside
/// `src/`, is checked by [`the_python_binding_calls_the_api`]).
const FRONT_DOORS: &[&str] = &["cli", "mcp"];

/// Calls that run a stage of the pipeline: outside tests, only the api's single-file
/// pipeline (`src/api/pipeline.rs`) makes them.
const PIPELINE_CALLS: &[&str] = &[
    "ingest::load(",
    "analysis::try_analyze(",
    "diagnose::diagnose(",
    "Report::new(",
];

/// Imports that go up on purpose: (importing module, imported module, reason). None today.
const EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// A module path from the crate root (`["analysis", "gaps"]`).
type ModPath = Vec<String>;

/// One import: the module that holds the path, the resolved path, and the line.
#[derive(Debug)]
struct Import {
    from: ModPath,
    to: ModPath,
    line: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Other(char),
}

/// The source with comments, strings and character literals blanked out (newlines kept, so
/// line numbers stay right).
fn strip(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |c: char, out: &mut String| out.push(if c == '\n' { '\n' } else { ' ' });
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied().unwrap_or('\0');
        if c == '/' && next == '/' {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == '*' {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(b[i], &mut out);
                    i += 1;
                }
            }
        } else if (c == 'r' || (c == 'b' && next == 'r'))
            && !prev_is_ident(&b, i)
            && raw_string_start(&b, i + usize::from(c == 'b') + 1).is_some()
        {
            let start = i + usize::from(c == 'b') + 1;
            let hashes = raw_string_start(&b, start).unwrap();
            i = start + hashes + 1;
            while i < b.len() {
                if b[i] == '"' && (0..hashes).all(|k| b.get(i + 1 + k) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                blank(b[i], &mut out);
                i += 1;
            }
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if i < b.len() {
                    blank(b[i], &mut out);
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' {
            // a character literal ('x', '\n', '\u{..}', '"'), else a lifetime
            if next == '\\' {
                i += 3;
                while i < b.len() && b[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_is_ident(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// At `b[i]`: `#…#"` opening a raw string; the number of `#`.
fn raw_string_start(b: &[char], i: usize) -> Option<usize> {
    let mut k = i;
    while b.get(k) == Some(&'#') {
        k += 1;
    }
    (b.get(k) == Some(&'"')).then_some(k - i)
}

/// Tokens with their line numbers.
fn tokens(src: &str) -> Vec<(Tok, usize)> {
    let b: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphabetic() || c == '_' {
            let s = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push((Tok::Ident(b[s..i].iter().collect()), line));
        } else if c == ':' && b.get(i + 1) == Some(&':') {
            out.push((Tok::PathSep, line));
            i += 2;
        } else {
            out.push((
                match c {
                    '{' => Tok::Open,
                    '}' => Tok::Close,
                    ',' => Tok::Comma,
                    _ => Tok::Other(c),
                },
                line,
            ));
            i += 1;
        }
    }
    out
}

/// Reads the path (or `use` tree) starting at `toks[i]` after its first segment was resolved
/// to `base`; pushes every full path. Returns the index after it.
fn read_tree(toks: &[(Tok, usize)], mut i: usize, base: ModPath, out: &mut Vec<ModPath>) -> usize {
    let mut path = base;
    loop {
        if toks.get(i).map(|t| &t.0) != Some(&Tok::PathSep) {
            out.push(path);
            return i;
        }
        i += 1;
        match toks.get(i).map(|t| &t.0) {
            Some(Tok::Ident(s)) if s == "super" => {
                path.pop();
                i += 1;
            }
            Some(Tok::Ident(s)) if s == "self" => i += 1,
            Some(Tok::Ident(s)) => {
                path.push(s.clone());
                i += 1;
            }
            Some(Tok::Open) => {
                i += 1;
                loop {
                    match toks.get(i).map(|t| &t.0) {
                        Some(Tok::Close) => return i + 1,
                        Some(Tok::Comma) => i += 1,
                        Some(Tok::Ident(s)) => {
                            let mut p = path.clone();
                            if s != "self" {
                                p.push(s.clone());
                            }
                            i = read_tree(toks, i + 1, p, out);
                            // skip `as name`
                            while let Some(Tok::Ident(_)) = toks.get(i).map(|t| &t.0) {
                                i += 1;
                            }
                        }
                        Some(_) => i += 1,
                        None => return i,
                    }
                }
            }
            _ => {
                out.push(path);
                return i;
            }
        }
    }
}

/// Every `crate::`/`super::` path of one file whose module path is `module`.
fn imports_of(module: &ModPath, src: &str) -> Vec<Import> {
    let toks = tokens(&strip(src));
    let mut out = Vec::new();
    // inline modules open at a brace depth: (depth inside, name)
    let mut inline: Vec<(usize, String)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let here = || {
            let mut m = module.clone();
            m.extend(inline.iter().map(|(_, n)| n.clone()));
            m
        };
        match &toks[i].0 {
            Tok::Open => depth += 1,
            Tok::Close => {
                if inline.last().is_some_and(|&(d, _)| d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(m) if m == "mod" => {
                if let (Some((Tok::Ident(name), _)), Some((Tok::Open, _))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    inline.push((depth + 1, name.clone()));
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            Tok::Ident(k)
                if (k == "crate" || k == "super")
                    && !after_path_sep(&toks, i)
                    && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::PathSep) =>
            {
                let base = if k == "crate" {
                    Vec::new()
                } else {
                    let mut m = here();
                    m.pop();
                    m
                };
                let from = here();
                let line = toks[i].1;
                let mut paths = Vec::new();
                i = read_tree(&toks, i + 1, base, &mut paths);
                out.extend(paths.into_iter().map(|to| Import {
                    from: from.clone(),
                    to,
                    line,
                }));
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn after_path_sep(toks: &[(Tok, usize)], i: usize) -> bool {
    i > 0 && toks[i - 1].0 == Tok::PathSep
}

/// The stage of a top-level module (`None` for the crate root and unknown names).
fn stage(top: &str) -> Option<usize> {
    STAGES.iter().position(|(_, mods)| mods.contains(&top))
}

/// Module path of a file under `src/` (`analysis/gaps.rs` → `["analysis", "gaps"]`).
fn module_of(rel: &Path) -> Option<ModPath> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    match stem {
        "main" if parts.is_empty() => return None,
        "lib" if parts.is_empty() => {}
        "mod" => {}
        s => parts.push(s.to_string()),
    }
    Some(parts)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Every file's module path and source.
fn sources(root: &Path) -> Vec<(PathBuf, ModPath, String)> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    files
        .into_iter()
        .filter_map(|p| {
            let m = module_of(p.strip_prefix(root).unwrap())?;
            let src = std::fs::read_to_string(&p).unwrap();
            Some((p, m, src))
        })
        .collect()
}

/// Upward imports, one line each: `file:line: a (stage) uses b (stage)`.
fn stage_violations(files: &[(PathBuf, ModPath, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, module, src) in files {
        let Some(top) = module.first() else { continue };
        let from = stage(top).unwrap_or_else(|| {
            panic!(
                "{}: module `{top}` is in no stage of tests/architecture.rs",
                path.display()
            )
        });
        for imp in imports_of(module, src) {
            let Some(to_top) = imp.to.first() else {
                continue;
            };
            let Some(to) = stage(to_top) else { continue };
            let excepted = EXCEPTIONS.iter().any(|&(a, b, _)| {
                imp.from.join("::").starts_with(a) && imp.to.join("::").starts_with(b)
            });
            if to > from && !excepted {
                out.push(format!(
                    "{}:{}: `{}` ({}) uses `crate::{}` ({}), a later stage",
                    path.display(),
                    imp.line,
                    imp.from.join("::"),
                    STAGES[from].0,
                    imp.to.join("::"),
                    STAGES[to].0
                ));
            }
        }
    }
    out
}

/// Loops of imports between files, a submodule's use of its ancestors left out (that is how
/// Rust submodules read their parent's items); each loop once, as `a → b → … → a`.
fn import_cycles(files: &[(PathBuf, ModPath, String)]) -> Vec<String> {
    let known: BTreeSet<ModPath> = files.iter().map(|f| f.1.clone()).collect();
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (_, module, src) in files {
        for imp in imports_of(module, src) {
            // the file that holds the item: the longest known prefix of the path
            let Some(target) = (0..=imp.to.len())
                .rev()
                .map(|n| imp.to[..n].to_vec())
                .find(|p| known.contains(p))
            else {
                continue;
            };
            if target != *module && !module.starts_with(&target) {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    // a path back from each edge's target to its source closes a loop
    let mut loops: BTreeSet<Vec<ModPath>> = BTreeSet::new();
    for (a, targets) in &edges {
        for b in targets {
            if let Some(mut back) = path_between(&edges, b, a) {
                back.insert(0, a.clone());
                // canonical rotation: start at the smallest module
                let k = (0..back.len() - 1).min_by_key(|&k| &back[k]).unwrap();
                let mut cyc: Vec<ModPath> = back[k..back.len() - 1].to_vec();
                cyc.extend_from_slice(&back[..k]);
                loops.insert(cyc);
            }
        }
    }
    loops
        .into_iter()
        .map(|c| {
            let mut names: Vec<String> = c.iter().map(|m| m.join("::")).collect();
            names.push(names[0].clone());
            names.join(" → ")
        })
        .collect()
}

/// A shortest path of edges from `from` to `to` (both included).
fn path_between(
    edges: &BTreeMap<ModPath, BTreeSet<ModPath>>,
    from: &ModPath,
    to: &ModPath,
) -> Option<Vec<ModPath>> {
    let mut prev: BTreeMap<ModPath, ModPath> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([from.clone()]);
    let mut seen = BTreeSet::from([from.clone()]);
    while let Some(m) = queue.pop_front() {
        if m == *to {
            let mut path = vec![m.clone()];
            let mut cur = m;
            while let Some(p) = prev.get(&cur) {
                path.push(p.clone());
                cur = p.clone();
            }
            path.reverse();
            return Some(path);
        }
        for n in edges.get(&m).into_iter().flatten() {
            if seen.insert(n.clone()) {
                prev.insert(n.clone(), m.clone());
                queue.push_back(n.clone());
            }
        }
    }
    None
}

fn src_files() -> Vec<(PathBuf, ModPath, String)> {
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn no_module_imports_from_a_later_stage() {
    let v = stage_violations(&src_files());
    assert!(
        v.is_empty(),
        "imports against the stage order (see ARCHITECTURE.md):\n{}",
        v.join("\n")
    );
}

#[test]
fn no_import_cycles_between_modules() {
    let c = import_cycles(&src_files());
    assert!(
        c.is_empty(),
        "modules that import each other (move the shared item below both):\n{}",
        c.join("\n")
    );
}

#[test]
fn every_top_level_module_has_a_stage() {
    for (path, module, _) in src_files() {
        if let Some(top) = module.first() {
            assert!(
                stage(top).is_some(),
                "{}: `{top}` has no stage",
                path.display()
            );
        }
    }
}

/// The checker itself: an upward import, in every form it reads, is found; comments,
/// strings and a parent's items are not imports.
#[test]
fn the_checker_finds_upward_imports_and_loops() {
    let file = |rel: &str, src: &str| {
        let m = module_of(Path::new(rel)).unwrap();
        (PathBuf::from(rel), m, src.to_string())
    };
    let files = vec![
        file(
            "analysis/gaps.rs",
            "use super::syncs::SyncKind;\n\
             // use crate::report::Report;\n\
             const S: &str = \"crate::cli::run\";\n\
             fn f() { let c = b'\"'; crate::report::render(); }\n",
        ),
        file(
            "analysis/syncs.rs",
            "use crate::{model::Trace, analysis::gaps::GapAnalysis};\n\
             use super::Analysis;\n",
        ),
        file(
            "analysis/mod.rs",
            "pub mod gaps;\npub mod syncs;\nuse gaps::X;\n",
        ),
        file(
            "window/mod.rs",
            "#[cfg(test)]\nmod tests {\n    use super::super::analysis::steps;\n}\n",
        ),
        file("model/mod.rs", "pub struct Trace;\n"),
        file("report/mod.rs", "use crate::analysis::Analysis;\n"),
    ];
    let v = stage_violations(&files);
    assert_eq!(v.len(), 2, "{v:#?}");
    assert!(v[0].starts_with(
        "analysis/gaps.rs:4: `analysis::gaps` (analysis) uses `crate::report::render`"
    ));
    assert!(
        v[1].starts_with("window/mod.rs:3: `window::tests` (window) uses `crate::analysis::steps`")
    );
    assert_eq!(
        import_cycles(&files),
        vec!["analysis::gaps → analysis::syncs → analysis::gaps".to_string()]
    );
}

/// Imports of the api from modules that are not front doors, and imports of a front door from
/// below the api, one line each.
fn boundary_violations(files: &[(PathBuf, ModPath, String)]) -> Vec<String> {
    let api = stage("api").expect("the api has a stage");
    let mut out = Vec::new();
    for (path, module, src) in files {
        let Some(top) = module.first() else { continue };
        for imp in imports_of(module, src) {
            let Some(to_top) = imp.to.first() else {
                continue;
            };
            let from_door = FRONT_DOORS.contains(&top.as_str());
            let below_api = stage(top).is_some_and(|s| s < api);
            if to_top == "api" && top != "api" && !from_door {
                out.push(format!(
                    "{}:{}: `{}` uses `crate::{}`: only the front doors ({}) call the api",
                    path.display(),
                    imp.line,
                    imp.from.join("::"),
                    imp.to.join("::"),
                    FRONT_DOORS.join(", ")
                ));
            }
            if below_api && FRONT_DOORS.contains(&to_top.as_str()) {
                out.push(format!(
                    "{}:{}: `{}` uses the front door `crate::{}`",
                    path.display(),
                    imp.line,
                    imp.from.join("::"),
                    imp.to.join("::")
                ));
            }
        }
    }
    out
}

/// Calls of a pipeline stage outside `api/pipeline.rs` and outside `#[cfg(test)]` code (the
/// rest of a file after its first `#[cfg(test)]`), one line each.
fn pipeline_outside_the_api(files: &[(PathBuf, ModPath, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, module, src) in files {
        if module.join("::") == "api::pipeline" {
            continue;
        }
        let code = strip(src);
        let code = code.split("#[cfg(test)]").next().unwrap_or_default();
        for (i, line) in code.lines().enumerate() {
            for call in PIPELINE_CALLS {
                if line.contains(call) {
                    out.push(format!("{}:{}: {call}", path.display(), i + 1));
                }
            }
        }
    }
    out
}

#[test]
fn only_the_front_doors_import_the_api() {
    let v = boundary_violations(&src_files());
    assert!(
        v.is_empty(),
        "imports across the API boundary:\n{}",
        v.join("\n")
    );
}

#[test]
fn the_pipeline_is_written_once() {
    let v = pipeline_outside_the_api(&src_files());
    assert!(
        v.is_empty(),
        "a stage of the pipeline run outside crate::api::pipeline (call the api):\n{}",
        v.join("\n")
    );
}

/// The Python crate is a front door of the api: it uses `stallscope::api` and, of the command
/// line's module, only `run_with` (the `stallscope` command run in-process).
#[test]
fn the_python_binding_calls_the_api() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/src/lib.rs");
    let src = strip(&std::fs::read_to_string(&path).unwrap());
    assert!(
        src.contains("stallscope::api"),
        "python/src/lib.rs does not use the api"
    );
    let mut rest = src.as_str();
    while let Some(i) = rest.find("stallscope::cli") {
        rest = &rest[i + "stallscope::cli".len()..];
        assert!(
            rest.starts_with("::run_with("),
            "python/src/lib.rs uses stallscope::cli{}: build an api request instead",
            rest.lines().next().unwrap_or_default()
        );
    }
    let v = pipeline_outside_the_api(&[(path.clone(), vec!["python".into()], src.clone())]);
    assert!(v.is_empty(), "{}", v.join("\n"));
}

/// The boundary checks themselves: an import of the api from below, a front door imported
/// from below the api, and a stage run outside the pipeline are found; the front doors' and
/// tests' own uses are not.
#[test]
fn the_boundary_checks_find_what_they_should() {
    let file = |rel: &str, src: &str| {
        let m = module_of(Path::new(rel)).unwrap();
        (PathBuf::from(rel), m, src.to_string())
    };
    let files = vec![
        file("diff/side.rs", "use crate::api::AnalyzeRequest;\n"),
        file("multirank.rs", "fn f() { crate::cli::run(); }\n"),
        file("cli/analyze.rs", "use crate::api::{self, analyze};\n"),
        file("mcp/server.rs", "fn f() { crate::api::analyze(); }\n"),
        file(
            "report/mod.rs",
            "fn f() { let r = Report::new(t, a, d); }\n\
             #[cfg(test)]\nmod tests { fn g() { crate::ingest::load(p, o); } }\n",
        ),
        file("api/pipeline.rs", "fn f() { ingest::load(p, o); }\n"),
    ];
    let v = boundary_violations(&files);
    assert_eq!(v.len(), 2, "{v:#?}");
    assert!(v[0].starts_with("diff/side.rs:1: `diff::side` uses `crate::api::AnalyzeRequest`"));
    assert!(v[1].starts_with("multirank.rs:1: `multirank` uses the front door `crate::cli::run`"));
    let p = pipeline_outside_the_api(&files);
    assert_eq!(p, vec!["report/mod.rs:1: Report::new(".to_string()]);
}

/// The stages below the report: a serialized report field may name their value words
/// (fieldless enums), never their structs.
const BELOW_REPORT: &[&str] = &["model", "ingest", "window", "analysis", "diagnose"];

/// Report fields allowed to serialize a lower stage's struct as it is (`Type.field`, the struct
/// named): none. An entry needs its reason in ARCHITECTURE.md ("Report types are mirrors"),
/// and an entry that no longer holds fails the test.
const UNMIRRORED: &[(&str, &str)] = &[];

/// The `use crate::…` names of a (stripped) file: the name as written → its path from the
/// crate root (`Finding` → `diagnose::Finding`, `analysis` → `analysis`).
fn used_names(src: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for line in src.lines() {
        let Some(rest) = line.trim().strip_prefix("use crate::") else {
            continue;
        };
        let rest = rest.trim_end_matches(';');
        let (base, items) = match rest.find('{') {
            Some(i) => (
                rest[..i].trim_end_matches("::"),
                rest[i + 1..].trim_end_matches('}').split(',').collect(),
            ),
            None => match rest.rfind("::") {
                Some(i) => (&rest[..i], vec![&rest[i + 2..]]),
                None => ("", vec![rest]),
            },
        };
        for item in items {
            let item = item.trim();
            if item.is_empty() || item.contains('{') {
                continue;
            }
            let (path, alias) = match item.split_once(" as ") {
                Some((p, a)) => (p.trim(), a.trim()),
                None => (item, item.rsplit("::").next().unwrap()),
            };
            let full = if path == "self" {
                base.to_string()
            } else if base.is_empty() {
                path.to_string()
            } else {
                format!("{base}::{path}")
            };
            let alias = if path == "self" {
                base.rsplit("::").next().unwrap()
            } else {
                alias
            };
            names.insert(alias.to_string(), full);
        }
    }
    names
}

/// Serialized structs of a (stripped) file: name → its fields as (name, type), the fields
/// under `#[serde(skip)]` left out.
fn serialized_fields(src: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut rest = src;
    while let Some(at) = rest.find("#[derive(") {
        rest = &rest[at..];
        let derive_end = rest.find(")]").unwrap_or(rest.len());
        let serializes = rest[..derive_end].contains("Serialize");
        let Some(open) = rest.find('{') else { break };
        let head = &rest[..open];
        let name = head
            .split_once("struct ")
            .filter(|_| !head[derive_end..].contains(';'))
            .map(|(_, n)| n.split(['<', ' ', '\n']).next().unwrap().to_string());
        // the body, to its matching brace
        let mut depth = 0;
        let mut end = open;
        for (i, c) in rest[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        if let (true, Some(name)) = (serializes, name) {
            let body = &rest[open + 1..end];
            let mut items = Vec::new();
            let (mut d, mut start) = (0i32, 0);
            for (i, c) in body.char_indices() {
                match c {
                    '(' | '[' | '<' | '{' => d += 1,
                    ')' | ']' | '>' | '}' => d -= 1,
                    ',' if d == 0 => {
                        items.push(&body[start..i]);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            items.push(&body[start..]);
            for item in items {
                if item.contains("serde(skip)") {
                    continue;
                }
                let Some(p) = item.find("pub ") else { continue };
                let Some((field, ty)) = item[p + 4..].split_once(':') else {
                    continue;
                };
                out.push((
                    name.clone(),
                    field.trim().to_string(),
                    ty.split_whitespace().collect::<String>(),
                ));
            }
        }
        rest = &rest[end.max(1)..];
    }
    out
}

/// The lower-stage paths a field type names (`Option<crate::model::Warning>` →
/// `model::Warning`), resolved through the file's imports.
fn lower_stage_types(ty: &str, used: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for word in ty.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')) {
        let path = word.strip_prefix("crate::").unwrap_or(word);
        let Some(head) = path.split("::").next().filter(|h| !h.is_empty()) else {
            continue;
        };
        let full = if BELOW_REPORT.contains(&head) {
            path.to_string()
        } else if let Some(base) = used.get(head) {
            path.replacen(head, base, 1)
        } else {
            continue;
        };
        if BELOW_REPORT.contains(&full.split("::").next().unwrap()) && full.contains("::") {
            out.push(full);
        }
    }
    out
}

/// Whether `name` is an enum without data in any variant somewhere in `src/` (a value word,
/// serialized as one string).
fn is_value_word(name: &str, files: &[(PathBuf, ModPath, String)]) -> bool {
    files.iter().any(|(_, _, src)| {
        let src = strip(src);
        src.find(&format!("pub enum {name} {{")).is_some_and(|at| {
            let body = &src[at..];
            let open = body.find('{').unwrap();
            let close = body.find('}').unwrap();
            !body[open + 1..close].contains(['(', '{'])
        })
    })
}

/// Report fields serializing a lower stage's struct: `Type.field: path`.
fn unmirrored_fields(files: &[(PathBuf, ModPath, String)]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (_, _, src) in files
        .iter()
        .filter(|(_, m, _)| m.first().is_some_and(|m| m == "report"))
    {
        let src = strip(src);
        let used = used_names(&src);
        for (ty_name, field, ty) in serialized_fields(&src) {
            for path in lower_stage_types(&ty, &used) {
                let last = path.rsplit("::").next().unwrap();
                if !is_value_word(last, files) {
                    out.push((format!("{ty_name}.{field}"), path));
                }
            }
        }
    }
    out
}

/// "Report types are mirrors": a report field that serializes an analysis, diagnose (or any
/// lower-stage) struct fails, unless it is one of the listed, shrinking exceptions.
#[test]
fn report_types_are_mirrors() {
    let found = unmirrored_fields(&src_files());
    let new: Vec<String> = found
        .iter()
        .filter(|(f, p)| !UNMIRRORED.contains(&(f.as_str(), p.as_str())))
        .map(|(f, p)| format!("{f}: {p}"))
        .collect();
    assert!(
        new.is_empty(),
        "report fields serializing a lower stage's struct (mirror them in report/):\n{}",
        new.join("\n")
    );
    let stale: Vec<String> = UNMIRRORED
        .iter()
        .filter(|(f, p)| !found.iter().any(|(g, q)| g == f && q == p))
        .map(|(f, p)| format!("{f}: {p}"))
        .collect();
    assert!(
        stale.is_empty(),
        "mirrored now: remove from UNMIRRORED:\n{}",
        stale.join("\n")
    );
}

/// The mirror check itself: a struct of a lower stage in a serialized field is found, by its
/// full path or through an import; a value word, a skipped field and a report type are not.
#[test]
fn the_mirror_check_finds_lower_structs() {
    let file = |rel: &str, src: &str| {
        let m = module_of(Path::new(rel)).unwrap();
        (PathBuf::from(rel), m, src.to_string())
    };
    let files = vec![
        file(
            "report/mod.rs",
            "use crate::analysis::gaps::{GapFacts, Other};\n\
             #[derive(Debug, Serialize)]\npub struct Info {\n\
             /// doc\n pub a: Option<crate::diagnose::Finding>,\n pub b: Vec<GapFacts>,\n\
             pub c: crate::model::Kind,\n #[serde(skip)]\n pub d: crate::analysis::X,\n\
             pub e: BTreeMap<String, f64>,\n pub f: Mine,\n}\n\
             #[derive(Debug)]\npub struct NotSerialized {\n pub g: crate::analysis::Y,\n}\n",
        ),
        file(
            "model/mod.rs",
            "pub enum Kind {\n A,\n B,\n}\npub enum Data {\n A(u32),\n}\n",
        ),
    ];
    let found = unmirrored_fields(&files);
    assert_eq!(
        found,
        vec![
            ("Info.a".to_string(), "diagnose::Finding".to_string()),
            ("Info.b".to_string(), "analysis::gaps::GapFacts".to_string()),
        ]
    );
}
