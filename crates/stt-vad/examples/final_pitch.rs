//! Prints, for each WAV file given (16 kHz mono), the pitch at its end against the seconds
//! before it, in semitones ([`stt_vad::pitch::final_pitch`]), or `-` when it cannot be read:
//! `scripts/bench-turn.py` reads it to report how the voice ends where turns end and where
//! people pause.
//!
//! ```sh
//! cargo run --release -p stt-vad --example final_pitch -- a.wav b.wav
//! ```

#![allow(clippy::print_stdout)]

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for path in std::env::args().skip(1) {
        let mut reader = hound::WavReader::open(&path)?;
        let spec = reader.spec();
        if spec.sample_rate != stt_vad::SAMPLE_RATE || spec.channels != 1 {
            return Err(format!(
                "{path}: 16 kHz mono only, not {} Hz x {}",
                spec.sample_rate, spec.channels
            )
            .into());
        }
        let samples: Vec<f32> = match spec.sample_format {
            hound::SampleFormat::Int => {
                let scale = (1u32 << (spec.bits_per_sample - 1)) as f32;
                reader
                    .samples::<i32>()
                    .map(|s| s.map(|s| s as f32 / scale))
                    .collect::<Result<_, _>>()?
            }
            hound::SampleFormat::Float => reader.samples::<f32>().collect::<Result<_, _>>()?,
        };
        match stt_vad::pitch::final_pitch(&samples) {
            Some(st) => println!("{path}\t{st:.2}"),
            None => println!("{path}\t-"),
        }
    }
    Ok(())
}
