//! replay (to be filled by its issue).
