//! `merge`: combine the journals of the shards of one sweep into the outputs of the whole
//! sweep, byte-identical to a single-machine run. Each point lives in exactly one shard, so a
//! point's histograms are carried over as they are (exact); the merge interleaves records by
//! point index, streaming (one record per shard in memory).
//!
//! Refuses: shards of different experiments, shards of different shard counts, overlapping or
//! missing shards, unfinished shards.

use std::path::{Path, PathBuf};

use super::journal::{self, Header, Reader, JOURNAL_FILE};
use super::output::{self, Sink};
use super::SweepError;

/// What a merge produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeReport {
    /// Shards merged.
    pub shards: u64,
    /// Points of the whole sweep.
    pub points: u64,
}

/// Merge the shard directories `dirs` into `out`.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<MergeReport, SweepError> {
    let mut shards = open_shards(dirs)?;
    check_shards(&shards)?;
    shards.sort_by_key(|(_, h)| h.shard.map_or(0, |s| s.index));
    let first = shards[0].1.clone();
    let header = Header { shard: None, ..first };
    check_not_a_shard(dirs, out)?;
    std::fs::create_dir_all(out)
        .map_err(|e| SweepError::Failed(format!("{}: {e}", out.display())))?;
    // The manifest goes last; an old one must not vouch for the files while they change.
    output::remove_manifest(out).map_err(SweepError::failed)?;
    let mut readers: Vec<Reader> = shards
        .iter()
        .map(|(d, _)| {
            Reader::open(&d.join(JOURNAL_FILE)).map_err(SweepError::failed)?.ok_or_else(|| {
                SweepError::Mismatch(format!("{}: the journal vanished", d.display()))
            })
        })
        .collect::<Result<_, _>>()?;
    let tmp_journal = out.join(format!("{JOURNAL_FILE}.tmp"));
    let written = write_journal(&mut readers, &header, &tmp_journal, out);
    // Whatever failed (a full disk, a shard that changed), no `.tmp` file is left behind.
    let sink = written.inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp_journal);
    })?;
    let final_journal = out.join(JOURNAL_FILE);
    std::fs::rename(&tmp_journal, &final_journal).map_err(|e| {
        let _ = std::fs::remove_file(&tmp_journal);
        SweepError::Failed(format!("{}: {e}", final_journal.display()))
    })?;
    sink.commit().map_err(SweepError::failed)?;
    output::write_atomic(&out.join("manifest.json"), &header.manifest)
        .map_err(SweepError::failed)?;
    Ok(MergeReport { shards: readers.len() as u64, points: header.points })
}

/// The records of `readers` (one per shard, in shard order), interleaved by point into the
/// journal at `tmp` and into the outputs of `out` (uncommitted: the sink is returned).
fn write_journal(
    readers: &mut [Reader],
    header: &Header,
    tmp: &Path,
    out: &Path,
) -> Result<Sink, SweepError> {
    let mut journal = journal::Writer::create(tmp, header).map_err(SweepError::failed)?;
    let mut sink = Sink::create(out, header).map_err(SweepError::failed)?;
    let n = readers.len() as u64;
    for p in 0..header.points {
        let rec = readers[(p % n) as usize]
            .next_record()
            .map_err(SweepError::failed)?
            .ok_or_else(|| SweepError::Failed(format!("point {p} missing while merging")))?;
        journal.append(&rec).map_err(SweepError::failed)?;
        sink.add(&rec).map_err(SweepError::failed)?;
    }
    journal.sync().map_err(SweepError::failed)?;
    Ok(sink)
}

/// Refuse `out` when it is one of the shard directories `dirs` (before `--force` replaces it).
pub fn check_not_a_shard(dirs: &[PathBuf], out: &Path) -> Result<(), SweepError> {
    match dirs.iter().any(|d| same_dir(d, out)) {
        true => Err(SweepError::Mismatch(format!(
            "--out {} is one of the shards; choose a new directory",
            out.display()
        ))),
        false => Ok(()),
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Each directory's journal header, after checking that it is complete.
fn open_shards(dirs: &[PathBuf]) -> Result<Vec<(PathBuf, Header)>, SweepError> {
    if dirs.is_empty() {
        return Err(SweepError::Mismatch("merge needs at least one shard directory".into()));
    }
    dirs.iter()
        .map(|d| {
            let path = d.join(JOURNAL_FILE);
            if !d.is_dir() {
                return Err(SweepError::Mismatch(format!(
                    "{}: not a directory (expected the --out directory of a `sweep --shard`)",
                    d.display()
                )));
            }
            let scan = journal::scan(&path).map_err(|e| match e {
                journal::JournalError::BadHeader { .. } => SweepError::Mismatch(e.to_string()),
                e => SweepError::failed(e),
            })?;
            let scan = scan.ok_or_else(|| {
                SweepError::Mismatch(format!(
                    "{}: no sweep journal here (not a `sweep --out` directory?)",
                    d.display()
                ))
            })?;
            let want = scan.header.point_seq().len();
            if scan.records != want {
                let which = scan
                    .header
                    .shard
                    .map_or(String::new(), |s| format!(" (shard {}/{})", s.index, s.count));
                return Err(SweepError::Mismatch(format!(
                    "{}{which} is unfinished: {} of {want} points; finish it with `prefixsim sweep \
                     ... --resume` first",
                    d.display(),
                    scan.records
                )));
            }
            Ok((d.clone(), scan.header))
        })
        .collect()
}

/// Same experiment, same shard count, every shard exactly once.
fn check_shards(shards: &[(PathBuf, Header)]) -> Result<(), SweepError> {
    let (d0, h0) = &shards[0];
    for (d, h) in &shards[1..] {
        if h.content_hash != h0.content_hash || h.points != h0.points || h.manifest != h0.manifest {
            return Err(SweepError::Mismatch(format!(
                "{} and {} are shards of different experiments (content hash {} vs {})",
                d0.display(),
                d.display(),
                h0.content_hash,
                h.content_hash
            )));
        }
    }
    for (d, h) in &shards[1..] {
        if h.hold != h0.hold {
            let (old, new) = if h.hold { (d0, d) } else { (d, d0) };
            return Err(SweepError::Mismatch(format!(
                "{} was written by an earlier prefixsim than {} (its points have no hold \
                 answers): run that shard again with this version",
                old.display(),
                new.display()
            )));
        }
    }
    let count = h0.shard.map_or(1, |s| s.count);
    let mut seen: Vec<Option<&PathBuf>> = vec![None; count as usize];
    for (d, h) in shards {
        let s = h.shard.unwrap_or(journal::Shard { index: 0, count: 1 });
        if s.count != count {
            return Err(SweepError::Mismatch(format!(
                "{} is shard {}/{} but {} is one of {count} shards: shard counts differ",
                d.display(),
                s.index,
                s.count,
                d0.display()
            )));
        }
        if let Some(other) = seen[s.index as usize].replace(d) {
            return Err(SweepError::Mismatch(format!(
                "{} and {} are the same shard {}/{count} (overlapping shards)",
                other.display(),
                d.display(),
                s.index
            )));
        }
    }
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(i, _)| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(SweepError::Mismatch(format!(
            "missing shards: {} (of {count})",
            missing.join(", ")
        )));
    }
    Ok(())
}
