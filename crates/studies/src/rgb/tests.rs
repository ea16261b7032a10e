//! The RGB scenarios against RGB's own `processdata` (`reference.py`, the
//! function copied verbatim): the same files, rates and seed must give the
//! same passages in the same order, case for case, and RGB's raises must
//! be our counted skips. `RAGPROBE_RGB_DATA=<dir>` adds RGB's released
//! files found there (`en.json`, `en_int.json`, `en_fact.json`, the `zh`
//! ones) to the fixtures.

use super::scenarios::{RgbCounterfactual, RgbNoise, RgbOptions, RGB_SEED};
use ragprobe_artifact::{read, Cases, Store};
use ragprobe_ingest::{ingest, Format, IngestOptions};
use ragprobe_perturb::{perturb, PerturbOptions, ScenarioRef};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const RATES: [f64; 6] = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0];

/// (question text, noise rate) -> the passages' texts in prompt order.
type CaseTexts = BTreeMap<(String, String), Vec<String>>;

fn fixture(name: &str) -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    match name {
        "fact-mini.jsonl" => here.join("src/rgb/fixtures").join(name),
        _ => here.join("../../fixtures").join(name),
    }
}

fn rate_key(r: f64) -> String {
    format!("{r:.1}")
}

/// The cases our scenario builds from `path`, keyed by question and rate,
/// and the perturb run's skips.
fn ours(
    path: &Path,
    scenario: ScenarioRef,
    rates: &[f64],
    correct_rate: f64,
) -> (CaseTexts, u64) {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path()).unwrap();
    let rep = ingest(
        &store,
        &IngestOptions {
            format: Some(Format::Records(&super::format::RgbFormat)),
            paths: vec![path.to_path_buf()],
            ..Default::default()
        },
    )
    .unwrap();
    let id = |kind: &str| {
        rep.outputs
            .iter()
            .find(|w| w.kind == kind)
            .unwrap()
            .id
            .clone()
    };
    let opts = PerturbOptions {
        scenarios: vec![scenario],
        seed: RGB_SEED,
        study: RgbOptions {
            noise_rates: rates.to_vec(),
            correct_rate,
            ..Default::default()
        }
        .study_options(),
        ..Default::default()
    };
    let p = perturb(
        &store,
        &id("questions"),
        Some(&id("contexts")),
        &opts,
        None,
        None,
    )
    .unwrap();
    let skipped = p.summary.iter().flat_map(|s| s.skipped.values()).sum();
    let mut out = CaseTexts::new();
    for c in read::<Cases>(&store, &p.cases.id).unwrap() {
        let d: Value = serde_json::from_str(&c.derivation).unwrap();
        let rate = d["noise_rate"]
            .as_f64()
            .unwrap_or_else(|| panic!("no noise_rate in {d}"));
        let texts = c.docs.iter().map(|x| x.text.clone()).collect();
        assert!(
            out.insert((c.question.clone(), rate_key(rate)), texts)
                .is_none(),
            "two cases for one question and rate: {}",
            c.question
        );
    }
    (out, skipped)
}

/// What RGB's `processdata` returns for every instance of `path` at every
/// rate, `random.seed(2333)` before each (as `evalue.py` l.250);
/// `filename` picks its branch (`_int`, `_fact`, or neither). Raises and
/// empty passage lists are left out, with their count.
fn reference(path: &Path, filename: &str, rates: &[f64], correct_rate: f64) -> (CaseTexts, u64) {
    let text = std::fs::read_to_string(path).unwrap();
    let instances: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut jobs = String::new();
    let mut keys = Vec::new();
    for inst in &instances {
        for &r in rates {
            let job = json!({"instance": inst, "noise_rate": r, "passage_num": 5, "filename": filename,
                "correct_rate": correct_rate, "seed": RGB_SEED});
            jobs.push_str(&job.to_string());
            jobs.push('\n');
            keys.push((inst["query"].as_str().unwrap().to_string(), rate_key(r)));
        }
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rgb/reference.py");
    // The jobs go in through a file: a pipe written whole before the
    // output is read would deadlock once both pipe buffers fill.
    let mut input = tempfile::tempfile().unwrap();
    input.write_all(jobs.as_bytes()).unwrap();
    input.seek(SeekFrom::Start(0)).unwrap();
    let out = Command::new("python3")
        .arg(&script)
        .stdin(Stdio::from(input))
        .output()
        .expect("python3 runs RGB's processdata");
    assert!(out.status.success(), "reference.py failed");
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), keys.len());
    let (mut cases, mut dropped) = (CaseTexts::new(), 0);
    for (key, v) in keys.into_iter().zip(lines) {
        match v.as_array() {
            Some(docs) if !docs.is_empty() => {
                let texts = docs.iter().map(|d| d.as_str().unwrap().to_string()).collect();
                cases.insert(key, texts);
            }
            _ => dropped += 1,
        }
    }
    (cases, dropped)
}

fn assert_same(
    path: &Path,
    filename: &str,
    scenario: ScenarioRef,
    rates: &[f64],
    correct: f64,
) -> usize {
    let (want, dropped) = reference(path, filename, rates, correct);
    let (got, skipped) = ours(path, scenario, rates, correct);
    let shown = |m: &CaseTexts| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        shown(&got),
        shown(&want),
        "{}: the cases built differ from processdata's",
        path.display()
    );
    for (k, v) in &want {
        assert_eq!(&got[k], v, "{} {k:?}: passages or order differ", path.display());
    }
    assert_eq!(skipped, dropped, "{}: skips counted", path.display());
    want.len()
}

#[test]
fn noise_cases_are_processdatas() {
    let n = assert_same(&fixture("rgb-mini.jsonl"), "en.json", &RgbNoise, &RATES, 0.0);
    assert_eq!(n, 30 * RATES.len());
    let n = assert_same(&fixture("rgb-zh-mini.jsonl"), "zh.json", &RgbNoise, &RATES, 0.0);
    assert_eq!(n, 10 * RATES.len());
}

#[test]
fn integration_cases_are_processdatas() {
    let n = assert_same(
        &fixture("rgb-int-mini.jsonl"),
        "en_int.json",
        &RgbNoise,
        &RATES,
        0.0,
    );
    assert_eq!(n, 3 * RATES.len());
}

#[test]
fn counterfactual_cases_are_processdatas() {
    let f = fixture("fact-mini.jsonl");
    let n = assert_same(&f, "en_fact.json", &RgbCounterfactual, &RATES, 0.0);
    // Nine questions at six rates, less the short positive_wrong item's
    // raises and the no-negatives item's empty case at rate 1.
    assert!(n > 40 && n < 9 * RATES.len(), "{n}");
    // --correct-rate 0.2: one true passage among them, up to rate 0.8.
    assert_same(&f, "en_fact.json", &RgbCounterfactual, &RATES[..5], 0.2);
}

#[test]
fn counterfactual_rates_that_processdata_cannot_sample_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path()).unwrap();
    let opts = PerturbOptions {
        scenarios: vec![&RgbCounterfactual],
        study: RgbOptions {
            noise_rates: vec![1.0],
            correct_rate: 0.2,
            ..Default::default()
        }
        .study_options(),
        ..Default::default()
    };
    let e = perturb(&store, "nothing", Some("nothing"), &opts, None, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("noise rate 1") && e.contains("correct rate 0.2"), "{e}");
}

/// RGB's released files, when `RAGPROBE_RGB_DATA` names their folder:
/// every `*.json` there, its branch chosen by its name as `processdata` does.
#[test]
fn released_files_when_present() {
    let Some(dir) = std::env::var_os("RAGPROBE_RGB_DATA") else {
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains("_fact") {
            let n = assert_same(&f, &name, &RgbCounterfactual, &RATES, 0.0);
            let m = assert_same(&f, &name, &RgbCounterfactual, &RATES[..5], 0.2);
            eprintln!("{name}: {n} cases, and {m} at correct rate 0.2, identical to processdata's");
        } else {
            let n = assert_same(&f, &name, &RgbNoise, &RATES, 0.0);
            eprintln!("{name}: {n} cases identical to processdata's");
        }
    }
}
