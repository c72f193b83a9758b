//! report (to be filled by its issue).

pub mod table;
