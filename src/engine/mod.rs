//! engine (to be filled by its issue).
