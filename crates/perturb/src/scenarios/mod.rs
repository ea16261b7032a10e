//! The cases each study builds, one file per study: the `Builder`'s
//! scenario methods (dispatched by `Builder::build`) and their helpers.

mod imperfect;
mod nomiracl;
mod rgb;
mod stress;

pub(crate) use nomiracl::nomiracl_subsample;
