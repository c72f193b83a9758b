//! Reading input files at the edge: every file is checked to be a regular file before it is
//! opened (a FIFO would block the open, `/dev/zero` or a socket has no end), a file read whole
//! is refused above its size limit (checked on its length first, then while reading: gzip and
//! `/proc` files do not say their length), and a file read a line at a time has a bound on the
//! length of a line. Also: transparent gzip (`.gz`) and directories of trace files in sorted
//! name order.
//!
//! Knows nothing of any format: the readers in `results`, `config`, `sweep`, `replay` and
//! `calibrate` parse what this hands them. docs/limits.md ("Files read") lists every limit.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek};
use std::path::{Path, PathBuf};

/// Longest line a line-oriented reader accepts: 64 MiB. The longest line of the bundled traces
/// is under 200 KB; a request body of a 1M-token prompt is about 4 MB of JSON.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// Largest whole file (after decompression) a one-object-per-file reader accepts: 512 MiB.
pub const MAX_FILE_BYTES: u64 = 512 << 20;

/// The environment variable that replaces the size limit of every file read whole (in MiB).
pub const MAX_FILE_ENV: &str = "PREFIXSIM_MAX_FILE_MB";

/// A file refused by this module (not a regular file, above its limit, a line too long):
/// the input's fault. It travels inside an `std::io::Error` (`is_refused` finds it).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// An `std::io::Error` that says `msg` and is a refusal (`is_refused`).
pub fn refused(msg: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, Refused(msg.into()))
}

/// Whether `e` is a refusal of this module rather than a failure of the machine.
pub fn is_refused(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Refused>())
}

/// The size limit of a file read whole whose default is `default` bytes: `MAX_FILE_ENV`
/// (MiB) when it is set to a whole number, else the default.
pub fn file_limit(default: u64) -> u64 {
    let set = std::env::var(MAX_FILE_ENV).ok();
    set.and_then(|v| v.trim().parse::<u64>().ok()).map_or(default, |mb| mb.saturating_mul(1 << 20))
}

/// `bytes` in the unit a person reads: `64 MiB`, `3.0 GiB`, `512 bytes`.
pub fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b => format!("{b} bytes"),
    }
}

/// The length of the regular file at `path` (symbolic links followed), checked before it is
/// opened: a directory, a FIFO, a device (`/dev/zero`) or a socket is refused. A missing file
/// is the file system's `NotFound`.
pub fn regular_len(path: &Path) -> std::io::Result<u64> {
    let meta = std::fs::metadata(path)?;
    let t = meta.file_type();
    if t.is_file() {
        return Ok(meta.len());
    }
    let what = if t.is_dir() { "a directory" } else { kind_of_special(&t) };
    Err(refused(format!("is {what}, not a regular file")))
}

#[cfg(unix)]
fn kind_of_special(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

#[cfg(not(unix))]
fn kind_of_special(_: &std::fs::FileType) -> &'static str {
    "a special file"
}

/// Open the regular file at `path` (`regular_len` checks it first, so a FIFO never blocks).
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    regular_len(path)?;
    File::open(path)
}

/// What a file above its limit is told: its size (or `at least`), the limit, `what` the file
/// is, and how to raise the limit.
fn too_large(size: Option<u64>, limit: u64, what: &str) -> std::io::Error {
    let size = size.map_or_else(String::new, |s| format!("{}, ", size_text(s)));
    refused(format!(
        "{size}above the {} limit on {what} (raise it with {MAX_FILE_ENV}=<MiB>; see \
         docs/limits.md)",
        size_text(limit)
    ))
}

/// The whole regular file at `path`, refused above `limit` bytes (`file_limit(default)`):
/// on its length before it is opened, and while it is read. `what` names the kind of file
/// in the refusal (`a result JSON file`).
pub fn read_capped(path: &Path, default: u64, what: &str) -> std::io::Result<Vec<u8>> {
    let limit = file_limit(default);
    let len = regular_len(path)?;
    if len > limit {
        return Err(too_large(Some(len), limit, what));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    File::open(path)?.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(None, limit, what));
    }
    Ok(bytes)
}

/// `read_capped` as UTF-8 text.
pub fn read_capped_text(path: &Path, default: u64, what: &str) -> std::io::Result<String> {
    String::from_utf8(read_capped(path, default, what)?).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        refused(format!("not UTF-8 text (byte 0x{:02x} at offset {at})", e.as_bytes()[at]))
    })
}

/// A reader that fails (a refusal) once a line runs past `max_bytes` without a `\n`: what
/// keeps a streaming reader that has no total limit (a sweep's `runs.csv` is gigabytes) from
/// reading a file of zeros into one line. Reads of the underlying reader must be shorter than
/// `max_bytes` for the bound to be exact (buffers are 64 KiB).
pub struct LineCapped<R> {
    inner: R,
    run: u64,
    max_bytes: u64,
}

impl<R> LineCapped<R> {
    pub fn new(inner: R, max_bytes: usize) -> Self {
        LineCapped { inner, run: 0, max_bytes: max_bytes as u64 }
    }
}

impl<R: Read> Read for LineCapped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let got = &buf[..n];
        // Lines are short: the first and last line breaks are found near the ends.
        let first = got.iter().position(|&b| b == b'\n');
        let run = first.map_or(self.run + n as u64, |i| self.run + i as u64);
        if run > self.max_bytes {
            let max = size_text(self.max_bytes);
            return Err(refused(format!(
                "a line longer than {max} (no file prefixsim reads has one)"
            )));
        }
        self.run = match got.iter().rposition(|&b| b == b'\n') {
            Some(last) => (n - 1 - last) as u64,
            None => run,
        };
        Ok(n)
    }
}

impl<R: Seek> Seek for LineCapped<R> {
    /// Seeks go to the start of a line (a reader reads again from a row it passed).
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.run = 0;
        self.inner.seek(pos)
    }
}

/// Whether `path` names a gzip file (by its `.gz` extension).
pub fn is_gzip(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "gz")
}

/// Open `path` for buffered reading, decompressing it if its name ends in `.gz`.
/// Not a regular file (`regular_len`) is refused before it is opened.
pub fn open(path: &Path) -> std::io::Result<Box<dyn BufRead>> {
    let file = open_regular(path)?;
    if is_gzip(path) {
        let gz = flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, file));
        Ok(Box::new(BufReader::with_capacity(1 << 16, gz)))
    } else {
        Ok(Box::new(BufReader::with_capacity(1 << 16, file)))
    }
}

/// `open`, refused (while reading) past `file_limit(default)` bytes, decompressed: a stream
/// with a bound on its whole (`what` it is, for the refusal).
pub fn open_capped(path: &Path, default: u64, what: &str) -> std::io::Result<Box<dyn BufRead>> {
    let limit = file_limit(default);
    let inner = open(path)?;
    let capped = Capped { inner, left: limit, limit, what: what.to_string() };
    Ok(Box::new(BufReader::with_capacity(1 << 16, capped)))
}

/// A reader that fails once more than `limit` bytes were read through it.
struct Capped<R> {
    inner: R,
    left: u64,
    limit: u64,
    what: String,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.left {
            return Err(too_large(None, self.limit, &self.what));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// The whole of `path`, decompressed if `.gz`; refused above `MAX_FILE_BYTES` (or
/// `MAX_FILE_ENV`) after decompression.
pub fn read_all(path: &Path) -> std::io::Result<Vec<u8>> {
    let limit = file_limit(MAX_FILE_BYTES);
    let what = "a trace or calibration file (decompressed)";
    let len = regular_len(path)?;
    if !is_gzip(path) && len > limit {
        return Err(too_large(Some(len), limit, what));
    }
    let mut bytes = Vec::new();
    open(path)?.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(None, limit, what));
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

    /// A reader that hands out one byte a read: lines split across reads.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some((&b, rest)) = self.0.split_first() else { return Ok(0) };
            buf[0] = b;
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn line_capped_refuses_only_a_line_past_its_bound() {
        let read = |bytes: &[u8], trickle: bool| {
            let mut out = Vec::new();
            let done = if trickle {
                LineCapped::new(Trickle(bytes), 4).read_to_end(&mut out)
            } else {
                LineCapped::new(bytes, 4).read_to_end(&mut out)
            };
            done.map(|_| out)
        };
        for trickle in [false, true] {
            assert_eq!(read(b"aaaa\nbbbb\ncccc", trickle).unwrap(), b"aaaa\nbbbb\ncccc");
            // A long line inside one read longer than the bound is not seen (reads are
            // 64 KiB, bounds megabytes): the middle case only trickled.
            let middle: &[&[u8]] = if trickle { &[b"ab\nbbbbb\nc"] } else { &[] };
            for &bad in [&b"aaaaa\n"[..], b"ab\ncccccc"].iter().chain(middle) {
                let e = read(bad, trickle).unwrap_err();
                assert!(is_refused(&e), "{e}");
                assert!(e.to_string().contains("a line longer than 4 bytes"), "{e}");
            }
        }
    }

    #[test]
    fn only_regular_files_are_opened() {
        let dir = std::env::temp_dir();
        let e = regular_len(&dir).unwrap_err();
        assert!(is_refused(&e) && e.to_string().contains("is a directory"), "{e}");
        if Path::new("/dev/null").exists() {
            let e = open_regular(Path::new("/dev/null")).unwrap_err();
            assert!(e.to_string().contains("is a character device, not a regular file"), "{e}");
        }
        let missing = regular_len(Path::new("/no/such/file")).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
        assert!(!is_refused(&missing));
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
