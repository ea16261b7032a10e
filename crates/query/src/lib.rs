//! `ragprobe query`: SQL over artifacts, on polars (lazy Parquet scans,
//! the streaming engine, polars-sql).
//!
//! **Table names.** Each name a query reads is bound, in this order:
//! 1. by `--table name=SPEC` ([`Binding`]): SPEC is a Parquet file path, or
//!    an artifact id or unique id prefix in the store;
//! 2. a kind name (`scores`, `cases`, `questions`, `metrics`, …) means that
//!    kind's artifacts in the store, chosen by the [`Scope`]: the latest one
//!    (default: the object of that kind written last, by file time; ties by
//!    id), every one (`--all`), or those a pipeline's steps produced
//!    (`--pipeline`); several artifacts of a kind are one table, their rows
//!    concatenated (columns an older schema lacks read as null);
//! 3. a quoted id or id prefix (`FROM '3f2a…'`) means that artifact.
//!
//! Names a query defines itself (`WITH x AS (…)`) are left to SQL. Only one
//! read-only `SELECT` statement runs. Every table reference is resolved
//! after parsing, by walking the syntax tree: table functions
//! (`read_parquet(…)` and any other, however named, quoted or qualified) and
//! other table expressions are refused, so a query reads only the tables
//! bound here. Every store artifact's hash is verified before it is
//! read.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use arrow::record_batch::RecordBatchReader;
use polars::prelude::*;
use polars::sql::SQLContext;
use ragprobe_artifact::{ArtifactError, Recipe, Store, Written};

mod check;
mod output;
mod position;
use check::*;
pub use output::*;
use position::*;

/// What can go wrong running a query.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The SQL does not parse or is not a single SELECT; `at` is the
    /// position (line, column) when known.
    #[error("{}{message}", at_prefix(*at))]
    Sql {
        /// What is wrong.
        message: String,
        /// 1-based line and column in the query.
        at: Option<(usize, usize)>,
    },
    /// A table name is bound to nothing.
    #[error("{}unknown table `{name}`: {hint}", at_prefix(*at))]
    UnknownTable {
        /// The name as written.
        name: String,
        /// Where it is in the query.
        at: Option<(usize, usize)>,
        /// What names are available.
        hint: String,
    },
    /// A `--table` binding is malformed.
    #[error("--table {0}: expected NAME=ID, NAME=PREFIX or NAME=FILE.parquet")]
    BadBinding(String),
    /// Running the query failed (a type error, a missing column, …).
    #[error("{}{message}", at_prefix(*at))]
    Run {
        /// polars' message, trimmed to its first paragraph.
        message: String,
        /// Where the column or name it names is in the query, when found.
        at: Option<(usize, usize)>,
    },
    /// The result cannot be written in the asked format.
    #[error("{0}")]
    Output(String),
    /// A file could not be written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        message: String,
    },
    /// The store failed.
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
}

fn at_prefix(at: Option<(usize, usize)>) -> String {
    match at {
        Some((l, c)) => format!("query line {l}, column {c}: "),
        None => String::new(),
    }
}

/// Query result.
pub type Result<T> = std::result::Result<T, QueryError>;

/// Which artifacts a kind name means.
#[derive(Debug, Clone, Default)]
pub enum Scope {
    /// The artifact of that kind written last.
    #[default]
    Latest,
    /// Every artifact of that kind in the store.
    All,
    /// Those among these ids (a pipeline's outputs).
    Only(BTreeSet<String>),
}

/// A `--table NAME=SPEC` binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The table name used in the query.
    pub name: String,
    /// A Parquet file, or an id or id prefix in the store.
    pub spec: String,
}

impl std::str::FromStr for Binding {
    type Err = QueryError;
    fn from_str(s: &str) -> Result<Binding> {
        match s.split_once('=') {
            Some((n, v)) if !n.trim().is_empty() && !v.trim().is_empty() => Ok(Binding {
                name: n.trim().to_string(),
                spec: v.trim().to_string(),
            }),
            _ => Err(QueryError::BadBinding(s.to_string())),
        }
    }
}

/// What one table name reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Store artifacts (ids), concatenated.
    Artifacts(Vec<String>),
    /// A Parquet file outside the store.
    File(PathBuf),
}

/// A checked query with its tables bound.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The SQL as given.
    pub sql: String,
    /// Table name -> what it reads.
    pub tables: BTreeMap<String, Source>,
    /// The query orders its rows itself (a top-level ORDER BY).
    pub ordered: bool,
}

impl Plan {
    /// Every store artifact the query reads, sorted.
    pub fn input_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .tables
            .values()
            .flat_map(|s| match s {
                Source::Artifacts(ids) => ids.clone(),
                Source::File(_) => Vec::new(),
            })
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }
}

/// Is `s` hex digits only?
fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Objects of `kind` in the store, newest file first (ties by id).
fn of_kind(store: &Store, kind: &str) -> Result<Vec<String>> {
    let mut found: Vec<(std::time::SystemTime, String)> = Vec::new();
    for o in store.list()? {
        if o.manifest.as_ref().is_ok_and(|m| m.kind == kind) {
            let time = std::fs::metadata(store.object_path(&o.id))
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            found.push((time, o.id));
        }
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    Ok(found.into_iter().map(|(_, id)| id).collect())
}

/// Binds every table `sql` reads (see the crate docs for the rules).
///
/// Every table reference is resolved here, after parsing, against what
/// ragprobe binds (an allow-list): a name is a CTE the query defines, or a
/// binding, a kind or an id; a table function or any other table expression
/// is refused before polars sees the query.
pub fn plan(store: &Store, sql: &str, bindings: &[Binding], scope: &Scope) -> Result<Plan> {
    let (relations, ordered) = check_statement(sql)?;
    let mut tables = BTreeMap::new();
    for name in relations.tables {
        if relations.ctes.contains(&name) || tables.contains_key(&name) {
            continue;
        }
        let at = find_word(sql, &name);
        let source = bind(store, &name, bindings, scope, at)?;
        tables.insert(name, source);
    }
    Ok(Plan {
        sql: sql.to_string(),
        tables,
        ordered,
    })
}

/// What one table name means.
fn bind(
    store: &Store,
    name: &str,
    bindings: &[Binding],
    scope: &Scope,
    at: Option<(usize, usize)>,
) -> Result<Source> {
    if let Some(b) = bindings.iter().rev().find(|b| b.name == name) {
        let path = Path::new(&b.spec);
        if path.is_file() {
            check_parquet(path)?;
            return Ok(Source::File(path.to_path_buf()));
        }
        if !is_hex(&b.spec) {
            return Err(QueryError::UnknownTable {
                name: name.to_string(),
                at,
                hint: format!(
                    "--table {name}={}: no such file, and not an artifact id",
                    b.spec
                ),
            });
        }
        return Ok(Source::Artifacts(vec![store.resolve(&b.spec)?]));
    }
    if ragprobe_artifact::kinds::kind(name).is_some() || name == "table" {
        let ids = of_kind(store, name)?;
        let ids: Vec<String> = match scope {
            Scope::Latest => ids.into_iter().take(1).collect(),
            Scope::All => ids,
            Scope::Only(keep) => ids.into_iter().filter(|i| keep.contains(i)).collect(),
        };
        if ids.is_empty() {
            let which = match scope {
                Scope::Only(_) => "among the pipeline's outputs",
                _ => "in the store",
            };
            return Err(QueryError::UnknownTable {
                name: name.to_string(),
                at,
                hint: format!("no `{name}` artifact {which} ({})", store.root().display()),
            });
        }
        let mut ids = ids;
        ids.sort();
        return Ok(Source::Artifacts(ids));
    }
    if is_hex(name) && name.len() >= 4 {
        return Ok(Source::Artifacts(vec![store.resolve(name)?]));
    }
    let kinds: Vec<&str> = ragprobe_artifact::kinds::ALL
        .iter()
        .map(|k| k.name)
        .collect();
    Err(QueryError::UnknownTable {
        name: name.to_string(),
        at,
        hint: format!(
            "a table is a kind ({}, table), a quoted artifact id or prefix, or a --table NAME=ID|FILE binding",
            kinds.join(", ")
        ),
    })
}

/// A bound file must be Parquet (its first and last 4 bytes `PAR1`), so a
/// wrong path is named here rather than deep inside polars.
fn check_parquet(path: &Path) -> Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let io = |e: std::io::Error| QueryError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let (mut head, mut tail) = ([0u8; 4], [0u8; 4]);
    let len = f.metadata().map_err(io)?.len();
    let ok = len >= 12
        && f.read_exact(&mut head).is_ok()
        && f.seek(SeekFrom::End(-4)).is_ok()
        && f.read_exact(&mut tail).is_ok()
        && &head == b"PAR1"
        && &tail == b"PAR1";
    if !ok {
        return Err(QueryError::Io {
            path: path.to_path_buf(),
            message: "not a Parquet file (no PAR1 header and footer)".into(),
        });
    }
    Ok(())
}

/// The lazy frame of one table.
fn scan(store: &Store, source: &Source) -> Result<LazyFrame> {
    let paths: Vec<PathBuf> = match source {
        Source::File(p) => vec![p.clone()],
        Source::Artifacts(ids) => {
            for id in ids {
                store.verify_object(id)?;
            }
            ids.iter().map(|id| store.object_path(id)).collect()
        }
    };
    let run_err = |e: PolarsError| {
        let (message, at) = polars_message(&e);
        QueryError::Run { message, at }
    };
    let refs = paths
        .iter()
        .map(|p| PlRefPath::try_from_path(p))
        .collect::<PolarsResult<Vec<_>>>()
        .map_err(run_err)?;
    let args = ScanArgsParquet {
        hive_options: HiveOptions::new_disabled(),
        allow_missing_columns: true,
        glob: false,
        ..Default::default()
    };
    LazyFrame::scan_parquet_files(refs.into(), args).map_err(run_err)
}

/// Runs the query with the streaming engine (bounded memory where the
/// plan allows it).
pub fn run(store: &Store, plan: &Plan) -> Result<DataFrame> {
    let mut ctx = SQLContext::new();
    for (name, source) in &plan.tables {
        ctx.register(name, scan(store, source)?);
    }
    let sql = plan.sql.as_str();
    let run_err = |e: PolarsError| {
        let (message, at) = polars_message(&e);
        let at = at.or_else(|| locate_named(sql, &message));
        QueryError::Run { message, at }
    };
    // polars reports some failures (an unsupported type, say) by panicking.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ctx.execute(sql)
            .and_then(|lf| lf.collect_with_engine(Engine::Streaming))
            .map(|r| r.unwrap_single())
    }));
    match outcome {
        Ok(r) => r.map_err(run_err),
        Err(p) => Err(QueryError::Run {
            message: p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "polars failed".into()),
            at: None,
        }),
    }
}

/// Columns that are not nested (sortable, writable as CSV).
fn flat_columns(df: &DataFrame) -> Vec<PlSmallStr> {
    df.columns()
        .iter()
        .filter(|c| !c.dtype().is_nested())
        .map(|c| c.name().clone())
        .collect()
}

/// The rows in a defined order: as the query ordered them, else sorted by
/// every flat column (left to right), so a saved result is deterministic.
pub fn ordered(plan: &Plan, df: DataFrame) -> Result<DataFrame> {
    if plan.ordered || df.height() < 2 {
        return Ok(df);
    }
    let cols = flat_columns(&df);
    if cols.is_empty() {
        return Ok(df);
    }
    df.sort(
        cols,
        SortMultipleOptions::default()
            .with_maintain_order(true)
            .with_nulls_last(true),
    )
    .map_err(|e| QueryError::Run {
        message: polars_message(&e).0,
        at: None,
    })
}

/// Version of the `query` stage's recipe (bump when results could change).
pub const STAGE_VERSION: u32 = 1;

/// Saves the result as a `table` artifact whose manifest records the SQL
/// and the input ids, so it is as reproducible and shareable as any stage
/// output. A query over files outside the store cannot be saved (its
/// inputs would not travel with it).
pub fn save(store: &Store, plan: &Plan, df: &mut DataFrame) -> Result<Written> {
    if let Some((name, _)) = plan
        .tables
        .iter()
        .find(|(_, s)| matches!(s, Source::File(_)))
    {
        return Err(QueryError::Output(format!(
            "--save: table `{name}` is a file outside the store; `ragprobe artifacts import` it and bind its id"
        )));
    }
    let tables: BTreeMap<&String, &Vec<String>> = plan
        .tables
        .iter()
        .filter_map(|(n, s)| match s {
            Source::Artifacts(ids) => Some((n, ids)),
            Source::File(_) => None,
        })
        .collect();
    let mut recipe = Recipe::new(
        "query",
        STAGE_VERSION,
        serde_json::json!({"sql": plan.sql, "tables": tables}),
    );
    recipe.inputs = plan.input_ids();
    if let Some(rec) = store.cached(&recipe, &["table"])? {
        return Ok(rec.output("table")?);
    }
    // Handed to the store's (arrow-rs) writer, which re-encodes it.
    let mut bytes = Vec::new();
    parquet_bytes(df, &mut bytes, ParquetCompression::Snappy)?;
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        bytes::Bytes::from(bytes),
    )
    .and_then(|b| b.build())
    .map_err(|e| QueryError::Output(format!("reading the result back: {e}")))?;
    let schema = reader.schema();
    let mut w = store.writer_with_schema("table", 1, schema, &recipe)?;
    for batch in reader {
        let batch =
            batch.map_err(|e| QueryError::Output(format!("reading the result back: {e}")))?;
        w.write(&batch)?;
    }
    let columns: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|c| c.to_string())
        .collect();
    let written = w.finish(serde_json::json!({"sql": plan.sql, "columns": columns}))?;
    store.record_action(&recipe, std::slice::from_ref(&written))?;
    Ok(written)
}

/// The result as a terminal table: at most `max_rows` rows shown (the
/// first and last halves when there are more).
pub fn render(df: &DataFrame, max_rows: usize) -> String {
    // polars reads its display settings from the environment on each call.
    std::env::set_var("POLARS_FMT_MAX_ROWS", max_rows.to_string());
    std::env::set_var("POLARS_FMT_MAX_COLS", "32");
    std::env::set_var("POLARS_FMT_STR_LEN", "48");
    if std::env::var_os("POLARS_TABLE_WIDTH").is_none() {
        std::env::set_var("POLARS_TABLE_WIDTH", "160");
    }
    format!("{df}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based_lines_and_columns() {
        assert_eq!(line_col("SELECT\n  x", 9), (2, 3));
        assert_eq!(find_word("SELECT acc FROM scores", "scores"), Some((1, 17)));
        assert_eq!(find_word("SELECT * FROM 'ab12'", "ab12"), Some((1, 16)));
        assert_eq!(find_word("SELECT scoresx FROM t", "scores"), None);
    }

    #[test]
    fn only_one_select_is_accepted() {
        assert!(check_statement("SELECT 1").is_ok());
        let (found, ordered) =
            check_statement("WITH a AS (SELECT 1 AS x) SELECT * FROM a ORDER BY x").unwrap();
        assert!(found.ctes.contains("a") && ordered);
        for bad in [
            "DROP TABLE scores",
            "SELECT 1; SELECT 2",
            "CREATE TABLE t AS SELECT 1",
        ] {
            assert!(
                matches!(check_statement(bad), Err(QueryError::Sql { .. })),
                "{bad}"
            );
        }
        match check_statement("SELECT * FROM 3f2a") {
            Err(QueryError::Sql { at, .. }) => assert_eq!(at, Some((1, 15))),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bindings_parse() {
        let b: Binding = "s=ab12".parse().unwrap();
        assert_eq!((b.name.as_str(), b.spec.as_str()), ("s", "ab12"));
        assert!("noequals".parse::<Binding>().is_err());
        assert!("=x".parse::<Binding>().is_err());
    }

    /// Hardening II, L6: a `--json FILE` killed mid-write left a 7.2 GB
    /// temporary file beside the output. While a result is written the
    /// directory holds no file for it (a kill leaves nothing); finishing
    /// gives the file its name, replacing what was there.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_result_file_has_no_name_until_it_is_finished() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("out.json");
        std::fs::write(&path, "old").unwrap();
        let entries = || std::fs::read_dir(d.path()).unwrap().count();
        let mut w = Unnamed::create(&path).unwrap();
        assert!(
            matches!(w, Unnamed::Anonymous { .. }),
            "O_TMPFILE on this file system"
        );
        w.file().write_all(&vec![b'x'; 1 << 20]).unwrap();
        assert_eq!(entries(), 1, "only the old output while writing");
        drop(w);
        assert_eq!(entries(), 1, "an unfinished write leaves nothing");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        let mut w = Unnamed::create(&path).unwrap();
        w.file().write_all(b"new").unwrap();
        w.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(entries(), 1);
    }

    /// Hardening II, L4: `SIMILAR TO` gave sqlparser's syntax tree as the
    /// error.
    #[test]
    fn an_unsupported_construct_is_named_in_sql_words() {
        let dump = "expression SimilarTo { negated: false, expr: Identifier(Ident { value: \"q\", quote_style: None }), pattern: Value(x), escape_char: None } is not currently supported";
        assert_eq!(
            unsupported_expression(dump).unwrap(),
            "SIMILAR TO is not supported by ragprobe query (polars SQL)"
        );
        assert_eq!(unsupported_expression("column `x` not found"), None);
    }
}
