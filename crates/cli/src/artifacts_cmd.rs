use anyhow::{bail, Result};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use clap::Subcommand;
use ragprobe_artifact::{kinds, Store};
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum ArtifactsCmd {
    /// List stored artifacts: id, kind, rows, size, stage.
    Ls {
        /// Only artifacts of this kind.
        #[arg(long)]
        kind: Option<String>,
    },
    /// Print an artifact's manifest, schema, row count and first rows.
    Show {
        /// Artifact id, unique id prefix, or path to a .parquet file.
        id: String,
        /// How many rows to print.
        #[arg(long, default_value_t = 5)]
        rows: usize,
        /// Cut cell text longer than this many characters (0 = never).
        #[arg(long, default_value_t = 100)]
        width: usize,
    },
    /// Check every object: bytes hash to the id, manifest and data readable.
    Verify,
    /// Copy an artifact out of the store (to DIR/<id>.parquet, or to a file path).
    Export {
        /// Artifact id or unique prefix.
        id: String,
        /// Destination directory or file.
        path: PathBuf,
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Add a Parquet artifact file (from `export`, or a teammate) to the store.
    Import {
        /// The .parquet file.
        file: PathBuf,
    },
    /// Send artifacts to a remote with everything they were made from and
    /// the action records that made them (see `ragprobe remote add`).
    Push(crate::remote_cmd::PushArgs),
    /// Fetch artifacts from a remote with their whole lineage, so the
    /// pipeline that made them is fully cached here.
    Pull(crate::remote_cmd::PullArgs),
    /// Delete objects no action record or import refers to, and stale temp files.
    Gc {
        /// Only report what would be deleted.
        #[arg(long)]
        dry_run: bool,
    },
}

pub fn run(store: &Store, cmd: ArtifactsCmd) -> Result<crate::StageOut> {
    let none = |r: Result<()>| r.map(|_| crate::StageOut::default());
    match cmd {
        ArtifactsCmd::Push(a) => none(crate::remote_cmd::push(store, a)),
        ArtifactsCmd::Pull(a) => crate::remote_cmd::pull(store, a),
        ArtifactsCmd::Ls { kind } => none(ls(store, kind.as_deref())),
        ArtifactsCmd::Show { id, rows, width } => none(show(store, &id, rows, width)),
        ArtifactsCmd::Verify => none(verify(store)),
        ArtifactsCmd::Export { id, path, force } => {
            let id = store.resolve(&id)?;
            let dest = store.export_with(&id, &path, force)?;
            eprintln!("exported {id} to {}", dest.display());
            Ok(crate::StageOut::default())
        }
        ArtifactsCmd::Import { file } => {
            let id = store.import(&file)?;
            let m = store.manifest(&id)?;
            Ok(crate::StageOut::new(
                [(m.kind.as_str(), id.as_str())],
                false,
            ))
        }
        ArtifactsCmd::Gc { dry_run } => {
            let r = store.gc(dry_run)?;
            let verb = if dry_run { "would remove" } else { "removed" };
            for id in &r.removed {
                println!("{verb}\t{id}");
            }
            eprintln!("{verb} {} object(s), {} bytes, {} stale temp file(s); kept {} (and {} recent temp file(s) that a running stage may be writing)", r.removed.len(), r.removed_bytes, r.removed_tmp, r.kept, r.kept_tmp);
            Ok(crate::StageOut::default())
        }
    }
}

fn ls(store: &Store, kind: Option<&str>) -> Result<()> {
    let objects = store.list()?;
    println!(
        "{:<64}  {:<10}  {:>9}  {:>10}  stage",
        "id", "kind", "rows", "bytes"
    );
    for o in objects {
        match &o.manifest {
            Ok(m) => {
                if kind.is_some_and(|k| k != m.kind) {
                    continue;
                }
                println!(
                    "{:<64}  {:<10}  {:>9}  {:>10}  {}",
                    o.id, m.kind, m.rows, o.bytes, m.recipe.stage
                );
            }
            Err(e) if kind.is_none() => println!(
                "{:<64}  {:<10}  {:>9}  {:>10}  ({e})",
                o.id, "?", "?", o.bytes
            ),
            Err(_) => {}
        }
    }
    Ok(())
}

fn truncate(s: &str, width: usize) -> String {
    if width == 0 || s.chars().count() <= width {
        return s.to_string();
    }
    let cut: String = s.chars().take(width).collect();
    format!("{cut}…")
}

fn show(store: &Store, spec: &str, nrows: usize, width: usize) -> Result<()> {
    let id = store.resolve(spec)?;
    let m = store.manifest(&id)?;
    let (schema, batches) = store.read_all(&id)?;
    let total: usize = batches.iter().map(|b| b.num_rows()).sum();
    println!("id:       {id}");
    println!("kind:     {} (schema v{})", m.kind, m.schema_version);
    println!("rows:     {total}");
    println!("manifest:");
    let pretty = serde_json::to_string_pretty(&serde_json::to_value(&m)?)?;
    for line in pretty.lines() {
        println!("  {line}");
    }
    println!("schema:");
    let name_w = schema
        .fields()
        .iter()
        .map(|f| f.name().len())
        .max()
        .unwrap_or(0);
    for f in schema.fields() {
        println!(
            "  {:<name_w$}  {}{}",
            f.name(),
            kinds::type_name(f.data_type()),
            if f.is_nullable() { "" } else { "  not null" }
        );
    }
    println!("first {} row(s):", nrows.min(total));
    let opts = FormatOptions::default().with_null("null");
    let mut shown = 0;
    'outer: for batch in &batches {
        let formatters = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
            .collect::<Result<Vec<_>, _>>()?;
        for row in 0..batch.num_rows() {
            if shown >= nrows {
                break 'outer;
            }
            println!("  -- row {shown}");
            for (f, fmt) in schema.fields().iter().zip(&formatters) {
                println!(
                    "  {:<name_w$}  {}",
                    f.name(),
                    truncate(&fmt.value(row).to_string(), width)
                );
            }
            shown += 1;
        }
    }
    if total > 0 && shown == 0 && nrows > 0 {
        bail!("could not read rows of {id}");
    }
    Ok(())
}

fn verify(store: &Store) -> Result<()> {
    let ids = store.ids()?;
    let problems = store.verify()?;
    for p in &problems {
        println!("CORRUPT\t{}\t{}", p.id, p.message);
    }
    if problems.is_empty() {
        eprintln!("{} object(s) verified, all intact", ids.len());
        Ok(())
    } else {
        bail!(
            "{} of {} object(s) are corrupt (listed above)",
            problems.len(),
            ids.len()
        )
    }
}
