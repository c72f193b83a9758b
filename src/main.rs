//! The `prefixsim` binary: everything is in the library; see `prefixsim::cli`.

fn main() -> std::process::ExitCode {
    prefixsim::cli::main()
}
