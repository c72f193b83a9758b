//! Tests: every example in every `--help` runs and succeeds (in a scratch directory that sees
//! the repository's `experiments/` and `data/`, so whatever an example writes lands there),
//! and help text wraps at the terminal's width but never inside an example.

use std::path::Path;
use std::process::Command;

use clap::CommandFactory;

use super::common::{bin, scratch};

/// The top level (`None`) and every subcommand.
fn commands() -> Vec<Option<String>> {
    let cli = prefixsim::cli::Cli::command();
    let subs = cli.get_subcommands().map(|c| Some(c.get_name().to_string()));
    std::iter::once(None).chain(subs).collect()
}

/// `prefixsim [COMMAND] --help` at a terminal `columns` wide.
fn help(command: Option<&str>, columns: usize) -> String {
    let o = bin().args(command).arg("--help").env("COLUMNS", columns.to_string()).output();
    let o = o.unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The lines of the `Examples:` block of a help text, as printed.
fn example_lines(help: &str) -> Vec<&str> {
    let after = help.lines().skip_while(|l| *l != "Examples:").skip(1);
    after.take_while(|l| l.starts_with("  ")).collect()
}

/// The commands of an `Examples:` block: a line ending in `\` continues on the next, a line
/// that is only a comment belongs to the line above.
fn examples(help: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut continued = false;
    for line in example_lines(help) {
        let text = line.trim();
        if text.starts_with('#') {
            continue;
        }
        let words = text.trim_end_matches('\\').trim_end();
        match out.last_mut() {
            Some(last) if continued => last.push_str(&format!(" {words}")),
            _ => out.push(words.to_string()),
        }
        continued = text.ends_with('\\');
    }
    out
}

/// A scratch directory with `experiments/` and `data/` linked in and `prefixsim` on PATH.
fn workdir(name: &str) -> (std::path::PathBuf, String) {
    let dir = scratch("help_examples", name);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for sub in ["experiments", "data"] {
        std::os::unix::fs::symlink(repo.join(sub), dir.join(sub)).unwrap();
    }
    let bin_dir = dir.join(".bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_prefixsim"), bin_dir.join("prefixsim")).unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    (dir, path)
}

/// Run one example through the shell (quotes, globs and pipes as a user types them); a
/// pipeline fails if any part fails. Without `jq` on this machine, the part before `| jq` runs.
fn run_example(dir: &Path, path: &str, example: &str) -> std::process::Output {
    let has_jq = Command::new("jq").arg("--version").output().is_ok_and(|o| o.status.success());
    let line = match example.split_once(" | jq ") {
        Some((before, _)) if !has_jq => before,
        _ => example,
    };
    Command::new("bash")
        .args(["-o", "pipefail", "-c", line])
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap()
}

/// A `serve` example never exits by itself: it passes when the server prints its address and
/// answers the page there with 200; then it is stopped.
fn serve_example(dir: &Path, path: &str, example: &str) {
    use std::io::{BufRead, BufReader, Read, Write};
    let mut child = Command::new("bash")
        .args(["-c", &format!("exec {example}")])
        .current_dir(dir)
        .env("PATH", path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let url = first.strip_prefix("prefixsim serve: http://").and_then(|r| r.split('/').next());
    let Some(addr) = url.map(|a| a.replace("0.0.0.0", "127.0.0.1")) else {
        child.kill().unwrap();
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        panic!("serve: `{example}` printed no address: {first:?}\n{err}");
    };
    let mut conn = std::net::TcpStream::connect(&addr).unwrap();
    let head = format!("GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    conn.write_all(head.as_bytes()).unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        reply.starts_with("HTTP/1.1 200"),
        "serve: `{example}`: {}",
        &reply[..reply.len().min(200)]
    );
}

#[test]
fn every_example_in_every_help_runs() {
    let mut ran = 0;
    for command in commands() {
        let name = command.clone().unwrap_or_else(|| "prefixsim".into());
        let text = help(command.as_deref(), 100);
        let list = examples(&text);
        assert!(!list.is_empty(), "`{name} --help` has no examples:\n{text}");
        let (dir, path) = workdir(&name);
        for ex in &list {
            assert!(ex.starts_with("prefixsim"), "{name}: `{ex}` does not run prefixsim");
            // Writes stay in the scratch directory: no absolute paths, no way up.
            let up = |w: &str| w.starts_with('/') || w.starts_with("../") || w.contains("/../");
            let outside = ex.split_whitespace().any(up);
            assert!(!outside, "{name}: `{ex}` may write outside its directory");
            if ex.starts_with("prefixsim serve") {
                serve_example(&dir, &path, ex);
                ran += 1;
                continue;
            }
            let o = run_example(&dir, &path, ex);
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(0), "{name}: `{ex}` failed:\n{stderr}");
            ran += 1;
        }
    }
    assert!(ran >= 40, "only {ran} examples");
}

#[test]
fn help_wraps_at_the_terminal_width_but_examples_never_do() {
    for command in commands() {
        let text = help(command.as_deref(), 60);
        let examples = example_lines(&text);
        // clap writes the usage line whole, as a command is never broken.
        let prose = text.lines().filter(|l| !examples.contains(l) && !l.starts_with("Usage: "));
        for line in prose {
            assert!(line.chars().count() <= 60, "{command:?}: `{line}` is wider than 60");
        }
        let wide = help(command.as_deref(), 200);
        assert_eq!(example_lines(&wide), examples, "{command:?}: examples depend on the width");
        let expected = prefixsim::cli::examples(command.as_deref()).unwrap();
        assert_eq!(examples, expected.lines().collect::<Vec<_>>(), "{command:?}");
    }
    // Prose is one paragraph per line for clap to wrap, not hard-wrapped at 95 columns.
    let sweep = help(Some("sweep"), 200);
    assert!(
        sweep.contains("(the first varies slowest). Every point runs every strategy"),
        "{sweep}"
    );
}

#[test]
fn examples_block_parsing_joins_continued_lines() {
    let help = "Usage: x\n\nExamples:\n  prefixsim a \\\n      --b c\n  prefixsim d   # note\n\
                \x20                # more note\n\nAfter.\n";
    assert_eq!(examples(help), ["prefixsim a --b c", "prefixsim d   # note"]);
}
