//! Sentence embeddings: text in, one L2-normalised 384-dim vector per text out, so that the
//! cosine of two vectors (their dot product, [`cosine`]) says how close two texts are in
//! meaning. The long-term memory stores these next to what it remembers and searches by them.
//!
//! The model is all-MiniLM-L6-v2 (sentence-transformers) as an int8 ONNX file, run by ONNX
//! Runtime through `ort`; its WordPiece tokenizer comes from the model's own
//! `tokenizer.json`. A text's vector is the mean of the last hidden states over its tokens
//! (padding excluded), normalised, exactly as sentence-transformers pools this model.
//! `scripts/fetch-models` installs both files as `<models>/minilm-l6-v2/` and the ONNX Runtime
//! library as `<models>/libonnxruntime.so.1.31.1`; nothing is downloaded at run time.
//!
//! [`Embedder`] is the whole engine: [`Embedder::load`], then [`Embedder::embed`]. Embedding
//! is blocking CPU work (a few milliseconds a sentence on one thread): run it on its own
//! thread. Errors are [`EmbedError`]s, each naming the path at fault and the fix.

use std::fmt;
use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::TensorRef;
use thiserror::Error;
use tokenizers::{Tokenizer, TruncationParams};

pub use stt_onnx::{RUNTIME_FILE, RuntimeError, runtime_library};

/// Length of every vector [`Embedder::embed`] returns.
pub const DIM: usize = 384;

/// What the vectors are, to store next to them: vectors of another model (or of this one
/// pooled or tokenized differently) cannot be compared with these, and a change of this id
/// tells the store to embed its texts again.
pub const MODEL_ID: &str = "all-MiniLM-L6-v2-int8";

/// The model's directory inside the models directory.
pub const DIR_NAME: &str = "minilm-l6-v2";

/// Tokens per text, `[CLS]` and `[SEP]` included; the rest of a longer text is dropped. The
/// model takes up to 512, but it was trained on 128 and sentence-transformers runs it at 256
/// (its `sentence_bert_config.json`): past that a vector says little more and costs far more
/// (attention is quadratic in length).
pub const MAX_TOKENS: usize = 256;

/// Texts run through the model together. Batching amortises the per-run overhead (short
/// notes: 2.5 ms a text in batches, 3.1 ms one per run); texts are sorted by length first, so
/// a batch pads little. On one thread 8 or 16 short texts a run were a little faster than 32,
/// and 64 slower than one at a time (examples/embed_speed.rs).
const MAX_BATCH: usize = 16;

/// Padded tokens per run (batch size times the longest text in it). Long texts gain nothing
/// from batching: 16 texts of 256 tokens took 0.88 s one at a time and 1.16 s eight at a time,
/// and the eight raised the resident memory from 190 to 390 MiB (attention alone is 12 heads
/// × T² floats per text and layer). 256 runs a long text alone and short ones up to 16 a run.
const MAX_BATCH_TOKENS: usize = 256;

/// `<models_dir>/minilm-l6-v2`, where `scripts/fetch-models` installs the model.
pub fn default_dir(models_dir: &Path) -> PathBuf {
    models_dir.join(DIR_NAME)
}

/// Where an embedder's files are: the model's directory and the ONNX Runtime library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Files {
    /// The directory with `model.onnx` and `tokenizer.json`.
    pub model: PathBuf,
    /// The ONNX Runtime library (see [`runtime_library`]).
    pub runtime: PathBuf,
}

impl Files {
    /// The default model and ONNX Runtime under `models_dir`.
    pub fn under(models_dir: &Path) -> Self {
        Self { model: default_dir(models_dir), runtime: runtime_library(models_dir) }
    }

    /// Loads the embedder ([`Embedder::load`]).
    pub fn load(&self) -> Result<Embedder, EmbedError> {
        Embedder::load(&self.model, &self.runtime)
    }
}

/// The cosine similarity of two vectors from [`Embedder::embed`]: their dot product, since
/// both have unit length. 1 for the same meaning, around 0 for unrelated texts. Vectors of
/// different lengths are compared over the shorter.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// What went wrong, with the path at fault and what to do about it.
#[derive(Debug, Error)]
pub enum EmbedError {
    /// The model directory or one of its two files is not there.
    #[error("no embedding model at '{path}': run scripts/fetch-models")]
    ModelMissing { path: PathBuf },
    /// `tokenizer.json` is there but does not parse.
    #[error(
        "cannot read the tokenizer '{path}': {message}: run scripts/fetch-models --force to \
         install it again"
    )]
    Tokenizer { path: PathBuf, message: String },
    /// ONNX Runtime could not be had.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// ONNX Runtime refused the model file.
    #[error(
        "ONNX Runtime cannot load the model '{path}': {source}: run scripts/fetch-models --force \
         to install it again"
    )]
    Model {
        path: PathBuf,
        #[source]
        source: ort::Error,
    },
    /// The model loads but does not look like a BERT encoder with 384-wide hidden states.
    #[error(
        "'{path}' is not the embedding model stt expects ({why}): run scripts/fetch-models \
         --force to install all-MiniLM-L6-v2 again"
    )]
    WrongModel { path: PathBuf, why: String },
    /// The tokenizer failed on a text (it does not on any valid UTF-8 seen so far).
    #[error("cannot tokenize a text: {0}")]
    Encode(String),
    /// ONNX Runtime failed while running the model.
    #[error("ONNX Runtime failed to embed: {0}")]
    Run(#[from] ort::Error),
}

/// all-MiniLM-L6-v2 loaded and ready: the ONNX Runtime session and the tokenizer. `Send`, so
/// it can live on a worker thread; [`Embedder::embed`] takes `&mut self` because an `ort`
/// session runs one call at a time.
pub struct Embedder {
    session: Session,
    tokenizer: Tokenizer,
    /// The id the tokenizer pads with (`[PAD]`, 0), from `tokenizer.json`.
    pad_id: i64,
    /// Whether the model takes `token_type_ids` (some exports drop it: all zeros for one text).
    type_ids: bool,
    /// The output holding the last hidden states, `[B, T, 384]`.
    output: String,
}

impl fmt::Debug for Embedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Embedder")
            .field("model_id", &MODEL_ID)
            .field("output", &self.output)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads `<dir>/model.onnx` and `<dir>/tokenizer.json`, with ONNX Runtime from `runtime`
    /// (the `.so` path, see [`runtime_library`]), on one thread.
    ///
    /// ONNX Runtime is loaded once per process: a later `load` with another `runtime` uses
    /// the library loaded first.
    pub fn load(dir: &Path, runtime: &Path) -> Result<Embedder, EmbedError> {
        Self::load_with_threads(dir, runtime, 1)
    }

    /// [`Embedder::load`] with `threads` for ONNX Runtime's work inside one run (at least 1).
    /// One by default: stt runs whisper on the other cores, and a sentence takes milliseconds.
    pub fn load_with_threads(
        dir: &Path,
        runtime: &Path,
        threads: usize,
    ) -> Result<Embedder, EmbedError> {
        let model = dir.join("model.onnx");
        let tokenizer_file = dir.join("tokenizer.json");
        for path in [dir, &model, &tokenizer_file] {
            if !path.exists() {
                return Err(EmbedError::ModelMissing { path: path.to_owned() });
            }
        }
        stt_onnx::check(runtime)?;
        let (tokenizer, pad_id) = load_tokenizer(&tokenizer_file)?;

        let environment = stt_onnx::environment(runtime)?;
        let threads = threads.max(1);
        let session = Session::builder(&environment)
            .and_then(|b| {
                let b = b.with_intra_threads(threads)?.with_inter_threads(1)?;
                // Basic optimisations only: constant folding turns the int8 weights into
                // float ones once, at load (the file dequantises them with Cast and Mul; 190
                // MiB resident in all), but the fused kernels of the higher levels ran ~10%
                // slower here on one thread (3.25 against 2.93 ms a short text, back to back).
                let b = b.with_optimization_level(GraphOptimizationLevel::Level1)?;
                // Spinning keeps idle pool threads busy-waiting for the next piece of work,
                // which would take cores from whisper between runs.
                Ok(if threads > 1 { b.with_intra_op_spinning(false)? } else { b })
            })
            .and_then(|mut b| b.commit_from_file(&model))
            .map_err(|source| EmbedError::Model { path: model.clone(), source })?;

        let wrong = |why: String| EmbedError::WrongModel { path: model.clone(), why };
        let inputs: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
        for needed in ["input_ids", "attention_mask"] {
            if !inputs.contains(&needed) {
                return Err(wrong(format!("no input '{needed}'; its inputs are {inputs:?}")));
            }
        }
        let type_ids = inputs.contains(&"token_type_ids");
        if let Some(other) =
            inputs.iter().find(|n| !["input_ids", "attention_mask", "token_type_ids"].contains(n))
        {
            return Err(wrong(format!("an unknown input '{other}'")));
        }
        let outputs: Vec<&str> = session.outputs().iter().map(|o| o.name()).collect();
        let output = match outputs.iter().find(|&&n| n == "last_hidden_state") {
            Some(name) => name.to_string(),
            None => match outputs.first() {
                Some(name) => name.to_string(),
                None => return Err(wrong("no output".into())),
            },
        };

        let mut embedder = Embedder { session, tokenizer, pad_id, type_ids, output };
        // One run now: it checks the output's shape (a model of another width fails here,
        // not at the first memory write) and warms ONNX Runtime up.
        embedder.embed(&["stt"]).map_err(|e| wrong(e.to_string()))?;
        Ok(embedder)
    }

    /// One L2-normalised [`DIM`]-long vector per text, in the order given. An empty slice gives
    /// an empty result; an empty text gets a vector too (of `[CLS] [SEP]` alone). Texts longer
    /// than [`MAX_TOKENS`] tokens are cut there.
    ///
    /// Texts are sorted by length and run in batches of similar lengths; the padding that
    /// batching needs is masked out, so a text's vector does not depend on its batch-mates
    /// (on one thread they came out bit-identical; the tests allow 1e-4).
    pub fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let encodings = texts
            .iter()
            .map(|text| self.tokenizer.encode_fast(*text, true))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| EmbedError::Encode(e.to_string()))?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());

        let mut vectors = vec![Vec::new(); texts.len()];
        let mut rest = &order[..];
        while !rest.is_empty() {
            // Sorted by length, so the last text of a batch is its longest.
            let mut n = 1;
            while n < rest.len().min(MAX_BATCH)
                && (n + 1) * encodings[rest[n]].len() <= MAX_BATCH_TOKENS
            {
                n += 1;
            }
            let (batch, after) = rest.split_at(n);
            let batch_encodings: Vec<_> = batch.iter().map(|&i| &encodings[i]).collect();
            for (&i, vector) in batch.iter().zip(self.run(&batch_encodings)?) {
                vectors[i] = vector;
            }
            rest = after;
        }
        Ok(vectors)
    }

    /// The id of the model the vectors come from, [`MODEL_ID`].
    pub fn model_id(&self) -> &str {
        MODEL_ID
    }

    /// Runs one batch, padded to its longest text, and pools each text's hidden states.
    fn run(&mut self, batch: &[&tokenizers::Encoding]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let rows = batch.len();
        let len = batch.iter().map(|e| e.len()).max().unwrap_or(0);
        let mut ids = vec![self.pad_id; rows * len];
        let mut mask = vec![0i64; rows * len];
        let mut types = vec![0i64; rows * len];
        for (row, encoding) in batch.iter().enumerate() {
            let at = row * len;
            for (t, ((&id, &m), &ty)) in encoding
                .get_ids()
                .iter()
                .zip(encoding.get_attention_mask())
                .zip(encoding.get_type_ids())
                .enumerate()
            {
                ids[at + t] = i64::from(id);
                mask[at + t] = i64::from(m);
                types[at + t] = i64::from(ty);
            }
        }
        let shape = [rows, len];
        let mut inputs = ort::inputs![
            "input_ids" => TensorRef::from_array_view((shape, &ids[..]))?,
            "attention_mask" => TensorRef::from_array_view((shape, &mask[..]))?,
        ];
        if self.type_ids {
            inputs.push((
                "token_type_ids".into(),
                TensorRef::from_array_view((shape, &types[..]))?.into(),
            ));
        }
        let outputs = self.session.run(inputs)?;
        let (out_shape, hidden) = outputs[self.output.as_str()].try_extract_tensor::<f32>()?;
        if out_shape[..] != [rows as i64, len as i64, DIM as i64] {
            return Err(ort::Error::new(format!(
                "output '{}' has shape {out_shape:?}, expected [{rows}, {len}, {DIM}]",
                self.output
            ))
            .into());
        }
        Ok((0..rows).map(|row| pool(hidden, &mask, row, len)).collect())
    }
}

/// Mean of row `row`'s hidden states over its real tokens, normalised to unit length (as
/// sentence-transformers' Pooling and Normalize modules do, with their epsilons).
fn pool(hidden: &[f32], mask: &[i64], row: usize, len: usize) -> Vec<f32> {
    let mut sum = vec![0.0f32; DIM];
    let mut count = 0.0f32;
    for t in 0..len {
        if mask[row * len + t] == 0 {
            continue;
        }
        let at = (row * len + t) * DIM;
        for (s, h) in sum.iter_mut().zip(&hidden[at..at + DIM]) {
            *s += h;
        }
        count += 1.0;
    }
    let count = count.max(1e-9);
    let norm = sum.iter().map(|s| (s / count).powi(2)).sum::<f32>().sqrt().max(1e-12);
    sum.iter().map(|s| s / count / norm).collect()
}

/// The tokenizer as this model is run, and the id it pads with: cut at [`MAX_TOKENS`] and
/// unpadded (the file asks for 128 and padding to 128; [`Embedder::run`] pads each batch to
/// its longest text instead).
fn load_tokenizer(path: &Path) -> Result<(Tokenizer, i64), EmbedError> {
    let error = |message: String| EmbedError::Tokenizer { path: path.to_owned(), message };
    let mut tokenizer = Tokenizer::from_file(path).map_err(|e| error(e.to_string()))?;
    let pad_id = tokenizer.get_padding().map_or(0, |p| i64::from(p.pad_id));
    tokenizer
        .with_truncation(Some(TruncationParams { max_length: MAX_TOKENS, ..Default::default() }))
        .map_err(|e| error(e.to_string()))?;
    tokenizer.with_padding(None);
    Ok((tokenizer, pad_id))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

    use super::*;

    /// Two files in a temporary model directory.
    fn model_dir(model: &str, tokenizer: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("model.onnx"), model).unwrap();
        std::fs::write(dir.path().join("tokenizer.json"), tokenizer).unwrap();
        dir
    }

    fn load_error(dir: &Path, runtime: &Path) -> String {
        match Embedder::load(dir, runtime) {
            Ok(_) => panic!("{} loaded", dir.display()),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn an_embedder_can_move_to_a_worker_thread() {
        // Sync too: an error must convert into anyhow's, and an embedder may sit in a Mutex.
        fn thread_safe<T: Send + Sync>() {}
        thread_safe::<Embedder>();
        thread_safe::<EmbedError>();
    }

    #[test]
    fn a_missing_model_directory_is_named_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("minilm-l6-v2");
        let msg = load_error(&missing, &dir.path().join(RUNTIME_FILE));
        assert_eq!(
            msg,
            format!("no embedding model at '{}': run scripts/fetch-models", missing.display())
        );
    }

    #[test]
    fn a_missing_model_file_is_named_with_the_fix() {
        let dir = model_dir("", "{}");
        std::fs::remove_file(dir.path().join("tokenizer.json")).unwrap();
        let msg = load_error(dir.path(), Path::new(RUNTIME_FILE));
        let want = dir.path().join("tokenizer.json");
        assert!(msg.contains(&format!("'{}'", want.display())), "{msg}");
        assert!(msg.ends_with("run scripts/fetch-models"), "{msg}");
    }

    #[test]
    fn a_missing_runtime_library_is_named_with_the_fix() {
        let dir = model_dir("", "{}");
        let runtime = dir.path().join("lib").join(RUNTIME_FILE);
        let msg = load_error(dir.path(), &runtime);
        assert!(msg.starts_with(&format!("no ONNX Runtime library at '{}'", runtime.display())));
        assert!(msg.contains("run scripts/fetch-models"), "{msg}");
    }

    #[test]
    fn a_broken_tokenizer_is_named_with_the_fix() {
        let dir = model_dir("", "not json");
        // Any file as the runtime: the tokenizer is read before the library is loaded.
        let msg = load_error(dir.path(), &dir.path().join("model.onnx"));
        let file = dir.path().join("tokenizer.json");
        assert!(msg.starts_with(&format!("cannot read the tokenizer '{}'", file.display())));
        assert!(msg.ends_with("run scripts/fetch-models --force to install it again"), "{msg}");
    }

    #[test]
    fn a_file_that_is_not_a_library_is_named_with_the_fix() {
        let tokenizer = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
            "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,
            "decoder":null,"model":{"type":"WordLevel","vocab":{"[UNK]":0},"unk_token":"[UNK]"}}"#;
        let dir = model_dir("", tokenizer);
        let runtime = dir.path().join(RUNTIME_FILE);
        std::fs::write(&runtime, "not a library").unwrap();
        let msg = load_error(dir.path(), &runtime);
        assert!(
            msg.starts_with(&format!("cannot load ONNX Runtime from '{}'", runtime.display())),
            "{msg}"
        );
        assert!(msg.contains("run scripts/fetch-models --force"), "{msg}");
    }

    #[test]
    fn the_model_lives_in_its_own_folder_of_the_models_directory() {
        let models = Path::new("/data/stt/models");
        assert_eq!(default_dir(models), Path::new("/data/stt/models/minilm-l6-v2"));
        // $ORT_DYLIB_PATH is not set under scripts/test; when it is, it wins.
        let want = std::env::var_os("ORT_DYLIB_PATH")
            .filter(|p| !p.is_empty())
            .map_or_else(|| models.join("libonnxruntime.so.1.31.1"), PathBuf::from);
        assert_eq!(runtime_library(models), want);
    }

    #[test]
    fn pooling_averages_the_real_tokens_only_and_normalises() {
        // Two rows of three tokens; the second row's last token is padding, full of junk.
        let mut hidden = vec![0.0f32; 2 * 3 * DIM];
        let mut put = |row: usize, t: usize, first: f32, second: f32| {
            hidden[(row * 3 + t) * DIM] = first;
            hidden[(row * 3 + t) * DIM + 1] = second;
        };
        put(0, 0, 1.0, 0.0);
        put(0, 1, 0.0, 1.0);
        put(0, 2, 1.0, 1.0);
        put(1, 0, 3.0, 0.0);
        put(1, 1, 3.0, 8.0);
        put(1, 2, -100.0, 100.0);
        let mask = [1, 1, 1, 1, 1, 0];
        let a = pool(&hidden, &mask, 0, 3);
        let b = pool(&hidden, &mask, 1, 3);
        let close = |x: f32, y: f32| (x - y).abs() < 1e-6;
        // Row 0: mean (2/3, 2/3), normalised (0.7071, 0.7071).
        assert!(close(a[0], 0.5f32.sqrt()) && close(a[1], 0.5f32.sqrt()), "{:?}", &a[..2]);
        // Row 1: mean (3, 4), normalised (0.6, 0.8); the padding does not count.
        assert!(close(b[0], 0.6) && close(b[1], 0.8), "{:?}", &b[..2]);
        assert!(a[2..].iter().chain(&b[2..]).all(|&x| x == 0.0));
        assert!(close(cosine(&a, &a), 1.0));
    }

    #[test]
    fn a_text_of_no_tokens_pools_to_zeros_rather_than_nan() {
        let v = pool(&[0.5; DIM], &[0], 0, 1);
        assert!(v.iter().all(|&x| x == 0.0), "{:?}", &v[..4]);
    }

    #[test]
    fn cosine_is_the_dot_product() {
        assert_eq!(cosine(&[0.6, 0.8], &[0.6, 0.8]), 1.0);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert_eq!(cosine(&[1.0, 0.0], &[-1.0, 0.0]), -1.0);
        assert_eq!(cosine(&[], &[]), 0.0);
    }
}
