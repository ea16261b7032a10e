//! `ragprobe query` and `score --by` through the binary, on a small store
//! made here (a table dataset with a popularity column, external
//! predictions), against values counted by hand.

mod common;
use common::*;

/// q1..q6 with popularity 10, 20, 30, 400, 500, 600; predictions right for
/// q1, q4, q5, q6 (and wrong for q2, q3).
fn setup(dir: &std::path::Path) -> (std::path::PathBuf, String) {
    let store = dir.join("store");
    let csv = dir.join("pop.csv");
    std::fs::write(
        &csv,
        "id,question,answers,pop\n\
         q1,Capital of France?,Paris,10\n\
         q2,Capital of Italy?,Rome,20\n\
         q3,Capital of Spain?,Madrid,30\n\
         q4,Capital of Germany?,Berlin,400\n\
         q5,Capital of Norway?,Oslo,500\n\
         q6,Capital of Peru?,Lima,600\n",
    )
    .unwrap();
    let (outs, _) = run_ok(
        dir,
        &store,
        &[
            "ingest",
            "--format",
            "table",
            csv.to_str().unwrap(),
            "--dataset",
            "pop",
            "--col-id",
            "id",
        ],
    );
    let q = id_of(&outs, "questions").to_string();
    let preds = dir.join("preds.jsonl");
    std::fs::write(
        &preds,
        "{\"id\":\"q1\",\"prediction\":\"Paris\"}\n{\"id\":\"q2\",\"prediction\":\"Milan\"}\n\
         {\"id\":\"q3\",\"prediction\":\"Seville\"}\n{\"id\":\"q4\",\"prediction\":\"Berlin\"}\n\
         {\"id\":\"q5\",\"prediction\":\"Oslo\"}\n{\"id\":\"q6\",\"prediction\":\"Lima, Peru\"}\n",
    )
    .unwrap();
    let p = preds.to_str().unwrap().to_string();
    run_ok(
        dir,
        &store,
        &[
            "score",
            "--predictions",
            &p,
            "--against",
            &q,
            "--by",
            "meta.pop",
            "--bins",
            "2",
            "--bootstrap",
            "50",
        ],
    );
    (store, q)
}

#[test]
fn a_binned_breakdown_through_score_and_query() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = setup(dir.path());
    // Two quantile bins over 10..600: the edge is the 3rd smallest of 6
    // values (0-based index 3): 400. [10, 400): q1-q3, 1 of 3 right;
    // [400, 600]: q4-q6, 3 of 3.
    let out = ok(&ragprobe(
        &store,
        &[
            "query",
            "SELECT breakdown_group AS bin, value, n FROM metrics WHERE metric = 'acc' AND breakdown = 'meta.pop' ORDER BY bin",
            "--csv",
            "-",
        ],
    ));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "bin,value,n");
    let row = |l: &str| -> (String, f64, i64) {
        let f: Vec<&str> = l.split(',').collect();
        (
            f[..f.len() - 2].join(","),
            f[f.len() - 2].parse().unwrap(),
            f[f.len() - 1].parse().unwrap(),
        )
    };
    let (b0, v0, n0) = row(lines[1]);
    let (b1, v1, n1) = row(lines[2]);
    assert_eq!((b0.as_str(), n0), ("\"[10, 400)\"", 3));
    assert!((v0 - 100.0 / 3.0).abs() < 1e-9, "{v0}");
    assert_eq!((b1.as_str(), v1, n1), ("\"[400, 600]\"", 100.0, 3));
}

#[test]
fn a_join_slices_scores_by_a_question_column_and_saves_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = setup(dir.path());
    let sql = "SELECT q.meta, s.accuracy FROM scores s JOIN questions q USING (qid) WHERE NOT s.accuracy ORDER BY q.meta";
    let out = ok(&ragprobe(&store, &["query", sql, "--json", "-"]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let metas: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["meta"].as_str().unwrap())
        .collect();
    assert_eq!(metas, [r#"{"pop":"20"}"#, r#"{"pop":"30"}"#]);
    // --save: a table artifact whose manifest records the SQL.
    let o = ragprobe(
        &store,
        &[
            "query",
            "SELECT model, avg(accuracy) AS acc FROM scores GROUP BY model",
            "--save",
        ],
    );
    let outs = outputs(&ok(&o));
    let t = id_of(&outs, "table").to_string();
    let show = ok(&ragprobe(&store, &["artifacts", "show", &t]));
    assert!(show.contains("avg(accuracy)"), "{show}");
    // The terminal table shows the saved rows.
    let shown = ok(&ragprobe(
        &store,
        &["query", &format!("SELECT acc FROM '{}'", &t[..12])],
    ));
    assert!(shown.contains("66.6") || shown.contains("0.666"), "{shown}");
}

#[test]
fn query_errors_name_the_position_and_exit_nonzero() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = setup(dir.path());
    let o = ragprobe(&store, &["query", "SELECT x FROM nowhere"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("query line 1, column 15: unknown table `nowhere`"),
        "{e}"
    );
    let o = ragprobe(&store, &["query", "SELECT model FROM scores WHERE"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("SQL syntax"), "{}", stderr(&o));
}

#[test]
fn pipeline_scope_reads_only_what_the_pipeline_made() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let fx = fixtures();
    let pipeline = dir.path().join("p.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[steps.nq]\nstage = \"ingest\"\nformat = \"dpr\"\npaths = [\"{}\"]\n",
            fx.join("nq-mini.jsonl").display()
        ),
    )
    .unwrap();
    run_ok(dir.path(), &store, &["run", pipeline.to_str().unwrap()]);
    // Another questions artifact, written later: the latest, but not the pipeline's.
    let (outs, _) = run_ok(
        dir.path(),
        &store,
        &[
            "ingest",
            "--format",
            "table",
            fx.join("table-mini.csv").to_str().unwrap(),
        ],
    );
    let table_q = id_of(&outs, "questions").to_string();
    let count = |extra: &[&str]| -> String {
        let mut args = vec![
            "query",
            "SELECT dataset, count(*) AS n FROM questions GROUP BY dataset ORDER BY dataset",
            "--csv",
            "-",
        ];
        args.extend_from_slice(extra);
        ok(&ragprobe(&store, &args))
    };
    let latest = count(&[]);
    let piped = count(&["--pipeline", pipeline.to_str().unwrap()]);
    let all = count(&["--all"]);
    assert!(latest.contains("table-mini,"), "{latest}");
    assert!(
        !piped.contains("table-mini") && piped.contains("nq-mini,"),
        "{piped}"
    );
    assert!(
        all.contains("table-mini,") && all.contains("nq-mini,"),
        "{all}"
    );
    // The latest is bound by id too.
    let by_id = ok(&ragprobe(
        &store,
        &[
            "query",
            &format!("SELECT count(*) AS n FROM '{}'", &table_q[..10]),
            "--csv",
            "-",
        ],
    ));
    assert!(
        latest.ends_with(&format!(",{}\n", by_id.lines().nth(1).unwrap())),
        "{latest} / {by_id}"
    );
}

/// Without `ragprobe-query` beside it or on PATH, `ragprobe query` says
/// how to build it (one line, exit status 1).
#[test]
fn query_without_the_plugin_says_how_to_build_it() {
    let d = tempfile::tempdir().unwrap();
    let exe = d.path().join("ragprobe");
    std::fs::copy(env!("CARGO_BIN_EXE_ragprobe"), &exe).unwrap();
    let out = std::process::Command::new(&exe)
        .env("PATH", d.path().join("nothing"))
        .args(["--store"])
        .arg(d.path().join("store"))
        .args(["query", "SELECT 1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("needs the `ragprobe-query` binary")
            && err.contains("cargo build --release -p ragprobe-query-cli"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
