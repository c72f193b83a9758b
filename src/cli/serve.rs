//! `prefixsim serve [EXPERIMENT] [--port N] [--bind ADDR] [--open] [--latency FILE]...
//! [--budget N] [--queue N]`: the live page for design reviews (`crate::serve`), on localhost unless
//! `--bind` says otherwise.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use super::{CliResult, Error};
use crate::api::Experiment;
use crate::serve::{self, App, Config};

pub const EXAMPLES: &str = "  prefixsim serve                                  # the default experiment, http://127.0.0.1:8077/
  prefixsim serve experiments/hold_vs_prefix_size.toml --port 8078
  prefixsim calibrate data/claude-code-ttft --out results/cal --force
  prefixsim serve --latency results/cal/latency.toml --port 9000
  prefixsim serve --bind 0.0.0.0 --port 0 --budget 2000000  # reachable from the network (warns)
";

const AFTER_HELP: &str = "\
The page: the experiment's parameters as controls, the comparison table and figures updated
as they change, a sweep over one control streamed as it runs, a shareable URL, and an export
of the settings as an experiment file that `prefixsim run` reproduces. Each request runs its
own simulation; one above --budget simulated requests (agents x turns x replications x
strategies; a sweep counts all its points) is refused with a message (HTTP 422). The budget
is shared: the simulations running at once add up to at most --budget, the others wait in a
queue of --queue requests, beyond which they are refused (HTTP 503, Retry-After). The
timeline draws the first 16 agents' lanes. Requests must name the server's address in Host
(else 421) and come from its own page or from outside a browser (another origin: 403);
connections idle or half-sent for 5 s are closed, at most 128 are open. Ctrl-C stops the
server. docs/serve.md has the details.";

#[derive(clap::Args, Debug)]
#[command(after_help = super::reflow(AFTER_HELP))]
pub struct Args {
    /// The starting experiment (default: the embedded default experiment).
    pub file: Option<PathBuf>,
    /// The port (0: any free port; the address is printed).
    #[arg(long, default_value_t = 8077)]
    pub port: u16,
    /// Listen on ADDR instead of 127.0.0.1. Anything but a loopback address lets other
    /// machines run simulations (the page has no login): a warning says so.
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<IpAddr>,
    /// Open the page in the default browser (xdg-open).
    #[arg(long)]
    pub open: bool,
    /// A calibration file (`prefixsim calibrate --out DIR` writes DIR/latency.toml) the page
    /// offers as the latency model (repeatable).
    #[arg(long, value_name = "FILE")]
    pub latency: Vec<PathBuf>,
    /// Most simulated requests one request may run (a sweep: all its points), and most that
    /// run at once, all requests together.
    #[arg(long, value_name = "N", default_value_t = serve::DEFAULT_BUDGET)]
    pub budget: u64,
    /// Most requests that may wait while the budget is taken by running simulations; beyond
    /// them a request is refused with 503 and Retry-After.
    #[arg(long, value_name = "N", default_value_t = serve::DEFAULT_QUEUE)]
    pub queue: usize,
}

/// Each `--latency` file, absolute, checked by applying it to the experiment.
fn calibrations(files: &[PathBuf], base: &Experiment) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    for f in files {
        let abs = std::path::absolute(f)
            .map_err(|e| Error::usage(anyhow::anyhow!("--latency {}: {e}", f.display())))?;
        let value = toml::Value::String(abs.display().to_string());
        base.clone()
            .set(&format!("latency.from={value}"))
            .map_err(|e| Error::usage(anyhow::anyhow!("--latency {}: {e}", f.display())))?;
        out.push(abs);
    }
    Ok(out)
}

pub fn run(args: Args) -> CliResult {
    let base = match &args.file {
        Some(path) => Experiment::from_file(path)?,
        None => Experiment::default_experiment(),
    };
    let calibrations = calibrations(&args.latency, &base)?;
    let ip = args.bind.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let listener = std::net::TcpListener::bind(SocketAddr::new(ip, args.port))
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| Error::usage(anyhow::anyhow!("listening on {ip}:{}: {e}", args.port)))?;
    let addr = listener.local_addr().map_err(Error::failed)?;
    if !ip.is_loopback() {
        eprintln!(
            "warning: listening on {addr}: anyone who can reach this machine can use the page \
             and run simulations (up to --budget {} simulated requests each); there is no login",
            args.budget
        );
    }
    let workers = crate::api::default_jobs();
    let config = Config { base, calibrations, budget: args.budget, workers, queue: args.queue };
    let url = format!("http://{addr}/");
    outln!("prefixsim serve: {url} (from {}; Ctrl-C stops)", config.base.origin())?;
    let _ = std::io::stdout().flush();
    if args.open {
        open_browser(&url);
    }
    let rt =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(Error::failed)?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        serve::serve(listener, App::new(config)).await
    })
    .map_err(Error::failed)
}

/// Ask the desktop to open `url`; say so when it cannot (the URL is printed anyway).
fn open_browser(url: &str) {
    let opened = std::process::Command::new("xdg-open")
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = opened {
        eprintln!("--open: could not start xdg-open ({e}); open {url} by hand");
    }
}
