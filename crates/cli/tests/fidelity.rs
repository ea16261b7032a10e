//! Fidelity to the studies' reference code, through the binary: NoMIRACL's
//! distribution format, passage order and rendered prompt; RGB's
//! information-integration testbed; pipeline list variables.

use ragprobe_artifact::{read, Cases, Contexts, Questions, Store};
use ragprobe_models::prompts::Template;

mod common;
use common::{ok, ragprobe, root};

/// The id on the stdout line that starts with `kind` and a tab (a stage's
/// `kind\tid`, or a pipeline's `step\tkind\tid` with `kind` = `step\tkind`).
fn id_in(stdout: &str, kind: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{kind}\t")))
        .unwrap_or_else(|| panic!("no {kind} in {stdout}"))
        .to_string()
}

/// The reference's `VanillaTemplate` (project-miracl/nomiracl,
/// `nomiracl/prompts/template.py`), written out as its Python builds it:
/// passages are `title + ": " + text`, in qrels order.
fn reference_vanilla(query: &str, passages: &[String]) -> String {
    let answer = "Yes, answer is present";
    let no_answer = "I don't know";
    let mut t = String::from("I will give you a question and several contexts containing information about the question.");
    t += &format!(" Read the contexts carefully. If any of the contexts answers the question, respond as either \"{answer}\" or \"{no_answer}\".");
    t += &format!("\n\nQUESTION:\n{query}\n\nCONTEXTS:\n");
    t += &passages
        .iter()
        .enumerate()
        .map(|(i, p)| format!("[{}] {p}", i + 1))
        .collect::<Vec<_>>()
        .join("\n\n");
    t += "\n\nOUTPUT:\n";
    t
}

#[test]
fn nomiracl_distribution_directory_reads_like_the_rows_and_renders_the_reference_prompt() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("s");
    let dir = ok(&ragprobe(
        &s,
        &[
            "ingest",
            "--format",
            "nomiracl",
            "fixtures/nomiracl-dist/en",
        ],
    ));
    let rows = ok(&ragprobe(
        &s,
        &[
            "ingest",
            "--format",
            "nomiracl",
            "fixtures/nomiracl-mini/en.dev.jsonl",
        ],
    ));
    let store = Store::open(&s).unwrap();
    let (mut qd, mut qr) = (
        read::<Questions>(&store, &id_in(&dir, "questions")).unwrap(),
        read::<Questions>(&store, &id_in(&rows, "questions")).unwrap(),
    );
    qd.sort_by(|a, b| a.qid.cmp(&b.qid));
    qr.sort_by(|a, b| a.qid.cmp(&b.qid));
    assert_eq!(qd.len(), qr.len());
    for (a, b) in qd.iter().zip(&qr) {
        assert_eq!(
            (&a.qid, &a.question, &a.subset, &a.lang),
            (&b.qid, &b.question, &b.subset, &b.lang)
        );
    }
    let (mut cd, mut cr) = (
        read::<Contexts>(&store, &id_in(&dir, "contexts")).unwrap(),
        read::<Contexts>(&store, &id_in(&rows, "contexts")).unwrap(),
    );
    cd.sort_by(|a, b| (&a.qid, a.rank).cmp(&(&b.qid, b.rank)));
    cr.sort_by(|a, b| (&a.qid, a.rank).cmp(&(&b.qid, b.rank)));
    let key = |c: &ragprobe_artifact::ContextRow| {
        (
            c.qid.clone(),
            c.rank,
            c.doc_id.clone(),
            c.title.clone(),
            c.text.clone(),
            c.relevance.clone(),
        )
    };
    assert_eq!(
        cd.iter().map(key).collect::<Vec<_>>(),
        cr.iter().map(key).collect::<Vec<_>>(),
        "same passages in the same (qrels) order"
    );

    // Cases: the judged passages in qrels order, k of them, no shuffle.
    let cases = ok(&ragprobe(
        &s,
        &[
            "perturb",
            "--questions",
            &id_in(&dir, "questions"),
            "--contexts",
            &id_in(&dir, "contexts"),
            "-s",
            "nomiracl",
            "-k",
            "10",
        ],
    ));
    let cases = read::<Cases>(&store, &id_in(&cases, "cases")).unwrap();
    let vanilla = Template::all(&ragprobe_studies::prompt_catalog())
        .into_iter()
        .find(|t| t.id == "nomiracl-vanilla")
        .unwrap();
    // The reference, from the raw files: qrels lines in order, corpus "title: text".
    let corpus: std::collections::HashMap<String, (String, String)> =
        std::fs::read_to_string(root().join("fixtures/nomiracl-dist/en/corpus.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (
                    v["docid"].as_str().unwrap().to_string(),
                    (
                        v["title"].as_str().unwrap().to_string(),
                        v["text"].as_str().unwrap().to_string(),
                    ),
                )
            })
            .collect();
    let mut checked = 0;
    for subset in ["relevant", "non_relevant"] {
        let topics = std::fs::read_to_string(
            root().join(format!("fixtures/nomiracl-dist/en/topics/dev.{subset}.tsv")),
        )
        .unwrap();
        let qrels = std::fs::read_to_string(
            root().join(format!("fixtures/nomiracl-dist/en/qrels/dev.{subset}.tsv")),
        )
        .unwrap();
        for line in topics.lines() {
            let (qid, query) = line.split_once('\t').unwrap();
            let passages: Vec<String> = qrels
                .lines()
                .filter(|l| l.split('\t').next() == Some(qid))
                .map(|l| {
                    let (t, x) = &corpus[l.split('\t').nth(2).unwrap()];
                    format!("{t}: {x}")
                })
                .take(10)
                .collect();
            let case = cases
                .iter()
                .find(|c| c.question == query)
                .unwrap_or_else(|| panic!("no case for {qid}"));
            assert_eq!(case.expected, subset);
            let messages = vanilla.render_case(case);
            assert_eq!(messages.len(), 1);
            assert_eq!(
                messages[0].content,
                reference_vanilla(query, &passages),
                "byte-identical vanilla prompt for {qid}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, qd.len());
}

#[test]
fn nomiracl_distribution_errors_name_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let lang = d.path().join("en");
    std::fs::create_dir_all(lang.join("topics")).unwrap();
    std::fs::create_dir_all(lang.join("qrels")).unwrap();
    std::fs::write(
        lang.join("corpus.jsonl"),
        "{\"docid\": \"d1\", \"title\": \"T\", \"text\": \"x\"}\n",
    )
    .unwrap();
    std::fs::write(lang.join("topics/dev.relevant.tsv"), "q1\tWho?\n").unwrap();
    std::fs::write(
        lang.join("qrels/dev.relevant.tsv"),
        "q1\tQ0\td1\t1\nq1\tQ0\td9\t0\n",
    )
    .unwrap();
    let o = ragprobe(
        &d.path().join("s"),
        &["ingest", "--format", "nomiracl", lang.to_str().unwrap()],
    );
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("dev.relevant.tsv:2") && e.contains("d9"), "{e}");
    std::fs::write(lang.join("qrels/dev.relevant.tsv"), "q1\tQ0\td1\tyes\n").unwrap();
    let o = ragprobe(
        &d.path().join("s2"),
        &["ingest", "--format", "nomiracl", lang.to_str().unwrap()],
    );
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("dev.relevant.tsv:1") && e.contains("integer score"),
        "{e}"
    );
}

#[test]
fn rgb_integration_testbed_ingests_and_selects_passages_per_answer_part() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("s");
    let ing = ok(&ragprobe(
        &s,
        &["ingest", "--format", "rgb", "fixtures/rgb-int-mini.jsonl"],
    ));
    let store = Store::open(&s).unwrap();
    let qs = read::<Questions>(&store, &id_in(&ing, "questions")).unwrap();
    assert_eq!(
        qs[0].answer_parts.as_ref().unwrap().len(),
        2,
        "two required parts"
    );
    let cs = read::<Contexts>(&store, &id_in(&ing, "contexts")).unwrap();
    assert!(cs
        .iter()
        .any(|c| c.doc_id == "positive-1-1" && c.meta.as_deref() == Some("{\"answer_part\":1}")));
    let out = ok(&ragprobe(
        &s,
        &[
            "perturb",
            "--questions",
            &id_in(&ing, "questions"),
            "--contexts",
            &id_in(&ing, "contexts"),
            "-s",
            "rgb-noise",
            "--noise-rate",
            "0,0.4,1",
            "--rgb-passages",
            "5",
        ],
    ));
    let cases = read::<Cases>(&store, &id_in(&out, "cases")).unwrap();
    for c in &cases {
        assert!(
            c.condition.starts_with("rgb-integration-"),
            "{}",
            c.condition
        );
        let parts: std::collections::BTreeSet<&str> = c
            .docs
            .iter()
            .filter(|d| d.source == "positive")
            .map(|d| d.doc_id.split('-').nth(1).unwrap())
            .collect();
        assert_eq!(
            parts.len(),
            2,
            "every answer part is represented, even at noise 1: {:?}",
            c.docs
        );
    }
    // Question 0 (Apollo 11: 2 + 2 positives, 3 negatives), 5 passages:
    // noise 0 -> pos_num 5: 2 firsts + 2 round-robin = 4 positives, 1 negative.
    let at = |cond: &str| {
        cases
            .iter()
            .find(|c| c.qid == qs[0].qid && c.condition == cond)
            .unwrap()
    };
    let count = |c: &ragprobe_artifact::CaseRow, src: &str| {
        c.docs.iter().filter(|d| d.source == src).count()
    };
    assert_eq!(
        (
            count(at("rgb-integration-0"), "positive"),
            count(at("rgb-integration-0"), "negative")
        ),
        (4, 1)
    );
    // noise 0.4 -> pos_num 3: 2 firsts + 1 more; 2 negatives.
    assert_eq!(
        (
            count(at("rgb-integration-0.4"), "positive"),
            count(at("rgb-integration-0.4"), "negative")
        ),
        (3, 2)
    );
    // noise 1 -> pos_num 0: the 2 firsts stay (RGB's guard), 3 negatives.
    assert_eq!(
        (
            count(at("rgb-integration-1"), "positive"),
            count(at("rgb-integration-1"), "negative")
        ),
        (2, 3)
    );
}

#[test]
fn pipeline_list_variables_and_missing_inputs_name_the_variable() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("p.toml");
    std::fs::write(
        &p,
        "[vars]\ndata = \"fixtures/nomiracl-mini\"\nlangs = [\"en\", \"de\", \"fr\"]\nsuffix = \".dev.jsonl\"\n\n[steps.i]\nstage = \"ingest\"\nformat = \"nomiracl\"\npaths = [\"{{data}}/{{langs}}{{suffix}}\"]\n",
    )
    .unwrap();
    // fr does not exist: the error names the variables that made the path.
    let o = ragprobe(&d.path().join("s"), &["run", p.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("p.toml:9")
            && e.contains("fr.dev.jsonl")
            && e.contains("--set langs=")
            && e.contains("--set data="),
        "{e}"
    );
    // --set langs=en,de: one file per language.
    let o = ragprobe(
        &d.path().join("s"),
        &["run", p.to_str().unwrap(), "--set", "langs=en,de"],
    );
    let out = ok(&o);
    let store = Store::open(d.path().join("s")).unwrap();
    let q = read::<Questions>(&store, &id_in(&out, "i\tquestions")).unwrap();
    let langs: std::collections::BTreeSet<String> = q.iter().map(|x| x.lang.clone()).collect();
    assert_eq!(langs.into_iter().collect::<Vec<_>>(), ["de", "en"]);
}

/// Seed 001: the reference's query sample (`load_data_sample`, 0.5/0.5,
/// `random.seed(42)`), drawn with CPython's generator from each subset in
/// qrels order: the same queries for the rows and for the distribution
/// directory of the same data.
#[test]
fn nomiracl_query_sample_is_the_reference_draw() {
    let d = tempfile::tempdir().unwrap();
    let s = d.path().join("s");
    let mut picked = Vec::new();
    for input in [
        "fixtures/nomiracl-dist/en",
        "fixtures/nomiracl-mini/en.dev.jsonl",
    ] {
        let ing = ok(&ragprobe(&s, &["ingest", "--format", "nomiracl", input]));
        let out = ok(&ragprobe(
            &s,
            &[
                "perturb",
                "--questions",
                &id_in(&ing, "questions"),
                "--contexts",
                &id_in(&ing, "contexts"),
                "-s",
                "nomiracl",
                "-k",
                "10",
                "--nomiracl-sample",
                "0.5,0.5",
            ],
        ));
        let store = Store::open(&s).unwrap();
        let mut qids: Vec<String> = read::<Cases>(&store, &id_in(&out, "cases"))
            .unwrap()
            .into_iter()
            .map(|c| format!("{}:{}", c.expected, c.qid))
            .collect();
        qids.sort();
        picked.push(qids);
    }
    assert_eq!(picked[0], picked[1]);
    let (rel, non) = (
        picked[0]
            .iter()
            .filter(|q| q.starts_with("relevant:"))
            .count(),
        picked[0]
            .iter()
            .filter(|q| q.starts_with("non_relevant:"))
            .count(),
    );
    assert_eq!(rel, non, "0.5/0.5 draws balanced pools");
    assert!(rel > 0);
}
