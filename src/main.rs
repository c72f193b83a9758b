//! The `prefixsim` binary: everything is in the library (`prefixsim::cli_main`).

fn main() -> std::process::ExitCode {
    prefixsim::cli_main()
}
