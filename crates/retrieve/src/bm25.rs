//! BM25 over a corpus artifact with tantivy.
//!
//! The index is derived data under `<store>/indexes/bm25-<key>/`, keyed by
//! the corpus id, the analyzer and the index layout version; it is built
//! once (streaming the corpus, one writer thread so the layout is
//! deterministic), published atomically by renaming a finished temporary
//! directory, and reused by every later run.

use indicatif::{ProgressBar, ProgressStyle};
use ragprobe_artifact::{rows_of, sha256_hex, ArtifactError, Corpus, Store};
use rayon::prelude::*;
use std::path::PathBuf;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, FAST, STORED,
};
use tantivy::tokenizer::{
    Language, LowerCaser, NgramTokenizer, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer,
};
use tantivy::{Index, IndexReader, TantivyDocument, Term};

use crate::{sort_hits, Hit, Result, RetrieveError};

/// Bump when the index layout or analysis changes.
const INDEX_VERSION: u32 = 1;
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
                NgramTokenizer::new(1, 2, false)
                    .map_err(|e| RetrieveError::Index(e.to_string()))?,
            )
            .filter(LowerCaser)
            .build(),
        })
    }
}

/// An open BM25 index over one corpus artifact.
pub struct Bm25Index {
    index: Index,
    reader: IndexReader,
    body: Field,
    row: Field,
    analyzer: Analyzer,
}

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

impl Bm25Index {
    fn dir(store: &Store, corpus: &str, analyzer: Analyzer) -> PathBuf {
        let key =
            sha256_hex(format!("bm25|v{INDEX_VERSION}|{corpus}|{}", analyzer.name()).as_bytes());
        store
            .root()
            .join("indexes")
            .join(format!("bm25-{}", &key[..24]))
    }

    /// Open the index for `corpus`, building it first if needed.
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
            Self::build(store, corpus, analyzer, &dir, progress)?;
        }
        let index = Index::open_in_dir(&dir)?;
        index.tokenizers().register(TOKENIZER, analyzer.build()?);
        let reader = index.reader()?;
        let (_, body, row) = schema();
        Ok(Bm25Index {
            index,
            reader,
            body,
            row,
            analyzer,
        })
    }

    fn build(
        store: &Store,
        corpus: &str,
        analyzer: Analyzer,
        dir: &std::path::Path,
        progress: bool,
    ) -> Result<()> {
        let rows = store.manifest(corpus)?.rows;
        let tmp = store.tmp_path(".index");
        std::fs::create_dir_all(&tmp)
            .map_err(|e| RetrieveError::Index(format!("{}: {e}", tmp.display())))?;
        let (schema, body, row) = schema();
        let index = Index::create_in_dir(&tmp, schema)?;
        index.tokenizers().register(TOKENIZER, analyzer.build()?);
        // One thread: a deterministic segment layout (design.md §7).
        let mut writer = index.writer_with_num_threads::<TantivyDocument>(1, 256 << 20)?;
        let bar = if progress {
            ProgressBar::new(rows)
        } else {
            ProgressBar::hidden()
        };
        bar.set_style(
            ProgressStyle::with_template(
                "bm25 index [{bar:30}] {pos}/{len} passages ({per_sec}, eta {eta})",
            )
            .expect("static")
            .progress_chars("=> "),
        );
        let mut n = 0u64;
        for batch in store.open_batches(corpus, 4096)? {
            let batch = batch.map_err(ArtifactError::from)?;
            for c in rows_of::<Corpus>(&batch)? {
                let mut doc = TantivyDocument::default();
                if let Some(t) = &c.title {
                    doc.add_text(body, t);
                }
                doc.add_text(body, &c.text);
                doc.add_u64(row, n);
                writer.add_document(doc)?;
                n += 1;
            }
            bar.set_position(n);
        }
        writer.commit()?;
        writer.wait_merging_threads()?;
        bar.finish_and_clear();
        std::fs::write(
            tmp.join(".complete"),
            format!("{corpus}\n{}\n{n}\n", analyzer.name()),
        )
        .map_err(|e| RetrieveError::Index(e.to_string()))?;
        match std::fs::rename(&tmp, dir) {
            Ok(()) => {}
            // Another process published the same index first: use theirs.
            Err(_) if dir.join(".complete").is_file() => {
                let _ = std::fs::remove_dir_all(&tmp);
            }
            Err(e) => return Err(RetrieveError::Index(format!("{}: {e}", dir.display()))),
        }
        tracing::info!("bm25: indexed {n} passages ({})", analyzer.name());
        Ok(())
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
        let searcher = self.reader.searcher();
        let query = self.query(analyzer, text);
        // A margin beyond n, so ties at the cut are broken by row, not by layout.
        let top = searcher.search(&query, &TopDocs::with_limit(n + 16).order_by_score())?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let doc: TantivyDocument = searcher.doc(addr)?;
            let row = doc
                .get_first(self.row)
                .and_then(|v| v.as_u64())
                .ok_or_else(|| RetrieveError::Index("document without row".into()))?;
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
        let _ = &self.index;
        texts
            .par_iter()
            .map_init(|| analyzer.clone(), |a, t| self.search(a, t, n))
            .collect()
    }
}
