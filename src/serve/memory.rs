//! Giving back the memory a finished simulation freed. glibc keeps what a thread freed in that
//! thread's arena for its next allocation, so after one large run (the 2 GB of a 300,000-agent
//! page) the server would stay that large while idle; `malloc_trim` returns those free pages
//! to the system. Other allocators (musl, macOS, Windows) return large blocks themselves.

/// Return the allocator's free pages to the system, on a blocking thread when called from the
/// runtime (it walks every arena). Called when the last running simulation ends.
pub fn release_freed() {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn_blocking(trim)),
        Err(_) => trim(),
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: `malloc_trim` takes no pointer and changes only glibc's own free lists, under
    // the arenas' locks; it is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}
