//! sweep (to be filled by its issue).
