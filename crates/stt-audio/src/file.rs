//! Files and streams: WAV files through hound, headerless PCM from any reader.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{RecvTimeoutError, SyncSender, sync_channel};
use std::time::{Duration, Instant};

use hound::{SampleFormat, WavReader};

use crate::convert::{Converter, int_scale};
use crate::sink::{Halt, Sink, StopFlag, Wake};
use crate::{AudioError, AudioEvent, InputState, Pace, PcmFormat, SAMPLE_RATE};

/// Frames decoded per step: small enough to keep memory flat, large enough to be cheap.
const BLOCK_FRAMES: usize = 4096;

/// How often a thread waiting on a silent reader checks its stop flag.
const READ_POLL: Duration = Duration::from_millis(100);

/// An opened WAV file whose header has been read and accepted.
pub(crate) struct WavInput {
    path: PathBuf,
    reader: WavReader<BufReader<File>>,
    /// Set when the data turned out shorter than the header says.
    truncated: bool,
}

impl WavInput {
    /// Opens `path` and reads its header, so that every problem short of a read error in the
    /// middle of the data shows up here.
    pub(crate) fn open(path: &Path) -> Result<Self, AudioError> {
        let mut file =
            File::open(path).map_err(|cause| AudioError::Open { path: path.into(), cause })?;
        check_riff_header(path, &mut file)?;
        let reader = WavReader::new(BufReader::new(file)).map_err(|e| header_error(path, e))?;
        let spec = reader.spec();
        let bad = |reason: String| AudioError::BadWav { path: path.into(), reason };
        match (spec.sample_format, spec.bits_per_sample) {
            (SampleFormat::Int, 8..=32) | (SampleFormat::Float, 32) => {}
            (format, bits) => {
                let kind = if format == SampleFormat::Float { "float" } else { "integer" };
                return Err(bad(format!(
                    "{bits}-bit {kind} samples are not supported (8/16/24/32-bit integer and \
                     32-bit float are)"
                )));
            }
        }
        if spec.sample_rate == 0 {
            return Err(bad("the header gives a sample rate of 0 Hz".to_owned()));
        }
        Ok(Self { path: path.into(), reader, truncated: false })
    }

    fn converter(&self) -> Result<Converter, AudioError> {
        let spec = self.reader.spec();
        Converter::new(spec.channels, spec.sample_rate)
    }

    /// Decodes up to [`BLOCK_FRAMES`] frames into `conv`; `false` at the end of the data.
    fn read_block(
        &mut self,
        conv: &mut Converter,
        block: &mut Vec<f32>,
    ) -> Result<bool, AudioError> {
        if self.truncated {
            return Ok(false);
        }
        let spec = self.reader.spec();
        let channels = usize::from(spec.channels);
        block.clear();
        let result = match spec.sample_format {
            SampleFormat::Int => {
                let scale = int_scale(spec.bits_per_sample);
                decode_into(
                    block,
                    self.reader.samples::<i32>().take(BLOCK_FRAMES * channels),
                    |s| s as f32 * scale,
                )
            }
            SampleFormat::Float => decode_into(
                block,
                self.reader.samples::<f32>().take(BLOCK_FRAMES * channels),
                |s| s,
            ),
        };
        match result {
            Ok(()) => {}
            Err(hound::Error::IoError(e)) if is_short_read(&e) => {
                tracing::warn!(
                    "'{}' is shorter than its header says (an interrupted recording?); using \
                     the audio that is there",
                    self.path.display()
                );
                self.truncated = true;
            }
            Err(hound::Error::IoError(source)) => {
                return Err(AudioError::Read {
                    what: format!("'{}'", self.path.display()),
                    cause: source,
                });
            }
            Err(e) => {
                return Err(AudioError::BadWav { path: self.path.clone(), reason: e.to_string() });
            }
        }
        // A file cut in the middle of a frame leaves a partial frame: drop it.
        block.truncate(block.len() - block.len() % channels);
        conv.push(block, |s| s);
        Ok(!block.is_empty())
    }
}

fn decode_into<S>(
    out: &mut Vec<f32>,
    samples: impl Iterator<Item = hound::Result<S>>,
    to_f32: impl Fn(S) -> f32,
) -> hound::Result<()> {
    for sample in samples {
        out.push(to_f32(sample?));
    }
    Ok(())
}

/// Tells "not a WAV file at all" apart from "a broken WAV file", which hound words alike.
fn check_riff_header(path: &Path, file: &mut File) -> Result<(), AudioError> {
    let mut head = Vec::with_capacity(12);
    file.by_ref()
        .take(12)
        .read_to_end(&mut head)
        .and_then(|_| file.seek(SeekFrom::Start(0)))
        .map_err(|cause| AudioError::Read { what: format!("'{}'", path.display()), cause })?;
    let not_wav =
        |reason: &str| AudioError::NotWav { path: path.into(), reason: reason.to_owned() };
    if head.is_empty() {
        return Err(not_wav("the file is empty"));
    }
    if !head.starts_with(b"RIFF") {
        return Err(not_wav("RIFF header missing"));
    }
    if head.len() < 12 {
        return Err(AudioError::BadWav {
            path: path.into(),
            reason: format!("the header is truncated: the file is only {} bytes long", head.len()),
        });
    }
    if &head[8..12] != b"WAVE" {
        return Err(not_wav("a RIFF file, but not of type WAVE"));
    }
    Ok(())
}

/// Whether hound hit the end of the file where it expected more: it says so with its own
/// `Other` error rather than `UnexpectedEof`.
fn is_short_read(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::UnexpectedEof
        || (error.kind() == io::ErrorKind::Other
            && error.to_string() == "Failed to read enough bytes.")
}

fn header_error(path: &Path, error: hound::Error) -> AudioError {
    let reason = match error {
        hound::Error::IoError(e) if is_short_read(&e) => {
            "the header is truncated: the file ends before its audio data starts".to_owned()
        }
        hound::Error::IoError(source) => {
            return AudioError::Read { what: format!("'{}'", path.display()), cause: source };
        }
        hound::Error::Unsupported => "its encoding is not supported (stt reads PCM: \
                                      8/16/24/32-bit integer and 32-bit float samples)"
            .to_owned(),
        other => other.to_string(),
    };
    AudioError::BadWav { path: path.into(), reason }
}

/// 16 kHz mono `samples` as a 16-bit PCM WAV file in memory: a segment sent to a remote
/// server, a voice kept in the speaker roster.
pub fn wav_bytes(samples: &[f32]) -> Vec<u8> {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: crate::SAMPLE_RATE,
        bits_per_sample: 16,
        sample_format: SampleFormat::Int,
    };
    let mut out = std::io::Cursor::new(Vec::with_capacity(44 + samples.len() * 2));
    // Into memory, hound fails only past 4 GiB of data, which no segment comes near.
    if let Ok(mut wav) = hound::WavWriter::new(&mut out, spec) {
        for &s in samples {
            #[allow(clippy::cast_possible_truncation, reason = "clamped to i16's range first")]
            let _ = wav.write_sample((s.clamp(-1.0, 1.0) * 32_767.0).round() as i16);
        }
        let _ = wav.finalize();
    }
    out.into_inner()
}

/// Reads the whole WAV file at `path` as 16 kHz mono: the same conversion as
/// [`start`](crate::start) with [`Source::Wav`](crate::Source::Wav), in one call.
pub fn read_wav_16k_mono(path: impl AsRef<Path>) -> Result<Vec<f32>, AudioError> {
    let mut wav = WavInput::open(path.as_ref())?;
    let mut conv = wav.converter()?;
    let mut block = Vec::new();
    let mut all = Vec::new();
    while wav.read_block(&mut conv, &mut block)? {
        all.extend(conv.take_rest().unwrap_or_default());
    }
    conv.finish();
    all.extend(conv.take_rest().unwrap_or_default());
    Ok(all)
}

/// Sends chunks from a file or stream, paced or not.
struct Feed {
    sink: Sink,
    stop: StopFlag,
    pace: Pace,
    started: Instant,
    /// Samples sent so far.
    sent: u64,
}

impl Feed {
    fn new(sink: Sink, stop: StopFlag, pace: Pace) -> Self {
        Self { sink, stop, pace, started: Instant::now(), sent: 0 }
    }

    fn state(&self, state: InputState) -> Result<(), Halt> {
        self.sink.send_waiting(AudioEvent::State(state), &self.stop)
    }

    fn samples(&mut self, chunk: Vec<f32>) -> Result<(), Halt> {
        let after = self.sent + chunk.len() as u64;
        if self.pace == Pace::RealTime {
            // Each chunk leaves when its last sample would have been recorded: a schedule
            // from the start, not from the previous chunk, so delays never accumulate.
            let nanos = after * 1_000_000_000 / u64::from(SAMPLE_RATE);
            let due = self.started + Duration::from_nanos(nanos);
            if self.stop.wait_until(due, || false) == Wake::Stopped {
                return Err(Halt::Stopped);
            }
        }
        self.sent = after;
        self.sink.send_waiting(AudioEvent::Samples(chunk), &self.stop)
    }
}

/// Runs a file or stream to its end: `Capturing`, the chunks, `Ended`. `next_block` pushes the
/// next decoded block into the converter and says whether there may be more; it may also
/// push nothing (a reader with nothing yet), after which the stop flag is checked.
fn pump(
    mut conv: Converter,
    mut feed: Feed,
    what: &str,
    mut next_block: impl FnMut(&mut Converter) -> Result<bool, AudioError>,
) -> Result<(), AudioError> {
    let halted = |halt: Halt| {
        tracing::debug!("{what}: {halt:?}, input ends");
        Ok(())
    };
    if let Err(halt) = feed.state(InputState::Capturing) {
        return halted(halt);
    }
    let outcome = loop {
        match next_block(&mut conv) {
            Ok(true) => {}
            Ok(false) => break Ok(()),
            Err(e) => break Err(e),
        }
        if feed.stop.is_stopped() {
            return halted(Halt::Stopped);
        }
        while let Some(chunk) = conv.next_chunk() {
            if let Err(halt) = feed.samples(chunk) {
                return halted(halt);
            }
        }
    };
    if let Err(e) = &outcome {
        tracing::warn!("{e}; ending {what} with the audio read so far");
    }
    conv.finish();
    while let Some(chunk) = conv.next_chunk().or_else(|| conv.take_rest()) {
        if let Err(halt) = feed.samples(chunk) {
            return halted(halt);
        }
    }
    if let Err(halt) = feed.state(InputState::Ended) {
        return halted(halt);
    }
    outcome
}

/// The thread of a WAV source.
pub(crate) fn run_wav(
    mut wav: WavInput,
    pace: Pace,
    sink: Sink,
    stop: StopFlag,
) -> Result<(), AudioError> {
    let conv = wav.converter()?;
    let what = format!("'{}'", wav.path.display());
    let mut block = Vec::new();
    pump(conv, Feed::new(sink, stop, pace), &what, |conv| wav.read_block(conv, &mut block))
}

/// A raw PCM source's parameters.
#[derive(Debug)]
pub(crate) struct PcmSpec {
    pub(crate) format: PcmFormat,
    pub(crate) rate: u32,
    pub(crate) channels: u16,
    pub(crate) name: String,
}

impl PcmSpec {
    pub(crate) fn validate(&self) -> Result<(), AudioError> {
        if self.rate == 0 || self.channels == 0 {
            return Err(AudioError::InvalidInput(format!(
                "raw PCM from {}: the rate and the channel count must be above 0 (got {} Hz, \
                 {} channels)",
                self.name, self.rate, self.channels
            )));
        }
        Ok(())
    }

    fn frame_bytes(&self) -> usize {
        self.format.bytes_per_sample() * usize::from(self.channels)
    }
}

/// Bytes to samples, keeping a partial frame for the next read.
struct PcmDecoder {
    format: PcmFormat,
    frame_bytes: usize,
    pending: Vec<u8>,
    samples: Vec<f32>,
}

impl PcmDecoder {
    fn push(&mut self, bytes: &[u8], conv: &mut Converter) {
        self.pending.extend_from_slice(bytes);
        let whole = self.pending.len() - self.pending.len() % self.frame_bytes;
        self.samples.clear();
        decode_pcm(self.format, &self.pending[..whole], &mut self.samples);
        self.pending.drain(..whole);
        conv.push(&self.samples, |s| s);
    }
}

pub(crate) fn decode_pcm(format: PcmFormat, bytes: &[u8], out: &mut Vec<f32>) {
    let samples = bytes.chunks_exact(format.bytes_per_sample());
    let decode: fn(&[u8]) -> f32 = match format {
        PcmFormat::S16Le => |b| f32::from(i16::from_le_bytes([b[0], b[1]])) * int_scale(16),
        PcmFormat::S32Le => |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32 * int_scale(32),
        PcmFormat::F32Le => |b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        PcmFormat::U8 => |b| (f32::from(b[0]) - 128.0) / 128.0,
    };
    out.extend(samples.map(decode));
}

/// The thread of a PCM source. Reading happens on a second, detached thread, because a read
/// from a silent stdin cannot be interrupted: this thread stays free to notice a stop, and
/// the reader ends with the process (or at its next read).
pub(crate) fn run_pcm(
    reader: Box<dyn Read + Send>,
    spec: PcmSpec,
    sink: Sink,
    stop: StopFlag,
) -> Result<(), AudioError> {
    let conv = Converter::new(spec.channels, spec.rate)?;
    let (tx, rx) = sync_channel(4);
    std::thread::Builder::new()
        .name("stt-audio-read".to_owned())
        .spawn(move || read_loop(reader, tx))
        .map_err(AudioError::Thread)?;
    let mut decoder = PcmDecoder {
        format: spec.format,
        frame_bytes: spec.frame_bytes(),
        pending: Vec::new(),
        samples: Vec::new(),
    };
    let name = spec.name;
    let feed = Feed::new(sink, stop, Pace::Fast);
    let result = pump(conv, feed, &name, |conv| match rx.recv_timeout(READ_POLL) {
        Ok(Ok(bytes)) => {
            decoder.push(&bytes, conv);
            Ok(true)
        }
        Ok(Err(cause)) => Err(AudioError::Read { what: name.clone(), cause }),
        Err(RecvTimeoutError::Timeout) => Ok(true),
        Err(RecvTimeoutError::Disconnected) => Ok(false),
    });
    if !decoder.pending.is_empty() {
        tracing::warn!(
            "{name}: ignoring the last {} bytes, less than one frame ({} bytes of {} × {})",
            decoder.pending.len(),
            decoder.frame_bytes,
            spec.channels,
            spec.format
        );
    }
    result
}

fn read_loop(mut reader: Box<dyn Read + Send>, tx: SyncSender<io::Result<Vec<u8>>>) {
    loop {
        let mut buf = vec![0; 16 * 1024];
        match reader.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                buf.truncate(n);
                if tx.send(Ok(buf)).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;
    use std::sync::mpsc::Receiver;

    use super::*;
    use crate::testing::{
        interleave, sine, tone_amplitude, write_float_wav, write_int_wav, zero_crossing_frequency,
    };
    use crate::{InputHandle, Source, start};

    fn temp() -> tempfile::TempDir {
        tempfile::tempdir().expect("temp dir")
    }

    /// Everything an input sends until `Ended` (or until it stops sending).
    fn collect(rx: &Receiver<AudioEvent>) -> (Vec<f32>, Vec<InputState>, Vec<usize>) {
        let (mut samples, mut states, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
        while let Ok(event) = rx.recv_timeout(Duration::from_secs(20)) {
            match event {
                AudioEvent::Samples(chunk) => {
                    sizes.push(chunk.len());
                    samples.extend(chunk);
                }
                AudioEvent::State(state) => {
                    let ended = state == InputState::Ended;
                    states.push(state);
                    if ended {
                        break;
                    }
                }
            }
        }
        (samples, states, sizes)
    }

    fn start_wav(path: &Path, pace: Pace, capacity: usize) -> (InputHandle, Receiver<AudioEvent>) {
        let (sink, rx) = Sink::channel(capacity);
        let source = Source::Wav { path: path.to_owned(), pace };
        (start(source, sink, StopFlag::new()).expect("start"), rx)
    }

    #[test]
    fn samples_written_as_wav_read_back_as_they_were_to_16_bits() {
        let samples = [1.0, -1.0, 0.5, 2.0, 0.0];
        let bytes = wav_bytes(&samples);
        assert_eq!(&bytes[..4], b"RIFF");
        assert_eq!(bytes.len(), 44 + samples.len() * 2);
        assert_eq!(&bytes[44..48], [0xff, 0x7f, 0x01, 0x80], "full scale, both ways");
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("kept.wav");
        std::fs::write(&path, &bytes).expect("write");
        let back = read_wav_16k_mono(&path).expect("read back");
        let clamped = samples.map(|s: f32| s.clamp(-1.0, 1.0));
        assert_eq!(back.len(), clamped.len());
        for (got, want) in back.iter().zip(clamped) {
            assert!((got - want).abs() < 1e-4, "{got} for {want}");
        }
    }

    #[test]
    fn a_16_bit_16_khz_mono_wav_comes_back_exactly() {
        let dir = temp();
        let path = dir.path().join("exact.wav");
        let values: Vec<i16> = (0..5000).map(|i| ((i * 7919) % 65_536 - 32_768) as i16).collect();
        let samples: Vec<f32> = values.iter().map(|&v| f32::from(v) / 32_768.0).collect();
        write_int_wav(&path, 16_000, 1, 16, &samples);
        assert_eq!(read_wav_16k_mono(&path).expect("read"), samples);

        let (input, rx) = start_wav(&path, Pace::Fast, 4);
        let (streamed, states, sizes) = collect(&rx);
        assert_eq!(streamed, samples);
        assert_eq!(states, [InputState::Capturing, InputState::Ended]);
        let (last, full) = sizes.split_last().expect("chunks");
        assert!(full.iter().all(|&n| n == crate::CHUNK_SAMPLES), "{sizes:?}");
        assert_eq!(*last, 5000 % crate::CHUNK_SAMPLES);
        input.join().expect("clean end");
    }

    #[test]
    fn a_44_1_khz_stereo_sine_becomes_16_khz_mono_with_the_same_tone() {
        let dir = temp();
        let path = dir.path().join("cd.wav");
        let tone = sine(44_100, 1000.0, 0.5, 44_100);
        write_int_wav(&path, 44_100, 2, 16, &interleave(&[tone.clone(), tone]));
        let out = read_wav_16k_mono(&path).expect("read");
        assert!(out.len().abs_diff(16_000) <= 2, "{} samples for one second", out.len());
        let middle = &out[800..15_200];
        let freq = zero_crossing_frequency(middle, 16_000);
        assert!((freq - 1000.0).abs() < 1.0, "tone at {freq} Hz");
        let amplitude = tone_amplitude(middle, 16_000, 1000.0);
        assert!((amplitude - 0.5).abs() < 0.01, "amplitude {amplitude}");
    }

    #[test]
    fn a_48_khz_float_wav_is_read() {
        let dir = temp();
        let path = dir.path().join("float.wav");
        write_float_wav(&path, 48_000, 1, &sine(48_000, 300.0, 0.8, 24_000));
        let out = read_wav_16k_mono(&path).expect("read");
        assert_eq!(out.len(), 8_000);
        let amplitude = tone_amplitude(&out[400..7_600], 16_000, 300.0);
        assert!((amplitude - 0.8).abs() < 0.01, "amplitude {amplitude}");
    }

    #[test]
    fn eight_and_twenty_four_bit_wavs_are_scaled_to_plus_minus_one() {
        let dir = temp();
        let samples = sine(16_000, 250.0, 0.9, 4_000);
        for (bits, step) in [(8, 1.0 / 128.0), (24, 1.0 / 8_388_608.0), (32, 1.0 / 2_147_483_648.0)]
        {
            let path = dir.path().join(format!("{bits}.wav"));
            write_int_wav(&path, 16_000, 1, bits, &samples);
            let out = read_wav_16k_mono(&path).expect("read");
            assert_eq!(out.len(), samples.len(), "{bits}-bit");
            let worst = out.iter().zip(&samples).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
            assert!(worst <= step * 0.5 + 1e-7, "{bits}-bit: off by {worst}, step {step}");
        }
        // 8-bit WAV is unsigned: silence is 128, which must come out as 0.
        let path = dir.path().join("silence8.wav");
        write_int_wav(&path, 16_000, 1, 8, &[0.0; 100]);
        assert!(read_wav_16k_mono(&path).expect("read").iter().all(|&s| s == 0.0));
    }

    #[test]
    fn stereo_is_downmixed_by_averaging_left_and_right() {
        let dir = temp();
        let path = dir.path().join("lr.wav");
        let left = sine(16_000, 440.0, 0.6, 3_000);
        let right: Vec<f32> = (0..3_000).map(|i| if i % 2 == 0 { 0.2 } else { -0.4 }).collect();
        write_float_wav(&path, 16_000, 2, &interleave(&[left.clone(), right.clone()]));
        let expected: Vec<f32> = left.iter().zip(&right).map(|(l, r)| (l + r) * 0.5).collect();
        assert_eq!(read_wav_16k_mono(&path).expect("read"), expected);

        // Opposite channels cancel.
        let inverted: Vec<f32> = left.iter().map(|s| -s).collect();
        write_float_wav(&path, 16_000, 2, &interleave(&[left, inverted]));
        assert!(read_wav_16k_mono(&path).expect("read").iter().all(|&s| s == 0.0));
    }

    /// A reader that hands out its data in awkward pieces.
    struct Dribble {
        data: Cursor<Vec<u8>>,
        sizes: std::iter::Cycle<std::vec::IntoIter<usize>>,
    }

    impl Read for Dribble {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.sizes.next().unwrap_or(1).min(buf.len());
            self.data.read(&mut buf[..n])
        }
    }

    fn start_pcm(
        reader: impl Read + Send + 'static,
        format: PcmFormat,
        rate: u32,
        channels: u16,
    ) -> (InputHandle, Receiver<AudioEvent>) {
        let (sink, rx) = Sink::channel(8);
        let source = Source::Pcm {
            reader: Box::new(reader),
            format,
            rate,
            channels,
            name: "test stream".to_owned(),
        };
        (start(source, sink, StopFlag::new()).expect("start"), rx)
    }

    #[test]
    fn s16le_pcm_in_odd_sized_reads_equals_the_same_audio_as_wav() {
        let dir = temp();
        let path = dir.path().join("same.wav");
        let left = sine(44_100, 700.0, 0.5, 30_000);
        let right = sine(44_100, 1300.0, 0.3, 30_000);
        let frames = interleave(&[left, right]);
        write_int_wav(&path, 44_100, 2, 16, &frames);
        let from_wav = read_wav_16k_mono(&path).expect("read");

        let bytes: Vec<u8> = frames
            .iter()
            .flat_map(|&s| ((f64::from(s) * 32_768.0).round() as i16).to_le_bytes())
            .collect();
        let reader = Dribble {
            data: Cursor::new(bytes),
            sizes: vec![1, 3, 7, 333, 4097].into_iter().cycle(),
        };
        let (input, rx) = start_pcm(reader, PcmFormat::S16Le, 44_100, 2);
        let (from_pcm, states, _) = collect(&rx);
        assert_eq!(states, [InputState::Capturing, InputState::Ended]);
        assert_eq!(from_pcm, from_wav);
        input.join().expect("clean end");
    }

    #[test]
    fn a_trailing_partial_frame_of_pcm_is_ignored() {
        let mut bytes: Vec<u8> =
            [0.25f32, -0.5, 1.0].iter().flat_map(|s| s.to_le_bytes()).collect();
        bytes.extend([1, 2]);
        let (input, rx) = start_pcm(Cursor::new(bytes), PcmFormat::F32Le, 16_000, 1);
        assert_eq!(collect(&rx).0, [0.25, -0.5, 1.0]);
        input.join().expect("clean end");
    }

    #[test]
    fn pcm_formats_decode_to_plus_minus_one() {
        fn check(format: PcmFormat, bytes: &[u8], expected: &[f32]) {
            let mut out = Vec::new();
            decode_pcm(format, bytes, &mut out);
            assert_eq!(out, expected, "{format}");
        }
        check(PcmFormat::U8, &[0, 128, 255], &[-1.0, 0.0, 127.0 / 128.0]);
        check(
            PcmFormat::S16Le,
            &[0x00, 0x80, 0x00, 0x40, 0xff, 0xff],
            &[-1.0, 0.5, -1.0 / 32_768.0],
        );
        check(PcmFormat::S32Le, &[0, 0, 0, 0x80, 0, 0, 0, 0x40], &[-1.0, 0.5]);
        check(PcmFormat::F32Le, &0.75f32.to_le_bytes(), &[0.75]);
    }

    #[test]
    fn pcm_format_names_parse_and_unknown_ones_list_the_valid_ones() {
        fn check(input: &str, expected: Option<PcmFormat>) {
            assert_eq!(input.parse::<PcmFormat>().ok(), expected, "{input:?}");
        }
        check("s16le", Some(PcmFormat::S16Le));
        check("S32LE", Some(PcmFormat::S32Le));
        check("f32le", Some(PcmFormat::F32Le));
        check("u8", Some(PcmFormat::U8));
        check("s16be", None);
        let error = "wav".parse::<PcmFormat>().expect_err("unknown").to_string();
        assert_eq!(error, "unknown PCM format 'wav': expected one of s16le, s32le, f32le, u8");
        for format in PcmFormat::ALL {
            check(&format.to_string(), Some(format));
        }
    }

    #[test]
    fn pcm_with_no_rate_or_channels_is_refused_at_start() {
        for (rate, channels) in [(0, 1), (16_000, 0)] {
            let (sink, _rx) = Sink::channel(1);
            let source = Source::Pcm {
                reader: Box::new(io::empty()),
                format: PcmFormat::S16Le,
                rate,
                channels,
                name: "stdin".to_owned(),
            };
            let error = start(source, sink, StopFlag::new()).expect_err("refused").to_string();
            assert!(error.contains("stdin") && error.contains("above 0"), "{error}");
        }
    }

    /// Opening `path` fails with a message that names it and contains `says`.
    fn check_open_error(path: &Path, says: &str) {
        let read = read_wav_16k_mono(path).expect_err("must fail").to_string();
        let (sink, _rx) = Sink::channel(1);
        let source = Source::Wav { path: path.to_owned(), pace: Pace::Fast };
        let started = start(source, sink, StopFlag::new()).expect_err("must fail").to_string();
        for message in [read, started] {
            assert!(message.contains(&format!("'{}'", path.display())), "{message}");
            assert!(message.contains(says), "{message:?} should say {says:?}");
        }
    }

    #[test]
    fn files_that_are_missing_or_not_wav_are_refused_with_their_path() {
        let dir = temp();
        check_open_error(&dir.path().join("missing.wav"), "cannot open");

        let text = dir.path().join("notes.wav");
        std::fs::write(&text, "hello, this is text").expect("write");
        check_open_error(&text, "is not a WAV file (RIFF header missing)");

        let empty = dir.path().join("empty.wav");
        std::fs::write(&empty, "").expect("write");
        check_open_error(&empty, "is not a WAV file (the file is empty)");

        let avi = dir.path().join("movie.wav");
        std::fs::write(&avi, b"RIFF\x10\0\0\0AVI LIST").expect("write");
        check_open_error(&avi, "not of type WAVE");

        let wav = dir.path().join("good.wav");
        write_int_wav(&wav, 16_000, 1, 16, &[0.0; 100]);
        let bytes = std::fs::read(&wav).expect("read");
        for cut in [8, 20, 30] {
            let short = dir.path().join(format!("short{cut}.wav"));
            std::fs::write(&short, &bytes[..cut]).expect("write");
            check_open_error(&short, "header is truncated");
        }
    }

    #[test]
    fn a_wav_cut_short_in_its_data_gives_the_audio_that_is_there() {
        let dir = temp();
        let path = dir.path().join("cut.wav");
        let samples = sine(16_000, 440.0, 0.5, 1_000);
        write_int_wav(&path, 16_000, 1, 16, &samples);
        let bytes = std::fs::read(&path).expect("read");
        // Keep the 44-byte header, 600 samples and half of the next one.
        std::fs::write(&path, &bytes[..44 + 600 * 2 + 1]).expect("write");
        let out = read_wav_16k_mono(&path).expect("read");
        assert_eq!(out.len(), 600);
        let (input, rx) = start_wav(&path, Pace::Fast, 4);
        let (streamed, states, _) = collect(&rx);
        assert_eq!((streamed, states), (out, vec![InputState::Capturing, InputState::Ended]));
        input.join().expect("a short file is not an error");
    }

    #[test]
    fn real_time_pace_takes_as_long_as_the_audio() {
        let dir = temp();
        let path = dir.path().join("half.wav");
        write_int_wav(&path, 16_000, 1, 16, &sine(16_000, 440.0, 0.5, 8_000));
        let began = Instant::now();
        let (input, rx) = start_wav(&path, Pace::RealTime, 64);
        let (samples, _, _) = collect(&rx);
        let took = began.elapsed();
        assert_eq!(samples.len(), 8_000);
        assert!(took >= Duration::from_millis(450), "0.5 s of audio came in {took:?}");
        input.join().expect("clean end");

        // Fast: the same audio, with no schedule to wait for (no time bound asserted).
        let (input, rx) = start_wav(&path, Pace::Fast, 64);
        assert_eq!(collect(&rx).0.len(), 8_000);
        input.join().expect("clean end");
    }

    #[test]
    fn a_slow_consumer_of_a_fast_file_loses_nothing() {
        let dir = temp();
        let path = dir.path().join("pressure.wav");
        write_int_wav(&path, 48_000, 1, 16, &sine(48_000, 440.0, 0.5, 48_000));
        let expected = read_wav_16k_mono(&path).expect("read");
        let (input, rx) = start_wav(&path, Pace::Fast, 1);
        let mut received = Vec::new();
        let mut ended = false;
        while let Ok(event) = rx.recv_timeout(Duration::from_secs(20)) {
            std::thread::sleep(Duration::from_millis(3));
            match event {
                AudioEvent::Samples(chunk) => received.extend(chunk),
                AudioEvent::State(InputState::Ended) => {
                    ended = true;
                    break;
                }
                AudioEvent::State(_) => {}
            }
        }
        assert!(ended);
        assert_eq!(received.len(), 16_000);
        assert_eq!(received, expected);
        assert_eq!(input.dropped_chunks(), 0);
        input.join().expect("clean end");
    }

    #[test]
    fn stopping_a_paced_file_ends_it_without_ended() {
        let dir = temp();
        let path = dir.path().join("long.wav");
        write_int_wav(&path, 16_000, 1, 16, &vec![0.1; 16_000 * 30]);
        let (input, rx) = start_wav(&path, Pace::RealTime, 64);
        assert_eq!(rx.recv().expect("event"), AudioEvent::State(InputState::Capturing));
        assert!(matches!(rx.recv().expect("event"), AudioEvent::Samples(_)));
        let began = Instant::now();
        input.stop_and_join().expect("stopped cleanly");
        assert!(began.elapsed() < Duration::from_secs(10), "30 s file, stopped at once");
        let rest: Vec<AudioEvent> = rx.try_iter().collect();
        assert!(!rest.contains(&AudioEvent::State(InputState::Ended)), "{rest:?}");
    }

    /// A reader that never returns, like a silent stdin.
    struct Silent(std::sync::mpsc::Receiver<()>);

    impl Read for Silent {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            let _ = self.0.recv();
            Ok(0)
        }
    }

    #[test]
    fn stopping_a_stream_whose_reader_blocks_does_not_hang() {
        let (keep_blocked, blocked) = std::sync::mpsc::channel();
        let (input, rx) = start_pcm(Silent(blocked), PcmFormat::S16Le, 16_000, 1);
        assert_eq!(rx.recv().expect("event"), AudioEvent::State(InputState::Capturing));
        input.stop_and_join().expect("stopped cleanly");
        // The input let go of its sink, so the receiver sees the end.
        assert!(rx.recv().is_err());
        drop(keep_blocked);
    }

    #[test]
    fn a_dropped_receiver_ends_the_input() {
        let dir = temp();
        let path = dir.path().join("nobody.wav");
        write_int_wav(&path, 16_000, 1, 16, &vec![0.1; 16_000 * 30]);
        let (input, rx) = start_wav(&path, Pace::Fast, 1);
        drop(rx);
        input.join().expect("a consumer leaving is not an error");
    }
}
