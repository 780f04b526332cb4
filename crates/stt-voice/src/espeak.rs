//! espeak-ng's own voice: what speaks when no Piper voice can be loaded, so a reply is still
//! heard (robotic, but every word there) while the user fetches the voice.
//!
//! The program is run once per sentence with `--stdout`, the text on its standard input (so
//! no text is ever read as an option), and the WAV it writes is read here: 16-bit mono at
//! 22,050 Hz, with a header whose sizes may be left unset by a stream.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::VoiceError;

/// espeak-ng's rate, whatever the voice.
pub const RATE: u32 = 22_050;

/// The espeak-ng program and the voice it speaks with.
#[derive(Debug, Clone)]
pub struct Espeak {
    program: String,
    voice: String,
}

impl Espeak {
    /// `program` speaking with its voice `voice` ("en-us").
    pub fn new(program: &str, voice: &str) -> Self {
        Self { program: program.to_owned(), voice: voice.to_owned() }
    }

    /// The voice's name, for the log and `status`.
    pub fn name(&self) -> String {
        format!("espeak-ng {}", self.voice)
    }

    /// One sentence spoken: its samples at [`RATE`], empty when it has nothing to say.
    pub fn sentence(&self, text: &str) -> Result<Vec<f32>, VoiceError> {
        let wav = run(&self.program, &["--stdout", "--stdin", "-v", &self.voice], text)?;
        if wav.is_empty() {
            // Nothing to say, and it said nothing.
            return Ok(Vec::new());
        }
        samples(&wav).ok_or_else(|| VoiceError::Espeak {
            program: self.program.clone(),
            why: "it wrote no WAV".into(),
        })
    }
}

/// Runs espeak-ng (`program`) with `args`, `input` on its standard input (so that text
/// starting with "-" is never read as an option): what it wrote, or why it failed.
pub(crate) fn run(program: &str, args: &[&str], input: &str) -> Result<Vec<u8>, VoiceError> {
    let failed = |why: String| VoiceError::Espeak { program: program.to_owned(), why };
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes()).map_err(|e| failed(e.to_string()))?;
    }
    let output = child.wait_with_output().map_err(|e| failed(e.to_string()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(failed(format!("{} ({})", stderr.trim(), output.status)));
    }
    Ok(output.stdout)
}

/// The samples of a 16-bit mono WAV held in `bytes`, read to the end of the bytes (a stream's
/// header may give its data's size as unknown); `None` when it is not one.
fn samples(bytes: &[u8]) -> Option<Vec<f32>> {
    if bytes.get(..4)? != b"RIFF" || bytes.get(8..12)? != b"WAVE" {
        return None;
    }
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().ok()?) as usize;
        let body = at + 8;
        if id == b"data" {
            let rest = &bytes[body..];
            let data = if size == 0 || size > rest.len() { rest } else { &rest[..size] };
            return Some(
                data.chunks_exact(2)
                    .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32_768.0)
                    .collect(),
            );
        }
        if id == b"fmt " {
            let format = bytes.get(body..body + 16)?;
            let channels = u16::from_le_bytes([format[2], format[3]]);
            let bits = u16::from_le_bytes([format[14], format[15]]);
            if channels != 1 || bits != 16 {
                return None;
            }
        }
        at = body + size + size % 2;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wav(data_size: u32, pcm: &[i16]) -> Vec<u8> {
        let mut b = b"RIFF\0\0\0\0WAVEfmt ".to_vec();
        b.extend(16u32.to_le_bytes());
        b.extend(1u16.to_le_bytes()); // PCM
        b.extend(1u16.to_le_bytes()); // mono
        b.extend(RATE.to_le_bytes());
        b.extend((RATE * 2).to_le_bytes());
        b.extend(2u16.to_le_bytes());
        b.extend(16u16.to_le_bytes());
        b.extend(b"data");
        b.extend(data_size.to_le_bytes());
        for s in pcm {
            b.extend(s.to_le_bytes());
        }
        b
    }

    #[test]
    fn a_streamed_wav_is_read_to_its_end_and_a_sized_one_to_its_size() {
        let pcm = [0, 16_384, -32_768, 32_767];
        let streamed = samples(&wav(0x7fff_ffff, &pcm)).unwrap();
        assert_eq!(streamed, [0.0, 0.5, -1.0, 32_767.0 / 32_768.0]);
        let sized = samples(&wav(4, &pcm)).unwrap();
        assert_eq!(sized, [0.0, 0.5]);
        assert_eq!(samples(b"not a wav at all"), None);
    }

    #[test]
    fn espeak_speaks_a_sentence_given_on_its_input() {
        let voice = Espeak::new(crate::ESPEAK, "en-us");
        // Text that would be an option on a command line is only words here.
        let audio = voice.sentence("--help me read this").unwrap();
        let seconds = audio.len() as f32 / RATE as f32;
        assert!((0.5..5.0).contains(&seconds), "{seconds} s");
        assert!(audio.iter().any(|s| s.abs() > 0.1), "silent");
        let missing = Espeak::new("/nonexistent/espeak-ng", "en-us").sentence("hi").unwrap_err();
        assert!(missing.to_string().contains("install espeak-ng"), "{missing}");
    }
}
