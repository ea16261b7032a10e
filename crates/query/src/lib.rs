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

/// 1-based (line, column) of byte offset `at` in `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Where `word` first stands in `sql` as a whole word (quoted or not).
fn find_word(sql: &str, word: &str) -> Option<(usize, usize)> {
    let re = regex::Regex::new(&format!(
        r"(^|[^A-Za-z0-9_]){}($|[^A-Za-z0-9_])",
        regex::escape(word)
    ))
    .ok()?;
    re.find(sql).map(|m| {
        let start = m.start() + usize::from(!sql[m.start()..].starts_with(word));
        line_col(sql, start)
    })
}

/// polars' error text: its first paragraph (the plan dump is dropped),
/// with sqlparser's "at Line: L, Column: C" turned into a position.
fn polars_message(e: &PolarsError) -> (String, Option<(usize, usize)>) {
    let full = e.to_string();
    // One line: the plan dump polars appends is dropped, hints ("Did you
    // mean …") stay on the line.
    let head = full
        .split("Resolved plan until failure")
        .next()
        .unwrap_or(&full)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let (text, at) = split_position(&head);
    match unsupported_expression(&text) {
        // The dump's first `Location(line,column)` is where the construct starts.
        Some(words) => {
            let re = regex::Regex::new(r"Location\((\d+),\s*(\d+)\)").expect("valid regex");
            let dumped = re
                .captures(&text)
                .and_then(|c| Some((c[1].parse().ok()?, c[2].parse().ok()?)));
            (words, at.or(dumped))
        }
        None => (text, at),
    }
}

/// polars names an SQL construct it does not run by dumping sqlparser's
/// syntax tree (`expression SimilarTo { negated: false, expr: … } is not
/// currently supported`): said instead as the construct's SQL words
/// (`SIMILAR TO is not supported by ragprobe query (polars SQL)`).
fn unsupported_expression(text: &str) -> Option<String> {
    let re = regex::Regex::new(
        r"^(?:.*: )?expression ([A-Z][A-Za-z]*)\b.* is not (?:currently |yet )?supported",
    )
    .expect("valid regex");
    let name = re.captures(text)?.get(1)?.as_str().to_string();
    let mut words = String::new();
    for (i, c) in name.chars().enumerate() {
        if i > 0 && c.is_ascii_uppercase() {
            words.push(' ');
        }
        words.push(c.to_ascii_uppercase());
    }
    Some(format!(
        "{words} is not supported by ragprobe query (polars SQL)"
    ))
}

/// sqlparser's " at Line: L, Column: C" taken out of `text` as a position.
fn split_position(text: &str) -> (String, Option<(usize, usize)>) {
    let re = regex::Regex::new(r"\s*at Line: (\d+), Column: (\d+)").expect("valid regex");
    match re.captures(text) {
        Some(c) => {
            let at = (c[1].parse().unwrap_or(0), c[2].parse().unwrap_or(0));
            (re.replace(text, "").into_owned(), Some(at))
        }
        None => (text.to_string(), None),
    }
}

/// The position of the first quoted name in `message` found in `sql`.
fn locate_named(sql: &str, message: &str) -> Option<(usize, usize)> {
    let re = regex::Regex::new(r#"["'`]([^"'`]+)["'`]"#).expect("valid regex");
    // polars names a joined table's column `col:table`; the query says `col`.
    let found = re
        .captures_iter(message)
        .filter_map(|c| {
            let name = c[1].split(':').next().unwrap_or(&c[1]).to_string();
            find_word(sql, &name)
        })
        .next();
    found
}

/// What a query reads, found by walking its syntax tree.
#[derive(Debug, Default)]
struct Relations {
    /// Every name a query of the statement defines with `WITH name AS (…)`,
    /// at any depth.
    ctes: BTreeSet<String>,
    /// Every plain table reference (`FROM name`), in order of appearance,
    /// as polars will look it up (quotes removed, case kept).
    tables: Vec<String>,
}

/// Walks every table factor of a statement, at every depth (subqueries in
/// FROM, WHERE, SELECT lists, CTE bodies, joins, set operations).
///
/// This is the whole defence against reading outside the store: polars-sql
/// reads a file for any table factor with arguments (`read_csv('/etc/…')`,
/// and also `read_csv.x('/etc/…')`, since it looks at the first name part
/// only), so every such factor is refused whatever its name, quoting or
/// case; only bare one-part names, subqueries, nested joins and `UNNEST`
/// (which reads only its literal arrays) pass. Each bare name is then bound
/// by [`plan`] or left to a CTE; polars' context holds nothing else.
struct RelationWalker<'a> {
    sql: &'a str,
    found: Relations,
}

/// A parser span's start as (line, column), when the parser knows it.
fn position(span: sqlparser::tokenizer::Span) -> Option<(usize, usize)> {
    (span.start.line > 0).then_some((span.start.line as usize, span.start.column as usize))
}

impl RelationWalker<'_> {
    fn refuse(&self, what: &str, span: sqlparser::tokenizer::Span) -> QueryError {
        let at = position(span);
        QueryError::Sql {
            message: format!(
                "{what} is not allowed: queries read the tables ragprobe binds (kinds, ids, --table NAME=FILE)"
            ),
            at: at.or_else(|| find_word(self.sql, what)),
        }
    }
}

impl sqlparser::ast::Visitor for RelationWalker<'_> {
    type Break = QueryError;

    fn pre_visit_query(&mut self, q: &sqlparser::ast::Query) -> std::ops::ControlFlow<QueryError> {
        for cte in q.with.iter().flat_map(|w| w.cte_tables.iter()) {
            self.found.ctes.insert(cte.alias.name.value.clone());
        }
        std::ops::ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(
        &mut self,
        factor: &sqlparser::ast::TableFactor,
    ) -> std::ops::ControlFlow<QueryError> {
        use sqlparser::ast::{Spanned, TableFactor};
        use std::ops::ControlFlow::{Break, Continue};
        match factor {
            TableFactor::Table { name, args, .. } => {
                if args.is_some() {
                    return Break(self.refuse(&format!("table function `{name}(…)`"), name.span()));
                }
                match name.0.as_slice() {
                    [part] => match part.as_ident() {
                        Some(ident) => {
                            self.found.tables.push(ident.value.clone());
                            Continue(())
                        }
                        None => Break(self.refuse(&format!("table `{name}`"), name.span())),
                    },
                    _ => Break(QueryError::Sql {
                        message: format!(
                            "`{name}`: a table name has one part (a kind, a quoted id or a --table name), not a schema-qualified name"
                        ),
                        at: position(name.span()),
                    }),
                }
            }
            TableFactor::Derived { .. }
            | TableFactor::NestedJoin { .. }
            | TableFactor::UNNEST { .. } => Continue(()),
            other => {
                let text = other.to_string();
                let head: String = text.chars().take(40).collect();
                Break(self.refuse(&format!("table expression `{head}`"), other.span()))
            }
        }
    }
}

/// Parses `sql`: exactly one SELECT (or WITH … SELECT), parsed as polars
/// parses it (generic dialect, trailing commas). Returns what it reads and
/// whether it orders its rows.
fn check_statement(sql: &str) -> Result<(Relations, bool)> {
    use sqlparser::ast::{Statement, Visit};
    let dialect = sqlparser::dialect::GenericDialect {};
    let parsed = sqlparser::parser::Parser::new(&dialect)
        .with_options(sqlparser::parser::ParserOptions::new().with_trailing_commas(true))
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statements());
    let statements = parsed.map_err(|e| {
        let text = e.to_string();
        let text = text.strip_prefix("sql parser error: ").unwrap_or(&text);
        let (text, at) = split_position(text);
        QueryError::Sql {
            message: format!("SQL syntax: {text}"),
            at: at.or_else(|| Some(line_col(sql, sql.trim_end().len()))),
        }
    })?;
    let [statement @ Statement::Query(q)] = statements.as_slice() else {
        return Err(QueryError::Sql {
            message: format!(
                "expected one SELECT statement, found {}",
                match statements.len() {
                    1 => "another kind of statement".to_string(),
                    n => format!("{n} statements"),
                }
            ),
            at: None,
        });
    };
    let mut walker = RelationWalker {
        sql,
        found: Relations::default(),
    };
    if let std::ops::ControlFlow::Break(e) = statement.visit(&mut walker) {
        return Err(e);
    }
    Ok((walker.found, q.order_by.is_some()))
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

/// Output formats for a result file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated, with a header (flat columns only).
    Csv,
    /// A JSON array of row objects.
    Json,
    /// Parquet (zstd).
    Parquet,
}

/// Writes `df` to `path` (`-` = standard output for CSV and JSON),
/// atomically: a temp file beside it, fsynced, then renamed.
pub fn write(df: &mut DataFrame, format: Format, path: &Path) -> Result<()> {
    if format == Format::Csv {
        if let Some(c) = df.columns().iter().find(|c| c.dtype().is_nested()) {
            return Err(QueryError::Output(format!(
                "column `{}` is {}: CSV holds flat columns only; select its fields, or write --json or --parquet",
                c.name(),
                c.dtype()
            )));
        }
    }
    let out_err = |e: PolarsError| QueryError::Output(polars_message(&e).0);
    if path == Path::new("-") {
        let mut stdout = std::io::stdout().lock();
        match format {
            Format::Csv => CsvWriter::new(&mut stdout).finish(df).map_err(out_err)?,
            Format::Json => {
                write_json(df, &mut stdout).map_err(|e| QueryError::Output(e.to_string()))?
            }
            Format::Parquet => {
                return Err(QueryError::Output(
                    "Parquet goes to a file, not standard output".into(),
                ))
            }
        }
        return Ok(());
    }
    let io = |e: std::io::Error| QueryError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut out = Unnamed::create(path).map_err(io)?;
    {
        let f = out.file();
        let mut w = std::io::BufWriter::with_capacity(1 << 20, &mut *f);
        match format {
            Format::Csv => CsvWriter::new(&mut w).finish(df).map_err(out_err)?,
            Format::Json => write_json(df, &mut w).map_err(io)?,
            Format::Parquet => {
                parquet_bytes(df, &mut w, ParquetCompression::Zstd(None))?;
            }
        }
        w.flush().map_err(io)?;
    }
    out.finish().map_err(io)
}

/// A result file being written: it appears at its path, whole, only when
/// finished. On Linux it is an unnamed file in the target's directory
/// (`O_TMPFILE`), linked into place at the end, so a process killed while
/// writing leaves nothing behind (a named temporary would stay, as large
/// as what was written). Elsewhere, or on a file system without
/// `O_TMPFILE`, a named temporary file beside the target, removed on
/// error and renamed into place.
enum Unnamed {
    #[cfg(target_os = "linux")]
    Anonymous {
        file: std::fs::File,
        dir: PathBuf,
        path: PathBuf,
    },
    Named {
        tmp: tempfile::NamedTempFile,
        path: PathBuf,
    },
}

impl Unnamed {
    fn create(path: &Path) -> std::io::Result<Unnamed> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::OpenOptionsExt;
            let anonymous = std::fs::OpenOptions::new()
                .write(true)
                .mode(0o644)
                .custom_flags(libc::O_TMPFILE)
                .open(&dir);
            match anonymous {
                Ok(file) => {
                    return Ok(Unnamed::Anonymous {
                        file,
                        dir,
                        path: path.to_path_buf(),
                    })
                }
                // Not supported here: fall back to a named file.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Unnamed::Named {
            tmp: tempfile::NamedTempFile::new_in(&dir)?,
            path: path.to_path_buf(),
        })
    }

    fn file(&mut self) -> &mut std::fs::File {
        match self {
            #[cfg(target_os = "linux")]
            Unnamed::Anonymous { file, .. } => file,
            Unnamed::Named { tmp, .. } => tmp.as_file_mut(),
        }
    }

    /// Syncs the file and gives it its name (replacing what was there).
    fn finish(self) -> std::io::Result<()> {
        match self {
            #[cfg(target_os = "linux")]
            Unnamed::Anonymous { file, dir, path } => {
                use std::os::fd::AsRawFd;
                use std::os::unix::ffi::OsStrExt;
                file.sync_all()?;
                // linkat cannot replace a file: link under a fresh name in
                // the same directory, then rename over the target.
                let name = dir.join(format!(
                    ".{}.{}.part",
                    path.file_name()
                        .map(|n| n.to_string_lossy())
                        .unwrap_or_default(),
                    std::process::id()
                ));
                let _ = std::fs::remove_file(&name);
                let from = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
                let to = std::ffi::CString::new(name.as_os_str().as_bytes())?;
                // SAFETY: two NUL-terminated paths; the descriptor is open.
                let rc = unsafe {
                    libc::linkat(
                        libc::AT_FDCWD,
                        from.as_ptr(),
                        libc::AT_FDCWD,
                        to.as_ptr(),
                        libc::AT_SYMLINK_FOLLOW,
                    )
                };
                if rc != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                std::fs::rename(&name, &path).inspect_err(|_| {
                    let _ = std::fs::remove_file(&name);
                })
            }
            Unnamed::Named { tmp, path } => {
                tmp.as_file().sync_all()?;
                tmp.persist(&path).map(|_| ()).map_err(|e| e.error)
            }
        }
    }
}

/// A cell as JSON: numbers, strings, booleans and null as themselves,
/// lists as arrays, structs as objects, anything else (dates, decimals) as
/// its text. Non-finite floats become null.
fn json_of(v: AnyValue<'_>) -> serde_json::Value {
    use serde_json::Value as J;
    let float = |x: f64| serde_json::Number::from_f64(x).map_or(J::Null, J::Number);
    match v {
        AnyValue::Null => J::Null,
        AnyValue::Boolean(b) => J::Bool(b),
        AnyValue::String(s) => J::String(s.to_string()),
        AnyValue::StringOwned(s) => J::String(s.to_string()),
        AnyValue::UInt8(x) => x.into(),
        AnyValue::UInt16(x) => x.into(),
        AnyValue::UInt32(x) => x.into(),
        AnyValue::UInt64(x) => x.into(),
        AnyValue::Int8(x) => x.into(),
        AnyValue::Int16(x) => x.into(),
        AnyValue::Int32(x) => x.into(),
        AnyValue::Int64(x) => x.into(),
        AnyValue::Float32(x) => float(x as f64),
        AnyValue::Float64(x) => float(x),
        AnyValue::List(s) => J::Array(s.iter().map(json_of).collect()),
        AnyValue::Struct(_, _, fields) => {
            let names: Vec<String> = fields.iter().map(|f| f.name().to_string()).collect();
            J::Object(
                names
                    .into_iter()
                    .zip(v._iter_struct_av().map(json_of))
                    .collect(),
            )
        }
        AnyValue::StructOwned(b) => J::Object(
            b.1.iter()
                .map(|f| f.name().to_string())
                .zip(b.0.into_iter().map(json_of))
                .collect(),
        ),
        other => J::String(other.to_string()),
    }
}

/// `df` as a JSON array of row objects (columns in order), one row a line.
fn write_json<W: Write>(df: &DataFrame, mut w: W) -> std::io::Result<()> {
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|c| c.to_string())
        .collect();
    w.write_all(b"[")?;
    for i in 0..df.height() {
        let mut row = serde_json::Map::new();
        for (name, col) in names.iter().zip(df.columns()) {
            let v = col
                .as_materialized_series()
                .get(i)
                .map_or(serde_json::Value::Null, json_of);
            row.insert(name.clone(), v);
        }
        // Keys in column order, not sorted: written by hand.
        let fields: Vec<String> = names
            .iter()
            .map(|n| format!("{}:{}", serde_json::Value::String(n.clone()), row[n]))
            .collect();
        let sep = if i == 0 { "\n" } else { ",\n" };
        write!(w, "{sep}{{{}}}", fields.join(","))?;
    }
    w.write_all(b"\n]\n")
}

/// `df` as Parquet with fixed settings (no parallel writer).
fn parquet_bytes<W: Write>(
    df: &mut DataFrame,
    w: W,
    compression: ParquetCompression,
) -> Result<()> {
    ParquetWriter::new(w)
        .with_compression(compression)
        .set_parallel(false)
        .finish(df)
        .map(|_| ())
        .map_err(|e| QueryError::Output(polars_message(&e).0))
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
