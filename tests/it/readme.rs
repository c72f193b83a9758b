//! Tests: the example outputs of README.md and docs/*.md are what the binary prints.
//!
//! Every ```` ```console ```` block in README.md and in the pages of docs/ is a test, run by
//! `trycmd`: a `$ prefixsim ...` line is the command, the lines under it (stdout and stderr
//! together) are its expected output, and `? N` after the command would expect exit code N
//! instead of 0. Blocks that only show how to invoke things are ```` ```sh ```` (or `text`,
//! `toml`, `json`, ...) and are not run; a fence with no language would be read as a test, so
//! every other block names its language (checked below, on every page).
//!
//! Where the examples run: in a scratch directory under cargo's `CARGO_TARGET_TMPDIR`
//! (`readme/examples`) holding a copy of each page that has a console block, at its path in the
//! repository (`README.md`, `docs/replay.md`, ...), and beside each copy, `<page>.in/` with
//! symlinks to the repository's `experiments/` and `data/`. `trycmd` runs a Markdown file's
//! commands in its `.in/` directory, so the examples read `experiments/...` and `data/...` by
//! relative path as the README tells readers to, and whatever an example writes (`--out
//! results/...`) lands in the scratch directory, never in the repository. An example that reads
//! another top-level directory needs it added to `LINKED`.
//!
//! Elisions: `...` on a line of its own matches any lines, `[..]` any text within a line. Use
//! them only for what varies between machines (a wall-clock time, an absolute path); simulation
//! output is deterministic (same experiment and seed, same bytes), so its numbers are never
//! elided. Progress bars are drawn only on a terminal, so they never reach these outputs.
//!
//! A failure names the scratch copy's path with the page's own line numbers. To regenerate
//! every output block from the current binary (after a change to the model, say):
//!
//! ```sh
//! TRYCMD=overwrite cargo test --release --test it readme
//! ```
//!
//! rewrites the blocks of the scratch copies and copies each back over its page (only when
//! something changed); review the diff with `git diff README.md docs/`. Elisions are kept where
//! `trycmd` can match them.

use std::path::{Path, PathBuf};

use super::common::scratch;

/// The repository's directories the examples read by relative path.
const LINKED: &[&str] = &["experiments", "data"];

#[test]
fn console_blocks_of_readme_and_docs_match_the_binary() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pages = pages(repo);
    let blocks: Vec<(PathBuf, usize)> = pages
        .iter()
        .map(|p| (p.clone(), console_blocks(&std::fs::read_to_string(repo.join(p)).unwrap())))
        .collect();
    let readme = blocks.iter().find(|(p, _)| p == Path::new("README.md")).map_or(0, |b| b.1);
    assert!(readme >= 1, "README.md has no console block; expected what `prefixsim` prints");
    let total: usize = blocks.iter().map(|b| b.1).sum();
    assert!(total >= 4, "README.md and docs/ have {total} console blocks; expected at least 4");

    let dir = scratch("readme", "examples");
    let cases = trycmd::TestCases::new();
    cases.register_bin("prefixsim", Path::new(env!("CARGO_BIN_EXE_prefixsim")));
    let mut copies = Vec::new();
    for (page, _) in blocks.iter().filter(|b| b.1 > 0) {
        let copy = dir.join(page);
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::copy(repo.join(page), &copy).unwrap();
        let cwd = copy.with_extension("in");
        std::fs::create_dir(&cwd).unwrap();
        for sub in LINKED {
            std::os::unix::fs::symlink(repo.join(sub), cwd.join(sub)).unwrap();
        }
        cases.case(&copy);
        copies.push((repo.join(page), copy));
    }
    // In overwrite mode a failure still panics after rewriting the blocks, so copy back first.
    let outcome = std::panic::catch_unwind(|| cases.run());
    if std::env::var_os("TRYCMD").is_some_and(|m| m == "overwrite") {
        for (page, copy) in &copies {
            let rewritten = std::fs::read(copy).unwrap();
            if rewritten != std::fs::read(page).unwrap() {
                std::fs::write(page, rewritten).unwrap();
            }
        }
    }
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn every_other_block_names_its_language() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for page in pages(repo) {
        let text = std::fs::read_to_string(repo.join(&page)).unwrap();
        let bare = bare_fences(&text);
        assert!(
            bare.is_empty(),
            "{}: a fence with no language on line(s) {bare:?} would run as a test; name it (`text`, `sh`, ...)",
            page.display()
        );
    }
}

/// README.md and every docs/*.md, relative to the repository, in name order.
fn pages(repo: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| p.strip_prefix(repo).unwrap().to_path_buf())
        .collect();
    docs.sort();
    std::iter::once(PathBuf::from("README.md")).chain(docs).collect()
}

/// The number of ```` ```console ```` blocks (what `trycmd` runs, besides `trycmd` blocks).
fn console_blocks(markdown: &str) -> usize {
    markdown.lines().filter(|l| l.trim_end() == "```console").count()
}

/// The lines (from 1) of opening fences with no language, as `trycmd` reads a page: a line
/// starting with three backticks opens a block, and the next such line closes it.
fn bare_fences(markdown: &str) -> Vec<usize> {
    let mut open = false;
    let mut bare = Vec::new();
    for (i, line) in markdown.lines().enumerate() {
        if let Some(info) = line.strip_prefix("```") {
            if !open && info.trim_matches('`').trim().is_empty() {
                bare.push(i + 1);
            }
            open = !open;
        }
    }
    bare
}
