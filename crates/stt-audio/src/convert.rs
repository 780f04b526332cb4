//! Interleaved frames of any sample type to 16 kHz mono chunks: the one conversion every
//! source goes through, so a file and a microphone with the same audio give the same samples.

use crate::resample::Resampler;
use crate::{AudioError, CHUNK_SAMPLES, SAMPLE_RATE};

/// Downmixes (the mean of the channels), resamples to 16 kHz and cuts into
/// [`CHUNK_SAMPLES`]-sample chunks. Push frames with [`push`](Self::push), then take chunks
/// with [`next_chunk`](Self::next_chunk) until it says `None`.
#[derive(Debug)]
pub(crate) struct Converter {
    channels: usize,
    resampler: Resampler,
    mono: Vec<f32>,
    ready: Vec<f32>,
}

impl Converter {
    pub(crate) fn new(channels: u16, rate: u32) -> Result<Self, AudioError> {
        if channels == 0 {
            return Err(AudioError::InvalidInput("audio with 0 channels".to_owned()));
        }
        Ok(Self {
            channels: usize::from(channels),
            resampler: Resampler::new(rate, SAMPLE_RATE)?,
            mono: Vec::new(),
            ready: Vec::new(),
        })
    }

    /// Adds interleaved samples; a trailing partial frame is ignored (callers pass whole
    /// frames).
    pub(crate) fn push<T: Copy>(&mut self, interleaved: &[T], to_f32: impl Fn(T) -> f32) {
        self.mono.clear();
        if self.channels == 1 {
            self.mono.extend(interleaved.iter().map(|&s| to_f32(s)));
        } else {
            let scale = 1.0 / self.channels as f32;
            self.mono.extend(
                interleaved
                    .chunks_exact(self.channels)
                    .map(|frame| frame.iter().map(|&s| to_f32(s)).sum::<f32>() * scale),
            );
        }
        self.resampler.process_into(&self.mono, &mut self.ready);
    }

    /// Ends the stream: what the resampler still holds becomes available, and the last chunk
    /// may be short.
    pub(crate) fn finish(&mut self) {
        self.resampler.flush_into(&mut self.ready);
    }

    /// The next full chunk; after [`finish`](Self::finish) also the short remainder.
    pub(crate) fn next_chunk(&mut self) -> Option<Vec<f32>> {
        if self.ready.len() < CHUNK_SAMPLES {
            return None;
        }
        Some(self.ready.drain(..CHUNK_SAMPLES).collect())
    }

    /// Everything converted and not yet taken, chunk or not (after [`finish`](Self::finish),
    /// the short remainder), if anything.
    pub(crate) fn take_rest(&mut self) -> Option<Vec<f32>> {
        (!self.ready.is_empty()).then(|| std::mem::take(&mut self.ready))
    }
}

/// Scale of a signed integer sample of `bits` bits to [-1, 1).
pub(crate) fn int_scale(bits: u16) -> f32 {
    1.0 / (1u64 << (bits.clamp(1, 64) - 1)) as f32
}
