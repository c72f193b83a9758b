//! Helpers every test module shares: the binary, a fresh scratch directory, copying a
//! directory, waiting on a sweep's journal.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The `prefixsim` binary of this build.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_prefixsim"))
}

/// An empty directory `area/name` under cargo's scratch directory for integration tests.
pub fn scratch(area: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(area).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A copy of the directory `from` at `to` (whatever was at `to` removed first).
pub fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// Wait until `journal` holds its header and at least `n` point records.
pub fn wait_for_records(journal: &Path, n: usize) {
    let start = Instant::now();
    loop {
        let lines = std::fs::read(journal).map(|b| b.iter().filter(|&&c| c == b'\n').count());
        if lines.unwrap_or(0) > n {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "the sweep never started");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A sweep whose values pass one at a time but not together: with a 150,000-token prefix, a
/// 60,000-token task puts the first request past claude-haiku-4.5's 200k window (point 3).
pub const REFUSED_TOGETHER: &str = r#"name = "combo"
seed = 1
replications = 1
model = "claude-haiku-4.5"
strategies = ["eager"]
[workload]
kind = "subagent"
agents = 2
subagent_tokens = 8500
brief_tokens = 0
turns = "const(1)"
[sweep]
"workload.subagent_tokens" = [8500, 150000]
"workload.task_tokens" = [100, 60000]
"#;
