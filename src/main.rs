//! The `prefixsim` binary: everything is in the library (`prefixsim::cli_main`), but the
//! allocator. jemalloc's background thread gives the pages a finished run freed back to the
//! system within seconds, so `serve` returns near its baseline after a large page; glibc's
//! allocator keeps them in each thread's arena.

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    #[cfg(not(target_env = "msvc"))]
    // Without the thread, freed pages go back only when the process allocates again.
    let _ = tikv_jemalloc_ctl::background_thread::write(true);
    prefixsim::cli_main()
}
