//! Replays the fuzz inputs without AFL, through the same target functions the fuzzers run
//! (`fuzz/src/targets.rs`, compiled here as a module): every seed under `fuzz/seeds/TARGET/`,
//! every input of the minimized corpus under `fuzz/corpus/TARGET/`, and every minimized crash
//! or hang under `tests/fuzz/crashes/TARGET/` (one file per bug found, named after it; see
//! docs/fuzzing.md). A panic in any of them fails the test and names the file, so a plain
//! `cargo test` catches a reader that breaks again on an input the fuzzer once found.

#[allow(dead_code)]
#[path = "../fuzz/src/targets.rs"]
mod targets;

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files of `dir`, sorted (none when it does not exist).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| p.is_file() && p.file_name().is_some_and(|n| n != "README.md"));
    v.sort();
    v
}

/// Runs `target` on every file of `dir`; returns (files, accepted). Panics name the file.
fn replay(target: &str, dir: &Path) -> (usize, usize) {
    let mut accepted = 0;
    let all = files(dir);
    for f in &all {
        let data = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let ok = std::panic::catch_unwind(|| targets::run(target, &data))
            .unwrap_or_else(|_| panic!("fuzz target {target} panicked on {}", f.display()));
        accepted += usize::from(ok);
    }
    (all.len(), accepted)
}

/// Every seed is an input its reader accepts (the seeds are real, cut-down files: a seed the
/// reader refuses would mean a reader regression or a broken seed), and none panics.
#[test]
fn seeds_are_accepted_without_panic() {
    for target in targets::TARGETS {
        let dir = root().join("fuzz/seeds").join(target);
        let (n, accepted) = replay(target, &dir);
        assert!(
            n >= 3,
            "fuzz/seeds/{target}: {n} seeds, expected at least 3"
        );
        assert_eq!(
            accepted, n,
            "fuzz/seeds/{target}: only {accepted} of {n} seeds accepted"
        );
    }
}

/// The fuzzers' minimized corpora (what they found interesting, `cargo afl cmin`) and every
/// minimized crash: no panic (most of them are refused, which is fine).
#[test]
fn corpus_and_crashes_replay_without_panic() {
    let mut total = 0;
    for target in targets::TARGETS {
        for dir in [
            root().join("fuzz/corpus").join(target),
            root().join("tests/fuzz/crashes").join(target),
        ] {
            total += replay(target, &dir).0;
        }
    }
    eprintln!("{total} fuzz corpus and crash inputs replayed");
}

/// The nsys target's text builds the database it describes: tables named by `@` lines, with
/// the corpus schema's columns, rows bound in order (NULL for empty fields and missing ones),
/// a duplicate primary key left out.
#[test]
fn nsys_database_from_rows() {
    let dir = std::env::temp_dir().join(format!("stallscope-fuzz-db-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("t.sqlite");
    let text = "@StringIds\n1\tkernel_a\n2\t\n1\tagain\n@NoSuchTable\n1\t2\n@TARGET_INFO_GPU\n0\t3\tH100\n";
    targets::nsys_database(text.as_bytes(), &db).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    let names: Vec<(i64, Option<String>)> = c
        .prepare("SELECT id, value FROM StringIds ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    // an empty field is NULL, allowed: the schema's NOT NULL constraints are dropped
    assert_eq!(names, vec![(1, Some("kernel_a".to_string())), (2, None)]);
    let tables: i64 = c
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        tables, 2,
        "StringIds and TARGET_INFO_GPU, not the unknown table"
    );
    let gpu: (i64, String, Option<i64>) = c
        .query_row("SELECT id, name, smCount FROM TARGET_INFO_GPU", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!(gpu, (3, "H100".to_string(), None));
    drop(c);
    std::fs::remove_dir_all(&dir).unwrap();
}
