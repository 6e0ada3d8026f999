//! Per-rank summaries that merge (`stallscope summarize`, `stallscope merge`, `analyze` on a
//! folder of summaries): the merged report is byte for byte the report `analyze DIR` gives on
//! the traces (JSON and the terminal table), merging in any tree gives the same summary and
//! the same report, and a rank file that cannot be read is listed as skipped the same way.
//!
//! The eight DLRM ranks come from the corpus (`common::corpus_file`: skipped loudly without
//! it, failing with `STALLSCOPE_REQUIRE_CORPUS=1`); the other rank sets are built here from
//! the samples (symbolic links and a truncated copy).

mod common;

use common::{stallscope, DLRM, DLRM_FILES};

use std::path::{Path, PathBuf};

/// A fresh, empty temporary folder for one test.
fn temp_folder(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stallscope-summaries-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs the command, asserts the exit code, returns standard output.
fn run(args: &[&str], code: i32) -> Vec<u8> {
    let out = stallscope(args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `summarize` of every trace file of `dir` (as `analyze DIR` lists them) into `out`;
/// returns the summaries in the folder's order. `unreadable` files must exit 2.
fn summarize_all(dir: &Path, out: &Path, unreadable: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
        .iter()
        .map(|n| {
            let trace = dir.join(n);
            let s = out.join(format!("{n}.summary.json"));
            let code = if unreadable.contains(&n.as_str()) {
                2
            } else {
                0
            };
            run(
                &[
                    "summarize",
                    trace.to_str().unwrap(),
                    "-q",
                    "-o",
                    s.to_str().unwrap(),
                ],
                code,
            );
            s.to_string_lossy().into_owned()
        })
        .collect()
}

fn merge(summaries: &[String], extra: &[&str]) -> Vec<u8> {
    let mut args = vec!["merge"];
    args.extend(summaries.iter().map(String::as_str));
    args.extend(extra);
    run(&args, 0)
}

/// `merge --summary` of these into `out`.
fn merge_to(summaries: &[String], out: &Path) -> String {
    let o = out.to_str().unwrap();
    merge(summaries, &["--summary", "-o", o]);
    o.to_string()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The eight DLRM ranks: `merge` gives byte for byte the JSON and the table of `analyze DIR`;
/// merges in a tree give the same summary and report; `analyze` on the folder of summaries
/// gives the same report but for the folder named.
#[test]
fn dlrm_merge_is_analyze_dir() {
    let mut targets = Vec::new();
    for f in DLRM_FILES {
        let Some(t) = common::corpus_file(&format!("{DLRM}{f}")) else {
            return;
        };
        targets.push(t);
    }
    let dir = temp_folder("dlrm");
    let sums = temp_folder("dlrm-sums");
    for t in &targets {
        std::os::unix::fs::symlink(t, dir.join(t.file_name().unwrap())).unwrap();
    }
    let d = dir.to_str().unwrap();
    let want = run(&["analyze", d, "-f", "json", "-j", "2"], 0);
    let parts = summarize_all(&dir, &sums, &[]);
    assert_eq!(
        text(&merge(&parts, &["-f", "json", "-j", "2"])),
        text(&want)
    );
    // the terminal table too (same renderer, same report)
    assert_eq!(
        text(&merge(&parts, &["-j", "2", "--color", "never"])),
        text(&run(&["analyze", d, "-j", "2", "--color", "never"], 0))
    );
    // a small summary: the facts and one report, no timeline (the trace is several MB)
    let size = std::fs::metadata(&parts[0]).unwrap().len();
    assert!(size < 1 << 20, "summary of {size} bytes");

    // associativity: ((0..3) + (3..8)) and (0 + (1..8)) and ((0..2) + (2..5)) + (5..8)
    let tree = temp_folder("dlrm-tree");
    let a = merge_to(&parts[..3], &tree.join("a.summary.json"));
    let b = merge_to(&parts[3..], &tree.join("b.summary.json"));
    let ab = merge_to(&[a, b], &tree.join("ab.summary.json"));
    let c = merge_to(&parts[1..], &tree.join("c.summary.json"));
    let first_c = merge_to(&[parts[0].clone(), c], &tree.join("0c.summary.json"));
    let x = merge_to(&parts[..2], &tree.join("x.summary.json"));
    let y = merge_to(&parts[2..5], &tree.join("y.summary.json"));
    let z = merge_to(&parts[5..], &tree.join("z.summary.json"));
    let xy = merge_to(&[x, y], &tree.join("xy.summary.json"));
    let xy_z = merge_to(&[z, xy], &tree.join("xyz.summary.json"));
    let all = merge_to(&parts, &tree.join("all.summary.json"));
    let read = |p: &str| std::fs::read_to_string(p).unwrap();
    assert_eq!(read(&ab), read(&all));
    assert_eq!(read(&first_c), read(&all));
    assert_eq!(read(&xy_z), read(&all));
    for merged in [&ab, &first_c, &xy_z] {
        let got = merge(std::slice::from_ref(merged), &["-f", "json", "-j", "2"]);
        assert_eq!(text(&got), text(&want));
    }
    // a merged summary keeps one report: much smaller than the eight
    let parts_size: u64 = parts
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(std::fs::metadata(&all).unwrap().len() * 3 < parts_size);

    // analyze on the folder of summaries: the same report, its folder named
    let s = sums.to_str().unwrap();
    let mut got: serde_json::Value =
        serde_json::from_slice(&run(&["analyze", s, "-f", "json", "-j", "2"], 0)).unwrap();
    let want: serde_json::Value = serde_json::from_slice(&want).unwrap();
    assert_eq!(got["ranks"]["folder"], s);
    got["ranks"]["folder"] = want["ranks"]["folder"].clone();
    assert_eq!(got, want);
    for p in [dir, sums, tree] {
        let _ = std::fs::remove_dir_all(p);
    }
}

/// A rank set built here: ranks from `distributedInfo`-less names (`rank1`, `worker5`), one
/// numbered by its place in the folder, one truncated file. The merged report equals
/// `analyze DIR`'s, the truncated file listed as skipped with the same error; `--rank`
/// picks the same report; a folder mixing traces and summaries is refused.
#[test]
fn built_rank_set_with_a_skipped_file() {
    let dir = temp_folder("built");
    let sums = temp_folder("built-sums");
    let s = |n: &str| common::sample(n);
    std::os::unix::fs::symlink(s("h100_bert_small.json.gz"), dir.join("a.json.gz")).unwrap();
    std::os::unix::fs::symlink(s("h100_kineto_2026_format.json"), dir.join("rank1.json")).unwrap();
    std::os::unix::fs::symlink(s("mi300x_bert_small.json.gz"), dir.join("worker5.json.gz"))
        .unwrap();
    let full = std::fs::read(s("h100_kineto_2026_format.json")).unwrap();
    std::fs::write(dir.join("rank3.json"), &full[..full.len() / 2]).unwrap();
    let d = dir.to_str().unwrap();
    let want = run(&["analyze", d, "-f", "json", "-j", "2"], 0);
    let parts = summarize_all(&dir, &sums, &["rank3.json"]);
    let got = merge(&parts, &["-f", "json", "-j", "2"]);
    assert_eq!(text(&got), text(&want));
    let v: serde_json::Value = serde_json::from_slice(&got).unwrap();
    let skipped = v["ranks"]["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0]["path"], dir.join("rank3.json").to_str().unwrap());
    // the file numbered by its place: first of four
    let rows = v["ranks"]["ranks"].as_array().unwrap();
    let order = rows.iter().find(|r| r["rank_source"] == "order").unwrap();
    assert_eq!(order["rank"], 0);
    // in reverse order, and with --rank
    let mut rev = parts.clone();
    rev.reverse();
    assert_eq!(text(&merge(&rev, &["-f", "json", "-j", "2"])), text(&want));
    assert_eq!(
        text(&merge(&rev, &["-f", "json", "-j", "2", "--rank", "5"])),
        text(&run(
            &["analyze", d, "-f", "json", "-j", "2", "--rank", "5"],
            0
        ))
    );
    // a summary that is not one: exit 2 naming the file
    let bad = sums.join("bad.summary.json");
    std::fs::write(&bad, b"{\"x\": 1}").unwrap();
    let out = stallscope(&["merge", parts[0].as_str(), bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("bad.summary.json"));
    // traces and summaries in one folder
    std::fs::copy(&parts[0], dir.join("x.summary.json")).unwrap();
    let out = stallscope(&["analyze", d]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("both traces and *.summary.json"));
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_dir_all(sums);
}

/// Every shipped sample as a one-rank folder: the report read back from its summary (every
/// section the sample has: steps, kernels, operators, phases, efficiency, memory, trust) is
/// the report `analyze DIR` writes, byte for byte.
#[test]
fn every_sample_reads_back_exactly() {
    let samples = common::sample("");
    let mut names: Vec<String> = std::fs::read_dir(&samples)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") || n.ends_with(".json.gz"))
        .collect();
    names.sort();
    assert!(names.len() >= 8, "{names:?}");
    for n in names {
        let dir = temp_folder(&format!("one-{n}"));
        std::os::unix::fs::symlink(samples.join(&n), dir.join(&n)).unwrap();
        let sums = temp_folder(&format!("one-sums-{n}"));
        let parts = summarize_all(&dir, &sums, &[]);
        let want = run(&["analyze", dir.to_str().unwrap(), "-f", "json"], 0);
        assert_eq!(text(&merge(&parts, &["-f", "json"])), text(&want), "{n}");
        let _ = std::fs::remove_dir_all(dir);
        let _ = std::fs::remove_dir_all(sums);
    }
}
