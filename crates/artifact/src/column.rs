//! Columns of a row type, each declared once: its name, Arrow type and
//! nullability, how rows become an array, and how an array fills rows back.
//!
//! A kind's schema, its writer and its reader are all derived from one list
//! of [`Column`]s, so a column name is typed once and a reader can never
//! disagree with the schema it reads.

use arrow::array::{
    Array, ArrayAccessor, ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, ListArray,
    ListBuilder, StringArray, StringBuilder, UInt32Array, UInt32Builder,
};
use arrow::datatypes::{DataType, Field};
use std::sync::Arc;

use crate::domain::Vocabulary;

/// Turns a slice of rows into one Arrow array.
type BuildFn<R> = Box<dyn Fn(&[R]) -> ArrayRef + Send + Sync>;
/// Fills one field of each row from an Arrow array (same length as the rows).
type FillFn<R> = Box<dyn Fn(&dyn Array, &mut [R]) -> Result<(), String> + Send + Sync>;

/// One column of a row type `R`.
pub struct Column<R> {
    pub(crate) name: &'static str,
    pub(crate) data_type: DataType,
    pub(crate) nullable: bool,
    /// The kind's schema version that introduced the column: readers of
    /// artifacts written before it leave the field at its default.
    pub(crate) added_in: u32,
    pub(crate) build: BuildFn<R>,
    pub(crate) fill: FillFn<R>,
}

/// `list<T>` with nullable items (Arrow's default item field).
pub fn list_of(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", item, true)))
}

/// The value at `i`, or None where the cell is null: the one null helper
/// every reader uses.
pub fn cell<A: ArrayAccessor>(a: A, i: usize) -> Option<A::Item> {
    (!a.is_null(i)).then(|| a.value(i))
}

/// `array` downcast to `T`, or a message naming the type found.
pub fn downcast<T: Array + 'static>(array: &dyn Array) -> Result<&T, String> {
    array.as_any().downcast_ref::<T>().ok_or_else(|| {
        format!(
            "has type {}, not the one the reader expects",
            array.data_type()
        )
    })
}

/// The [`Vocabulary`] value `s` spells, or an error listing the spellings.
pub fn vocab_value<E: Vocabulary>(s: &str) -> Result<E, String> {
    E::parse(s).ok_or_else(|| format!("has value {s:?}, not one of {}", E::spellings()))
}

/// The non-null strings of a `list<utf8>` cell (empty for a null cell).
pub fn list_strings(a: &ListArray, i: usize) -> Result<Vec<String>, String> {
    if a.is_null(i) {
        return Ok(Vec::new());
    }
    let v = a.value(i);
    let s = downcast::<StringArray>(v.as_ref())?;
    Ok(s.iter().flatten().map(str::to_string).collect())
}

/// Builds a `list<utf8>` array from optional lists (None = null cell).
pub fn string_lists<'a, I, L>(lists: I) -> ListArray
where
    I: IntoIterator<Item = Option<L>>,
    L: IntoIterator<Item = &'a str>,
{
    let mut b = ListBuilder::new(StringBuilder::new());
    for l in lists {
        match l {
            Some(l) => {
                for s in l {
                    b.values().append_value(s);
                }
                b.append(true);
            }
            None => b.append(false),
        }
    }
    b.finish()
}

/// Calls `f` on each row with its index, after checking the array has one
/// value per row.
fn try_each<R>(
    rows: &mut [R],
    len: usize,
    mut f: impl FnMut(&mut R, usize) -> Result<(), String>,
) -> Result<(), String> {
    if rows.len() != len {
        return Err(format!("has {len} values for {} rows", rows.len()));
    }
    rows.iter_mut().enumerate().try_for_each(|(i, r)| f(r, i))
}

impl<R: 'static> Column<R> {
    /// A column with hand-written conversions (structs, fixed-size lists).
    pub fn custom(
        name: &'static str,
        data_type: DataType,
        nullable: bool,
        build: impl Fn(&[R]) -> ArrayRef + Send + Sync + 'static,
        fill: impl Fn(&dyn Array, &mut [R]) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        Column {
            name,
            data_type,
            nullable,
            added_in: 1,
            build: Box::new(build),
            fill: Box::new(fill),
        }
    }

    /// A column of one Arrow array type, read cell by cell (a cell may fail).
    fn cells<A: Array + 'static>(
        name: &'static str,
        data_type: DataType,
        nullable: bool,
        build: impl Fn(&[R]) -> ArrayRef + Send + Sync + 'static,
        read: impl Fn(&A, usize, &mut R) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        Self::custom(name, data_type, nullable, build, move |a, rows| {
            let a = downcast::<A>(a)?;
            try_each(rows, a.len(), |r, i| read(a, i, r))
        })
    }

    /// [`cells`](Self::cells) whose cells always read.
    fn scalar<A: Array + 'static>(
        name: &'static str,
        data_type: DataType,
        nullable: bool,
        build: impl Fn(&[R]) -> ArrayRef + Send + Sync + 'static,
        read: impl Fn(&A, usize, &mut R) + Send + Sync + 'static,
    ) -> Self {
        Self::cells::<A>(name, data_type, nullable, build, move |a, i, r| {
            read(a, i, r);
            Ok(())
        })
    }

    /// Marks the column as introduced in schema version `version`.
    pub fn added_in(mut self, version: u32) -> Self {
        self.added_in = version;
        self
    }

    /// The Arrow field of this column.
    pub fn field(&self) -> Field {
        Field::new(self.name, self.data_type.clone(), self.nullable)
    }

    /// The column's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Non-null `utf8`.
    pub fn utf8(name: &'static str, get: fn(&R) -> &str, set: fn(&mut R, String)) -> Self {
        Self::scalar::<StringArray>(
            name,
            DataType::Utf8,
            false,
            move |rows| Arc::new(StringArray::from_iter_values(rows.iter().map(get))),
            move |a, i, r| set(r, a.value(i).to_string()),
        )
    }

    /// Non-null `utf8` holding a [`Vocabulary`] value; another value is
    /// an error naming it.
    pub fn vocab<E: Vocabulary>(name: &'static str, get: fn(&R) -> E, set: fn(&mut R, E)) -> Self {
        Self::cells::<StringArray>(
            name,
            DataType::Utf8,
            false,
            move |rows| {
                Arc::new(StringArray::from_iter_values(
                    rows.iter().map(|r| get(r).as_str()),
                ))
            },
            move |a, i, r| {
                set(r, vocab_value::<E>(a.value(i))?);
                Ok(())
            },
        )
    }

    /// Nullable `utf8`.
    pub fn opt_utf8(
        name: &'static str,
        get: fn(&R) -> Option<&str>,
        set: fn(&mut R, Option<String>),
    ) -> Self {
        Self::scalar::<StringArray>(
            name,
            DataType::Utf8,
            true,
            move |rows| Arc::new(StringArray::from_iter(rows.iter().map(get))),
            move |a, i, r| set(r, cell(a, i).map(str::to_string)),
        )
    }

    /// Non-null `bool`.
    pub fn boolean(name: &'static str, get: fn(&R) -> bool, set: fn(&mut R, bool)) -> Self {
        Self::scalar::<BooleanArray>(
            name,
            DataType::Boolean,
            false,
            move |rows| Arc::new(BooleanArray::from_iter(rows.iter().map(|r| Some(get(r))))),
            move |a, i, r| set(r, a.value(i)),
        )
    }

    /// Nullable `bool`.
    pub fn opt_bool(
        name: &'static str,
        get: fn(&R) -> Option<bool>,
        set: fn(&mut R, Option<bool>),
    ) -> Self {
        Self::scalar::<BooleanArray>(
            name,
            DataType::Boolean,
            true,
            move |rows| Arc::new(BooleanArray::from_iter(rows.iter().map(get))),
            move |a, i, r| set(r, cell(a, i)),
        )
    }

    /// Non-null `int32`.
    pub fn int32(name: &'static str, get: fn(&R) -> i32, set: fn(&mut R, i32)) -> Self {
        Self::scalar::<Int32Array>(
            name,
            DataType::Int32,
            false,
            move |rows| Arc::new(Int32Array::from_iter_values(rows.iter().map(get))),
            move |a, i, r| set(r, a.value(i)),
        )
    }

    /// Nullable `int32`.
    pub fn opt_int32(
        name: &'static str,
        get: fn(&R) -> Option<i32>,
        set: fn(&mut R, Option<i32>),
    ) -> Self {
        Self::scalar::<Int32Array>(
            name,
            DataType::Int32,
            true,
            move |rows| Arc::new(Int32Array::from_iter(rows.iter().map(get))),
            move |a, i, r| set(r, cell(a, i)),
        )
    }

    /// Non-null `int64`.
    pub fn int64(name: &'static str, get: fn(&R) -> i64, set: fn(&mut R, i64)) -> Self {
        Self::scalar::<Int64Array>(
            name,
            DataType::Int64,
            false,
            move |rows| Arc::new(Int64Array::from_iter_values(rows.iter().map(get))),
            move |a, i, r| set(r, a.value(i)),
        )
    }

    /// Nullable `float64`.
    pub fn opt_float64(
        name: &'static str,
        get: fn(&R) -> Option<f64>,
        set: fn(&mut R, Option<f64>),
    ) -> Self {
        Self::scalar::<Float64Array>(
            name,
            DataType::Float64,
            true,
            move |rows| Arc::new(Float64Array::from_iter(rows.iter().map(get))),
            move |a, i, r| set(r, cell(a, i)),
        )
    }

    /// `list<utf8>`; `nullable` says whether a row may have no list at all.
    pub fn utf8_list(
        name: &'static str,
        nullable: bool,
        get: fn(&R) -> Option<Vec<&str>>,
        set: fn(&mut R, Option<Vec<String>>),
    ) -> Self {
        Self::cells::<ListArray>(
            name,
            list_of(DataType::Utf8),
            nullable,
            move |rows| Arc::new(string_lists(rows.iter().map(get))),
            move |a, i, r| {
                let v = if a.is_null(i) {
                    None
                } else {
                    Some(list_strings(a, i)?)
                };
                set(r, v);
                Ok(())
            },
        )
    }

    /// Nullable `list<list<utf8>>`.
    pub fn utf8_list_list(
        name: &'static str,
        get: fn(&R) -> Option<&[Vec<String>]>,
        set: fn(&mut R, Option<Vec<Vec<String>>>),
    ) -> Self {
        Self::cells::<ListArray>(
            name,
            list_of(list_of(DataType::Utf8)),
            true,
            move |rows| {
                let mut b = ListBuilder::new(ListBuilder::new(StringBuilder::new()));
                for r in rows {
                    match get(r) {
                        Some(lists) => {
                            for l in lists {
                                for s in l {
                                    b.values().values().append_value(s);
                                }
                                b.values().append(true);
                            }
                            b.append(true);
                        }
                        None => b.append(false),
                    }
                }
                Arc::new(b.finish())
            },
            move |a, i, r| {
                if a.is_null(i) {
                    set(r, None);
                    return Ok(());
                }
                let inner = a.value(i);
                let inner = downcast::<ListArray>(inner.as_ref())?;
                let v = (0..inner.len())
                    .map(|j| list_strings(inner, j))
                    .collect::<Result<_, _>>()?;
                set(r, Some(v));
                Ok(())
            },
        )
    }

    /// Nullable `list<uint32>`.
    pub fn u32_list(
        name: &'static str,
        get: fn(&R) -> Option<&[u32]>,
        set: fn(&mut R, Option<Vec<u32>>),
    ) -> Self {
        Self::cells::<ListArray>(
            name,
            list_of(DataType::UInt32),
            true,
            move |rows| {
                let mut b = ListBuilder::new(UInt32Builder::new());
                for r in rows {
                    match get(r) {
                        Some(t) => {
                            b.values().append_slice(t);
                            b.append(true);
                        }
                        None => b.append(false),
                    }
                }
                Arc::new(b.finish())
            },
            move |a, i, r| {
                let v = if a.is_null(i) {
                    None
                } else {
                    let v = a.value(i);
                    Some(downcast::<UInt32Array>(v.as_ref())?.values().to_vec())
                };
                set(r, v);
                Ok(())
            },
        )
    }
}

/// A column of `batch` by name, downcast; an error naming the column if it
/// is missing or of another type (for readers of raw batches).
pub fn column<'a, T: Array + 'static>(
    batch: &'a arrow::record_batch::RecordBatch,
    name: &str,
) -> Result<&'a T, crate::ArtifactError> {
    let a = batch
        .column_by_name(name)
        .ok_or_else(|| crate::ArtifactError::Other(format!("artifact has no column `{name}`")))?;
    downcast::<T>(a.as_ref())
        .map_err(|m| crate::ArtifactError::Other(format!("column `{name}` {m}")))
}
