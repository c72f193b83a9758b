//! plot (to be filled by its issue).
