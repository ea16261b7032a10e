//! The BERT encoder on a tiny random model written by the test: each
//! text's vector is bit-identical whatever its batch and SIMD width, agrees
//! with a plain f64 forward pass written out below, and bad files or
//! inputs are one-line errors naming what is wrong.

use ragprobe_engine::encoder::{Bert, BertConfig};
use ragprobe_engine::kernels::Isa;
use std::collections::HashMap;

const H: usize = 32;
const HEADS: usize = 4;
const INTER: usize = 64;
const VOCAB: usize = 50;
const POS: usize = 16;
const LAYERS: usize = 2;

fn cfg() -> BertConfig {
    BertConfig {
        hidden_size: H,
        num_hidden_layers: LAYERS,
        num_attention_heads: HEADS,
        intermediate_size: INTER,
        max_position_embeddings: POS,
        layer_norm_eps: 1e-12,
        model_type: Some("bert".into()),
    }
}

/// Deterministic pseudo-random values in [-0.5, 0.5).
fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect()
}

/// The tensors of a random BERT, by name (without prefix).
fn tensors() -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let mut t = vec![
        (
            "embeddings.word_embeddings.weight".to_string(),
            vec![VOCAB, H],
        ),
        ("embeddings.position_embeddings.weight".into(), vec![POS, H]),
        ("embeddings.token_type_embeddings.weight".into(), vec![2, H]),
        ("embeddings.LayerNorm.weight".into(), vec![H]),
        ("embeddings.LayerNorm.bias".into(), vec![H]),
    ];
    for l in 0..LAYERS {
        let p = |s: &str| format!("encoder.layer.{l}.{s}");
        for (n, shape) in [
            ("attention.self.query", vec![H, H]),
            ("attention.self.key", vec![H, H]),
            ("attention.self.value", vec![H, H]),
            ("attention.output.dense", vec![H, H]),
            ("intermediate.dense", vec![INTER, H]),
            ("output.dense", vec![H, INTER]),
        ] {
            t.push((p(&format!("{n}.bias")), vec![shape[0]]));
            t.push((p(&format!("{n}.weight")), shape));
        }
        for n in ["attention.output.LayerNorm", "output.LayerNorm"] {
            t.push((p(&format!("{n}.weight")), vec![H]));
            t.push((p(&format!("{n}.bias")), vec![H]));
        }
    }
    t.into_iter()
        .enumerate()
        .map(|(i, (n, s))| {
            let len = s.iter().product();
            let mut v = values(i as u64 + 1, len);
            if n.ends_with("LayerNorm.weight") {
                v.iter_mut().for_each(|x| *x += 1.0);
            }
            (n, s, v)
        })
        .collect()
}

/// Write the tensors as a safetensors file (names under `prefix`).
fn write(path: &std::path::Path, prefix: &str, ts: &[(String, Vec<usize>, Vec<f32>)]) {
    let bytes: Vec<(String, Vec<u8>, Vec<usize>)> = ts
        .iter()
        .map(|(n, s, v)| {
            (
                format!("{prefix}{n}"),
                v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                s.clone(),
            )
        })
        .collect();
    let views: Vec<(String, safetensors::tensor::TensorView)> = bytes
        .iter()
        .map(|(n, b, s)| {
            (
                n.clone(),
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, s.clone(), b)
                    .unwrap(),
            )
        })
        .collect();
    safetensors::serialize_to_file(views, None, path).unwrap();
}

/// BERT written out plainly in f64: the reference.
fn reference(ts: &[(String, Vec<usize>, Vec<f32>)], ids: &[u32]) -> Vec<f64> {
    let w: HashMap<&str, Vec<f64>> = ts
        .iter()
        .map(|(n, _, v)| (n.as_str(), v.iter().map(|&x| x as f64).collect()))
        .collect();
    let ln = |x: &mut [f64], name: &str| {
        let (g, b) = (&w[&*format!("{name}.weight")], &w[&*format!("{name}.bias")]);
        let n = x.len() as f64;
        let mean = x.iter().sum::<f64>() / n;
        let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        for (i, v) in x.iter_mut().enumerate() {
            *v = (*v - mean) / (var + 1e-12).sqrt() * g[i] + b[i];
        }
    };
    let lin = |x: &[f64], name: &str, n: usize| -> Vec<f64> {
        let (m, b) = (&w[&*format!("{name}.weight")], &w[&*format!("{name}.bias")]);
        let k = x.len();
        (0..n)
            .map(|o| b[o] + (0..k).map(|i| m[o * k + i] * x[i]).sum::<f64>())
            .collect()
    };
    let t = ids.len();
    let mut h: Vec<Vec<f64>> = ids
        .iter()
        .enumerate()
        .map(|(p, &id)| {
            let mut e: Vec<f64> = (0..H)
                .map(|j| {
                    w["embeddings.word_embeddings.weight"][id as usize * H + j]
                        + w["embeddings.token_type_embeddings.weight"][j]
                        + w["embeddings.position_embeddings.weight"][p * H + j]
                })
                .collect();
            ln(&mut e, "embeddings.LayerNorm");
            e
        })
        .collect();
    let hd = H / HEADS;
    for l in 0..LAYERS {
        let p = |s: &str| format!("encoder.layer.{l}.{s}");
        let q: Vec<_> = h
            .iter()
            .map(|x| lin(x, &p("attention.self.query"), H))
            .collect();
        let k: Vec<_> = h
            .iter()
            .map(|x| lin(x, &p("attention.self.key"), H))
            .collect();
        let v: Vec<_> = h
            .iter()
            .map(|x| lin(x, &p("attention.self.value"), H))
            .collect();
        let mut next = Vec::new();
        for i in 0..t {
            let mut ctx = vec![0f64; H];
            for head in 0..HEADS {
                let r = head * hd..(head + 1) * hd;
                let s: Vec<f64> = (0..t)
                    .map(|j| r.clone().map(|d| q[i][d] * k[j][d]).sum::<f64>() / (hd as f64).sqrt())
                    .collect();
                let m = s.iter().cloned().fold(f64::MIN, f64::max);
                let e: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
                let z: f64 = e.iter().sum();
                for d in r {
                    ctx[d] = (0..t).map(|j| e[j] / z * v[j][d]).sum();
                }
            }
            let mut a = lin(&ctx, &p("attention.output.dense"), H);
            a.iter_mut().zip(&h[i]).for_each(|(a, x)| *a += x);
            ln(&mut a, &p("attention.output.LayerNorm"));
            let up: Vec<f64> = lin(&a, &p("intermediate.dense"), INTER)
                .into_iter()
                .map(|x| 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2)))
                .collect();
            let mut o = lin(&up, &p("output.dense"), H);
            o.iter_mut().zip(&a).for_each(|(o, a)| *o += a);
            ln(&mut o, &p("output.LayerNorm"));
            next.push(o);
        }
        h = next;
    }
    let mut m: Vec<f64> = (0..H)
        .map(|j| h.iter().map(|r| r[j]).sum::<f64>() / t as f64)
        .collect();
    let n = m.iter().map(|x| x * x).sum::<f64>().sqrt();
    m.iter_mut().for_each(|x| *x /= n);
    m
}

fn texts() -> Vec<Vec<u32>> {
    vec![
        vec![1, 7, 3, 2],
        vec![1, 49, 12, 5, 5, 30, 2],
        vec![4],
        vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],
    ]
}

#[test]
fn vectors_match_the_reference_and_do_not_depend_on_the_batch() {
    let d = tempfile::tempdir().unwrap();
    let ts = tensors();
    // Under the model type's prefix, as many checkpoints store them.
    let f = d.path().join("model.safetensors");
    write(&f, "bert.", &ts);
    let bert = Bert::load(&f, cfg()).unwrap();
    let all = bert.embed(&texts()).unwrap();
    for (i, ids) in texts().iter().enumerate() {
        let want = reference(&ts, ids);
        let cos: f64 = all[i].iter().zip(&want).map(|(a, b)| *a as f64 * b).sum();
        assert!(1.0 - cos < 1e-6, "text {i}: cosine {cos}");
        for (a, b) in all[i].iter().zip(&want) {
            assert!((*a as f64 - b).abs() < 1e-5, "text {i}: {a} vs {b}");
        }
        // Alone, and in another batch in another place: the same bits.
        assert_eq!(bert.embed(std::slice::from_ref(ids)).unwrap()[0], all[i]);
        let mut other = vec![vec![9, 9, 9], ids.clone()];
        other.extend(texts());
        assert_eq!(bert.embed(&other).unwrap()[1], all[i]);
    }
    // Every SIMD width gives the same bits.
    for isa in Isa::available() {
        let b = Bert::load(&f, cfg()).unwrap().with_isa(isa);
        assert_eq!(b.embed(&texts()).unwrap(), all, "{isa:?}");
    }
}

#[test]
fn bad_files_and_inputs_are_errors() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("model.safetensors");
    let mut ts = tensors();
    write(&f, "", &ts);
    let bert = Bert::load(&f, cfg()).unwrap();
    let e = bert.embed(&[vec![1; POS + 1]]).unwrap_err().to_string();
    assert!(e.contains("17 tokens") && e.contains("1 to 16"), "{e}");
    let e = bert.embed(&[vec![50]]).unwrap_err().to_string();
    assert!(
        e.contains("token id 50 outside the vocabulary of 50"),
        "{e}"
    );
    let e = bert.embed(&[vec![]]).unwrap_err().to_string();
    assert!(e.contains("0 tokens"), "{e}");

    // A tensor of the wrong shape, a missing one, a file that is not one.
    let i = ts
        .iter()
        .position(|t| t.0 == "encoder.layer.1.intermediate.dense.weight")
        .unwrap();
    ts[i].1 = vec![INTER - 1, H];
    ts[i].2.truncate((INTER - 1) * H);
    write(&f, "", &ts);
    let e = Bert::load(&f, cfg()).unwrap_err().to_string();
    assert!(
        e.contains("model.safetensors")
            && e.contains("encoder.layer.1.intermediate.dense.weight")
            && e.contains("[63, 32]"),
        "{e}"
    );
    ts.remove(i);
    write(&f, "", &ts);
    let e = Bert::load(&f, cfg()).unwrap_err().to_string();
    assert!(
        e.contains("encoder.layer.1.intermediate.dense.weight"),
        "{e}"
    );
    std::fs::write(&f, b"not a model").unwrap();
    let e = Bert::load(&f, cfg()).unwrap_err().to_string();
    assert!(e.contains("not a safetensors file"), "{e}");
}
