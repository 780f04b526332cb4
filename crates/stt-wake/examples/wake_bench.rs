//! The detector over many recordings, for `scripts/bench-wake`: each phrase on a thread of its
//! own, as the daemon's wake lane runs one phrase, with the CPU time that thread spent.
//!
//! ```text
//! cargo run --release -p stt-wake --example wake_bench -- \
//!     --heads hey_jarvis,alexa --enrol NAME A.raw B.raw C.raw --streams LIST > results.jsonl
//! ```
//!
//! Every file is 16 kHz mono 16-bit little-endian samples with no header. `LIST` has one
//! stream a line, `ID<TAB>PATH`. For each phrase a thread loads the feature models, then
//! pushes each stream through a fresh detector (reset between streams) in pieces of 32 ms,
//! as the daemon's audio comes, and prints one JSON line per stream and phrase:
//!
//! ```text
//! {"stream":ID,"phrase":NAME,"samples":N,"cpu_ns":T,"wall_ns":W,"detections":[[AT,SCORE],...]}
//! ```
//!
//! `cpu_ns` is the thread's own time on a CPU over the stream (`/proc/thread-self/schedstat`),
//! so the other lanes, and other work on the machine, do not count in it; ONNX Runtime runs
//! each model on the calling thread (one intra-op thread), so it is the whole cost of the
//! lane. The first line says how the enrolled phrase came out (its threshold and template
//! lengths), the last the whole process's CPU time (`{"process_cpu_ns":T}`).

#![allow(clippy::print_stdout, reason = "a command-line tool: JSON lines are its output")]

use std::error::Error;
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;
use stt_wake::detector::DEFAULT_THRESHOLD;
use stt_wake::{Detector, Enrolled, Features, Head};

/// Samples per push: the daemon's chunks are 32 ms.
const CHUNK: usize = 512;

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

/// What to listen for, and in what.
struct Args {
    heads: Vec<String>,
    /// The enrolled phrase's name and its recordings.
    enrol: Option<(String, Vec<PathBuf>)>,
    streams: Vec<(String, PathBuf)>,
}

fn usage() -> String {
    "usage: wake_bench [--heads NAME,NAME] [--enrol NAME A.raw B.raw C.raw] --streams LIST".into()
}

fn parse_args() -> Result<Args> {
    let mut args = Args { heads: Vec::new(), enrol: None, streams: Vec::new() };
    let mut it = std::env::args().skip(1).peekable();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--heads" => {
                let list = it.next().ok_or_else(usage)?;
                args.heads = list.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect();
            }
            "--enrol" => {
                let name = it.next().ok_or_else(usage)?;
                let mut clips = Vec::new();
                while let Some(path) = it.next_if(|a| !a.starts_with("--")) {
                    clips.push(PathBuf::from(path));
                }
                args.enrol = Some((name, clips));
            }
            "--streams" => {
                let list = PathBuf::from(it.next().ok_or_else(usage)?);
                let text = std::fs::read_to_string(&list).map_err(|e| {
                    format!("cannot read the stream list '{}': {e}", list.display())
                })?;
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    let (id, path) = line.split_once('\t').ok_or_else(|| {
                        format!("'{line}' in '{}' is not ID<TAB>PATH", list.display())
                    })?;
                    args.streams.push((id.to_owned(), PathBuf::from(path)));
                }
            }
            _ => return Err(format!("unknown argument '{arg}'\n{}", usage()).into()),
        }
    }
    if args.streams.is_empty() || (args.heads.is_empty() && args.enrol.is_none()) {
        return Err(usage().into());
    }
    Ok(args)
}

/// A whole file of 16-bit samples, in [-1, 1].
fn read_clip(path: &Path) -> Result<Vec<f32>> {
    let bytes =
        std::fs::read(path).map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
    Ok(bytes
        .chunks_exact(2)
        .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
        .collect())
}

/// This thread's time on a CPU so far, in nanoseconds.
fn thread_cpu_ns() -> Result<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat")?;
    let first = text.split_whitespace().next().ok_or("/proc/thread-self/schedstat is empty")?;
    Ok(first.parse()?)
}

/// How one phrase is listened for.
#[derive(Clone)]
enum Phrase {
    Head(String),
    Enrolled(String, Enrolled),
}

impl Phrase {
    fn name(&self) -> &str {
        match self {
            Phrase::Head(name) | Phrase::Enrolled(name, _) => name,
        }
    }
}

/// One phrase's lane: its detector over every stream, a JSON line for each on `out`.
fn lane(
    phrase: &Phrase,
    models: &Path,
    streams: &[(String, PathBuf)],
    out: &Mutex<std::io::Stdout>,
) -> Result<()> {
    let mut detector = Detector::new(Features::load(models)?);
    match phrase {
        Phrase::Head(name) => {
            detector.add_head(name.clone(), Head::installed(models, name)?, DEFAULT_THRESHOLD);
        }
        Phrase::Enrolled(name, enrolled) => detector.add_enrolled(name.clone(), enrolled.clone()),
    }
    let mut bytes = vec![0u8; CHUNK * 2];
    let mut samples = Vec::with_capacity(CHUNK);
    for (id, path) in streams {
        let file =
            File::open(path).map_err(|e| format!("cannot open '{}': {e}", path.display()))?;
        let mut reader = BufReader::with_capacity(1 << 20, file);
        detector.reset();
        let mut detections = Vec::new();
        let mut total = 0u64;
        let wall = Instant::now();
        // The whole stream is timed, reading the file included: 32 kB per second of audio,
        // next to nothing beside the models' work.
        let cpu = thread_cpu_ns()?;
        loop {
            let n = read_full(&mut reader, &mut bytes)?;
            if n < 2 {
                break;
            }
            samples.clear();
            samples.extend(
                bytes[..n - n % 2].chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]])),
            );
            total += samples.len() as u64;
            let heard = detector.push_i16(&samples)?;
            detections.extend(heard.into_iter().map(|d| json!([d.at_sample, d.score])));
        }
        let cpu = thread_cpu_ns()? - cpu;
        let line = json!({
            "stream": id,
            "phrase": phrase.name(),
            "samples": total,
            "cpu_ns": cpu,
            "wall_ns": wall.elapsed().as_nanos() as u64,
            "detections": detections,
        });
        let mut out = out.lock().map_err(|_| "a lane panicked")?;
        writeln!(out, "{line}")?;
        out.flush()?;
    }
    Ok(())
}

/// Fills `buf` from `reader` as far as the file allows; gives how many bytes it read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

fn main() -> std::result::Result<(), Box<dyn Error + Send + Sync>> {
    let args = parse_args()?;
    let models = stt_config::dirs::models_dir_with(&stt_config::dirs::Env::from_process())?;
    let out = Arc::new(Mutex::new(std::io::stdout()));

    let mut phrases: Vec<Phrase> = args.heads.iter().cloned().map(Phrase::Head).collect();
    if let Some((name, paths)) = &args.enrol {
        let clips = paths.iter().map(|p| read_clip(p)).collect::<Result<Vec<_>>>()?;
        let enrolled = Enrolled::from_clips(&mut Features::load(&models)?, &clips)?;
        let line = json!({
            "enrolled": name,
            "threshold": enrolled.threshold(),
            "template_lengths": enrolled.template_lengths(),
        });
        writeln!(out.lock().map_err(|_| "poisoned")?, "{line}")?;
        phrases.push(Phrase::Enrolled(name.clone(), enrolled));
    }

    let streams = Arc::new(args.streams);
    let models = Arc::new(models);
    let lanes: Vec<_> = phrases
        .into_iter()
        .map(|phrase| {
            let (streams, models, out) =
                (Arc::clone(&streams), Arc::clone(&models), Arc::clone(&out));
            std::thread::spawn(move || {
                lane(&phrase, &models, &streams, &out)
                    .map_err(|e| format!("phrase {}: {e}", phrase.name()))
            })
        })
        .collect();
    let mut failed = Vec::new();
    for lane in lanes {
        match lane.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failed.push(e),
            Err(_) => failed.push("a lane panicked".to_owned()),
        }
    }
    if !failed.is_empty() {
        return Err(failed.join("; ").into());
    }
    // The whole process's CPU, as getrusage would give it: every lane, the enrolment and
    // loading the models, for a check on the lanes' own figures.
    let line = json!({ "process_cpu_ns": process_cpu_ns()? });
    writeln!(out.lock().map_err(|_| "poisoned")?, "{line}")?;
    Ok(())
}

/// The process's user and system time so far, in nanoseconds (`/proc/self/stat`, in clock
/// ticks of 10 ms: Linux's USER_HZ is 100 on every architecture stt runs on).
fn process_cpu_ns() -> Result<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map(|(_, rest)| rest).ok_or("/proc/self/stat has no ')'")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: u64 = fields
        .get(11..13)
        .ok_or("/proc/self/stat is short")?
        .iter()
        .map(|f| f.parse::<u64>())
        .sum::<std::result::Result<u64, _>>()?;
    Ok(ticks * 10_000_000)
}
