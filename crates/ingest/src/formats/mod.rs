//! One module per input format family.

pub mod beir;
pub mod dpr_corpus;
pub mod qa;
pub mod table;
