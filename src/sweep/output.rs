//! Result files assembled from a complete journal, streaming (one record in memory at a time):
//! `runs.csv`, `summary.csv`, `histograms/latency.hlog`, `hold.csv` (only when some point has a
//! hold answer), then `manifest.json` last. Every file is
//! written to `NAME.tmp` and renamed, so a crash leaves old or new files, never half of one;
//! re-running the assembly from the same journal gives the same bytes.

use std::path::{Path, PathBuf};

use super::journal::{Header, JournalError, Reader};
use super::point::PointRecord;
use crate::results::{self, AtomicFile, HistogramLog, WriteError, HOLD_CSV};

/// Why the outputs could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error("{path}: the journal holds {found} of {expected} points; run the sweep with --resume")]
    Incomplete { path: PathBuf, found: u64, expected: u64 },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OutputError + '_ {
    move |source| OutputError::Io { path: path.to_path_buf(), source }
}

/// Write `text` to `path` atomically, synced before the rename.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), OutputError> {
    let mut f = AtomicFile::create(path)?;
    f.write(text)?;
    Ok(f.commit()?)
}

/// Assemble every output of `dir` from the complete journal at `journal`; `manifest` is the
/// text of manifest.json.
pub fn finalize(dir: &Path, journal: &Path, manifest: &str) -> Result<(), OutputError> {
    let mut reader = Reader::open(journal)?.ok_or_else(|| OutputError::Incomplete {
        path: journal.to_path_buf(),
        found: 0,
        expected: 1,
    })?;
    let header = reader.header.clone();
    remove_manifest(dir)?;
    let mut sink = Sink::create(dir, &header)?;
    let mut found = 0u64;
    while let Some(rec) = reader.next_record()? {
        sink.add(&rec)?;
        found += 1;
    }
    let expected = header.point_seq().len();
    if found != expected {
        return Err(OutputError::Incomplete { path: journal.to_path_buf(), found, expected });
    }
    sink.commit()?;
    write_atomic(&dir.join("manifest.json"), manifest)
}

/// Remove `dir/manifest.json` (if any) before the files it vouches for are rewritten: the
/// manifest is written last, so a directory without one is unfinished (readers refuse it).
pub fn remove_manifest(dir: &Path) -> Result<(), OutputError> {
    let path = dir.join("manifest.json");
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(&path)(e)),
        _ => Ok(()),
    }
}

/// The CSV and histogram writers of one output directory: three files however many points,
/// and hold.csv from the first point with a hold answer.
pub struct Sink {
    runs: AtomicFile,
    summary: AtomicFile,
    hists: HistogramLog,
    hold: Option<AtomicFile>,
    hold_path: PathBuf,
    hold_header: String,
}

impl Sink {
    /// Open the writers (`HistogramLog::create` removes an earlier layout's histogram files).
    pub fn create(dir: &Path, header: &Header) -> Result<Sink, OutputError> {
        let hists = HistogramLog::create(dir)?;
        let keys = &header.axis_keys;
        let mut runs = AtomicFile::create(&dir.join("runs.csv"))?;
        runs.write(&(results::runs_header(keys) + "\n"))?;
        let mut summary = AtomicFile::create(&dir.join("summary.csv"))?;
        summary.write(&(results::summary_header(keys) + "\n"))?;
        let (hold_path, hold_header) = (dir.join(HOLD_CSV), results::hold_header(keys) + "\n");
        Ok(Sink { runs, summary, hists, hold: None, hold_path, hold_header })
    }

    pub fn add(&mut self, rec: &PointRecord) -> Result<(), OutputError> {
        self.runs.write(&rec.runs)?;
        self.summary.write(&rec.summary)?;
        if !rec.hold.is_empty() {
            let hold = match &mut self.hold {
                Some(f) => f,
                None => {
                    let mut f = AtomicFile::create(&self.hold_path)?;
                    f.write(&self.hold_header)?;
                    self.hold.insert(f)
                }
            };
            hold.write(&rec.hold)?;
        }
        Ok(self.hists.write(&rec.hists)?)
    }

    /// Rename every file into place; without a hold answer, an earlier hold.csv goes (it
    /// would vouch for answers these results do not have).
    pub fn commit(self) -> Result<(), OutputError> {
        self.runs.commit()?;
        self.summary.commit()?;
        match self.hold {
            Some(f) => f.commit()?,
            None => match std::fs::remove_file(&self.hold_path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io(&self.hold_path)(e))
                }
                _ => {}
            },
        }
        Ok(self.hists.commit()?)
    }
}
