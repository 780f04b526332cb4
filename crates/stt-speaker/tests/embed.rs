//! `stt_speaker::embed` with the real model that `scripts/fetch-speaker-model` installs, on
//! speech that espeak-ng makes at test time in eight voices (an accent and a voice variant
//! each): every embedding unit-length, each voice nearer to itself than to any other, too
//! little speech refused, a long segment embedded in windows and still near its voice, and
//! the measurement behind the window length. Run with `--nocapture` for the score tables.
//!
//! The model and ONNX Runtime are found where the daemon finds them (`$STT_MODELS_DIR`, else
//! `<data_dir>/models`); without them a test passes having printed why it was skipped, but
//! under `scripts/test` (`STT_TEST_STRICT` set) it fails: CI must never pass a test that did
//! not run.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test: a failure should panic, and the scores are its report"
)]

use std::path::Path;

use stt_speaker::embed::{self, DIM, EmbedError, Embedder, MIN_SPEECH_S, cosine};
use stt_speaker::fbank::SAMPLE_RATE;
use stt_testkit::speech::{Line, Part, Speech};

/// Eight voices the model tells apart.
const VOICES: [&str; 8] = stt_testkit::speech::SPEAKER_VOICES;

/// The two sentences each voice says on its own, 3.1 to 3.7 s long: each embedded whole.
const SENTENCES: [&str; 2] = [
    "Our project meeting moved to Thursdays at ten in the big room.",
    "The spare key is with the neighbour who lives at number twelve.",
];

/// Two more, said after the first two to make a long segment of about 13.5 s.
const MORE: [&str; 2] = [
    "It is raining again, so bring an umbrella when you go out tonight.",
    "I would like to read more about the history of Lisbon this year.",
];

/// The least cosine between a voice's long segment and each of its sentences. Measured with
/// these voices: 0.88 to 0.95 (and 0.73 at most with another voice's sentence).
const LONG_TO_SENTENCE: f32 = 0.8;

/// One voice's speech: its two sentences alone, and all four in one segment.
struct Voice {
    name: &'static str,
    sentences: Vec<Vec<f32>>,
    long: Vec<f32>,
}

fn voices() -> Vec<Voice> {
    let speech = Speech::new(Path::new(env!("CARGO_TARGET_TMPDIR")).join("speech"));
    VOICES
        .iter()
        .map(|&name| {
            let say = |text| Part::Say(Line { text, voice: name });
            let sentences = SENTENCES.iter().map(|&text| speech.samples(&[say(text)])).collect();
            let all: Vec<Part> = SENTENCES.iter().chain(&MORE).map(|&text| say(text)).collect();
            Voice { name, sentences, long: speech.samples(&all) }
        })
        .collect()
}

/// The installed model, or `None` (having said why) when it or ONNX Runtime is missing.
fn embedder(test: &str) -> Option<Embedder> {
    let models = stt_testkit::models_dir();
    let runtime = stt_embed::runtime_library(&models);
    match Embedder::load(&embed::default_path(&models), &runtime) {
        Ok(embedder) => Some(embedder),
        Err(
            e @ (EmbedError::ModelMissing { .. }
            | EmbedError::Runtime(stt_embed::RuntimeError::Missing { .. })),
        ) => {
            assert!(std::env::var_os("STT_TEST_STRICT").is_none(), "{test}: {e}");
            eprintln!("{test}: SKIPPED, {e}");
            None
        }
        Err(e) => panic!("{test}: {e}"),
    }
}

/// The embedding of speech that is long enough, checked for shape and length.
fn embedding(embedder: &mut Embedder, samples: &[f32]) -> Vec<f32> {
    let v = embedder.embed(samples).unwrap().unwrap();
    assert_eq!(v.len(), DIM);
    assert!(v.iter().all(|x| x.is_finite()), "{v:?}");
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    v
}

fn seconds(samples: &[f32]) -> f32 {
    samples.len() as f32 / SAMPLE_RATE as f32
}

fn range(values: &[f32]) -> (f32, f32) {
    values.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

#[test]
fn each_voice_is_nearer_itself_than_any_other_voice() {
    let test = "each_voice_is_nearer_itself_than_any_other_voice";
    let Some(mut embedder) = embedder(test) else { return };
    let voices = voices();
    // Distinct voices, or the test proves nothing: espeak-ng quietly ignores some variants.
    for (i, a) in voices.iter().enumerate() {
        for b in &voices[i + 1..] {
            assert_ne!(a.sentences[0], b.sentences[0], "{} and {} sound the same", a.name, b.name);
        }
    }
    let embeddings: Vec<Vec<Vec<f32>>> = voices
        .iter()
        .map(|v| v.sentences.iter().map(|s| embedding(&mut embedder, s)).collect())
        .collect();

    // Per pair of voices, the mean cosine over pairs of sentences: of the two different
    // sentences on the diagonal, of every pair off it.
    let n = voices.len();
    let mean = |a: usize, b: usize| {
        let mut scores = Vec::new();
        for (i, x) in embeddings[a].iter().enumerate() {
            for (j, y) in embeddings[b].iter().enumerate() {
                if a != b || i < j {
                    scores.push(cosine(x, y));
                }
            }
        }
        scores.iter().sum::<f32>() / scores.len() as f32
    };
    println!("mean cosine, same voice (different sentences) on the diagonal:");
    println!("{:24}{}", "", (0..n).map(|b| format!("{b:>6}")).collect::<String>());
    for (a, voice) in voices.iter().enumerate() {
        let row: String = (0..n).map(|b| format!("{:6.2}", mean(a, b))).collect();
        println!("{a} {:22}{row}", voice.name);
    }

    let mut same = Vec::new();
    let mut different = Vec::new();
    println!("\nvoice                   same   best other voice");
    for (a, voice) in voices.iter().enumerate() {
        let own = cosine(&embeddings[a][0], &embeddings[a][1]);
        let (best, nearest) = (0..n)
            .filter(|&b| b != a)
            .flat_map(|b| embeddings[b].iter().map(move |y| (b, y)))
            .flat_map(|(b, y)| embeddings[a].iter().map(move |x| (cosine(x, y), b)))
            .fold((f32::MIN, 0), |best, c| if c.0 > best.0 { c } else { best });
        println!("{:22} {own:6.3}   {best:6.3} ({})", voice.name, voices[nearest].name);
        assert!(
            own > best,
            "{}: its two sentences score {own:.3}, no more than with {} ({best:.3})",
            voice.name,
            voices[nearest].name
        );
        same.push(own);
        for b in a + 1..n {
            for x in &embeddings[a] {
                different.extend(embeddings[b].iter().map(|y| cosine(x, y)));
            }
        }
    }
    let (same_lo, same_hi) = range(&same);
    let (diff_lo, diff_hi) = range(&different);
    let diff_mean = different.iter().sum::<f32>() / different.len() as f32;
    println!(
        "same voice {same_lo:.3} to {same_hi:.3}; different voices {diff_lo:.3} to {diff_hi:.3} \
         (mean {diff_mean:.3})"
    );
}

#[test]
fn less_speech_than_the_minimum_gives_none() {
    let Some(mut embedder) = embedder("less_speech_than_the_minimum_gives_none") else { return };
    let speech = &voices()[0].sentences[0];
    let min = (MIN_SPEECH_S * SAMPLE_RATE as f32) as usize;
    // From the middle of the sentence: speech, not the silence around it.
    let middle = &speech[speech.len() / 2 - min / 2..];
    for len in [0, 1, 400, min / 2, min - 1] {
        assert_eq!(embedder.embed(&middle[..len]).unwrap(), None, "{len} samples");
    }
    embedding(&mut embedder, &middle[..min]);
}

#[test]
fn a_long_segment_is_embedded_in_windows_near_its_voice() {
    let test = "a_long_segment_is_embedded_in_windows_near_its_voice";
    let Some(mut embedder) = embedder(test) else { return };
    let voices = voices();
    let sentences: Vec<Vec<Vec<f32>>> = voices
        .iter()
        .map(|v| v.sentences.iter().map(|s| embedding(&mut embedder, s)).collect())
        .collect();
    println!("long segment against each sentence: own voice (least), other voices (most)");
    for (a, voice) in voices.iter().enumerate() {
        // Four windows or more.
        assert!(seconds(&voice.long) > 3.0 * embed::WINDOW_S, "{} s", seconds(&voice.long));
        let long = embedding(&mut embedder, &voice.long);
        let own = sentences[a].iter().map(|s| cosine(&long, s)).fold(f32::MAX, f32::min);
        let other = sentences
            .iter()
            .enumerate()
            .filter(|&(b, _)| b != a)
            .flat_map(|(_, s)| s.iter().map(|s| cosine(&long, s)))
            .fold(f32::MIN, f32::max);
        println!("{:22} {:4.1} s: {own:.3}, {other:.3}", voice.name, seconds(&voice.long));
        assert!(own >= LONG_TO_SENTENCE, "{}: {own:.3} with its own sentence", voice.name);
        assert!(own > other, "{}: {own:.3} with its own, {other:.3} another's", voice.name);
    }
}

/// The measurement behind `WINDOW_S`: stretches of each voice's long segment, of several
/// lengths (each embedded whole), against the embedding of every voice's whole segment. The
/// longer the stretch, the nearer its own voice; from 2 s every stretch is nearest its own.
#[test]
fn a_longer_stretch_of_speech_is_nearer_its_voice() {
    let test = "a_longer_stretch_of_speech_is_nearer_its_voice";
    let Some(mut embedder) = embedder(test) else { return };
    let voices = voices();
    let whole: Vec<Vec<f32>> = voices.iter().map(|v| embedding(&mut embedder, &v.long)).collect();
    println!("length   own voice mean, least   nearest other mean, most   least lead   wrong");
    let mut last_mean = f32::MIN;
    for length in [0.5, 1.0, 2.0, 3.0, embed::WINDOW_S] {
        let step = (length * SAMPLE_RATE as f32) as usize;
        let (mut own, mut other, mut wrong) = (Vec::new(), Vec::new(), 0);
        for (a, voice) in voices.iter().enumerate() {
            for stretch in voice.long.chunks_exact(step) {
                let v = embedding(&mut embedder, stretch);
                let mine = cosine(&v, &whole[a]);
                let theirs = (0..voices.len())
                    .filter(|&b| b != a)
                    .map(|b| cosine(&v, &whole[b]))
                    .fold(f32::MIN, f32::max);
                wrong += usize::from(theirs >= mine);
                own.push(mine);
                other.push(theirs);
            }
        }
        let mean = |v: &[f32]| v.iter().sum::<f32>() / v.len() as f32;
        let lead = own.iter().zip(&other).map(|(o, t)| o - t).fold(f32::MAX, f32::min);
        println!(
            "{length:4.1} s   {:.3}, {:.3}             {:.3}, {:.3}               {lead:6.3}      \
             {wrong}/{}",
            mean(&own),
            range(&own).0,
            mean(&other),
            range(&other).1,
            own.len()
        );
        assert!(mean(&own) > last_mean, "{length} s: no nearer its voice than a shorter stretch");
        last_mean = mean(&own);
        if length >= 2.0 {
            assert_eq!(wrong, 0, "{length} s: stretches nearer another voice than their own");
        }
    }
}

/// The buffers kept between calls do not leak one segment into the next.
#[test]
fn the_same_speech_gives_the_same_vector_whatever_came_before() {
    let test = "the_same_speech_gives_the_same_vector_whatever_came_before";
    let Some(mut embedder) = embedder(test) else { return };
    let voices = voices();
    let short = &voices[1].sentences[0];
    let first = embedding(&mut embedder, short);
    embedding(&mut embedder, &voices[2].long);
    let again = embedding(&mut embedder, short);
    let diff = first.iter().zip(&again).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max);
    assert!(diff < 1e-6, "differs by {diff}");
}

/// A damaged model file fails to load with its path and the fix.
#[test]
fn a_damaged_model_is_named_with_the_fix() {
    let Some(_) = embedder("a_damaged_model_is_named_with_the_fix") else { return };
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join(embed::MODEL_FILE);
    std::fs::write(&model, b"not an onnx model").unwrap();
    let runtime = stt_embed::runtime_library(&stt_testkit::models_dir());
    let err = Embedder::load(&model, &runtime).unwrap_err();
    assert!(matches!(err, EmbedError::Model { .. }), "{err:?}");
    let msg = err.to_string();
    let want =
        format!("ONNX Runtime cannot load the speaker-embedding model '{}'", model.display());
    assert!(msg.starts_with(&want), "{msg}");
    assert!(msg.ends_with("run scripts/fetch-speaker-model --force to build it again"), "{msg}");
}

/// ONNX Runtime is one per process: the text embedder memory uses and this one share it,
/// whichever loads first.
#[test]
fn the_text_embedder_and_the_voice_embedder_run_in_one_process() {
    let Some(mut voice) = embedder("one process") else { return };
    let models = stt_testkit::models_dir();
    let runtime = stt_embed::runtime_library(&models);
    let mut text = stt_embed::Embedder::load(&stt_embed::default_dir(&models), &runtime)
        .unwrap_or_else(|e| panic!("the text embedder beside the voice one: {e}"));
    let meaning = text.embed(&["where does my sister live"]).unwrap();
    assert_eq!(meaning[0].len(), stt_embed::DIM);
    let speech = &voices().remove(0).sentences[0];
    embedding(&mut voice, speech);
}
