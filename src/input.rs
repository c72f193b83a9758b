//! Reading input files at the edge: transparent gzip (`.gz`), directories of trace files in
//! sorted name order, and lines with a bound on their length (a `/dev/zero` or a file with no
//! newline must not make a reader allocate gigabytes).
//!
//! Knows nothing of any format: the readers in `replay` and `calibrate` parse what this hands
//! them.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// Longest line a line-oriented reader accepts: 64 MiB. The longest line of the bundled traces
/// is under 200 KB; a request body of a 1M-token prompt is about 4 MB of JSON.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Largest whole file (after decompression) a one-object-per-file reader accepts: 512 MiB.
pub const MAX_FILE_BYTES: u64 = 512 << 20;

/// Whether `path` names a gzip file (by its `.gz` extension).
pub fn is_gzip(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "gz")
}

/// Open `path` for buffered reading, decompressing it if its name ends in `.gz`.
pub fn open(path: &Path) -> std::io::Result<Box<dyn BufRead>> {
    let file = File::open(path)?;
    if path.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory, expected a file",
        ));
    }
    if is_gzip(path) {
        let gz = flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, file));
        Ok(Box::new(BufReader::with_capacity(1 << 16, gz)))
    } else {
        Ok(Box::new(BufReader::with_capacity(1 << 16, file)))
    }
}

/// The whole of `path`, decompressed if `.gz`; refused above `MAX_FILE_BYTES`.
pub fn read_all(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open(path)?.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {} MiB (decompressed)", MAX_FILE_BYTES >> 20),
        ));
    }
    Ok(bytes)
}

/// The first 64 KiB of `path` (decompressed), for telling its format.
pub fn head(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::new();
    open(path)?.take(1 << 16).read_to_end(&mut head)?;
    Ok(head)
}

/// Whether `bytes` hold `key`.
pub fn contains(bytes: &[u8], key: &[u8]) -> bool {
    bytes.windows(key.len()).any(|w| w == key)
}

/// Whether a file name ends in one of `extensions`, alone or followed by `.gz`
/// (`["json"]` matches `a.json` and `a.json.gz`).
pub fn has_extension(path: &Path, extensions: &[&str]) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return false };
    let name = name.strip_suffix(".gz").unwrap_or(name);
    extensions.iter().any(|x| name.len() > x.len() + 1 && name.ends_with(&format!(".{x}")))
}

/// `path` itself if it is a file, else the files directly inside it whose names end in one of
/// `extensions` (optionally `.gz`), in sorted name order. An empty directory is an error.
pub fn files(path: &Path, extensions: &[&str]) -> std::io::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        // Opening reports a missing file with its own error.
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let p = entry?.path();
        if p.is_file() && has_extension(&p, extensions) {
            files.push(p);
        }
    }
    files.sort();
    if files.is_empty() {
        let wanted: Vec<String> = extensions.iter().map(|x| format!(".{x}[.gz]")).collect();
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no {} files in this directory", wanted.join(" or ")),
        ));
    }
    Ok(files)
}

/// A line longer than `MAX_LINE_BYTES`.
#[derive(Debug)]
pub enum LineError {
    Io(std::io::Error),
    TooLong,
}

/// Read one line (through its `\n`, if any) into `buf`, which is cleared first; `Ok(0)` at the
/// end of input. A line longer than `max_bytes` is an error, and nothing more of it is read.
pub fn read_line(
    reader: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    max_bytes: usize,
) -> Result<usize, LineError> {
    buf.clear();
    loop {
        let available = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(LineError::Io(e)),
        };
        if available.is_empty() {
            return Ok(buf.len());
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if buf.len() + take > max_bytes.saturating_add(1) {
            return Err(LineError::TooLong);
        }
        buf.extend_from_slice(&available[..take]);
        reader.consume(take);
        if done {
            return Ok(buf.len());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded_and_complete() {
        let data = b"ab\ncdef\n\nxyz";
        let mut r: &[u8] = data;
        let mut buf = Vec::new();
        let mut lines = Vec::new();
        while read_line(&mut r, &mut buf, 16).unwrap() > 0 {
            lines.push(String::from_utf8(buf.clone()).unwrap());
        }
        assert_eq!(lines, ["ab\n", "cdef\n", "\n", "xyz"]);
        let mut zeros = std::io::repeat(0).take(1 << 20);
        let mut r = BufReader::new(&mut zeros);
        assert!(matches!(read_line(&mut r, &mut buf, 1000), Err(LineError::TooLong)));
        assert!(buf.len() <= 1000 + 1 + (8 << 10), "stopped reading soon after the bound");
    }

    #[test]
    fn extensions_with_and_without_gzip() {
        assert!(has_extension(Path::new("d/a.json"), &["json"]));
        assert!(has_extension(Path::new("d/a.json.gz"), &["json"]));
        assert!(!has_extension(Path::new("d/a.jsonl"), &["json"]));
        assert!(!has_extension(Path::new("d/.json"), &["json"]));
        assert!(has_extension(Path::new("a.jsonl.gz"), &["json", "jsonl"]));
    }
}
