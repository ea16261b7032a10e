//! The dataset registry: one entry per dataset the reproduction pipelines
//! read, each with its sources at a pinned revision, its license and
//! citation, how it is ingested, and what is known of its bytes.
//!
//! An entry is split into **parts** (a language, a testbed file, a split):
//! `data get NAME --only PART,…` fetches some of them. Each part is one or
//! more files laid out under `<data dir>/<dataset>/` with the names the
//! pipelines expect (`rgb/en.jsonl`, `nomiracl/de.jsonl`, …), then ingested
//! with the options the pipeline's own ingest step uses, so the artifacts
//! are the ones `ragprobe ingest` makes from the same files.
//!
//! Revisions: a hub source names a commit or tag of the dataset repository;
//! a GitHub source a commit. Where this registry could not check a
//! revision against the real host it says so in [`Dataset::note`], and a
//! file without a pinned SHA-256 is recorded on first download (trust on
//! first use): a later download with other bytes is refused and says so.

use ragprobe_ingest::Format;

/// Where one file comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A file of a Hugging Face dataset repository, fetched through the hub
    /// protocol (`HF_ENDPOINT` redirects it; `HF_TOKEN` for gated repos).
    Hub {
        /// `owner/name`.
        repo: &'static str,
        /// A commit SHA or tag.
        revision: &'static str,
        /// The file's path in the repository.
        path: &'static str,
    },
    /// A plain HTTPS URL (`RAGPROBE_MIRROR` replaces its scheme and host).
    Url(&'static str),
}

/// One file of a part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileSpec {
    /// The file's name in the dataset's directory (what the pipeline reads).
    pub name: &'static str,
    /// Where it comes from.
    pub source: Source,
    /// Its SHA-256, when pinned; `None`: recorded on first download.
    pub sha256: Option<&'static str>,
    /// Its size in bytes, when known (shown by `data ls`).
    pub bytes: Option<u64>,
    /// A file the source may lack (a split some languages do not have):
    /// a 404 skips it.
    pub optional: bool,
}

/// One part of a dataset: its files and how they are ingested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// The part's name (`en`, `en_fact`, `test`, …).
    pub name: &'static str,
    /// Its files.
    pub files: &'static [FileSpec],
    /// `--dataset` of the ingest (as the pipeline's step).
    pub dataset: &'static str,
    /// `--lang` of the ingest, when the pipeline sets it.
    pub lang: Option<&'static str>,
    /// What is ingested, relative to the study's directory, when it is not
    /// the files themselves (a directory such as NoMIRACL's `<lang>/`, or
    /// what [`Part::unpack`] makes of an archive).
    pub ingest: Option<&'static str>,
    /// `--evidence-dir` of the ingest, relative to the study's directory
    /// (TriviaQA's evidence documents).
    pub evidence: Option<&'static str>,
    /// What is made of the part's archives (zip files among its `files`):
    /// each output is written once, atomically, after the archive is
    /// verified; once every output is there the archive is not needed
    /// again (it may be deleted, and is not fetched again).
    pub unpack: &'static [Unpack],
}

/// One output made of a zip archive of a part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unpack {
    /// The archive: the name of one of the part's files.
    pub archive: &'static str,
    /// What of it.
    pub take: Take,
    /// The output, relative to the study's directory.
    pub to: &'static str,
}

/// What an [`Unpack`] takes from its archive. Member paths are the
/// archive's own (`/`-separated, no leading `/`); a member whose path
/// would leave the output is refused, never written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// One member, as a file.
    Member(&'static str),
    /// Every file under a directory prefix (`evidence/wikipedia/`), as a
    /// directory with the same relative paths.
    Tree(&'static str),
    /// Every file under a prefix (`""`: the whole archive), each one JSON
    /// object, in member-name order, as one JSON Lines file (SearchQA's
    /// one-file-per-question archives).
    JsonLines(&'static str),
}

/// How a dataset is obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Downloaded by `data get`.
    Download,
    /// Behind a form or a license click: `data get` prints these
    /// instructions (what to download, where to put it) and stops.
    Manual(&'static str),
}

/// A dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dataset {
    /// The name `data get` takes.
    pub name: &'static str,
    /// The study (pipeline file name) that reads it: its files are laid out
    /// under `<data dir>/<study>/`, the pipeline's `data`.
    pub study: &'static str,
    /// One line on what it is.
    pub description: &'static str,
    /// The license of the data.
    pub license: &'static str,
    /// The paper to cite.
    pub citation: &'static str,
    /// The ingest format.
    pub format: Format,
    /// Its parts.
    pub parts: &'static [Part],
    /// Downloaded, or by hand.
    pub access: Access,
    /// What is pinned and what is not, in words.
    pub note: &'static str,
}

impl Dataset {
    /// The parts `only` names (all when empty); an unknown part is an
    /// error naming the known ones.
    pub fn select(&self, only: &[String]) -> Result<Vec<&'static Part>, String> {
        if only.is_empty() {
            return Ok(self.parts.iter().collect());
        }
        only.iter()
            .map(|o| {
                self.parts.iter().find(|p| p.name == o).ok_or_else(|| {
                    format!(
                        "dataset `{}` has no part `{o}` (parts: {})",
                        self.name,
                        self.parts
                            .iter()
                            .map(|p| p.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
            })
            .collect()
    }

    /// Bytes to download for `parts`, when every file's size is known.
    pub fn bytes(parts: &[&Part]) -> Option<u64> {
        parts.iter().flat_map(|p| p.files).map(|f| f.bytes).sum()
    }
}

/// The commit of chen700564/RGB the files are read at: the one at which
/// `en_fact.json`, `zh_fact.json` and `zh_int.json` were seen in public
/// copies of the repository (not checked from here for the other three).
macro_rules! rgb_part {
    ($name:literal, $lang:literal) => {
        Part {
            name: $name,
            files: &[FileSpec {
                name: concat!($name, ".jsonl"),
                source: Source::Url(concat!(
                    "https://raw.githubusercontent.com/chen700564/RGB/d2293eec8c76467c1572b3ebedcaca4e9b4e82f4/data/",
                    $name,
                    ".json"
                )),
                sha256: None,
                bytes: None,
                optional: false,
            }],
            dataset: concat!("rgb-", $name),
            lang: Some($lang),
            ingest: None,
            evidence: None,
            unpack: &[],
        }
    };
}

/// One file of NoMIRACL's repository (`data/<language>/<path>`), laid out
/// as `<code>/<path>` (the pipeline's `--set ext=` directory layout).
macro_rules! nomiracl_file {
    ($code:literal, $folder:literal, $path:literal, $optional:expr) => {
        FileSpec {
            name: concat!($code, "/", $path),
            source: Source::Hub {
                repo: "miracl/nomiracl",
                revision: "ecd08778d0426a5ca28ac99763b0c9ddc2c78e68",
                path: concat!("data/", $folder, "/", $path),
            },
            sha256: None,
            bytes: None,
            optional: $optional,
        }
    };
}

/// A language of NoMIRACL: its corpus, and the topics and qrels of both
/// splits and subsets (each optional: a language may lack a split).
macro_rules! nomiracl_part {
    ($code:literal, $folder:literal) => {
        Part {
            name: $code,
            files: &[
                nomiracl_file!($code, $folder, "corpus.jsonl.gz", false),
                nomiracl_file!($code, $folder, "topics/dev.relevant.tsv", true),
                nomiracl_file!($code, $folder, "topics/dev.non_relevant.tsv", true),
                nomiracl_file!($code, $folder, "topics/test.relevant.tsv", true),
                nomiracl_file!($code, $folder, "topics/test.non_relevant.tsv", true),
                nomiracl_file!($code, $folder, "qrels/dev.relevant.tsv", true),
                nomiracl_file!($code, $folder, "qrels/dev.non_relevant.tsv", true),
                nomiracl_file!($code, $folder, "qrels/test.relevant.tsv", true),
                nomiracl_file!($code, $folder, "qrels/test.non_relevant.tsv", true),
            ],
            dataset: "nomiracl",
            lang: None,
            ingest: Some($code),
            evidence: None,
            unpack: &[],
        }
    };
}

/// A single-file part.
macro_rules! one_file {
    ($part:literal, $name:literal, $source:expr, $sha:expr, $bytes:expr, $dataset:literal) => {
        Part {
            name: $part,
            files: &[FileSpec {
                name: $name,
                source: $source,
                sha256: $sha,
                bytes: $bytes,
                optional: false,
            }],
            dataset: $dataset,
            lang: None,
            ingest: None,
            evidence: None,
            unpack: &[],
        }
    };
}

/// Every dataset of the four reproduction pipelines.
pub const DATASETS: &[Dataset] = &[
    Dataset {
        name: "nq",
        study: "imperfect-retrieval",
        description: "Natural Questions test, DPR's top-100 retrieval results (single-set DPR)",
        license: "CC BY-SA 3.0 (Natural Questions; DPR's nq_license files)",
        citation: "Karpukhin et al. Dense Passage Retrieval for Open-Domain Question Answering. EMNLP 2020",
        format: Format::Dpr,
        parts: &[one_file!(
            "test",
            "nq.jsonl",
            Source::Url("https://dl.fbaipublicfiles.com/dpr/data/retriever_results/single/nq-test.json.gz"),
            None,
            None,
            "nq"
        )],
        access: Access::Download,
        note: "DPR's download_data.py resource data.retriever_results.nq.single.test (a gzipped JSON array, read as is); no published checksum: recorded on first download",
    },
    Dataset {
        name: "tqa",
        study: "imperfect-retrieval",
        description: "TriviaQA test with top-k retrieval results in DPR format",
        license: "Apache 2.0 (TriviaQA)",
        citation: "Joshi et al. TriviaQA: A Large Scale Distantly Supervised Challenge Dataset for Reading Comprehension. ACL 2017",
        format: Format::Dpr,
        parts: &[one_file!("test", "tqa.jsonl", Source::Url("https://dl.fbaipublicfiles.com/FiD/data/tqa_passages.tar.gz"), None, None, "tqa")],
        access: Access::Manual(
            "DPR publishes no TriviaQA retrieval results, and FiD's (https://dl.fbaipublicfiles.com/FiD/data/tqa_passages.tar.gz with dataindex.tar.gz) hold passage ids into DPR's psgs_w100.tsv (13 GB); build them with FiD's src/preprocess.py, or retrieve with `ragprobe retrieve` over psgs_w100, and save the DPR-format result as <data dir>/imperfect-retrieval/tqa.jsonl",
        ),
        note: "by hand: no downloadable file in the pipeline's format",
    },
    Dataset {
        name: "webq",
        study: "imperfect-retrieval",
        description: "WebQuestions test with top-k retrieval results in DPR format",
        license: "CC BY 4.0 (WebQuestions)",
        citation: "Berant et al. Semantic Parsing on Freebase from Question-Answer Pairs. EMNLP 2013",
        format: Format::Dpr,
        parts: &[one_file!("test", "webq.jsonl", Source::Url("https://dl.fbaipublicfiles.com/dpr/data/retriever/webquestions-test.qa.csv"), None, None, "webq")],
        access: Access::Manual(
            "no retrieval results for WebQuestions are published: take DPR's questions (https://dl.fbaipublicfiles.com/dpr/data/retriever/webquestions-test.qa.csv) and passages (psgs_w100.tsv), run `ragprobe retrieve`, and save the DPR-format result as <data dir>/imperfect-retrieval/webq.jsonl",
        ),
        note: "by hand: no downloadable file in the pipeline's format",
    },
    Dataset {
        name: "popqa",
        study: "imperfect-retrieval",
        description: "PopQA long tail with Contriever + search retrieval, Self-RAG's evaluation format (1,399 questions)",
        license: "MIT (Self-RAG); the Hugging Face copy's card says `other`",
        citation: "Asai et al. Self-RAG: Learning to Retrieve, Generate, and Critique through Self-Reflection. ICLR 2024; Mallen et al. When Not to Trust Language Models. ACL 2023",
        format: Format::Selfrag,
        parts: &[one_file!(
            "test",
            "popqa.jsonl",
            Source::Hub {
                repo: "Salesforce/ContextualBench",
                revision: "831b3f704ed497faa205fcd96803f9b5552b7fbb",
                path: "popqa_longtail_w_gs.jsonl",
            },
            Some("3b9ae00ff8ad42995bf5b0f7c5b920e369c8be2c2f2772d3a8cf728d4795efc3"),
            Some(20_332_067),
            "popqa"
        )],
        access: Access::Download,
        note: "Self-RAG's popqa_longtail_w_gs.jsonl as mirrored in Salesforce/ContextualBench (its Google Drive original is gone); SHA-256 and size from the repository's LFS pointer; whether it equals the Drive original is not known",
    },
    Dataset {
        name: "nomiracl",
        study: "nomiracl",
        description: "NoMIRACL: relevant and non-relevant passage sets for 18 languages (corpus, topics, qrels)",
        license: "Apache 2.0",
        citation: "Thakur et al. \"Knowing When You Don't Know\": A Multilingual Relevance Assessment Dataset for Robust Retrieval-Augmented Generation. Findings of EMNLP 2024",
        format: Format::Records(&ragprobe_studies::nomiracl::format::NomiraclFormat),
        parts: &[
            nomiracl_part!("ar", "arabic"),
            nomiracl_part!("bn", "bengali"),
            nomiracl_part!("de", "german"),
            nomiracl_part!("en", "english"),
            nomiracl_part!("es", "spanish"),
            nomiracl_part!("fa", "persian"),
            nomiracl_part!("fi", "finnish"),
            nomiracl_part!("fr", "french"),
            nomiracl_part!("hi", "hindi"),
            nomiracl_part!("id", "indonesian"),
            nomiracl_part!("ja", "japanese"),
            nomiracl_part!("ko", "korean"),
            nomiracl_part!("ru", "russian"),
            nomiracl_part!("sw", "swahili"),
            nomiracl_part!("te", "telugu"),
            nomiracl_part!("th", "thai"),
            nomiracl_part!("yo", "yoruba"),
            nomiracl_part!("zh", "chinese"),
        ],
        access: Access::Download,
        note: "Hugging Face miracl/nomiracl at ecd08778 (data/ unchanged since 5911804, the revert to the distribution layout); laid out as <lang>/ directories for `--set ext=`; no published hashes: recorded on first download",
    },
    Dataset {
        name: "triviaqa-rc",
        study: "rag-stress",
        description: "TriviaQA reading comprehension, Wikipedia domain, dev set, with its evidence documents",
        license: "Apache 2.0",
        citation: "Joshi et al. TriviaQA: A Large Scale Distantly Supervised Challenge Dataset for Reading Comprehension. ACL 2017",
        format: Format::Triviaqa,
        parts: &[Part {
            name: "dev",
            files: &[FileSpec {
                name: "triviaqa-rc.zip",
                source: Source::Hub {
                    repo: "mandarjoshi/trivia_qa",
                    revision: "main",
                    path: "data/triviaqa-rc.zip",
                },
                sha256: Some("f5c28a667a3cace893b0dafef8293891dd26b03144a53fc045d6db90aa0ea734"),
                bytes: Some(2_875_302_453),
                optional: false,
            }],
            dataset: "triviaqa",
            lang: None,
            ingest: Some("triviaqa/wikipedia-dev.json"),
            evidence: Some("triviaqa-evidence"),
            unpack: &[
                Unpack {
                    archive: "triviaqa-rc.zip",
                    take: Take::Member("qa/wikipedia-dev.json"),
                    to: "triviaqa/wikipedia-dev.json",
                },
                Unpack {
                    archive: "triviaqa-rc.zip",
                    take: Take::Tree("evidence/wikipedia/"),
                    to: "triviaqa-evidence/wikipedia",
                },
            ],
        }],
        access: Access::Download,
        note: "the Hugging Face copy of the authors' triviaqa-rc archive (2.9 GB; qa/ and evidence/ as in the original tarball); its bytes are pinned by the SHA-256 of the repository's LFS pointer, its revision is `main` because no commit of the repository could be checked from here; qa/wikipedia-dev.json and evidence/wikipedia/ are unpacked, after which the zip may be deleted",
    },
    Dataset {
        name: "hotpotqa",
        study: "rag-stress",
        description: "HotpotQA distractor setting, dev set (7,405 questions)",
        license: "CC BY-SA 4.0",
        citation: "Yang et al. HotpotQA: A Dataset for Diverse, Explainable Multi-hop Question Answering. EMNLP 2018",
        format: Format::Hotpotqa,
        parts: &[one_file!("dev", "hotpot_dev_distractor_v1.json", Source::Url("http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json"), None, None, "hotpotqa")],
        access: Access::Download,
        note: "the original file of hotpotqa/hotpot's download.sh; no published checksum: recorded on first download",
    },
    Dataset {
        name: "searchqa",
        study: "rag-stress",
        description: "SearchQA: Jeopardy! questions with search-engine snippets, validation split",
        license: "unknown (the Hugging Face card says so)",
        citation: "Dunn et al. SearchQA: A New Q&A Dataset Augmented with Context from a Search Engine. arXiv 1704.05179, 2017",
        format: Format::Searchqa,
        parts: &[Part {
            name: "dev",
            files: &[FileSpec {
                name: "searchqa-val.zip",
                source: Source::Hub {
                    repo: "kyunghyuncho/search_qa",
                    revision: "06907e45883b7cae435453b65d598447039fde79",
                    path: "data/train_test_val/val.zip",
                },
                sha256: None,
                bytes: None,
                optional: false,
            }],
            dataset: "searchqa",
            lang: None,
            ingest: Some("searchqa-dev.jsonl"),
            evidence: None,
            unpack: &[Unpack {
                archive: "searchqa-val.zip",
                take: Take::JsonLines(""),
                to: "searchqa-dev.jsonl",
            }],
        }],
        access: Access::Download,
        note: "the Hugging Face dataset's val.zip (about 314 MB; one JSON file per question, as its loading script reads them), written as JSON Lines in member-name order; no published checksum: recorded on first download; a member that is not JSON stops the unpacking with its name",
    },
    Dataset {
        name: "medqa",
        study: "rag-stress",
        description: "MedQA (USMLE, English; Mainland China, Chinese) multiple choice, test sets",
        license: "data license not stated (code MIT)",
        citation: "Jin et al. What Disease does this Patient Have? A Large-scale Open Domain Question Answering Dataset from Medical Exams. Applied Sciences 2021 (arXiv 2009.13081)",
        format: Format::Mcq,
        parts: &[
            one_file!("test", "medqa-test.jsonl", Source::Url("https://drive.google.com/file/d/1ImYUSLk9JbgHXOemfvyiDiirluZHPeQw/view"), None, None, "medqa"),
            one_file!("test-zh", "medqa-test-zh.jsonl", Source::Url("https://drive.google.com/file/d/1ImYUSLk9JbgHXOemfvyiDiirluZHPeQw/view"), None, None, "medqa-zh"),
        ],
        access: Access::Manual(
            "download the MedQA archive from Google Drive (https://drive.google.com/file/d/1ImYUSLk9JbgHXOemfvyiDiirluZHPeQw/view, linked from github.com/jind11/MedQA), then copy data_clean/questions/US/4_options/phrases_no_exclude_test.jsonl to <data dir>/rag-stress/medqa-test.jsonl and data_clean/questions/Mainland/4_options/test.jsonl to <data dir>/rag-stress/medqa-test-zh.jsonl",
        ),
        note: "by hand: Google Drive serves no stable file URL",
    },
    Dataset {
        name: "rgb",
        study: "rgb",
        description: "RGB: noise robustness, negative rejection, information integration, counterfactual robustness (en, zh)",
        license: "CC BY-NC-SA 4.0, non-commercial (the maintainers, chen700564/RGB issue 14)",
        citation: "Chen, Lin, Han, Sun. Benchmarking Large Language Models in Retrieval-Augmented Generation. AAAI 2024",
        format: Format::Records(&ragprobe_studies::rgb::format::RgbFormat),
        parts: &[
            rgb_part!("en", "en"),
            rgb_part!("zh", "zh"),
            rgb_part!("en_int", "en"),
            rgb_part!("zh_int", "zh"),
            rgb_part!("en_fact", "en"),
            rgb_part!("zh_fact", "zh"),
        ],
        access: Access::Download,
        note: "GitHub chen700564/RGB data/*.json (JSON Lines) at commit d2293ee, saved as the .jsonl names pipelines/rgb.toml reads; no published checksums: recorded on first download",
    },
];

/// The dataset called `name`, or an error naming the closest names.
pub fn find(name: &str) -> Result<&'static Dataset, String> {
    if let Some(d) = DATASETS.iter().find(|d| d.name == name) {
        return Ok(d);
    }
    let best = DATASETS
        .iter()
        .map(|d| (strsim::levenshtein(name, d.name), d.name))
        .min();
    let hint = match best {
        Some((dist, n)) if dist <= name.len().div_ceil(2).max(2) => format!("did you mean `{n}`? "),
        _ => String::new(),
    };
    Err(format!(
        "unknown dataset `{name}`: {hint}(known: {}; `ragprobe data ls` lists them)",
        DATASETS
            .iter()
            .map(|d| d.name)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_complete_and_named_once() {
        let mut names: Vec<&str> = DATASETS.iter().map(|d| d.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), DATASETS.len());
        for d in DATASETS {
            assert!(
                !d.parts.is_empty() && !d.license.is_empty() && !d.citation.is_empty(),
                "{}",
                d.name
            );
            for p in d.parts {
                assert!(!p.files.is_empty(), "{} {}", d.name, p.name);
                for f in p.files {
                    assert!(
                        !f.name.starts_with('/')
                            && f.name
                                .split('/')
                                .all(|s| !s.is_empty() && !s.starts_with('.')),
                        "{}",
                        f.name
                    );
                    if let Some(h) = f.sha256 {
                        assert!(h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()));
                    }
                }
            }
        }
    }

    #[test]
    fn an_unknown_name_gets_the_closest() {
        let e = find("nomircl").unwrap_err();
        assert!(e.contains("did you mean `nomiracl`"), "{e}");
        let rgb = find("rgb").unwrap();
        assert!(rgb
            .select(&["xx".into()])
            .unwrap_err()
            .contains("parts: en"));
    }
}
