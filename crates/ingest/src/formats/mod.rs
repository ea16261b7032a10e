//! One module per input format family.

pub mod beir;
pub mod qa;
pub mod table;
