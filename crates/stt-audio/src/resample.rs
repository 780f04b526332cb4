//! Streaming sample-rate conversion of one channel, band-limited (windowed sinc).
//!
//! [`Resampler`] wraps rubato's `SincFixedIn`, which wants fixed-size input blocks. This
//! wrapper takes input in any chunk sizes, aligns the output so that sample `n` is the input
//! signal at time `n / output_rate` exactly, and at [`Resampler::flush`] returns
//! `ceil(input_len * output_rate / input_rate)` samples in total. Because rubato only ever
//! sees whole blocks, the output does not depend on how the input was split: streaming equals
//! one-shot, sample for sample.
//!
//! Alignment: with `t = input_rate / output_rate`, rubato's raw output `k` is the input at
//! time `(k + 1)·t − 1` (in input samples); the `alignment` test pins this. Writing
//! `t = p / q` in lowest terms, prepending `p − 1` zeros to the input and dropping the first
//! `q − 1` outputs makes output `n` land on time `n·t`, with no fractional offset.

use rubato::{
    Resampler as _, SincFixedIn, SincInterpolationParameters, SincInterpolationType,
    WindowFunction, calculate_cutoff,
};

use crate::AudioError;

/// Length of the sinc filter in input samples. 256 with a Blackman-Harris window puts the
/// aliasing of the 8 kHz band edge far below what speech recognition can notice, at about
/// 2 × 256 multiply-adds per output sample (a few million a second at 16 kHz).
const SINC_LEN: usize = 256;
const OVERSAMPLING: usize = 256;
const WINDOW: WindowFunction = WindowFunction::BlackmanHarris2;

/// A streaming resampler from `input_rate` to `output_rate`, one channel of `f32`.
///
/// Feed it with [`process`](Self::process) in chunks of any size; call
/// [`flush`](Self::flush) at the end of the stream for the tail. After a flush it is ready for
/// a new stream. When the two rates are equal it copies the input through unchanged.
pub struct Resampler {
    input_rate: u32,
    output_rate: u32,
    sinc: Option<Sinc>,
}

struct Sinc {
    inner: SincFixedIn<f32>,
    /// Input frames rubato takes per call.
    block: usize,
    /// Input not yet handed to rubato (less than `block` between calls).
    pending: Vec<f32>,
    /// rubato's output buffer, reused between calls.
    out: Vec<Vec<f32>>,
    /// Leading output samples still to drop (see the module docs).
    skip: usize,
    /// The zeros prepended to every stream, and the outputs that are dropped for them.
    prefix: usize,
    prefix_skip: usize,
    /// Input samples taken since the start of the stream.
    taken: u64,
    /// Output samples returned since the start of the stream.
    returned: u64,
}

impl std::fmt::Debug for Resampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resampler")
            .field("input_rate", &self.input_rate)
            .field("output_rate", &self.output_rate)
            .finish_non_exhaustive()
    }
}

impl Resampler {
    /// A resampler from `input_rate` Hz to `output_rate` Hz (both > 0).
    pub fn new(input_rate: u32, output_rate: u32) -> Result<Self, AudioError> {
        if input_rate == 0 || output_rate == 0 {
            return Err(AudioError::InvalidInput(format!(
                "sample rates must be above 0 Hz (got {input_rate} Hz to {output_rate} Hz)"
            )));
        }
        let sinc = if input_rate == output_rate {
            None
        } else {
            Some(Sinc::new(input_rate, output_rate)?)
        };
        Ok(Self { input_rate, output_rate, sinc })
    }

    /// A resampler from `input_rate` Hz to [`SAMPLE_RATE`](crate::SAMPLE_RATE) (16 kHz).
    pub fn to_16k(input_rate: u32) -> Result<Self, AudioError> {
        Self::new(input_rate, crate::SAMPLE_RATE)
    }

    pub fn input_rate(&self) -> u32 {
        self.input_rate
    }

    pub fn output_rate(&self) -> u32 {
        self.output_rate
    }

    /// Resamples the next `input` samples, returning what is ready so far.
    pub fn process(&mut self, input: &[f32]) -> Vec<f32> {
        let mut out = Vec::new();
        self.process_into(input, &mut out);
        out
    }

    /// Like [`process`](Self::process), appending to `out` instead of allocating.
    pub fn process_into(&mut self, input: &[f32], out: &mut Vec<f32>) {
        match &mut self.sinc {
            None => out.extend_from_slice(input),
            Some(sinc) => sinc.process_into(input, out),
        }
    }

    /// Ends the stream: returns the remaining output, so that the whole stream came out as
    /// `ceil(input_len * output_rate / input_rate)` samples. The resampler then starts afresh.
    pub fn flush(&mut self) -> Vec<f32> {
        let mut out = Vec::new();
        self.flush_into(&mut out);
        out
    }

    /// Like [`flush`](Self::flush), appending to `out`.
    pub fn flush_into(&mut self, out: &mut Vec<f32>) {
        if let Some(sinc) = &mut self.sinc {
            sinc.flush_into(self.input_rate, self.output_rate, out);
        }
    }
}

impl Sinc {
    fn new(input_rate: u32, output_rate: u32) -> Result<Self, AudioError> {
        let ratio = f64::from(output_rate) / f64::from(input_rate);
        let params = SincInterpolationParameters {
            sinc_len: SINC_LEN,
            f_cutoff: calculate_cutoff(SINC_LEN, WINDOW),
            interpolation: SincInterpolationType::Linear,
            oversampling_factor: OVERSAMPLING,
            window: WINDOW,
        };
        // About 20 ms of input per block keeps the added latency small; never below the
        // filter length, so every block produces output.
        let block = (input_rate as usize / 50).max(SINC_LEN);
        let inner = SincFixedIn::new(ratio, 1.0, params, block, 1).map_err(|e| {
            AudioError::InvalidInput(format!(
                "cannot resample {input_rate} Hz to {output_rate} Hz: {e}"
            ))
        })?;
        let out = inner.output_buffer_allocate(true);
        let common = gcd(input_rate, output_rate);
        let prefix = (input_rate / common - 1) as usize;
        let prefix_skip = (output_rate / common - 1) as usize;
        let mut sinc = Self {
            inner,
            block,
            pending: Vec::with_capacity(block),
            out,
            skip: prefix_skip,
            prefix,
            prefix_skip,
            taken: 0,
            returned: 0,
        };
        sinc.start_stream();
        Ok(sinc)
    }

    fn start_stream(&mut self) {
        self.skip = self.prefix_skip;
        let mut sink = Vec::new();
        self.feed(&vec![0.0; self.prefix], &mut sink);
        debug_assert!(sink.is_empty(), "the prefix's output is all skipped");
    }

    fn process_into(&mut self, input: &[f32], out: &mut Vec<f32>) {
        self.taken += input.len() as u64;
        self.feed(input, out);
    }

    fn feed(&mut self, mut input: &[f32], out: &mut Vec<f32>) {
        while !input.is_empty() {
            let want = self.block - self.pending.len();
            let (head, rest) = input.split_at(want.min(input.len()));
            self.pending.extend_from_slice(head);
            input = rest;
            if self.pending.len() == self.block {
                self.run_block(out, usize::MAX);
                self.pending.clear();
            }
        }
    }

    /// Runs rubato on `pending` (zero-padded to a block) and appends at most `limit` samples;
    /// returns how many samples rubato produced.
    fn run_block(&mut self, out: &mut Vec<f32>, limit: usize) -> usize {
        self.pending.resize(self.block, 0.0);
        let produced = match self.inner.process_into_buffer(&[&self.pending], &mut self.out, None) {
            Ok((_, produced)) => produced,
            // The buffers are sized by rubato itself, so this cannot happen; losing a block
            // of audio is still better than taking the process down.
            Err(e) => {
                tracing::error!("resampler: {e}");
                0
            }
        };
        let fresh = &self.out[0][..produced];
        let dropped = self.skip.min(fresh.len());
        self.skip -= dropped;
        let fresh = &fresh[dropped..];
        let fresh = &fresh[..fresh.len().min(limit)];
        out.extend_from_slice(fresh);
        self.returned += fresh.len() as u64;
        produced
    }

    fn flush_into(&mut self, input_rate: u32, output_rate: u32, out: &mut Vec<f32>) {
        let total = (self.taken * u64::from(output_rate)).div_ceil(u64::from(input_rate));
        // Zero blocks push the last real samples through the filter; each one yields about
        // `block * ratio` samples, so this ends after a couple of rounds.
        while self.returned < total {
            let limit = usize::try_from(total - self.returned).unwrap_or(usize::MAX);
            let produced = self.run_block(out, limit);
            self.pending.clear();
            if produced == 0 {
                break;
            }
        }
        self.inner.reset();
        self.pending.clear();
        self.taken = 0;
        self.returned = 0;
        self.start_stream();
    }
}

fn gcd(mut a: u32, mut b: u32) -> u32 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{rms, sine};

    /// Streams `input` through a fresh resampler in pieces of the given sizes (cycled).
    fn streamed(rate: u32, input: &[f32], sizes: &[usize]) -> Vec<f32> {
        let mut resampler = Resampler::new(rate, 16_000).expect("resampler");
        let mut out = Vec::new();
        let mut rest = input;
        for &size in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (head, tail) = rest.split_at(size.min(rest.len()));
            resampler.process_into(head, &mut out);
            rest = tail;
        }
        resampler.flush_into(&mut out);
        out
    }

    #[test]
    fn same_rate_passes_samples_through_exactly() {
        let input = sine(16_000, 440.0, 0.5, 5_000);
        assert_eq!(streamed(16_000, &input, &[7, 300, 1]), input);
    }

    #[test]
    fn output_sample_n_is_the_input_at_time_n() {
        for rate in [8_000, 11_025, 22_050, 32_000, 44_100, 48_000, 96_000, 12_345] {
            let input = sine(rate, 440.0, 0.5, rate as usize);
            let out = streamed(rate, &input, &[rate as usize]);
            assert_eq!(out.len(), 16_000, "{rate} Hz: one second in, one second out");
            let ideal = sine(16_000, 440.0, 0.5, 16_000);
            // The edges see the silence outside the signal; the middle must be the sine.
            let worst = (300..15_700).map(|n| (out[n] - ideal[n]).abs()).fold(0.0, f32::max);
            assert!(worst < 2e-3, "{rate} Hz: off the ideal sine by up to {worst}");
        }
    }

    #[test]
    fn streaming_in_any_chunk_sizes_equals_one_shot() {
        let input = sine(44_100, 523.0, 0.7, 44_100 + 777);
        let one_shot = streamed(44_100, &input, &[input.len()]);
        for sizes in [&[1, 2, 3][..], &[441], &[4096, 13, 999, 1], &[100_000]] {
            assert_eq!(streamed(44_100, &input, sizes), one_shot, "chunk sizes {sizes:?}");
        }
    }

    #[test]
    fn length_is_the_input_duration_rounded_up() {
        for (rate, len) in [(44_100, 1), (44_100, 441), (48_000, 3), (48_000, 100), (8_000, 5)] {
            let out = streamed(rate, &vec![0.1; len], &[len]);
            let expected = (len as u64 * 16_000).div_ceil(u64::from(rate));
            assert_eq!(out.len() as u64, expected, "{len} samples at {rate} Hz");
        }
        assert!(streamed(44_100, &[], &[1]).is_empty());
    }

    #[test]
    fn tones_above_8_khz_are_filtered_out_not_folded_back() {
        // Dropping every third sample would fold 12 kHz onto 4 kHz at full strength.
        let out = streamed(48_000, &sine(48_000, 12_000.0, 0.5, 48_000), &[4800]);
        let level = rms(&out[500..15_500]);
        assert!(level < 1e-3, "12 kHz leaks through at RMS {level}");
    }

    #[test]
    fn a_flushed_resampler_starts_a_new_stream() {
        let input = sine(22_050, 300.0, 0.5, 10_000);
        let mut resampler = Resampler::to_16k(22_050).expect("resampler");
        let mut first = resampler.process(&input);
        first.extend(resampler.flush());
        let mut second = resampler.process(&input);
        second.extend(resampler.flush());
        assert_eq!(first, second);
    }

    #[test]
    fn zero_rates_are_refused() {
        assert!(Resampler::new(0, 16_000).is_err());
        assert!(Resampler::new(16_000, 0).is_err());
    }
}
