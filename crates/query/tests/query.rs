//! `ragprobe query` on hand-built artifacts, against values computed by hand.

use polars::prelude::*;
use ragprobe_artifact::{kinds, write_all, CaseRow, Recipe, ScoreRow, Store};
use ragprobe_query::{plan, run, save, Binding, Format, QueryError, Scope};

fn score(
    case: &str,
    qid: &str,
    model: &str,
    condition: &str,
    acc: bool,
    foil: Option<bool>,
) -> ScoreRow {
    ScoreRow {
        case_id: case.into(),
        qid: qid.into(),
        dataset: "nq".into(),
        lang: "en".into(),
        condition: condition.into(),
        prompt: "p".into(),
        model: model.into(),
        request_id: format!("r-{case}-{model}"),
        expected: ragprobe_artifact::Expected::Answer,
        flags: ragprobe_artifact::MatchFlags {
            accuracy: Some(acc),
            foil_only: foil,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn case(case: &str, qid: &str, dataset: &str) -> CaseRow {
    CaseRow {
        case_id: case.into(),
        qid: qid.into(),
        dataset: dataset.into(),
        lang: "en".into(),
        condition: "base".into(),
        question: format!("question {qid}?"),
        ..Default::default()
    }
}

/// A store with one scores artifact (2 models x 3 cases) and its cases.
///
/// | case | dataset | m1 acc | m1 foil | m2 acc | m2 foil |
/// |------|---------|--------|---------|--------|---------|
/// | c1   | nq      | true   | false   | false  | true    |
/// | c2   | nq      | false  | true    | false  | true    |
/// | c3   | tqa     | true   | -       | true   | false   |
fn store() -> (tempfile::TempDir, Store, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store")).unwrap();
    let scores = vec![
        score("c1", "q1", "m1", "base", true, Some(false)),
        score("c2", "q2", "m1", "base", false, Some(true)),
        score("c3", "q3", "m1", "closed-book", true, None),
        score("c1", "q1", "m2", "base", false, Some(true)),
        score("c2", "q2", "m2", "base", false, Some(true)),
        score("c3", "q3", "m2", "closed-book", true, Some(false)),
    ];
    let s = write_all::<kinds::Scores>(
        &store,
        &Recipe::new("score", 1, serde_json::json!({"t": 1})),
        scores,
        serde_json::Value::Null,
    )
    .unwrap();
    let cases = vec![
        case("c1", "q1", "nq"),
        case("c2", "q2", "nq"),
        case("c3", "q3", "tqa"),
    ];
    let c = write_all::<kinds::Cases>(
        &store,
        &Recipe::new("perturb", 1, serde_json::json!({"t": 1})),
        cases,
        serde_json::Value::Null,
    )
    .unwrap();
    (dir, store, s.id, c.id)
}

fn query(store: &Store, sql: &str) -> Result<DataFrame, QueryError> {
    let p = plan(store, sql, &[], &Scope::Latest)?;
    run(store, &p)
}

fn strs(df: &DataFrame, col: &str) -> Vec<String> {
    df.column(col)
        .unwrap()
        .as_materialized_series()
        .iter()
        .map(|v| {
            v.get_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string())
        })
        .collect()
}

fn floats(df: &DataFrame, col: &str) -> Vec<f64> {
    df.column(col)
        .unwrap()
        .as_materialized_series()
        .iter()
        .map(|v| v.extract::<f64>().unwrap_or(f64::NAN))
        .collect()
}

#[test]
fn group_by_all_computes_rates_and_counts() {
    let (_d, store, _, _) = store();
    let df = query(
        &store,
        "SELECT model, condition, avg(accuracy) AS acc, count(*) AS n FROM scores GROUP BY ALL ORDER BY model, condition",
    )
    .unwrap();
    assert_eq!(strs(&df, "model"), ["m1", "m1", "m2", "m2"]);
    assert_eq!(
        strs(&df, "condition"),
        ["base", "closed-book", "base", "closed-book"]
    );
    // m1 base: c1 true, c2 false -> 0.5; m1 closed-book: c3 true -> 1;
    // m2 base: both false -> 0; m2 closed-book: c3 true -> 1.
    assert_eq!(floats(&df, "acc"), [0.5, 1.0, 0.0, 1.0]);
    assert_eq!(floats(&df, "n"), [2.0, 1.0, 2.0, 1.0]);
}

#[test]
fn a_join_with_cases_slices_by_dataset() {
    let (_d, store, _, _) = store();
    let df = query(
        &store,
        "SELECT s.model, c.dataset, avg(s.foil_only) AS foil, count(*) AS n \
         FROM scores s JOIN cases c USING (case_id) GROUP BY ALL ORDER BY s.model, c.dataset",
    )
    .unwrap();
    assert_eq!(strs(&df, "model"), ["m1", "m1", "m2", "m2"]);
    assert_eq!(strs(&df, "dataset"), ["nq", "tqa", "nq", "tqa"]);
    // m1 nq: foil false, true -> 0.5; m1 tqa: null only -> null (avg skips
    // nulls); m2 nq: true, true -> 1; m2 tqa: false -> 0.
    let f = floats(&df, "foil");
    assert_eq!((f[0], f[2], f[3]), (0.5, 1.0, 0.0));
    assert!(f[1].is_nan(), "{f:?}");
    assert_eq!(floats(&df, "n"), [2.0, 1.0, 2.0, 1.0]);
}

#[test]
fn a_quoted_id_prefix_names_that_artifact() {
    let (_d, store, scores, _) = store();
    let sql = format!(
        "SELECT case_id, model FROM '{}' WHERE NOT accuracy ORDER BY model, case_id LIMIT 2",
        &scores[..8]
    );
    let df = query(&store, &sql).unwrap();
    assert_eq!(strs(&df, "case_id"), ["c2", "c1"]);
    assert_eq!(strs(&df, "model"), ["m1", "m2"]);
}

#[test]
fn bindings_name_ids_and_files() {
    let (d, store, scores, _) = store();
    let file = d.path().join("copy.parquet");
    std::fs::copy(store.object_path(&scores), &file).unwrap();
    for spec in [scores[..10].to_string(), file.display().to_string()] {
        let b = Binding {
            name: "s".into(),
            spec,
        };
        let p = plan(&store, "SELECT count(*) AS n FROM s", &[b], &Scope::Latest).unwrap();
        assert_eq!(floats(&run(&store, &p).unwrap(), "n"), [6.0]);
    }
}

#[test]
fn a_bound_file_that_is_not_parquet_is_named() {
    let (d, store, _, _) = store();
    let bad = d.path().join("notes.txt");
    std::fs::write(&bad, "hello, not parquet").unwrap();
    let b = Binding {
        name: "s".into(),
        spec: bad.display().to_string(),
    };
    let e = plan(&store, "SELECT * FROM s", &[b], &Scope::Latest)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("notes.txt") && e.contains("not a Parquet file"),
        "{e}"
    );
}

#[test]
fn scope_all_concatenates_every_artifact_of_a_kind() {
    let (_d, store, _, _) = store();
    let more = vec![score("c9", "q9", "m3", "base", true, None)];
    write_all::<kinds::Scores>(
        &store,
        &Recipe::new("score", 1, serde_json::json!({"t": 2})),
        more,
        serde_json::Value::Null,
    )
    .unwrap();
    let n = |scope: Scope| {
        let p = plan(&store, "SELECT count(*) AS n FROM scores", &[], &scope).unwrap();
        floats(&run(&store, &p).unwrap(), "n")[0]
    };
    assert_eq!(n(Scope::All), 7.0);
    // The latest is the one written last: a single row.
    assert_eq!(n(Scope::Latest), 1.0);
}

fn err(store: &Store, sql: &str) -> String {
    match query(store, sql) {
        Ok(df) => panic!("{sql}: expected an error, got {df}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn errors_are_one_line_with_the_position() {
    let (_d, store, _, _) = store();
    let e = err(&store, "SELECT model FROM nothing_here");
    assert!(
        e.starts_with("query line 1, column 19: unknown table `nothing_here`"),
        "{e}"
    );
    let e = err(&store, "SELECT model\nFROM scores WHERE");
    assert!(e.starts_with("query line 2, column "), "{e}");
    assert!(e.contains("SQL syntax"), "{e}");
    let e = err(&store, "SELECT * FROM read_parquet('/etc/passwd')");
    assert!(e.contains("not allowed"), "{e}");
    let e = err(&store, "SELECT model, no_such_column FROM scores");
    assert!(
        e.contains("no_such_column") && e.starts_with("query line 1, column 15:"),
        "{e}"
    );
    assert!(!e.contains('\n'), "one line: {e}");
    // polars names the joined column `dataset:c` and adds a hint paragraph:
    // still one line, pointing at `dataset` in the query.
    let e = err(
        &store,
        "SELECT s.model, c.dataset, count(*) AS n FROM scores s JOIN cases c USING (case_id) \
         GROUP BY s.model, c.dataset ORDER BY s.model, c.dataset",
    );
    assert!(!e.contains('\n'), "one line: {e}");
    assert!(
        e.starts_with("query line 1, column 19:") && e.contains("dataset"),
        "{e}"
    );
    let e = err(&store, "DELETE FROM scores");
    assert!(e.contains("one SELECT"), "{e}");
}

#[test]
fn a_saved_table_is_deterministic_and_records_its_sql() {
    let (_d, store, scores, _) = store();
    let sql = "SELECT model, avg(accuracy) AS acc FROM scores GROUP BY model";
    let p = plan(&store, sql, &[], &Scope::Latest).unwrap();
    let mut df = ragprobe_query::ordered(&p, run(&store, &p).unwrap()).unwrap();
    assert_eq!(strs(&df, "model"), ["m1", "m2"], "sorted without ORDER BY");
    let a = save(&store, &p, &mut df).unwrap();
    assert_eq!(a.kind, "table");
    let m = store.manifest(&a.id).unwrap();
    assert_eq!(m.recipe.stage, "query");
    assert_eq!(m.recipe.inputs, vec![scores.clone()]);
    assert_eq!(m.recipe.params["sql"], sql);
    // The same query into a second store gives the same bytes.
    let (_d2, store2, _, _) = self::store();
    let p2 = plan(&store2, sql, &[], &Scope::Latest).unwrap();
    let mut df2 = ragprobe_query::ordered(&p2, run(&store2, &p2).unwrap()).unwrap();
    assert_eq!(save(&store2, &p2, &mut df2).unwrap().id, a.id);
    // A saved table is itself queryable.
    let t = query(&store, "SELECT acc FROM \"table\" ORDER BY acc").unwrap();
    assert_eq!(floats(&t, "acc"), [0.0 + 1.0 / 3.0, 2.0 / 3.0]);
}

#[test]
fn files_are_written_and_csv_refuses_nested_columns() {
    let (d, store, _, _) = store();
    let mut df = query(
        &store,
        "SELECT model, count(*) AS n FROM scores GROUP BY ALL ORDER BY model",
    )
    .unwrap();
    let csv = d.path().join("out.csv");
    ragprobe_query::write(&mut df, Format::Csv, &csv).unwrap();
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "model,n\nm1,3\nm2,3\n"
    );
    let json = d.path().join("out.json");
    ragprobe_query::write(&mut df, Format::Json, &json).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v[1]["model"], "m2");
    let mut nested = query(&store, "SELECT case_id, docs FROM cases").unwrap();
    let e = ragprobe_query::write(&mut nested, Format::Csv, &csv)
        .unwrap_err()
        .to_string();
    assert!(e.contains("`docs`") && e.contains("--json"), "{e}");
    // The failed write left the earlier file whole.
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "model,n\nm1,3\nm2,3\n"
    );
}

/// Mutated queries (bytes flipped, cut, SQL words spliced in) never panic,
/// and every failure is one clean line.
#[test]
fn mutated_queries_fail_cleanly() {
    let (_d, store, _, _) = store();
    let seeds = [
        "SELECT model, condition, avg(accuracy) AS acc, count(*) AS n FROM scores GROUP BY ALL ORDER BY acc",
        "SELECT s.model, c.dataset, avg(s.foil_only) AS f FROM scores s JOIN cases c USING (case_id) GROUP BY ALL",
        "WITH t AS (SELECT * FROM scores WHERE NOT accuracy) SELECT count(*) AS n FROM t LIMIT 3",
    ];
    let words = [
        " SELECT ",
        " FROM ",
        "(",
        ")",
        ",",
        "'",
        "\"",
        " JOIN cases ",
        " GROUP BY ",
        "*",
        " NOT ",
        "read_parquet('x')",
        ";",
        " -- ",
        "\u{e9}",
    ];
    let mut state: u64 = 42;
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) as usize) % n.max(1)
    };
    let iters: usize = std::env::var("FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut failures = 0;
    for i in 0..iters {
        let mut q: Vec<char> = seeds[i % seeds.len()].chars().collect();
        for _ in 0..1 + next(3) {
            let at = next(q.len() + 1);
            match next(3) {
                0 if !q.is_empty() => {
                    let end = (at + 1 + next(6)).min(q.len());
                    q.drain(at.min(q.len())..end);
                }
                1 => q
                    .splice(at..at, words[next(words.len())].chars())
                    .for_each(drop),
                _ if at < q.len() => q[at] = ['x', '1', ' ', '.', '='][next(5)],
                _ => {}
            }
        }
        let sql: String = q.into_iter().collect();
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| query(&store, &sql)));
        match out {
            Err(_) => panic!("panicked on {sql:?}"),
            Ok(Err(e)) => {
                failures += 1;
                let m = e.to_string();
                assert!(!m.contains('\n') && !m.is_empty(), "{sql:?}: {m:?}");
            }
            Ok(Ok(_)) => {}
        }
    }
    assert!(
        failures > iters / 6,
        "the mutations should break most queries ({failures} of {iters})"
    );
}

/// Hardening II, H1: no query reads a file ragprobe did not bind. Each shape
/// below printed `/etc/os-release` (or read a store object unverified)
/// while the ban was a check of names: a CTE of the same name skipped it.
#[test]
fn no_query_reads_a_file_it_was_not_given() {
    let (d, store, scores, _) = store();
    let outside = d.path().join("outside.csv");
    std::fs::write(&outside, "secret\nleaked\n").unwrap();
    let object = store.object_path(&scores);
    let f = outside.display();
    let o = object.display();
    let shapes = [
        format!("WITH read_csv AS (SELECT 1) SELECT * FROM read_csv('{f}')"),
        format!("WITH read_parquet AS (SELECT 1) SELECT * FROM read_parquet('{o}')"),
        format!("SELECT * FROM \"read_csv\"('{f}')"),
        format!("SELECT * FROM READ_CSV('{f}')"),
        format!("SELECT * FROM Read_Csv('{f}') AS t"),
        format!("SELECT * FROM main.read_csv('{f}')"),
        format!("SELECT * FROM read_csv.x('{f}')"),
        format!("SELECT * FROM (SELECT * FROM read_csv('{f}')) AS t"),
        format!("SELECT * FROM scores WHERE model IN (SELECT secret FROM read_csv('{f}'))"),
        format!("SELECT (SELECT count(*) FROM read_csv('{f}')) AS n FROM scores"),
        format!("WITH x AS (SELECT * FROM read_csv('{f}')) SELECT * FROM x"),
        format!("SELECT * FROM scores JOIN read_csv('{f}') AS t ON true"),
        format!("SELECT model FROM scores UNION ALL SELECT secret FROM read_csv('{f}')"),
        format!("SELECT * FROM (scores JOIN read_ipc('{o}') AS t ON true)"),
        format!("SELECT * FROM read_json('{f}')"),
        format!("SELECT * FROM my_reader('{f}')"),
        "SELECT * FROM other_schema.scores".to_string(),
    ];
    for sql in &shapes {
        match plan(&store, sql, &[], &Scope::Latest) {
            Err(QueryError::Sql { message, .. }) => assert!(
                message.contains("not allowed") || message.contains("one part"),
                "{sql}: {message}"
            ),
            other => panic!("{sql}: expected a refusal, got {other:?}"),
        }
    }
    // A CTE of any name still works when it is only a CTE.
    let df = query(
        &store,
        "WITH read_csv AS (SELECT model FROM scores) SELECT count(*) AS n FROM read_csv",
    )
    .unwrap();
    assert_eq!(floats(&df, "n"), [6.0]);
    // Names used only inside a nested query are bound too.
    let df = query(
        &store,
        "SELECT count(*) AS n FROM scores WHERE case_id IN (SELECT case_id FROM cases WHERE dataset = 'tqa')",
    )
    .unwrap();
    assert_eq!(floats(&df, "n"), [2.0]);
}

/// Hardening II, L4: an SQL construct polars does not run is named in SQL
/// words with its position, not as a Rust syntax-tree dump.
#[test]
fn an_unsupported_construct_is_one_readable_line() {
    let (_d, store, _, _) = store();
    let e = err(&store, "SELECT * FROM scores WHERE model SIMILAR TO 'm%'");
    assert!(
        e.starts_with("query line 1, column ") && e.contains("SIMILAR TO is not supported"),
        "{e}"
    );
    assert!(!e.contains("Ident") && !e.contains('{'), "{e}");
}
