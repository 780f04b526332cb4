//! When each word of a recording ends, as whisper's cross-attention places it (dynamic time
//! warping over the model's alignment heads, as OpenAI's `word_timestamps` does):
//! `word_times MODEL WAV...` prints a line per word, `FILE<TAB>WORD<TAB>END_S`. For
//! `scripts/bench-live.py --speech`: the "word spoken" times of recordings of people, which
//! have no hand-made alignment. The heads are the preset for the model's size, told by its
//! file name (`tiny.en`, `base`, …). 16 kHz mono 16-bit WAV files.

#![allow(clippy::print_stdout)]

use whisper_rs::{
    DtwMode, DtwModelPreset, DtwParameters, FullParams, SamplingStrategy, WhisperContext,
    WhisperContextParameters,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model, wavs @ ..] = &args[..] else {
        return Err("usage: word_times MODEL WAV...".into());
    };
    let mut ctx_params = WhisperContextParameters::default();
    ctx_params.dtw_parameters(DtwParameters {
        mode: DtwMode::ModelPreset { model_preset: preset(model)? },
        ..DtwParameters::default()
    });
    let ctx = WhisperContext::new_with_params(model, ctx_params)?;
    let mut state = ctx.create_state()?;
    let eot = ctx.token_eot();
    for wav in wavs {
        let samples = read_wav(wav)?;
        let mut params = FullParams::new(SamplingStrategy::Greedy { best_of: 1 });
        params.set_language(Some("en"));
        params.set_print_progress(false);
        params.set_print_realtime(false);
        params.set_print_special(false);
        params.set_n_threads(2);
        state.full(params, &samples)?;
        let mut words: Vec<(String, f64)> = Vec::new();
        for segment in state.as_iter() {
            for i in 0..segment.n_tokens() {
                let Some(token) = segment.get_token(i) else { continue };
                if token.token_id() >= eot {
                    continue;
                }
                let text = token.to_str_lossy()?.into_owned();
                #[allow(clippy::cast_precision_loss)]
                // The time the alignment moves on from this token: where it ends.
                let end = token.token_data().t_dtw as f64 / 100.0;
                match words.last_mut() {
                    Some((word, at)) if !text.starts_with(' ') => {
                        word.push_str(&text);
                        *at = end;
                    }
                    _ => words.push((text.trim().to_owned(), end)),
                }
            }
        }
        // A word is letters or digits; marks alone ("." after a word) belong to the one before.
        words.retain(|(w, _)| w.chars().any(char::is_alphanumeric));
        for (word, end) in words {
            println!("{wav}\t{word}\t{end:.2}");
        }
    }
    Ok(())
}

/// The alignment heads for the model file `path`, by the size its name gives.
fn preset(path: &str) -> Result<DtwModelPreset, Box<dyn std::error::Error>> {
    let name = std::path::Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let sizes = [
        ("tiny.en", DtwModelPreset::TinyEn),
        ("tiny", DtwModelPreset::Tiny),
        ("base.en", DtwModelPreset::BaseEn),
        ("base", DtwModelPreset::Base),
        ("small.en", DtwModelPreset::SmallEn),
        ("small", DtwModelPreset::Small),
        ("medium.en", DtwModelPreset::MediumEn),
        ("medium", DtwModelPreset::Medium),
    ];
    sizes
        .into_iter()
        .find(|(size, _)| name.contains(&format!("-{size}")))
        .map(|(_, preset)| preset)
        .ok_or_else(|| {
            format!("{path}: no alignment heads for this model (tiny, base, small, medium)").into()
        })
}

/// The samples of a 16 kHz mono 16-bit WAV file: those of its `data` chunk.
fn read_wav(path: &str) -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    let bytes = std::fs::read(path)?;
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let len = u32::from_le_bytes([bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]]);
        let body = at + 8;
        let end = (body + len as usize).min(bytes.len());
        if id == b"data" {
            return Ok(bytes[body..end]
                .chunks_exact(2)
                .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
                .collect());
        }
        at = end + (len as usize & 1);
    }
    Err(format!("{path}: no data chunk").into())
}
