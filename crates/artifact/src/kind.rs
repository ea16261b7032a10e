//! The [`Kind`] trait: what defines an artifact kind (its name, version,
//! row type and columns). Kinds depend only on this and on `column`; the
//! store and the generic readers and writers (`sink`) depend on kinds, never
//! the other way round.

use arrow::datatypes::Schema;

use crate::column::Column;

/// An artifact kind: its name, schema version, row type and columns.
/// Each kind lives in `kinds/<kind>.rs`.
pub trait Kind: 'static {
    /// The kind's name, recorded in every manifest.
    const NAME: &'static str;
    /// The schema version this build writes (and the newest it reads).
    const VERSION: u32;
    /// One row, as stages see it.
    type Row: Default;
    /// Every column, in schema order.
    fn columns() -> Vec<Column<Self::Row>>;
    /// Puts rows in the kind's canonical order before [`write_all`], so
    /// that the bytes do not depend on computation order. Default: as given.
    fn sort(_rows: &mut [Self::Row]) {}
    /// The Arrow schema derived from [`columns`](Self::columns).
    fn schema() -> Schema {
        Schema::new(
            Self::columns()
                .iter()
                .map(Column::field)
                .collect::<Vec<_>>(),
        )
    }
}

/// A kind known by name at run time (manifest checks, schema docs).
#[derive(Debug, Clone, Copy)]
pub struct KindInfo {
    /// The kind's name ([`Kind::NAME`]).
    pub name: &'static str,
    /// The newest schema version this build writes and reads ([`Kind::VERSION`]).
    pub schema_version: u32,
    /// Builds the kind's Arrow schema ([`Kind::schema`]).
    pub schema: fn() -> Schema,
}

impl KindInfo {
    /// The run-time description of `K`.
    pub const fn of<K: Kind>() -> KindInfo {
        KindInfo {
            name: K::NAME,
            schema_version: K::VERSION,
            schema: K::schema,
        }
    }
}
