//! Tests: README.md's example outputs are what the binary prints (issue 30, item 7).
//!
//! Every ```` ```console ```` block in README.md is a test, run by `trycmd`: a `$ prefixsim ...`
//! line is the command, the lines under it (stdout and stderr together) are its expected output,
//! and `? N` after the command would expect exit code N instead of 0. Blocks that only show how
//! to invoke things are ```` ```sh ```` (or `bash`, `toml`, ...) and are not run; a fence with
//! no language would be read as a test, so every other block names its language.
//!
//! Where the examples run: in a scratch directory under cargo's `CARGO_TARGET_TMPDIR`
//! (`readme/examples`) holding a copy of README.md and, beside it, `README.in/` with symlinks to
//! the repository's `experiments/` and `data/`. `trycmd` runs a Markdown file's commands in its
//! `.in/` directory, so the examples read `experiments/...` and `data/...` by relative path as
//! the README tells readers to, and whatever an example writes (`--out results/...`) lands in
//! the scratch directory, never in the repository. An example that reads another top-level
//! directory needs it added to `LINKED`.
//!
//! Elisions: `...` on a line of its own matches any lines, `[..]` any text within a line. Use
//! them only for what varies between machines (a wall-clock time, an absolute path); simulation
//! output is deterministic (same experiment and seed, same bytes), so its numbers are never
//! elided. Progress bars are drawn only on a terminal, so they never reach these outputs.
//!
//! A failure names the scratch copy's path with README.md's own line numbers. To regenerate
//! every output block from the current binary (after a change to the model, say):
//!
//! ```sh
//! TRYCMD=overwrite cargo test --release --test it readme
//! ```
//!
//! rewrites the blocks of the scratch copy and copies it back over README.md (only when
//! something changed); review the diff with `git diff README.md`. Elisions are kept where
//! `trycmd` can match them.

use std::path::Path;

use super::common::scratch;

/// The repository's directories the examples read by relative path.
const LINKED: &[&str] = &["experiments", "data"];

#[test]
fn readme_console_blocks_match_the_binary() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = repo.join("README.md");
    let dir = scratch("readme", "examples");
    let copy = dir.join("README.md");
    std::fs::copy(&readme, &copy).unwrap();
    let cwd = dir.join("README.in");
    std::fs::create_dir(&cwd).unwrap();
    for sub in LINKED {
        std::os::unix::fs::symlink(repo.join(sub), cwd.join(sub)).unwrap();
    }

    let blocks = console_blocks(&std::fs::read_to_string(&readme).unwrap());
    assert!(blocks >= 3, "README.md has {blocks} console blocks; expected its 3 example outputs");

    let cases = trycmd::TestCases::new();
    cases.register_bin("prefixsim", Path::new(env!("CARGO_BIN_EXE_prefixsim"))).case(&copy);
    // In overwrite mode a failure still panics after rewriting the blocks, so copy back first.
    let outcome = std::panic::catch_unwind(|| cases.run());
    if std::env::var_os("TRYCMD").is_some_and(|m| m == "overwrite") {
        let rewritten = std::fs::read(&copy).unwrap();
        if rewritten != std::fs::read(&readme).unwrap() {
            std::fs::write(&readme, rewritten).unwrap();
        }
    }
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// The number of ```` ```console ```` blocks (what `trycmd` runs, besides `trycmd` blocks).
fn console_blocks(markdown: &str) -> usize {
    markdown.lines().filter(|l| l.trim_end() == "```console").count()
}
