//! Tries initial prompts on WAV files: `prompt_probe MODEL PROMPT WAV...` prints each file's
//! transcript with PROMPT as whisper's initial prompt ("" for none). For choosing how
//! `Whisper::set_vocabulary` words its prompt.

#![allow(clippy::print_stdout)]

use stt_asr::{AsrConfig, Whisper};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model, prompt, wavs @ ..] = &args[..] else {
        return Err("usage: prompt_probe MODEL PROMPT WAV...".into());
    };
    let mut whisper = Whisper::load(AsrConfig { model: model.into(), ..AsrConfig::default() })?;
    whisper.set_prompt(prompt)?;
    for wav in wavs {
        let bytes = std::fs::read(wav)?;
        // A canonical 44-byte header from sox; enough for a developer example.
        let samples: Vec<f32> = bytes[44..]
            .chunks_exact(2)
            .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
            .collect();
        let heard = whisper.transcribe(&samples, stt_asr::whisper::seconds(&samples))?;
        println!("{}", heard.text.unwrap_or_default());
    }
    Ok(())
}
