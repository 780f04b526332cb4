//! One whisper model, one segment at a time.

use std::io::Read;
use std::path::{Path, PathBuf};

use whisper_rs::{
    FullParams, SamplingStrategy, WhisperContext, WhisperContextParameters, WhisperState,
    WhisperSysContext, WhisperSysState, WhisperTokenData,
};

use crate::AsrError;
use crate::bias::Bias;
use crate::filter::{self, Heard, Runaway};
use crate::spelling;

/// Samples per second whisper expects.
pub const SAMPLE_RATE: usize = 16_000;

/// Whisper's encoder frames per second of audio (one per 20 ms).
const FRAMES_PER_SECOND: f64 = 50.0;

/// Encoder frames a model has at most (30 s).
const FULL_AUDIO_CTX: i32 = 1500;

/// Extra encoder frames (of silence) beyond the audio itself, so the model sees where the
/// speech ends. With 64, tiny.en repeated the end of a sentence on most espeak clips ("turn on
/// the kitchen lights, turn on"); with 256, none of 80 did, but short real commands still do,
/// and the runaway guard in `transcribe` decodes those again. Smaller margins with the guard
/// were slower and worse on short real speech (more segments decoded twice;
/// docs/PERFORMANCE.md). Segments longer than [`SHORT_FRAMES`] get less (see
/// [`audio_ctx_for_samples`]).
const AUDIO_CTX_MARGIN: i32 = 256;

/// Segments up to this many frames (3 s: most spoken commands) get the whole
/// [`AUDIO_CTX_MARGIN`]. Longer ones get a window at least as wide as such a segment's and
/// [`LONG_MARGIN`] beyond their audio: the long segments of a file cost a fifth less, with the
/// same words on the real recordings (docs/PERFORMANCE.md, "Where `stt-daemon transcribe`'s
/// time goes").
const SHORT_FRAMES: i32 = 150;

/// The margin of segments longer than [`SHORT_FRAMES`] (2.6 s).
const LONG_MARGIN: i32 = 128;

/// The least encoder window a runaway segment is decoded again with (15 s, a multiple of
/// [`WINDOW_STEP`]). On the real
/// recordings of docs/PERFORMANCE.md this window gave no runaway output, as the full one did,
/// at half its cost; the full window stays as the retry after it.
const RETRY_AUDIO_CTX: i32 = 752;

/// Windows are made a whole number of these frames. The encoder's attention multiplies the
/// window by itself, and ggml gives such products to its tiled kernels (llamafile's tinyBLAS)
/// only when the window is a multiple of 16 (the AVX-512 width; 8 and 4 on narrower CPUs);
/// otherwise it falls back to one dot product at a time, which took a fifth of the cycles of a
/// whole-file transcription (docs/PERFORMANCE.md, "Where `stt-daemon transcribe`'s time goes").
const WINDOW_STEP: i32 = 16;

/// Prompt tokens the vocabulary may take. Whisper reads at most half its 448-token text
/// context as a prompt, and keeps the end of a longer one; terms past this are left out,
/// the last first, so that those listed first always count.
pub const MAX_PROMPT_TOKENS: usize = 200;

/// whisper.cpp ignores input shorter than one second; shorter segments are padded with
/// silence to this length.
const MIN_SAMPLES: usize = SAMPLE_RATE * 11 / 10;

/// Silence added after a final's audio (50 ms). The daemon reads a pause 100 ms in, so a
/// final often holds only that much after the last word, and tiny.en, given a vocabulary,
/// misread short last words against so little ("cancelled" as "Ensold", "Ask not" as
/// "Esc-noth"): the real recordings' WER with the list rose 1.4 points instead of 0.4. With
/// 150 ms behind them they read as before.
const END_SILENCE: usize = SAMPLE_RATE / 20;

/// How to run whisper; the daemon fills this from `[daemon]`.
#[derive(Debug, Clone, PartialEq)]
pub struct AsrConfig {
    /// The GGML model file.
    pub model: PathBuf,
    /// A language code, or `"auto"` to detect it per segment.
    pub language: String,
    /// CPU threads for one transcription.
    pub threads: u32,
    /// 0 = greedy decoding, otherwise the beam width.
    pub beam_size: u32,
    /// Encoder window in frames: 0 = sized to each segment, otherwise fixed.
    pub audio_ctx: u32,
    /// whisper.cpp's flash attention: the encoder's memory grows with the segment rather
    /// than with its square, at a cost in accuracy (its CPU kernel sums in half precision).
    pub flash_attention: bool,
}

impl Default for AsrConfig {
    fn default() -> Self {
        Self {
            model: PathBuf::from("ggml-tiny.en-q8_0.bin"),
            language: "en".into(),
            threads: 2,
            beam_size: 0,
            audio_ctx: 0,
            flash_attention: false,
        }
    }
}

/// What whisper heard in one segment.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcription {
    /// The cleaned text; `None` when the segment held nothing real (see [`filter`]).
    pub text: Option<String>,
    /// The raw text whisper produced, before filtering.
    pub raw: String,
    /// The language used or detected.
    pub language: String,
    /// Whisper's no-speech probability for the segment.
    pub no_speech_prob: f32,
    /// Decoding passes it took: 1, or more when a pass ran away and was done again wider.
    pub decodes: u32,
    /// Why the last pass still looked like a runaway, if it did; the text was then bounded to
    /// what the speech can hold ([`filter::bound`]).
    pub runaway: Option<Runaway>,
    /// How sure whisper was of the mark that ends its text: the probability it gave its last
    /// token when that is a full stop, a question mark or an exclamation mark, else 0. A
    /// sentence heard whole ends in a sure one; speech cut off mid-thought less often
    /// ([`crate::turn`]).
    pub end_p: f32,
    /// Something a person should know about how it was transcribed (a remote server that
    /// failed, so the local model did it: [`crate::remote::Hybrid`]).
    pub note: Option<String>,
}

impl Transcription {
    /// Nothing heard, in `language`: the fields a transcription from elsewhere starts from.
    pub fn nothing(language: &str) -> Self {
        Self {
            text: None,
            raw: String::new(),
            language: language.to_owned(),
            no_speech_prob: 0.0,
            decodes: 1,
            runaway: None,
            end_p: 0.0,
            note: None,
        }
    }
}

/// What one decoding pass produced.
struct Decoded {
    text: String,
    /// The highest no-speech probability of its segments.
    no_speech_prob: f32,
    /// Whether it reached the end-of-text token (rather than its token limit).
    ended: bool,
    /// See [`Transcription::end_p`].
    end_p: f32,
    /// Its text tokens, in order, with whisper's probability for each.
    tokens: Vec<(std::ffi::c_int, f32)>,
}

/// A loaded model with its decoding state. Not thread-safe: it lives on one thread.
pub struct Whisper {
    // Field order matters: the state must be dropped before the context it came from.
    /// `None` only inside [`Whisper::shed`], or after it failed (the next segment retries).
    state: Option<WhisperState>,
    _ctx: WhisperContext,
    config: AsrConfig,
    multilingual: bool,
    model_name: String,
    /// The vocabulary as whisper's initial prompt (see [`Whisper::set_vocabulary`]).
    prompt: Vec<std::ffi::c_int>,
    /// The vocabulary, whose near misses are spelled as the user wrote them
    /// ([`crate::spelling`]).
    terms: Vec<String>,
    /// The vocabulary's tokens, favoured while whisper decodes ([`crate::bias`]).
    bias: Logits,
    /// The terms as [`crate::rescore`] tries them in place of whisper's words.
    term_tokens: Vec<crate::rescore::Term>,
}

/// What the logits filter reads while whisper decodes: the bias and the vocabulary's size
/// (the length of the logits whisper hands it).
#[derive(Debug, Default)]
struct Logits {
    bias: Bias,
    n_vocab: usize,
}

impl std::fmt::Debug for Whisper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Whisper").field("model", &self.model_name).finish_non_exhaustive()
    }
}

impl Whisper {
    /// Loads the model, checking first that it is there and looks like a GGML file, so the
    /// error says what to do rather than whatever whisper.cpp prints.
    pub fn load(config: AsrConfig) -> Result<Self, AsrError> {
        whisper_rs::install_logging_hooks();
        check_model_file(&config.model)?;
        let model_name = config.model.file_name().map_or_else(
            || config.model.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let mut params = WhisperContextParameters::default();
        params.flash_attn(config.flash_attention);
        let ctx = WhisperContext::new_with_params(&config.model, params).map_err(|e| {
            AsrError::ModelCorrupt {
                path: config.model.clone(),
                why: format!("whisper.cpp could not load it: {e}"),
            }
        })?;
        let multilingual = ctx.is_multilingual();
        if config.language != "auto" {
            if whisper_rs::get_lang_id(&config.language).is_none() {
                return Err(AsrError::UnknownLanguage(config.language));
            }
            if !multilingual && config.language != "en" {
                return Err(AsrError::EnglishOnlyModel { model: model_name });
            }
        }
        let state = ctx.create_state().map_err(|e| AsrError::ModelCorrupt {
            path: config.model.clone(),
            why: format!("whisper.cpp could not prepare it: {e}"),
        })?;
        Ok(Self {
            state: Some(state),
            _ctx: ctx,
            config,
            multilingual,
            model_name,
            prompt: Vec::new(),
            terms: Vec::new(),
            bias: Logits::default(),
            term_tokens: Vec::new(),
        })
    }

    /// Words to expect (names, jargon), given to whisper as its initial prompt by
    /// [`vocabulary_prompt`], as many as fit in [`MAX_PROMPT_TOKENS`]; empty: none. Returns
    /// how many terms fitted.
    pub fn set_vocabulary(&mut self, terms: &[String]) -> Result<usize, AsrError> {
        let terms: Vec<&str> =
            terms.iter().map(|t| t.trim()).filter(|t| !t.is_empty() && !t.contains('\0')).collect();
        self.terms = terms.iter().map(|t| (*t).to_owned()).collect();
        let mut paths = Vec::with_capacity(terms.len());
        for term in &terms {
            // As whisper writes a word in running text (after a space), as the user wrote it
            // and capitalised (at the start of a sentence; "kubectl" → "Kubectl", which the
            // respelling writes back as the user did).
            let mut first = term.chars();
            let capital: String =
                first.next().map(|c| c.to_uppercase().chain(first).collect()).unwrap_or_default();
            for spelling in [*term, capital.as_str()] {
                let text = format!(" {spelling}");
                paths.push(self._ctx.tokenize(&text, text.len() + 1).map_err(|e| {
                    AsrError::Whisper(format!("cannot read the vocabulary term {term:?}: {e}"))
                })?);
            }
        }
        let n_vocab = self._ctx.n_vocab();
        let run_on = if paths.is_empty() {
            Vec::new()
        } else {
            (0..n_vocab)
                .map(|id| {
                    self._ctx
                        .token_to_bytes(id)
                        .is_ok_and(|b| b.first().is_some_and(u8::is_ascii_alphanumeric))
                })
                .collect()
        };
        let n_vocab = usize::try_from(n_vocab).unwrap_or(0);
        self.term_tokens = paths
            .iter()
            .enumerate()
            .map(|(i, tokens)| crate::rescore::Term {
                tokens: tokens.clone(),
                text: terms[i / 2].to_owned(),
                of: i / 2,
            })
            .collect();
        self.term_tokens.dedup_by(|a, b| a.tokens == b.tokens);
        self.bias = Logits { bias: Bias::new(paths, run_on), n_vocab };
        // The most terms, from the first, whose prompt fits (more terms never take fewer
        // tokens): a binary search, so a long list costs a few tokenizations, not one a term.
        let mut n = terms.len();
        if self.set_prompt(&vocabulary_prompt(&terms))? > MAX_PROMPT_TOKENS {
            let (mut fits, mut over) = (0, terms.len());
            while over - fits > 1 {
                let mid = (fits + over) / 2;
                if self.set_prompt(&vocabulary_prompt(&terms[..mid]))? <= MAX_PROMPT_TOKENS {
                    fits = mid;
                } else {
                    over = mid;
                }
            }
            n = fits;
            self.set_prompt(&vocabulary_prompt(&terms[..n]))?;
        }
        if n < terms.len() {
            tracing::warn!(
                kept = n,
                left_out = terms.len() - n,
                "the vocabulary is longer than whisper's prompt: the last terms are left out"
            );
        }
        Ok(n)
    }

    /// Sets whisper's initial prompt to `text` as it is (empty: none); returns its length in
    /// tokens. [`Whisper::set_vocabulary`] is the way to give it words to expect.
    pub fn set_prompt(&mut self, text: &str) -> Result<usize, AsrError> {
        // Room for one token a byte, which no text can exceed: given less room than a text
        // needs, whisper.cpp returns minus the count it needs, which whisper-rs 0.16 takes
        // for a length (a vector longer than its memory).
        self.prompt = if text.is_empty() {
            Vec::new()
        } else {
            self._ctx
                .tokenize(text, text.len() + 1)
                .map_err(|e| AsrError::Whisper(format!("cannot read the prompt: {e}")))?
        };
        Ok(self.prompt.len())
    }

    /// Gives back the memory decoding touched: whisper's compute buffers stay resident at
    /// their high-water mark (tens of MB after a long segment) until the state is made anew,
    /// which takes about 20 ms. Call it when idle, not between queued segments.
    pub fn shed(&mut self) -> Result<(), AsrError> {
        // The old state goes first, so that the two are never resident together.
        self.state = None;
        self.state().map(drop)
    }

    /// The decoding state, made anew if [`Whisper::shed`] dropped it.
    fn state(&mut self) -> Result<&mut WhisperState, AsrError> {
        if self.state.is_none() {
            let state = self._ctx.create_state().map_err(|e| {
                AsrError::Whisper(format!("cannot renew whisper's decoding state: {e}"))
            })?;
            self.state = Some(state);
        }
        self.state.as_mut().ok_or_else(|| AsrError::Whisper("no decoding state".into()))
    }

    /// The model's file name, for heartbeats and logs.
    pub fn model_name(&self) -> &str {
        &self.model_name
    }

    /// Transcribes one segment of 16 kHz mono audio holding `speech_s` seconds of speech
    /// (what the voice detector measured; the audio's own length where nothing measured it).
    pub fn transcribe(
        &mut self,
        samples: &[f32],
        speech_s: f64,
    ) -> Result<Transcription, AsrError> {
        self.run(samples, speech_s, true)
    }

    /// Transcribes a segment still being spoken, for a live partial: one decoding pass, never
    /// decoded again wider; a pass that looks like a runaway gives no text (the final will
    /// decode it properly).
    pub fn partial(&mut self, samples: &[f32], speech_s: f64) -> Result<Transcription, AsrError> {
        let mut transcription = self.run(samples, speech_s, false)?;
        if transcription.runaway.is_some() {
            transcription.text = None;
        }
        Ok(transcription)
    }

    fn run(
        &mut self,
        samples: &[f32],
        speech_s: f64,
        retries: bool,
    ) -> Result<Transcription, AsrError> {
        // A final (or a pause read that may become one) ends with silence whisper can read a
        // last word's end against; a partial is cut mid-speech anyway.
        let end = if retries { samples.len() + END_SILENCE } else { samples.len() };
        let mut padded;
        let audio = if end.max(MIN_SAMPLES) > samples.len() {
            padded = samples.to_vec();
            padded.resize(end.max(MIN_SAMPLES), 0.0);
            &padded[..]
        } else {
            samples
        };

        let strategy = match self.config.beam_size {
            0 => SamplingStrategy::Greedy { best_of: 1 },
            n => SamplingStrategy::BeamSearch {
                beam_size: i32::try_from(n).unwrap_or(5),
                patience: -1.0,
            },
        };
        let language = if self.config.language == "auto" && self.multilingual {
            None
        } else if self.multilingual {
            Some(self.config.language.as_str().to_owned())
        } else {
            Some("en".to_owned())
        };
        let audio_ctx = self.audio_ctx_for(audio.len());
        let mut decoded = self.decode(strategy.clone(), language.as_deref(), audio, audio_ctx)?;
        let mut decodes = 1;
        // A window cut to the segment is what makes whisper fast on short commands, and also
        // what makes it run away on some of them ("10 of close 10 of close …" for "ten of
        // clubs"): it was trained on 30 s windows. Such a text is decoded again with a wider
        // window, which whisper reads as it was trained to, and the widest decode is taken.
        // This costs time only when it happens (docs/PERFORMANCE.md, "Real speech").
        let mut why = filter::runaway(&decoded.text, speech_s, decoded.ended);
        for wider in if retries { retry_windows(audio_ctx) } else { Vec::new() } {
            let Some(reason) = why else { break };
            tracing::debug!(raw = %decoded.text, ?reason, audio_ctx, wider, "decoding again with a wider window");
            decoded = self.decode(strategy.clone(), language.as_deref(), audio, wider)?;
            decodes += 1;
            why = filter::runaway(&decoded.text, speech_s, decoded.ended);
        }
        // What whisper wrote, before the vocabulary had its say.
        let raw = decoded.text.trim().to_owned();
        if retries && why.is_none() && !self.term_tokens.is_empty() {
            // Finals and pause reads (which become the final when the turn ends there), not
            // partials: they are the live view, and the rescoring costs a read of the text per
            // term tried (docs/PERFORMANCE.md, "Custom vocabulary").
            if let Err(e) = self.swap_terms(&mut decoded, language.as_deref()) {
                tracing::warn!(error = %e, "the vocabulary could not be weighed against the audio: whisper's text is kept");
            }
        }
        let language = match language {
            Some(lang) => lang,
            None => whisper_rs::get_lang_str(self.state()?.full_lang_id_from_state())
                .unwrap_or("en")
                .to_owned(),
        };
        // The last resort: whatever the decodes said, never more than the speech can hold.
        let bounded = filter::bound(&decoded.text, speech_s);
        let text = filter::clean(&Heard {
            text: &bounded,
            no_speech_prob: decoded.no_speech_prob,
            rms: filter::rms(samples),
        })
        .map(|text| spelling::respell(&text, &self.terms));
        Ok(Transcription {
            text,
            raw,
            language,
            no_speech_prob: decoded.no_speech_prob,
            decodes,
            runaway: why,
            end_p: decoded.end_p,
            note: None,
        })
    }

    /// One decoding pass over `audio` with an encoder window of `audio_ctx` frames.
    fn decode(
        &mut self,
        strategy: SamplingStrategy,
        language: Option<&str>,
        audio: &[f32],
        audio_ctx: i32,
    ) -> Result<Decoded, AsrError> {
        let mut params = FullParams::new(strategy);
        params.set_n_threads(i32::try_from(self.config.threads.max(1)).unwrap_or(1));
        params.set_language(language);
        params.set_detect_language(false);
        // Each segment stands alone: conditioning on the previous text is how whisper falls
        // into loops.
        params.set_no_context(true);
        params.set_single_segment(true);
        // No timestamp tokens: with them whisper sometimes drops the end of a command
        // ("…into the Arc"); loops are the runaway guard's to catch (see `transcribe`).
        params.set_no_timestamps(true);
        params.set_suppress_blank(true);
        params.set_suppress_nst(true);
        params.set_temperature(0.0);
        // No temperature fallback: the same audio gives the same text, and a runaway is
        // decoded again with a wider window instead (see `transcribe`).
        params.set_temperature_inc(0.0);
        params.set_print_special(false);
        params.set_print_progress(false);
        params.set_print_realtime(false);
        params.set_print_timestamps(false);
        params.set_audio_ctx(audio_ctx);
        // Bound the work on a segment: nobody says more than about five tokens a second,
        // and a model stuck repeating itself would otherwise run to the context limit.
        params.set_max_tokens(max_tokens_for(audio.len()));
        // Made anew here if shed; then borrowed by field, beside the prompt params holds.
        if self.state.is_none() {
            self.state()?;
        }
        if !self.prompt.is_empty() {
            params.set_tokens(&self.prompt);
        }
        if !self.bias.bias.is_empty() {
            let logits: *const Logits = &self.bias;
            // SAFETY: `favour_vocabulary` has the signature whisper.cpp calls; `logits` points
            // at a field of `self` that nothing changes while `state.full` (below, the only
            // caller) runs, and the filter only reads it.
            #[allow(unsafe_code)]
            unsafe {
                params.set_filter_logits_callback(Some(favour_vocabulary));
                params.set_filter_logits_callback_user_data(logits.cast_mut().cast());
            }
        }

        let eot = self._ctx.token_eot();
        let state =
            self.state.as_mut().ok_or_else(|| AsrError::Whisper("no decoding state".into()))?;
        state.full(params, audio).map_err(|e| AsrError::Whisper(e.to_string()))?;

        let mut decoded = Decoded {
            text: String::new(),
            no_speech_prob: 0.0,
            ended: false,
            end_p: 0.0,
            tokens: Vec::new(),
        };
        for segment in state.as_iter() {
            decoded.tokens.extend(
                (0..segment.n_tokens())
                    .filter_map(|i| segment.get_token(i))
                    .map(|t| (t.token_id(), t.token_probability()))
                    .filter(|&(id, _)| id < eot),
            );
            if let Ok(text) = segment.to_str_lossy() {
                decoded.text.push_str(&text);
            }
            decoded.no_speech_prob = decoded.no_speech_prob.max(segment.no_speech_probability());
            decoded.ended |= (0..segment.n_tokens())
                .any(|i| segment.get_token(i).is_some_and(|t| t.token_id() == eot));
            // The last text token (special ones, from the end-of-text token on, are not).
            let last = (0..segment.n_tokens())
                .rev()
                .filter_map(|i| segment.get_token(i))
                .find(|t| t.token_id() < eot);
            if let Some(token) = last {
                let mark = token.to_str_lossy().is_ok_and(|t| t.trim().ends_with(['.', '?', '!']));
                decoded.end_p = if mark { token.token_probability() } else { 0.0 };
            }
        }
        // Nothing decoded (whisper found no speech) ended too.
        decoded.ended |= decoded.text.trim().is_empty();
        Ok(decoded)
    }

    /// Writes a vocabulary term where whisper's decoder, reading the last pass's audio again,
    /// finds it about as likely as the words whisper wrote ([`crate::rescore`]).
    fn swap_terms(
        &mut self,
        decoded: &mut Decoded,
        language: Option<&str>,
    ) -> Result<(), AsrError> {
        let ctx = &self._ctx;
        let Some(state) = self.state.as_mut() else { return Ok(()) };
        let mut prefix = Vec::with_capacity(self.prompt.len() + 5);
        if !self.prompt.is_empty() {
            prefix.push(ctx.token_prev());
            prefix.extend_from_slice(&self.prompt);
        }
        prefix.push(ctx.token_sot());
        if self.multilingual {
            let id = language
                .and_then(whisper_rs::get_lang_id)
                .unwrap_or_else(|| state.full_lang_id_from_state());
            prefix.push(ctx.token_lang(id));
            prefix.push(ctx.token_transcribe());
        }
        prefix.push(ctx.token_not());
        let eot = ctx.token_eot();
        let threads = usize::try_from(self.config.threads.max(1)).unwrap_or(1);
        let mut decoder = StateDecoder { reads: 0, state, threads, eot };
        let text: Vec<crate::rescore::Token> = decoded
            .tokens
            .iter()
            .map(|&(id, p)| {
                let text = String::from_utf8_lossy(ctx.token_to_bytes(id).unwrap_or_default());
                crate::rescore::Token { id, p, text: text.into_owned() }
            })
            .collect();
        let started = std::time::Instant::now();
        let swap = crate::rescore::best_swap(&mut decoder, &prefix, &text, &self.term_tokens, eot)
            .map_err(AsrError::Whisper)?;
        tracing::debug!(
            ms = started.elapsed().as_millis(),
            reads = decoder.reads,
            "vocabulary rescored"
        );
        if let Some(swap) = swap {
            let heard: String =
                text[swap.start..swap.end].iter().map(|t| t.text.as_str()).collect();
            tracing::debug!(
                heard = heard.trim(),
                term = %self.term_tokens[swap.term].text,
                swap.gain,
                swap.lead,
                swap.alike,
                "a vocabulary term written where whisper was unsure"
            );
            let mut tokens = decoded.tokens[..swap.start].to_vec();
            tokens.extend(self.term_tokens[swap.term].tokens.iter().map(|&t| (t, 1.0)));
            tokens.extend_from_slice(&decoded.tokens[swap.end..]);
            let mut text = Vec::new();
            for &(t, _) in &tokens {
                text.extend_from_slice(ctx.token_to_bytes(t).unwrap_or_default());
            }
            decoded.text = String::from_utf8_lossy(&text).into_owned();
            decoded.tokens = tokens;
        }
        Ok(())
    }

    /// The encoder window for `n` samples: the configured one, or the audio's own length
    /// plus a margin, so a 2 s command does not pay for a 30 s window.
    fn audio_ctx_for(&self, n: usize) -> i32 {
        if self.config.audio_ctx > 0 {
            return i32::try_from(self.config.audio_ctx)
                .unwrap_or(FULL_AUDIO_CTX)
                .min(FULL_AUDIO_CTX);
        }
        audio_ctx_for_samples(n)
    }
}

/// Whisper's decoder over the encoded audio a pass left in the state, for [`crate::rescore`].
struct StateDecoder<'s> {
    reads: usize,
    state: &'s mut WhisperState,
    threads: usize,
    eot: std::ffi::c_int,
}

impl crate::rescore::Decoder for StateDecoder<'_> {
    fn read(
        &mut self,
        tokens: &[std::ffi::c_int],
        n_past: usize,
        next: &mut Vec<f32>,
    ) -> Result<(), String> {
        let Some((&last, before)) = tokens.split_last() else {
            return Err("nothing to read".into());
        };
        // whisper.cpp keeps the logits of a batch's last token in the batch's last row, and
        // whisper-rs hands out the first: the last token is read alone.
        if !before.is_empty() {
            self.reads += 1;
            self.state.decode(before, n_past, self.threads).map_err(|e| e.to_string())?;
        }
        self.reads += 1;
        self.state
            .decode(&[last], n_past + before.len(), self.threads)
            .map_err(|e| e.to_string())?;
        let logits = self.state.get_logits().map_err(|e| e.to_string())?;
        // Text tokens and the end of text: what a pass without timestamps can write.
        let end = usize::try_from(self.eot).map_or(0, |eot| eot + 1).min(logits.len());
        let logits = &logits[..end];
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let sum: f32 = logits.iter().map(|l| (l - max).exp()).sum();
        let log_sum = max + sum.ln();
        next.clear();
        next.extend(logits.iter().map(|l| l - log_sum));
        Ok(())
    }
}

/// Whisper.cpp's logits filter: adds the vocabulary's bonuses ([`Bias::apply`]) to the logits
/// of the next token, given the text tokens decoded so far.
#[allow(unsafe_code)]
unsafe extern "C" fn favour_vocabulary(
    _ctx: *mut WhisperSysContext,
    _state: *mut WhisperSysState,
    tokens: *const WhisperTokenData,
    n_tokens: std::ffi::c_int,
    logits: *mut f32,
    user_data: *mut std::ffi::c_void,
) {
    if user_data.is_null() || logits.is_null() {
        return;
    }
    // SAFETY: `user_data` is the `Logits` that `Whisper::decode` set, alive for the whole
    // decode; whisper.cpp passes `n_tokens` token records and `n_vocab` logits, which are
    // ours to change for this step.
    let (filter, tokens, logits) = unsafe {
        let filter = &*user_data.cast::<Logits>();
        let n = usize::try_from(n_tokens).unwrap_or(0);
        let tokens = if tokens.is_null() || n == 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(tokens, n)
        };
        (filter, tokens, std::slice::from_raw_parts_mut(logits, filter.n_vocab))
    };
    let ids: Vec<std::ffi::c_int> = tokens.iter().map(|t| t.id).collect();
    filter.bias.apply(&ids, logits);
}

/// The initial prompt that tells whisper to expect `terms`: "Glossary: Efren, kubectl.".
/// Of the wordings tried with `examples/prompt_probe.rs` on espeak-ng sentences holding ten
/// such terms (a bare list, "Glossary:", "Names and terms:", "We talked about"), this one
/// spelled the most right with tiny.en and changed nothing in a plain sentence.
pub fn vocabulary_prompt(terms: &[&str]) -> String {
    if terms.is_empty() {
        return String::new();
    }
    format!("Glossary: {}.", terms.join(", "))
}

/// The length of 16 kHz `samples` in seconds: the speech to assume in audio no voice detector
/// has measured.
pub fn seconds(samples: &[f32]) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let n = samples.len() as f64;
    n / SAMPLE_RATE as f64
}

/// Encoder frames covering `n` samples plus the margin ([`AUDIO_CTX_MARGIN`] up to
/// [`SHORT_FRAMES`], then never narrower than that and [`LONG_MARGIN`] beyond the audio),
/// rounded up to [`WINDOW_STEP`] and capped at the full window.
pub fn audio_ctx_for_samples(n: usize) -> i32 {
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let frames = (n as f64 / SAMPLE_RATE as f64 * FRAMES_PER_SECOND).ceil() as i32;
    window((frames.min(SHORT_FRAMES) + AUDIO_CTX_MARGIN).max(frames + LONG_MARGIN))
}

/// `frames` rounded up to a whole number of [`WINDOW_STEP`]s, at most the full window.
fn window(frames: i32) -> i32 {
    ((frames.max(1) + WINDOW_STEP - 1) / WINDOW_STEP * WINDOW_STEP).min(FULL_AUDIO_CTX)
}

/// The wider encoder windows to decode again with, in order, when `audio_ctx` made whisper
/// run away: at least [`RETRY_AUDIO_CTX`] frames, then the full window.
fn retry_windows(audio_ctx: i32) -> Vec<i32> {
    let mut windows: Vec<i32> = Vec::with_capacity(2);
    for w in [window((audio_ctx + AUDIO_CTX_MARGIN).max(RETRY_AUDIO_CTX)), FULL_AUDIO_CTX] {
        if w > windows.last().copied().unwrap_or(audio_ctx) {
            windows.push(w);
        }
    }
    windows
}

/// Tokens a segment of `n` samples may produce: eight a second, plus a little.
pub fn max_tokens_for(n: usize) -> i32 {
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let tokens = (n as f64 / SAMPLE_RATE as f64 * 8.0).ceil() as i32;
    tokens + 16
}

/// Checks that `path` exists, starts with the GGML magic and has a whisper model's header:
/// whisper.cpp takes the sizes its header gives on trust, and a file of zeros after the
/// magic crashed the process now and then (3 runs of the unit tests in 60) rather than fail.
fn check_model_file(path: &Path) -> Result<(), AsrError> {
    let mut file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => AsrError::ModelMissing { path: path.to_owned() },
        _ => AsrError::ModelUnreadable { path: path.to_owned(), source: e },
    })?;
    let corrupt = |why: String| AsrError::ModelCorrupt { path: path.to_owned(), why };
    let mut magic = [0u8; 4];
    if file.read_exact(&mut magic).is_err() {
        return Err(corrupt("it is empty".into()));
    }
    // 0x67676d6c, "ggml", little-endian.
    if u32::from_le_bytes(magic) != 0x6767_6d6c {
        return Err(corrupt("it does not start with the GGML magic".into()));
    }
    let mut header = [0u8; 4 * 11];
    if file.read_exact(&mut header).is_err() {
        return Err(corrupt("it ends inside its header".into()));
    }
    let field =
        |i: usize| i32::from_le_bytes(header[4 * i..4 * i + 4].try_into().unwrap_or([0; 4]));
    // n_vocab, n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer, n_text_ctx,
    // n_text_state, n_text_head, n_text_layer, n_mels, ftype: as every whisper model has them.
    let whisper = (51_864..=51_866).contains(&field(0))
        && field(1) == 1500
        && field(5) == 448
        && [2, 3, 4, 6, 7, 8].iter().all(|&i| (1..=8192).contains(&field(i)))
        && [80, 128].contains(&field(9));
    if !whisper {
        return Err(corrupt(format!(
            "its header is not a whisper model's (vocabulary {}, audio context {}, text context {}, {} mel bands)",
            field(0),
            field(1),
            field(5),
            field(9)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_encoder_window_follows_the_audio() {
        // 50 frames a second, the margin, then up to a multiple of 16.
        assert_eq!(audio_ctx_for_samples(SAMPLE_RATE), 320);
        assert_eq!(audio_ctx_for_samples(SAMPLE_RATE * 3), 416);
        // Past 3 s: the 3 s window, until 128 frames beyond the audio is wider.
        assert_eq!(audio_ctx_for_samples(SAMPLE_RATE * 3 + 1), 416);
        assert_eq!(audio_ctx_for_samples(SAMPLE_RATE * 5), 416);
        assert_eq!(audio_ctx_for_samples(SAMPLE_RATE * 7), 480);
        assert_eq!(audio_ctx_for_samples(SAMPLE_RATE * 7 + 640), 480);
        assert_eq!(audio_ctx_for_samples(SAMPLE_RATE * 7 + 641), 496);
        assert_eq!(audio_ctx_for_samples(SAMPLE_RATE * 60), FULL_AUDIO_CTX);
    }

    #[test]
    fn a_runaway_is_decoded_again_wider_and_only_then_with_the_full_window() {
        assert_eq!(retry_windows(336), vec![RETRY_AUDIO_CTX, FULL_AUDIO_CTX]);
        assert_eq!(retry_windows(896), vec![896 + AUDIO_CTX_MARGIN, FULL_AUDIO_CTX]);
        assert_eq!(retry_windows(900), vec![1168, FULL_AUDIO_CTX]);
        assert_eq!(retry_windows(1400), vec![FULL_AUDIO_CTX]);
        assert_eq!(retry_windows(FULL_AUDIO_CTX), Vec::<i32>::new());
    }

    #[test]
    fn the_token_cap_follows_the_audio() {
        assert_eq!(max_tokens_for(SAMPLE_RATE * 3), 40);
        assert_eq!(max_tokens_for(SAMPLE_RATE / 2), 20);
    }

    #[test]
    fn a_missing_model_names_the_fetch_script() {
        let err = Whisper::load(AsrConfig {
            model: "/nonexistent/ggml-tiny.en.bin".into(),
            ..AsrConfig::default()
        })
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "no whisper model at '/nonexistent/ggml-tiny.en.bin': run scripts/fetch-models \
             (or set [daemon].model)"
        );
    }

    #[test]
    fn a_file_that_is_not_ggml_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in [("empty.bin", &b""[..]), ("text.bin", b"<html>not found</html>")] {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let err = Whisper::load(AsrConfig { model: path, ..AsrConfig::default() }).unwrap_err();
            assert!(matches!(err, AsrError::ModelCorrupt { .. }), "{err}");
            assert!(err.to_string().contains("scripts/fetch-models --force"), "{err}");
        }
    }

    #[test]
    fn a_truncated_model_is_refused_not_crashed_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ggml-cut.bin");
        let mut bytes = 0x6767_6d6c_u32.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[0u8; 64]);
        std::fs::write(&path, bytes).unwrap();
        let err = Whisper::load(AsrConfig { model: path, ..AsrConfig::default() }).unwrap_err();
        assert!(matches!(err, AsrError::ModelCorrupt { .. }), "{err}");
        assert!(err.to_string().contains("not a whisper model's (vocabulary 0,"), "{err}");
        // A header cut short.
        let path = dir.path().join("ggml-short.bin");
        std::fs::write(
            &path,
            [&0x6767_6d6c_u32.to_le_bytes()[..], &51_864_i32.to_le_bytes()].concat(),
        )
        .unwrap();
        let err = Whisper::load(AsrConfig { model: path, ..AsrConfig::default() }).unwrap_err();
        assert!(err.to_string().contains("ends inside its header"), "{err}");
    }
}
