//! The stable smoke run of the fuzz targets: seeded mutations of the seed inputs through every
//! target of `prefixsim_fuzz::TARGETS`, for a bounded time in total, split evenly among the
//! targets. Not coverage-guided (that is `cargo fuzz`, nightly); it catches panics and hangs.
//!
//! Usage: smoke [--seconds 60] [--seed N] [--target NAME] [--hang-seconds 20]
//!        smoke --write-seeds DIR    (the seed inputs as DIR/<target>/seed-<n>, for libFuzzer)
//! A failing input is written to fuzz/artifacts/<target>/, the seed is printed first, and the
//! exit code is 1 (0 when every input passed).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prefixsim::rng::{stream, ChaCha8Rng, RngExt};
use prefixsim_fuzz::{seeds, DICTIONARY, TARGETS};

/// Longest input the mutator makes.
const MAX_LEN: usize = 64 * 1024;

struct Options {
    seconds: f64,
    seed: u64,
    target: Option<String>,
    hang_seconds: u64,
    write_seeds: Option<PathBuf>,
}

fn options() -> Options {
    let mut o =
        Options { seconds: 60.0, seed: 1, target: None, hang_seconds: 20, write_seeds: None };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value =
            || it.next().cloned().unwrap_or_else(|| usage(&format!("{a} needs a value")));
        match a.as_str() {
            "--seconds" => o.seconds = value().parse().unwrap_or_else(|_| usage("--seconds N")),
            "--seed" => o.seed = value().parse().unwrap_or_else(|_| usage("--seed N")),
            "--target" => o.target = Some(value()),
            "--hang-seconds" => o.hang_seconds = value().parse().unwrap_or_else(|_| usage("N")),
            "--write-seeds" => o.write_seeds = Some(PathBuf::from(value())),
            _ => usage(&format!("unknown argument `{a}`")),
        }
    }
    o
}

fn usage(msg: &str) -> ! {
    let names: Vec<&str> = TARGETS.iter().map(|t| t.0).collect();
    eprintln!(
        "smoke: {msg}\nusage: smoke [--seconds 60] [--seed N] [--target {}] [--hang-seconds 20]",
        names.join("|")
    );
    std::process::exit(2)
}

/// One mutation of `data` (never longer than `MAX_LEN`).
fn mutate_once(data: &mut Vec<u8>, rng: &mut ChaCha8Rng, pool: &[Vec<u8>]) {
    let len = data.len();
    let at = if len == 0 { 0 } else { rng.random_range(0..len) };
    match rng.random_range(0..9u32) {
        0 if len > 0 => data[at] ^= 1 << rng.random_range(0..8u32),
        1 if len > 0 => {
            data[at] = *b"\0\xff\n\",[]{}=.0123456789-e".get(rng.random_range(0..23)).unwrap_or(&0)
        }
        2 | 3 => {
            let word = DICTIONARY[rng.random_range(0..DICTIONARY.len())].as_bytes();
            data.splice(at..at, word.iter().copied());
        }
        4 if len > 0 => {
            let end = (at + rng.random_range(1..64usize)).min(len);
            data.drain(at..end);
        }
        5 if len > 0 => {
            let end = (at + rng.random_range(1..256usize)).min(len);
            let chunk = data[at..end].to_vec();
            let to = rng.random_range(0..=len);
            data.splice(to..to, chunk);
        }
        6 => replace_number(data, rng),
        7 if !pool.is_empty() => {
            let other = &pool[rng.random_range(0..pool.len())];
            if !other.is_empty() {
                let from = rng.random_range(0..other.len());
                let end = (from + rng.random_range(1..512usize)).min(other.len());
                data.splice(at..at, other[from..end].iter().copied());
            }
        }
        _ if len > 1 => data.truncate(rng.random_range(0..len)),
        _ => data.push(rng.random_range(0..=255u8)),
    }
    data.truncate(MAX_LEN);
}

/// Replace one run of digits with a number from the dictionary.
fn replace_number(data: &mut Vec<u8>, rng: &mut ChaCha8Rng) {
    let digits: Vec<usize> = (0..data.len()).filter(|&i| data[i].is_ascii_digit()).collect();
    if digits.is_empty() {
        return;
    }
    let start = digits[rng.random_range(0..digits.len())];
    let end = (start..data.len()).find(|&i| !data[i].is_ascii_digit()).unwrap_or(data.len());
    let numbers = ["1e308", "-1", "0", "18446744073709551615", "4294967295", "1000000000", "NaN"];
    let n = numbers[rng.random_range(0..numbers.len())].as_bytes();
    data.splice(start..end, n.iter().copied());
}

/// What the watchdog sees: when the current input started (ms since start, 0 = idle) and it.
struct Current {
    started_ms: AtomicU64,
    input: Mutex<(String, Vec<u8>)>,
}

fn artifact(target: &str, data: &[u8], kind: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("artifacts").join(target);
    let _ = std::fs::create_dir_all(&dir);
    let hash = data
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    let path = dir.join(format!("{kind}-{hash:016x}"));
    let _ = std::fs::write(&path, data);
    path
}

/// Kill the process when one input runs longer than `limit`, saving the input.
fn watchdog(current: Arc<Current>, t0: Instant, limit: Duration) {
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(200));
        let started = current.started_ms.load(Ordering::SeqCst);
        let now = t0.elapsed().as_millis() as u64;
        if started > 0 && now.saturating_sub(started) > limit.as_millis() as u64 {
            let (target, data) = current.input.lock().map(|g| g.clone()).unwrap_or_default();
            let path = artifact(&target, &data, "hang");
            eprintln!(
                "smoke: HANG in {target}: one input ran over {limit:?}; saved to {}",
                path.display()
            );
            std::process::exit(1);
        }
    });
}

/// Write every target's seeds as `dir/<target>/seed-<n>`.
fn write_seeds(dir: &std::path::Path) {
    for (name, _) in TARGETS {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).expect("the corpus directory is writable");
        for (i, s) in seeds(name).iter().enumerate() {
            std::fs::write(d.join(format!("seed-{i}")), s).expect("the corpus is writable");
        }
    }
}

fn main() {
    let o = options();
    if let Some(dir) = &o.write_seeds {
        return write_seeds(dir);
    }
    println!("smoke: seed {} ({} s in total)", o.seed, o.seconds);
    std::panic::set_hook(Box::new(|_| {}));
    let targets: Vec<_> =
        TARGETS.iter().filter(|t| o.target.as_deref().is_none_or(|n| n == t.0)).collect();
    if targets.is_empty() {
        usage("no such target");
    }
    let t0 = Instant::now();
    let current =
        Arc::new(Current { started_ms: AtomicU64::new(0), input: Mutex::new(Default::default()) });
    watchdog(current.clone(), t0, Duration::from_secs(o.hang_seconds));
    let per_target = Duration::from_secs_f64(o.seconds / targets.len() as f64);
    let mut failures = 0;
    for (k, (name, target)) in targets.iter().enumerate() {
        let pool = seeds(name);
        let mut rng = stream(o.seed, &[k as u64]);
        let deadline = Instant::now() + per_target;
        let (mut runs, mut failed) = (0u64, 0u64);
        while Instant::now() < deadline && failed < 5 {
            let mut data = if pool.is_empty() {
                Vec::new()
            } else {
                pool[rng.random_range(0..pool.len())].clone()
            };
            // The seeds themselves first, then 1-8 stacked mutations.
            if runs >= pool.len() as u64 {
                for _ in 0..rng.random_range(1..=8u32) {
                    mutate_once(&mut data, &mut rng, &pool);
                }
            }
            if let Ok(mut g) = current.input.lock() {
                *g = (name.to_string(), data.clone());
            }
            current.started_ms.store(t0.elapsed().as_millis().max(1) as u64, Ordering::SeqCst);
            let result = catch_unwind(AssertUnwindSafe(|| target(&data)));
            current.started_ms.store(0, Ordering::SeqCst);
            runs += 1;
            if let Err(p) = result {
                failed += 1;
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                let path = artifact(name, &data, "crash");
                eprintln!(
                    "smoke: PANIC in {name}: {}\n  input saved to {}",
                    msg.unwrap_or_default(),
                    path.display()
                );
            }
        }
        println!("smoke: {name}: {runs} inputs, {failed} failed");
        failures += failed;
    }
    if failures > 0 {
        eprintln!("smoke: {failures} failing inputs (replay one: cargo run --release --no-default-features --bin smoke -- --target NAME after adding it to the seeds, or with cargo fuzz run NAME FILE)");
        std::process::exit(1);
    }
}
