//! Which files the MCP server may read and write.
//!
//! A client names files by path; the server reads only regular files that, once every symlink
//! and `..` is resolved ([`std::fs::canonicalize`]), lie under one of the allowed roots: the
//! folders given with `stallscope mcp --root`, else the client's MCP roots (`roots/list`, when
//! the client offers them), else the server's working directory. A relative path is taken from
//! the first root. The server writes only into its own temporary folder, unless the client
//! names an output file: then its folder must exist under a root, the name must end in `.json`
//! or `.json.gz` (a trace, never a source file), and an existing file of that name must not be
//! a symlink.

use std::path::{Component, Path, PathBuf};

/// The folders a client may reach, canonical.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roots {
    dirs: Vec<PathBuf>,
}

impl Roots {
    /// Canonical forms of `dirs`, without the ones that do not exist (a client may list a
    /// folder it has not created yet). `None` when none is left.
    pub fn new<I: IntoIterator<Item = PathBuf>>(dirs: I) -> Option<Roots> {
        let dirs: Vec<PathBuf> = dirs
            .into_iter()
            .filter_map(|d| std::fs::canonicalize(d).ok())
            .filter(|d| d.is_dir())
            .collect();
        (!dirs.is_empty()).then_some(Roots { dirs })
    }

    /// The canonical folders.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    fn describe(&self) -> String {
        let names: Vec<String> = self.dirs.iter().map(|d| d.display().to_string()).collect();
        names.join(", ")
    }

    fn absolute(&self, path: &str) -> Result<PathBuf, String> {
        if path.trim().is_empty() {
            return Err("no path given".into());
        }
        let p = Path::new(path);
        Ok(if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.dirs[0].join(p)
        })
    }

    fn contains(&self, canonical: &Path) -> bool {
        self.dirs.iter().any(|d| canonical.starts_with(d))
    }

    /// The canonical path of a trace file, Nsight Compute CSV or folder of per-rank traces
    /// the client may read.
    pub fn readable(&self, path: &str) -> Result<PathBuf, String> {
        let abs = self.absolute(path)?;
        let canon = std::fs::canonicalize(&abs).map_err(|e| format!("{path}: {e}"))?;
        if !self.contains(&canon) {
            return Err(format!(
                "{path}: refused: {} is outside the allowed roots ({}); start the server with \
                 `--root DIR` or add the folder to the client's roots",
                canon.display(),
                self.describe()
            ));
        }
        if !canon.is_file() && !canon.is_dir() {
            return Err(format!("{path}: not a regular file"));
        }
        Ok(canon)
    }

    /// Where to write an output the client named: a `.json` or `.json.gz` file in an
    /// existing folder under the roots, not a symlink.
    pub fn writable(&self, path: &str) -> Result<PathBuf, String> {
        let abs = self.absolute(path)?;
        let name = match abs.components().next_back() {
            Some(Component::Normal(n)) => n.to_string_lossy().into_owned(),
            _ => return Err(format!("{path}: not a file name")),
        };
        if !(name.ends_with(".json") || name.ends_with(".json.gz")) {
            return Err(format!(
                "{path}: refused: an output must end in .json or .json.gz"
            ));
        }
        let parent = abs.parent().unwrap_or(Path::new("/"));
        let dir = std::fs::canonicalize(parent).map_err(|e| format!("{path}: folder: {e}"))?;
        if !self.contains(&dir) {
            return Err(format!(
                "{path}: refused: {} is outside the allowed roots ({})",
                dir.display(),
                self.describe()
            ));
        }
        let out = dir.join(&name);
        if out
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(format!("{path}: refused: the output is a symlink"));
        }
        Ok(out)
    }
}

/// Folder paths of `file://` URIs (MCP roots); other schemes are skipped.
pub fn paths_of_uris<'a, I: IntoIterator<Item = &'a str>>(uris: I) -> Vec<PathBuf> {
    uris.into_iter()
        .filter_map(|u| u.strip_prefix("file://"))
        // `file://host/path` is not local; `file:///path` has an empty host
        .filter_map(|rest| rest.strip_prefix("localhost").or(Some(rest)))
        .filter(|p| p.starts_with('/'))
        .filter_map(percent_decode)
        .map(PathBuf::from)
        .collect()
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Tmp(PathBuf);
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// `base/root/{a.json, sub/b.json.gz, link-out -> ../outside.json, up}` and
    /// `base/outside.json`.
    fn layout(tag: &str) -> (Tmp, PathBuf) {
        let base =
            std::env::temp_dir().join(format!("stallscope-paths-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a.json"), b"{}").unwrap();
        std::fs::write(root.join("sub/b.json.gz"), b"").unwrap();
        std::fs::write(base.join("outside.json"), b"{}").unwrap();
        std::os::unix::fs::symlink(base.join("outside.json"), root.join("link-out.json")).unwrap();
        (Tmp(base), root)
    }

    #[test]
    fn reads_only_under_the_roots() {
        let (_t, root) = layout("read");
        let roots = Roots::new([root.clone()]).unwrap();
        let canon = std::fs::canonicalize(&root).unwrap();
        assert_eq!(roots.readable("a.json").unwrap(), canon.join("a.json"));
        assert_eq!(
            roots
                .readable(&root.join("sub/../sub/b.json.gz").to_string_lossy())
                .unwrap(),
            canon.join("sub/b.json.gz")
        );
        // `..` out of the root, a symlink out of the root, an absolute path elsewhere
        for bad in ["../outside.json", "sub/../../outside.json", "link-out.json"] {
            let e = roots.readable(bad).unwrap_err();
            assert!(
                e.contains("refused") && e.contains("outside the allowed roots"),
                "{e}"
            );
        }
        let e = roots.readable("/etc/passwd").unwrap_err();
        assert!(e.contains("refused"), "{e}");
        assert!(roots
            .readable("missing.json")
            .unwrap_err()
            .contains("missing.json"));
        // a folder of per-rank traces is read as the command line reads it
        assert!(roots.readable("sub").unwrap().is_dir());
        assert!(roots.readable("").is_err());
    }

    #[test]
    fn a_sibling_with_the_same_prefix_is_outside() {
        let (t, root) = layout("prefix");
        let twin = t.0.join("root2");
        std::fs::create_dir_all(&twin).unwrap();
        std::fs::write(twin.join("x.json"), b"{}").unwrap();
        let roots = Roots::new([root]).unwrap();
        assert!(roots
            .readable("../root2/x.json")
            .unwrap_err()
            .contains("refused"));
    }

    #[test]
    fn writes_traces_in_existing_folders_under_the_roots() {
        let (_t, root) = layout("write");
        let roots = Roots::new([root.clone()]).unwrap();
        let canon = std::fs::canonicalize(&root).unwrap();
        assert_eq!(
            roots.writable("sub/s.json.gz").unwrap(),
            canon.join("sub/s.json.gz")
        );
        assert!(roots.writable("../s.json").unwrap_err().contains("refused"));
        assert!(roots
            .writable("/tmp/s.json")
            .unwrap_err()
            .contains("refused"));
        assert!(roots.writable("main.rs").unwrap_err().contains(".json"));
        assert!(roots
            .writable("nope/s.json")
            .unwrap_err()
            .contains("folder"));
        assert!(roots
            .writable("link-out.json")
            .unwrap_err()
            .contains("symlink"));
    }

    #[test]
    fn roots_that_do_not_exist_are_dropped() {
        assert_eq!(Roots::new([PathBuf::from("/no/such/folder/at/all")]), None);
    }

    #[test]
    fn file_uris_become_paths() {
        let p = paths_of_uris([
            "file:///home/me/My%20Project",
            "file://localhost/srv/x",
            "https://example.com/",
            "file://otherhost/share",
        ]);
        assert_eq!(
            p,
            vec![
                PathBuf::from("/home/me/My Project"),
                PathBuf::from("/srv/x")
            ]
        );
    }
}
