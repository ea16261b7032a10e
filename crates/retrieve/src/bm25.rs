//! BM25 over a corpus artifact with tantivy.
//!
//! The index is derived data under `<store>/indexes/bm25-<key>/`, keyed by
//! the corpus id, the analyzer and the index layout version; it is built
//! once (streaming the corpus, one writer thread so the layout is
//! deterministic), committed every [`COMMIT_ROWS`] passages so that an
//! interrupted build resumes where it stopped and memory stays bounded,
//! published atomically by renaming the finished directory, and reused by
//! every later run. A hit's corpus row comes from a fast field (no stored
//! document is read at query time).

use ragprobe_artifact::{rows_of, sha256_hex, ArtifactError, Corpus, Store};
use rayon::prelude::*;
use std::path::PathBuf;
use tantivy::collector::TopDocs;
use tantivy::columnar::Column;
use tantivy::indexer::NoMergePolicy;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STORED,
};
use tantivy::tokenizer::{
    Language, LowerCaser, NgramTokenizer, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer,
};
use tantivy::{Index, Searcher, TantivyDocument, Term};

use crate::{sort_hits, Hit, Result, RetrieveError};

/// Bump when the index layout or analysis changes.
/// 2: one segment, doc id = corpus row.
const INDEX_VERSION: u32 = 2;
const TOKENIZER: &str = "ragprobe";

/// Text analysis for BM25: tokenizer + lowercasing (+ stemming where
/// tantivy has a stemmer for the language).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Analyzer {
    /// Words, lowercased, Snowball English stemmer.
    English,
    /// Words, lowercased, the Snowball stemmer of that language.
    Stemmed(Language),
    /// Words, lowercased, no stemming (any language written with spaces).
    Plain,
    /// Character unigrams and bigrams, lowercased (Chinese, Japanese, Korean).
    CjkBigram,
}

impl Analyzer {
    /// The analyzer for a language code (`en`, `de`, `zh`, ...); `plain`
    /// and `cjk` name the two language-free analyzers.
    pub fn for_lang(code: &str) -> Analyzer {
        let stem = |l| Analyzer::Stemmed(l);
        match code {
            "en" | "english" => Analyzer::English,
            "plain" => Analyzer::Plain,
            "zh" | "ja" | "ko" | "th" | "cjk" => Analyzer::CjkBigram,
            "ar" => stem(Language::Arabic),
            "da" => stem(Language::Danish),
            "nl" => stem(Language::Dutch),
            "fi" => stem(Language::Finnish),
            "fr" => stem(Language::French),
            "de" => stem(Language::German),
            "el" => stem(Language::Greek),
            "hu" => stem(Language::Hungarian),
            "it" => stem(Language::Italian),
            "no" => stem(Language::Norwegian),
            "pt" => stem(Language::Portuguese),
            "ro" => stem(Language::Romanian),
            "ru" => stem(Language::Russian),
            "es" => stem(Language::Spanish),
            "sv" => stem(Language::Swedish),
            "ta" => stem(Language::Tamil),
            "tr" => stem(Language::Turkish),
            _ => Analyzer::Plain,
        }
    }

    /// The analyzer's name as recorded in recipes and the index key (`en-stem`, `german-stem`, `plain`, `cjk-bigram`).
    pub fn name(self) -> String {
        match self {
            Analyzer::English => "en-stem".into(),
            Analyzer::Stemmed(l) => format!("{l:?}-stem").to_lowercase(),
            Analyzer::Plain => "plain".into(),
            Analyzer::CjkBigram => "cjk-bigram".into(),
        }
    }

    fn build(self) -> Result<TextAnalyzer> {
        Ok(match self {
            Analyzer::English => TextAnalyzer::builder(SimpleTokenizer::default())
                .filter(RemoveLongFilter::limit(40))
                .filter(LowerCaser)
                .filter(Stemmer::new(Language::English))
                .build(),
            Analyzer::Stemmed(l) => TextAnalyzer::builder(SimpleTokenizer::default())
                .filter(RemoveLongFilter::limit(40))
                .filter(LowerCaser)
                .filter(Stemmer::new(l))
                .build(),
            Analyzer::Plain => TextAnalyzer::builder(SimpleTokenizer::default())
                .filter(RemoveLongFilter::limit(40))
                .filter(LowerCaser)
                .build(),
            Analyzer::CjkBigram => TextAnalyzer::builder(
                NgramTokenizer::new(1, 2, false).map_err(RetrieveError::bm25)?,
            )
            .filter(LowerCaser)
            .build(),
        })
    }
}

/// An open BM25 index over one corpus artifact.
pub struct Bm25Index {
    searcher: Searcher,
    /// The `row` fast field of each segment, by segment ordinal: a hit's
    /// corpus row is an array lookup, not a stored-document read.
    rows: Vec<Column<u64>>,
    body: Field,
    analyzer: Analyzer,
}

/// Passages indexed between two commits of a build: the unit of resumption
/// after an interruption (a commit also flushes the writer's heap, so a
/// build's memory does not grow with the corpus).
pub const COMMIT_ROWS: u64 = 1_000_000;

/// How long a build waits for another process that holds the index
/// writer's lock on the same partial index to publish it.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(3600);

fn schema() -> (Schema, Field, Field) {
    let mut sb = Schema::builder();
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(TOKENIZER)
        .set_index_option(IndexRecordOption::WithFreqs);
    let body = sb.add_text_field(
        "body",
        TextOptions::default().set_indexing_options(indexing),
    );
    let row = sb.add_u64_field("row", STORED | FAST);
    (sb.build(), body, row)
}

fn io_error(path: &std::path::Path, e: impl std::fmt::Display) -> RetrieveError {
    RetrieveError::bm25(format!("{}: {e}", path.display()))
}

/// Rows a partial index holds: the count saved in its last commit's payload
/// (rows are added in corpus order, so they are rows `0..n`).
fn committed_rows(index: &Index) -> Result<u64> {
    let metas = index.load_metas()?;
    Ok(metas
        .payload
        .as_deref()
        .and_then(|p| p.trim().parse::<u64>().ok())
        .unwrap_or(0))
}

impl Bm25Index {
    fn dir(store: &Store, corpus: &str, analyzer: Analyzer) -> PathBuf {
        let key =
            sha256_hex(format!("bm25|v{INDEX_VERSION}|{corpus}|{}", analyzer.name()).as_bytes());
        store
            .root()
            .join("indexes")
            .join(format!("bm25-{}", &key[..24]))
    }

    /// Open the index for `corpus`, building it first if needed (or
    /// finishing a build an earlier run left unfinished).
    pub fn open_or_build(
        store: &Store,
        corpus: &str,
        analyzer: Analyzer,
        progress: bool,
    ) -> Result<Bm25Index> {
        let dir = Self::dir(store, corpus, analyzer);
        if dir.join(".complete").is_file() {
            tracing::info!("bm25: reusing index {}", dir.display());
        } else {
            Self::build(store, corpus, analyzer, &dir, progress, COMMIT_ROWS, None)?;
        }
        Self::open(&dir, analyzer)
    }

    fn open(dir: &std::path::Path, analyzer: Analyzer) -> Result<Bm25Index> {
        let index = Index::open_in_dir(dir)?;
        index.tokenizers().register(TOKENIZER, analyzer.build()?);
        let searcher = index.reader()?.searcher();
        let rows = searcher
            .segment_readers()
            .iter()
            .map(|s| s.fast_fields().u64("row"))
            .collect::<tantivy::Result<Vec<_>>>()?;
        let (_, body, _) = schema();
        Ok(Bm25Index {
            searcher,
            rows,
            body,
            analyzer,
        })
    }

    /// Builds the index into `<dir>.partial`, committing every
    /// [`COMMIT_ROWS`] passages with the row count as the commit payload; a
    /// run that finds a partial index continues after its last commit. The
    /// finished index is published by renaming it to `dir`. `stop_after`
    /// (tests) ends the build after that many rows without publishing it,
    /// as an interruption would.
    fn build(
        store: &Store,
        corpus: &str,
        analyzer: Analyzer,
        dir: &std::path::Path,
        progress: bool,
        commit_rows: u64,
        stop_after: Option<u64>,
    ) -> Result<()> {
        let rows = store.manifest(corpus)?.rows;
        let partial = dir.with_extension("partial");
        let (index, body, row) = Self::open_partial(&partial, analyzer)?;
        // One thread: a deterministic segment layout (ARCHITECTURE.md, invariants: determinism).
        let mut writer = match index.writer_with_num_threads::<TantivyDocument>(1, 256 << 20) {
            Ok(w) => w,
            Err(tantivy::TantivyError::LockFailure(..)) => {
                return Self::wait_for_other_builder(dir, &partial);
            }
            Err(e) => return Err(e.into()),
        };
        // No merges while indexing: the finished index is merged into one
        // segment in row order at the end, whatever was committed when.
        writer.set_merge_policy(Box::new(NoMergePolicy));
        let start = committed_rows(&index)?;
        if start > 0 {
            tracing::info!(
                "bm25: resuming the build of {} after row {start}",
                partial.display()
            );
        }
        let bar = crate::dense::progress_bar(progress, rows, "bm25 index", "passages");
        bar.set_position(start);
        let mut n = 0u64;
        for batch in store.open_batches(corpus, 4096)? {
            let batch = batch.map_err(ArtifactError::from)?;
            let len = batch.num_rows() as u64;
            if n + len <= start {
                n += len;
                continue;
            }
            for c in rows_of::<Corpus>(&batch)? {
                if n >= start {
                    let mut doc = TantivyDocument::default();
                    if let Some(t) = &c.title {
                        doc.add_text(body, t);
                    }
                    doc.add_text(body, &c.text);
                    doc.add_u64(row, n);
                    writer.add_document(doc)?;
                }
                n += 1;
                if n > start && n.is_multiple_of(commit_rows) {
                    commit_at(&mut writer, n)?;
                }
                if stop_after == Some(n) {
                    // Uncommitted documents are lost, as in a crash.
                    writer.rollback()?;
                    return Ok(());
                }
            }
            bar.set_position(n);
        }
        commit_at(&mut writer, n)?;
        bar.finish_and_clear();
        Self::merge_in_row_order(&index, &mut writer, n)?;
        writer.wait_merging_threads()?;
        publish(
            &partial,
            dir,
            &format!("{corpus}\n{}\n{n}\n", analyzer.name()),
        )?;
        tracing::info!("bm25: indexed {n} passages ({})", analyzer.name());
        Ok(())
    }

    /// The partial index at `partial` (created empty when there is none),
    /// with the analyzer registered, and its `body` and `row` fields.
    fn open_partial(
        partial: &std::path::Path,
        analyzer: Analyzer,
    ) -> Result<(Index, Field, Field)> {
        std::fs::create_dir_all(partial).map_err(|e| io_error(partial, e))?;
        let (schema, body, row) = schema();
        let index = if partial.join("meta.json").is_file() {
            Index::open_in_dir(partial)?
        } else {
            Index::create_in_dir(partial, schema)?
        };
        index.tokenizers().register(TOKENIZER, analyzer.build()?);
        Ok((index, body, row))
    }

    /// Merges every segment into one, in the order of their first rows, so
    /// that a document's id is its corpus row: the index is then the same
    /// whether the build ran straight or resumed, every score is summed in
    /// the same order, and tantivy's tie-break (lower document first) is
    /// the corpus order.
    fn merge_in_row_order(
        index: &Index,
        writer: &mut tantivy::IndexWriter<TantivyDocument>,
        rows: u64,
    ) -> Result<()> {
        let searcher = index.reader()?.searcher();
        let mut segments = searcher
            .segment_readers()
            .iter()
            .map(|s| Ok((s.fast_fields().u64("row")?.min_value(), s.segment_id())))
            .collect::<tantivy::Result<Vec<_>>>()?;
        if segments.len() < 2 {
            return Ok(());
        }
        segments.sort_by_key(|s| s.0);
        let ids: Vec<_> = segments.into_iter().map(|s| s.1).collect();
        tracing::info!("bm25: merging {} segments into one", ids.len());
        writer.merge(&ids).wait()?;
        let mut commit = writer.prepare_commit()?;
        commit.set_payload(&rows.to_string());
        commit.commit()?;
        writer.garbage_collect_files().wait()?;
        Ok(())
    }

    /// Another process holds the writer lock of the partial index: wait
    /// until it publishes the finished index (or its lock goes away, when
    /// the caller's next run takes the build over).
    fn wait_for_other_builder(dir: &std::path::Path, partial: &std::path::Path) -> Result<()> {
        tracing::info!(
            "bm25: another process is building {}; waiting for it",
            partial.display()
        );
        let started = std::time::Instant::now();
        while started.elapsed() < LOCK_WAIT {
            if dir.join(".complete").is_file() {
                return Ok(());
            }
            if !partial.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        if dir.join(".complete").is_file() {
            return Ok(());
        }
        Err(RetrieveError::bm25(format!(
            "{}: another process holds the index writer's lock and did not finish the build",
            partial.display()
        )))
    }

    /// The query for a question: one SHOULD clause per analysed token
    /// (repeated tokens count again, like a repeated query term in Lucene).
    fn query(&self, analyzer: &mut TextAnalyzer, text: &str) -> BooleanQuery {
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        let mut stream = analyzer.token_stream(text);
        while let Some(tok) = stream.next() {
            let term = Term::from_field_text(self.body, &tok.text);
            clauses.push((
                Occur::Should,
                Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs)),
            ));
        }
        BooleanQuery::new(clauses)
    }

    /// Top `n` passages for one question.
    pub fn search(&self, analyzer: &mut TextAnalyzer, text: &str, n: usize) -> Result<Vec<Hit>> {
        let query = self.query(analyzer, text);
        if n == 0 {
            return Ok(Vec::new());
        }
        // Ties at the cut must be broken by corpus row, not by segment
        // layout: with several segments, fetch beyond n until the last
        // fetched score is below the n-th, so that every passage tied with
        // the n-th is a candidate.
        // A finished index has one segment whose document ids are corpus
        // rows, so tantivy's own tie-break is already by row.
        let mut limit = if self.rows.len() > 1 { n + 16 } else { n };
        let top = loop {
            let top = self
                .searcher
                .search(&query, &TopDocs::with_limit(limit).order_by_score())?;
            if self.rows.len() <= 1 || top.len() < limit || top[limit - 1].0 < top[n - 1].0 {
                break top;
            }
            limit *= 4;
        };
        let mut hits = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let row = self.rows[addr.segment_ord as usize]
                .first(addr.doc_id)
                .ok_or_else(|| RetrieveError::bm25("document without row"))?;
            hits.push(Hit {
                row,
                score: score as f64,
            });
        }
        sort_hits(&mut hits);
        hits.truncate(n);
        Ok(hits)
    }

    /// Top `n` passages for every question, on all cores; order follows `texts`.
    pub fn search_all(&self, texts: &[&str], n: usize) -> Result<Vec<Vec<Hit>>> {
        let analyzer = self.analyzer.build()?;
        texts
            .par_iter()
            .map_init(|| analyzer.clone(), |a, t| self.search(a, t, n))
            .collect()
    }
}

/// Commit what `writer` holds with `rows`, the passages indexed so far, as
/// the payload: where a resumed build continues ([`committed_rows`]).
fn commit_at(writer: &mut tantivy::IndexWriter<TantivyDocument>, rows: u64) -> Result<()> {
    let mut commit = writer.prepare_commit()?;
    commit.set_payload(&rows.to_string());
    commit.commit()?;
    Ok(())
}

/// Mark the finished index in `partial` complete (`complete`: what it
/// indexes) and publish it as `dir` by renaming; when another process
/// published the same index first, use theirs.
fn publish(partial: &std::path::Path, dir: &std::path::Path, complete: &str) -> Result<()> {
    std::fs::write(partial.join(".complete"), complete).map_err(|e| io_error(partial, e))?;
    match std::fs::rename(partial, dir) {
        Ok(()) => Ok(()),
        Err(_) if dir.join(".complete").is_file() => {
            let _ = std::fs::remove_dir_all(partial);
            Ok(())
        }
        Err(e) => Err(io_error(dir, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ragprobe_artifact::{CorpusRow, Recipe, Sink};
    use serde_json::json;

    fn corpus(store: &Store, n: usize) -> String {
        let mut sink =
            Sink::<Corpus>::new(store, &Recipe::new("test-input", 1, json!({}))).unwrap();
        for i in 0..n {
            sink.push(CorpusRow {
                doc_id: format!("d{i}"),
                title: Some(format!("Title {}", i % 7)),
                text: format!(
                    "passage {i} about topic{} and topic{} with word{}",
                    i % 5,
                    i % 11,
                    i % 3
                ),
                ..Default::default()
            })
            .unwrap();
        }
        sink.finish(json!(null)).unwrap().id
    }

    /// An interrupted build (a crash after row 23, past two commits of 10
    /// rows) resumes from its last commit and ranks exactly as a build that
    /// was never interrupted.
    #[test]
    fn an_interrupted_build_resumes_after_its_last_commit() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (sa, sb) = (
            Store::open(a.path()).unwrap(),
            Store::open(b.path()).unwrap(),
        );
        let (ca, cb) = (corpus(&sa, 57), corpus(&sb, 57));
        assert_eq!(ca, cb);
        let an = Analyzer::English;
        let dir = Bm25Index::dir(&sa, &ca, an);
        Bm25Index::build(&sa, &ca, an, &dir, false, 10, Some(23)).unwrap();
        assert!(!dir.join(".complete").exists(), "not published");
        let partial = dir.with_extension("partial");
        assert_eq!(
            committed_rows(&Index::open_in_dir(&partial).unwrap()).unwrap(),
            20
        );
        let resumed = Bm25Index::open_or_build(&sa, &ca, an, false).unwrap();
        assert!(dir.join(".complete").is_file() && !partial.exists());
        let fresh = Bm25Index::open_or_build(&sb, &cb, an, false).unwrap();
        assert_eq!(resumed.searcher.num_docs(), 57);
        assert_eq!(resumed.rows.len(), 1, "one segment after the build");
        let queries = [
            "topic3 word1",
            "passage 42",
            "Title 6 topic10",
            "topic0 topic0",
        ];
        assert_eq!(
            resumed.search_all(&queries, 8).unwrap(),
            fresh.search_all(&queries, 8).unwrap()
        );
        let hits = resumed.search_all(&["passage 42"], 1).unwrap();
        assert_eq!(hits[0][0].row, 42);
    }
}
