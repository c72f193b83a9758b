//! `prefixsim completions SHELL` and `prefixsim man [--out DIR]`: a shell completion script
//! (clap_complete) and man pages (clap_mangen), generated from the same definition that parses
//! the command line, so they never disagree with it.

use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::roff::{roman, Roff};
use clap_mangen::Man;

use super::{CliResult, Error};
use crate::results::write_atomic;

pub const EXAMPLES: &str =
    "  prefixsim completions bash > prefixsim.bash     # then: source prefixsim.bash
  prefixsim completions zsh > _prefixsim          # into a directory on $fpath
  prefixsim completions fish > prefixsim.fish     # into ~/.config/fish/completions/
";

pub const MAN_EXAMPLES: &str =
    "  prefixsim man > prefixsim.1                     # read it with: man ./prefixsim.1
  prefixsim man --out man --force                 # man/prefixsim.1, man/prefixsim-run.1, ...
";

#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Write prefixsim.1 and one page per command (prefixsim-run.1, ...) into DIR (absent or
    /// empty) instead of printing the top-level page.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Replace --out when it holds files (atomically: written beside it, then swapped in);
    /// without it such a directory is refused.
    #[arg(long)]
    pub force: bool,
}

pub fn completions(args: CompletionsArgs) -> CliResult {
    let mut cmd = super::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "prefixsim", &mut script);
    super::stdout(&script)
}

pub fn man(args: ManArgs) -> CliResult {
    let mut cmd = super::Cli::command();
    cmd.build();
    let Some(dir) = &args.out else {
        return super::stdout(&page(&cmd, super::examples(None))?);
    };
    let out = crate::api::outdir::open(dir, args.force, "")?;
    let mut written = vec![write_page(out.path(), &cmd, super::examples(None))?];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        written.push(write_page(out.path(), sub, super::examples(Some(sub.get_name())))?);
    }
    let names: Vec<String> = written.iter().map(|p| out.shown(p).display().to_string()).collect();
    out.commit()?;
    outln!("wrote {}", names.join(", "))?;
    Ok(())
}

/// One command's page: clap_mangen's sections, then the examples unfilled (one per line, as
/// they are typed).
fn page(cmd: &clap::Command, examples: Option<&str>) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    Man::new(cmd.clone()).render(&mut out).map_err(Error::failed)?;
    if let Some(ex) = examples {
        let mut roff = Roff::new();
        roff.control("SH", ["EXAMPLES"]).control("nf", []);
        for line in ex.lines() {
            roff.text([roman(line.trim_start())]);
        }
        roff.control("fi", []);
        roff.to_writer(&mut out).map_err(Error::failed)?;
    }
    Ok(out)
}

fn write_page(dir: &Path, cmd: &clap::Command, examples: Option<&str>) -> Result<PathBuf, Error> {
    let name = cmd.get_display_name().unwrap_or(cmd.get_name());
    let path = dir.join(format!("{name}.1"));
    write_atomic(&path, &page(cmd, examples)?).map_err(Error::failed)?;
    Ok(path)
}
