//! report (to be filled by its issue).
