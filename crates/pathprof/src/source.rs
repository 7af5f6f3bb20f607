//! A path as the source lines it runs, and the text of those lines when the files can be found (as
//! `llvm-cov show` prints covered code).
//!
//! A block's line is the `file:line` DWARF gives for its first instruction (`pathprof_wasm::debuginfo`);
//! a path runs the lines of its blocks in order. Files are looked for as DWARF names them, then under
//! the source root given by the user, with the leading directories of the name dropped one by one
//! (a build directory on another machine), and without a URL scheme (`wasisdk://…`).

use pathprof_core::profile::{FunctionProfile, PathCount};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One source line a path runs: its file and line number as DWARF gives them, and the blocks of the
/// path (consecutive ones) that start on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceStep {
    pub file: String,
    pub line: Option<u64>,
    pub blocks: Vec<u32>,
}

/// The source lines `path` of `f` runs, in order, consecutive blocks on one line merged; empty when
/// no block has a line.
pub fn path_steps(f: &FunctionProfile, path: &PathCount) -> Vec<SourceStep> {
    let mut steps: Vec<SourceStep> = Vec::new();
    for &b in &path.blocks {
        let Some(line) = f.blocks.get(b as usize).and_then(|info| info.line.as_deref()) else {
            continue;
        };
        let (file, number) = split_line(line);
        match steps.last_mut() {
            Some(last) if last.file == file && last.line == number => last.blocks.push(b),
            _ => steps.push(SourceStep { file: file.to_string(), line: number, blocks: vec![b] }),
        }
    }
    steps
}

/// `file:line` split into the file and the line number (`None` when there is no number).
pub fn split_line(line: &str) -> (&str, Option<u64>) {
    match line.rsplit_once(':').and_then(|(file, n)| Some((file, n.parse::<u64>().ok()?))) {
        Some((file, n)) => (file, Some(n)),
        None => (line, None),
    }
}

/// Source files found and read, by the name DWARF gives them.
#[derive(Debug, Default)]
pub struct SourceFiles {
    root: Option<PathBuf>,
    files: HashMap<String, Option<(PathBuf, Vec<String>)>>,
}

impl SourceFiles {
    /// Files are looked for as named, then under `root` when given.
    pub fn new(root: Option<&Path>) -> SourceFiles {
        SourceFiles { root: root.map(Path::to_path_buf), files: HashMap::new() }
    }

    /// The text of line `line` (from 1) of the file DWARF names `file`, when the file is found.
    pub fn line(&mut self, file: &str, line: u64) -> Option<&str> {
        let (_, lines) = self.file(file)?;
        let index = usize::try_from(line.checked_sub(1)?).ok()?;
        lines.get(index).map(String::as_str)
    }

    /// Where the file DWARF names `file` was found, and its lines; `None` when it was not.
    pub fn file(&mut self, file: &str) -> Option<&(PathBuf, Vec<String>)> {
        if !self.files.contains_key(file) {
            let found = candidates(file, self.root.as_deref()).into_iter().find_map(|path| {
                let bytes = std::fs::read(&path).ok()?;
                let text = String::from_utf8_lossy(&bytes);
                Some((path, text.lines().map(str::to_string).collect()))
            });
            self.files.insert(file.to_string(), found);
        }
        self.files.get(file)?.as_ref()
    }
}

/// The places to look for the file DWARF names `name`, in order: the name itself (without a URL
/// scheme), then under `root` the name and each of its tails (its leading directories dropped).
fn candidates(name: &str, root: Option<&Path>) -> Vec<PathBuf> {
    let plain = name.split_once("://").map_or(name, |(_, rest)| rest);
    let mut out = vec![PathBuf::from(plain)];
    if let Some(root) = root {
        let parts: Vec<&str> = plain.split(['/', '\\']).filter(|p| !p.is_empty() && *p != ".").collect();
        for start in 0..parts.len() {
            out.push(parts[start..].iter().fold(root.to_path_buf(), |dir, part| dir.join(part)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_found_under_the_root_by_their_tails() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/lib")).unwrap();
        std::fs::write(dir.path().join("src/lib/a.c"), "int a;\nint b;\n").unwrap();
        let mut files = SourceFiles::new(Some(dir.path()));
        assert_eq!(files.line("/build/elsewhere/src/lib/a.c", 2), Some("int b;"));
        assert_eq!(files.line("wasisdk://v25/build/src/lib/a.c", 1), Some("int a;"));
        assert_eq!(files.line("src/lib/a.c", 3), None);
        assert_eq!(files.line("src/lib/a.c", 0), None);
        assert_eq!(files.line("/nowhere/b.c", 1), None);
        let mut rootless = SourceFiles::new(None);
        assert_eq!(rootless.line("/build/elsewhere/src/lib/a.c", 1), None);
        let absolute = dir.path().join("src/lib/a.c").display().to_string();
        assert_eq!(rootless.line(&absolute, 1), Some("int a;"));
    }

    #[test]
    fn lines_split_at_the_last_colon() {
        assert_eq!(split_line("C:/x/a.c:12"), ("C:/x/a.c", Some(12)));
        assert_eq!(split_line("a.c"), ("a.c", None));
        assert_eq!(split_line("a.c:x"), ("a.c:x", None));
    }
}
