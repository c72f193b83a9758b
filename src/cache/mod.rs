//! cache (to be filled by its issue).
