//! The roster: the speakers stt has heard, each with a voice print (its *prototype*, the
//! running mean of its segments' embeddings), and the rules that decide who spoke.
//!
//! A segment's embedding is compared (cosine) with every prototype; the best score decides:
//!
//! - **matched**, at or above `match_threshold`: that speaker spoke. Its prototype moves
//!   toward the segment (a running mean weighted by seconds of speech), its speech time grows,
//!   and a provisional speaker is **confirmed** once it has `confirm_s` seconds.
//! - **uncertain**, between `uncertain_threshold` and `match_threshold`: probably the nearest
//!   speaker, not surely; shown as unknown, and it never moves a prototype (a wrong adapt
//!   would drag one voice toward another).
//! - **unknown**, below `uncertain_threshold` (or nobody known yet): a new speaker is
//!   **minted**, `spk_0001`, `spk_0002`, … in order, never reusing an id, and its first
//!   segment is its prototype. Beyond `max_speakers`, the unnamed speaker heard least is
//!   **pruned**; a named speaker never is.
//!
//! (Too little speech to embed is the fourth status, *none*: the caller's business.)
//!
//! What changes the roster's list (mint, confirm, rename, prune, forget, merge) is reported
//! as [`Identified::changed`] or by the method's result, so the caller announces the roster
//! then and only then; an adapt is not a change.
//!
//! # On disk
//!
//! A directory (the daemon's `<data dir>/speakers/`, 0700) holding:
//!
//! - `speakers.json` ([`FILE`]): `{"version": 1, "next": 3, "edits_applied": 0,
//!   "speakers": [{"id", "name", "status", "cumulative_s", "sample_path", "created_at"}]}`;
//!   `next` is the number the next minted id gets (kept, so ids are never reused).
//! - `prototypes.json` ([`PROTOTYPES_FILE`]): `{"spk_0001": {"seconds": 12.5, "vector":
//!   [192 numbers]}}`, each speaker's unit-length prototype and the seconds of speech it
//!   averages.
//! - `spk_0001.wav`, …: each speaker's sample, its clearest segment so far (the one nearest
//!   its prototype when heard), 16 kHz mono 16-bit, at most [`SAMPLE_MAX_S`] seconds, so a
//!   person can hear who an id is before naming it.
//!
//! Every file is 0600 and written whole to a temporary file, synced, and renamed over the
//! old one. A `speakers.json` or `prototypes.json` that cannot be read is moved aside (its
//! name + `.corrupt`) with a warning and the roster starts empty, never reusing an id it can
//! still see (in the other file or in a sample's name).

use std::collections::BTreeMap;
use std::fmt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::embed::cosine;

/// The roster file's name in its directory.
pub const FILE: &str = "speakers.json";

/// The prototypes file's name in its directory.
pub const PROTOTYPES_FILE: &str = "prototypes.json";

/// The longest sample kept of a speaker, in seconds (the middle of a longer segment).
pub const SAMPLE_MAX_S: f64 = 8.0;

const SAMPLE_RATE: u32 = stt_audio::SAMPLE_RATE;

/// The rules' settings (the daemon's `[speakers]` section).
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    pub match_threshold: f32,
    pub uncertain_threshold: f32,
    /// Seconds of speech after which a provisional speaker is confirmed.
    pub confirm_s: f64,
    /// Most speakers kept; beyond it the least heard unnamed one is pruned.
    pub max_speakers: usize,
}

/// How sure the roster is about a segment's speaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Matched,
    Uncertain,
    Unknown,
}

/// Whether a speaker is still provisional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Provisional,
    Confirmed,
}

/// One speaker, as `speakers.json` keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Speaker {
    pub id: String,
    #[serde(default)]
    pub name: Option<String>,
    pub status: State,
    /// Seconds of speech attributed to this speaker (matched or minted, not uncertain).
    pub cumulative_s: f64,
    #[serde(default)]
    pub sample_path: Option<PathBuf>,
    /// RFC 3339 time the speaker was minted.
    pub created_at: String,
    /// How near the sample was to the prototype when kept: a nearer segment replaces it.
    #[serde(default)]
    pub sample_score: f32,
}

/// A speaker's voice print.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Prototype {
    /// Seconds of speech averaged into `vector`.
    seconds: f64,
    vector: Vec<f32>,
}

/// Who spoke a segment.
#[derive(Debug, Clone, PartialEq)]
pub struct Identified {
    /// The speaker matched or minted; for an uncertain segment, the nearest one.
    pub id: String,
    pub status: Status,
    /// The best cosine against the prototypes known before this segment (`None` when there
    /// were none).
    pub score: Option<f32>,
    /// The speaker's name, when matched and named.
    pub name: Option<String>,
    /// The roster's list changed (a mint, a confirm, a prune): announce it.
    pub changed: bool,
    /// The speakers pruned to make room for a new one.
    pub pruned: Vec<String>,
}

/// What went wrong on disk. The roster in memory stays as it was; the next write tries again.
#[derive(Debug)]
pub struct RosterError {
    pub path: PathBuf,
    pub error: std::io::Error,
}

impl fmt::Display for RosterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot write the speaker roster at {}: {} (check the disk has room and the \
             directory is yours)",
            self.path.display(),
            self.error
        )
    }
}

impl std::error::Error for RosterError {}

/// Read from disk once, kept in memory, written back on every change.
#[derive(Debug)]
pub struct Roster {
    dir: PathBuf,
    rules: Rules,
    /// Each speaker with its voice print, oldest first.
    entries: Vec<Entry>,
    next: u32,
    edits_applied: u64,
    /// [`Roster::identify`] changed what the files hold: [`Roster::persist`] writes it.
    dirty: bool,
    /// The speaker whose sample the last identified segment should become, with its score.
    sample_due: Option<(String, f32)>,
    /// What was wrong with the files found, for the caller to report (once).
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    speaker: Speaker,
    print: Prototype,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct RosterFile {
    version: u32,
    next: u32,
    #[serde(default)]
    edits_applied: u64,
    speakers: Vec<Speaker>,
}

impl Roster {
    /// The roster kept in `dir` (created 0700 when missing). Unreadable files are moved aside
    /// and reported in [`Roster::warnings`]; only a directory that cannot be made is an error.
    pub fn open(dir: &Path, rules: Rules) -> Result<Roster, RosterError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|error| RosterError { path: dir.to_owned(), error })?;
        let mut warnings = Vec::new();
        let file: RosterFile = read_json(&dir.join(FILE), &mut warnings).unwrap_or_default();
        let mut prints: BTreeMap<String, Prototype> =
            read_json(&dir.join(PROTOTYPES_FILE), &mut warnings).unwrap_or_default();
        // Never reuse an id still to be seen anywhere: in either file or as a sample.
        let mut next = file.next.max(1);
        let mut seen = |id: &str| {
            if let Some(n) = id.strip_prefix("spk_").and_then(|n| n.parse::<u32>().ok()) {
                next = next.max(n + 1);
            }
        };
        file.speakers.iter().for_each(|s| seen(&s.id));
        prints.keys().for_each(|id| seen(id));
        if let Ok(found) = std::fs::read_dir(dir) {
            for entry in found.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if let Some(id) = name.strip_suffix(".wav") {
                    seen(id);
                }
            }
        }
        let mut entries = Vec::with_capacity(file.speakers.len());
        for speaker in file.speakers {
            match prints.remove(&speaker.id).filter(|p| !p.vector.is_empty()) {
                Some(print) => entries.push(Entry { speaker, print }),
                None => warnings.push(format!(
                    "speaker {} has no voice print in {}: dropped (it is minted again, under a \
                     new id, when heard)",
                    speaker.id,
                    dir.join(PROTOTYPES_FILE).display()
                )),
            }
        }
        Ok(Roster {
            dir: dir.to_owned(),
            rules,
            entries,
            next,
            edits_applied: file.edits_applied,
            dirty: false,
            sample_due: None,
            warnings,
        })
    }

    /// The speakers, oldest first.
    pub fn speakers(&self) -> impl ExactSizeIterator<Item = &Speaker> {
        self.entries.iter().map(|e| &e.speaker)
    }

    /// The sequence number of the last edit applied (see [`Roster::forget`], [`Roster::merge`]).
    pub fn edits_applied(&self) -> u64 {
        self.edits_applied
    }

    /// Who spoke a segment of `speech_s` seconds whose embedding is `embedding`; `at` is the
    /// RFC 3339 time, for a mint. In memory only, so the answer goes out without waiting on
    /// a disk: [`Roster::persist`] then writes what changed (an adapt too), with the
    /// segment's audio when it is to be the speaker's sample.
    pub fn identify(&mut self, embedding: &[f32], speech_s: f64, at: &str) -> Identified {
        let best = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (i, cosine(embedding, &e.print.vector)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let score = best.map(|(_, s)| s);
        match best {
            Some((i, s)) if s >= self.rules.match_threshold => {
                let confirm_s = self.rules.confirm_s;
                let Entry { speaker, print } = &mut self.entries[i];
                print.vector = blend(&print.vector, print.seconds, embedding, speech_s);
                print.seconds += speech_s;
                speaker.cumulative_s += speech_s;
                let confirmed =
                    speaker.status == State::Provisional && speaker.cumulative_s >= confirm_s;
                if confirmed {
                    speaker.status = State::Confirmed;
                }
                let found = Identified {
                    id: speaker.id.clone(),
                    status: Status::Matched,
                    score,
                    name: speaker.name.clone(),
                    changed: confirmed,
                    pruned: Vec::new(),
                };
                if s > speaker.sample_score {
                    self.sample_due = Some((speaker.id.clone(), s));
                }
                self.dirty = true;
                found
            }
            Some((i, s)) if s >= self.rules.uncertain_threshold => Identified {
                id: self.entries[i].speaker.id.clone(),
                status: Status::Uncertain,
                score,
                name: None,
                changed: false,
                pruned: Vec::new(),
            },
            _ => {
                let id = format!("spk_{:04}", self.next);
                self.next += 1;
                let status = if speech_s >= self.rules.confirm_s {
                    State::Confirmed
                } else {
                    State::Provisional
                };
                let speaker = Speaker {
                    id: id.clone(),
                    name: None,
                    status,
                    cumulative_s: speech_s,
                    // Written by `persist`, a moment after the roster naming it is announced.
                    sample_path: Some(self.dir.join(format!("{id}.wav"))),
                    created_at: at.to_owned(),
                    sample_score: 0.0,
                };
                let print = Prototype { seconds: speech_s, vector: unit(embedding.to_vec()) };
                self.entries.push(Entry { speaker, print });
                // Score 0: the first segment near the print replaces it.
                self.sample_due = Some((id.clone(), 0.0));
                self.dirty = true;
                let pruned = self.prune(&id);
                Identified { id, status: Status::Unknown, score, name: None, changed: true, pruned }
            }
        }
    }

    /// Writes what [`Roster::identify`] changed: `samples` (the segment it was given) as the
    /// speaker's sample when it is the clearest yet, then the two files. Nothing when nothing
    /// changed (an uncertain segment).
    pub fn persist(&mut self, samples: &[f32]) -> Result<(), RosterError> {
        if let Some((id, score)) = self.sample_due.take()
            && let Some(i) = self.position(&id)
        {
            self.keep_sample(i, samples, score)?;
        }
        if std::mem::take(&mut self.dirty) {
            self.save()?;
        }
        Ok(())
    }

    /// Takes the names the assistant keeps (speaker id → name); true when a speaker's name
    /// changed. Names of ids not in the roster are ignored.
    pub fn set_names(&mut self, names: &BTreeMap<String, String>) -> Result<bool, RosterError> {
        let mut changed = false;
        for Entry { speaker, .. } in &mut self.entries {
            let name = names.get(&speaker.id).filter(|n| !n.trim().is_empty()).cloned();
            if speaker.name != name {
                speaker.name = name;
                changed = true;
            }
        }
        if changed {
            self.save()?;
        }
        Ok(changed)
    }

    /// Removes `id`, its voice print and its sample; true when it was there. `seq` is the
    /// edit's sequence number, remembered so it is not applied again.
    pub fn forget(&mut self, id: &str, seq: u64) -> Result<bool, RosterError> {
        let found = self.position(id).map(|i| self.remove(i)).is_some();
        self.edits_applied = self.edits_applied.max(seq);
        self.save()?;
        Ok(found)
    }

    /// `id` and `into` are one person: `id`'s speech time and voice print go into `into`'s
    /// (weighted by seconds), and `id` is removed. `into` keeps its id and name (or takes
    /// `id`'s when it has none), and the clearer of the two samples. True when both were
    /// there (and differ).
    pub fn merge(&mut self, id: &str, into: &str, seq: u64) -> Result<bool, RosterError> {
        self.edits_applied = self.edits_applied.max(seq);
        let (Some(f), Some(t)) = (self.position(id), self.position(into)) else {
            self.save()?;
            return Ok(false);
        };
        if f == t {
            self.save()?;
            return Ok(false);
        }
        let from = self.entries[f].clone();
        let confirm_s = self.rules.confirm_s;
        let ours = self.dir.join(format!("{into}.wav"));
        let Entry { speaker, print } = &mut self.entries[t];
        print.vector = blend(&print.vector, print.seconds, &from.print.vector, from.print.seconds);
        print.seconds += from.print.seconds;
        speaker.cumulative_s += from.speaker.cumulative_s;
        if speaker.cumulative_s >= confirm_s || from.speaker.status == State::Confirmed {
            speaker.status = State::Confirmed;
        }
        if speaker.name.is_none() {
            speaker.name.clone_from(&from.speaker.name);
        }
        if from.speaker.sample_score > speaker.sample_score
            && let Some(theirs) = &from.speaker.sample_path
        {
            // Keep theirs, under our name.
            std::fs::rename(theirs, &ours)
                .map_err(|error| RosterError { path: ours.clone(), error })?;
            speaker.sample_path = Some(ours);
            speaker.sample_score = from.speaker.sample_score;
            self.entries[f].speaker.sample_path = None;
        }
        self.remove(f);
        self.save()?;
        Ok(true)
    }

    fn position(&self, id: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.speaker.id == id)
    }

    /// Removes entry `i` and its sample.
    fn remove(&mut self, i: usize) {
        let entry = self.entries.remove(i);
        if let Some(path) = entry.speaker.sample_path {
            let _ = std::fs::remove_file(path);
        }
    }

    /// Beyond `max_speakers`, drops the unnamed speaker heard least (not `newest`, just
    /// minted); named speakers are never dropped, so the roster may stay over the limit.
    fn prune(&mut self, newest: &str) -> Vec<String> {
        let mut pruned = Vec::new();
        while self.entries.len() > self.rules.max_speakers {
            let least = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.speaker.name.is_none() && e.speaker.id != newest)
                .min_by(|a, b| a.1.speaker.cumulative_s.total_cmp(&b.1.speaker.cumulative_s))
                .map(|(i, _)| i);
            let Some(i) = least else { break };
            pruned.push(self.entries[i].speaker.id.clone());
            self.remove(i);
        }
        pruned
    }

    /// Writes `samples` (the middle [`SAMPLE_MAX_S`] of them) as entry `i`'s sample.
    fn keep_sample(&mut self, i: usize, samples: &[f32], score: f32) -> Result<(), RosterError> {
        let speaker = &mut self.entries[i].speaker;
        let path = self.dir.join(format!("{}.wav", speaker.id));
        let most = (SAMPLE_MAX_S * f64::from(SAMPLE_RATE)) as usize;
        let skip = samples.len().saturating_sub(most) / 2;
        let kept = &samples[skip..samples.len().min(skip + most)];
        stt_os::write_private(&path, &stt_audio::wav_bytes(kept))
            .map_err(|error| RosterError { path: path.clone(), error })?;
        speaker.sample_path = Some(path);
        speaker.sample_score = score;
        Ok(())
    }

    /// Writes both files: the prototypes first, so a crash between the two leaves a
    /// prototype without a speaker (ignored on reading), never the other way round.
    fn save(&self) -> Result<(), RosterError> {
        let prints: BTreeMap<&str, &Prototype> =
            self.entries.iter().map(|e| (e.speaker.id.as_str(), &e.print)).collect();
        let path = self.dir.join(PROTOTYPES_FILE);
        let json = serde_json::to_vec(&prints).map_err(std::io::Error::other);
        json.and_then(|j| stt_os::write_private(&path, &j))
            .map_err(|error| RosterError { path, error })?;
        let path = self.dir.join(FILE);
        let file = RosterFile {
            version: 1,
            next: self.next,
            edits_applied: self.edits_applied,
            speakers: self.speakers().cloned().collect(),
        };
        let json = serde_json::to_vec_pretty(&file).map_err(std::io::Error::other);
        json.and_then(|j| stt_os::write_private(&path, &j))
            .map_err(|error| RosterError { path, error })
    }
}

/// The unit-length mean of `a` (weighted `wa`) and `b` (weighted `wb`).
fn blend(a: &[f32], wa: f64, b: &[f32], wb: f64) -> Vec<f32> {
    let total = (wa + wb).max(f64::EPSILON);
    let (fa, fb) = ((wa / total) as f32, (wb / total) as f32);
    unit(a.iter().zip(b).map(|(x, y)| x * fa + y * fb).collect())
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// `path` parsed as JSON; `None` when missing, or when unreadable: then the file is moved
/// aside (`.corrupt`) and a warning says so.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path, warnings: &mut Vec<String>) -> Option<T> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            warnings.push(format!("cannot read {}: {e}; starting without it", path.display()));
            return None;
        }
    };
    match serde_json::from_slice(&bytes) {
        Ok(value) => Some(value),
        Err(e) => {
            let mut aside = path.as_os_str().to_owned();
            aside.push(".corrupt");
            let moved = std::fs::rename(path, &aside);
            warnings.push(match moved {
                Ok(()) => format!(
                    "{} is corrupt ({e}): moved aside to {}; the speakers in it are minted \
                     again when heard",
                    path.display(),
                    Path::new(&aside).display()
                ),
                Err(m) => format!(
                    "{} is corrupt ({e}) and could not be moved aside ({m}): ignored",
                    path.display()
                ),
            });
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn rules() -> Rules {
        Rules { match_threshold: 0.7, uncertain_threshold: 0.5, confirm_s: 5.0, max_speakers: 3 }
    }

    /// A unit vector along axis `axis`, tilted toward axis `axis + 1` by `tilt`.
    fn voice(axis: usize, tilt: f32) -> Vec<f32> {
        let mut v = vec![0.0; 8];
        v[axis] = 1.0;
        v[(axis + 1) % 8] = tilt;
        unit(v)
    }

    fn open(dir: &Path) -> Roster {
        Roster::open(dir, rules()).unwrap()
    }

    fn hear(roster: &mut Roster, v: &[f32], seconds: f64) -> Identified {
        let who = roster.identify(v, seconds, "2026-12-03T10:00:00Z");
        roster.persist(&[0.1; 1600]).unwrap();
        who
    }

    #[test]
    fn a_new_voice_is_minted_a_known_one_matched_and_confirmed_after_enough_speech() {
        let dir = tempfile::tempdir().unwrap();
        let mut roster = open(dir.path());
        let first = hear(&mut roster, &voice(0, 0.0), 2.0);
        assert_eq!(
            (first.id.as_str(), first.status, first.score),
            ("spk_0001", Status::Unknown, None)
        );
        assert!(first.changed, "a mint is announced");
        let again = hear(&mut roster, &voice(0, 0.1), 2.0);
        assert_eq!((again.id.as_str(), again.status), ("spk_0001", Status::Matched));
        assert!(!again.changed, "an adapt is not announced");
        assert!(again.score.unwrap() > 0.99);
        let confirmed = hear(&mut roster, &voice(0, 0.0), 2.0);
        assert!(confirmed.changed, "6 s ≥ confirm_s: confirmed");
        let first = &roster.entries[0].speaker;
        assert_eq!((first.status, first.cumulative_s), (State::Confirmed, 6.0));
        let other = hear(&mut roster, &voice(3, 0.0), 2.0);
        assert_eq!((other.id.as_str(), other.status), ("spk_0002", Status::Unknown));
    }

    #[test]
    fn an_uncertain_segment_moves_no_prototype() {
        let dir = tempfile::tempdir().unwrap();
        let mut roster = open(dir.path());
        hear(&mut roster, &voice(0, 0.0), 2.0);
        let before = roster.entries.clone();
        // cos = 1/sqrt(1 + 1.2²) ≈ 0.64: between the thresholds.
        let unsure = hear(&mut roster, &voice(0, 1.2), 2.0);
        assert_eq!((unsure.id.as_str(), unsure.status), ("spk_0001", Status::Uncertain));
        assert!(!unsure.changed);
        assert_eq!(roster.entries, before);
    }

    #[test]
    fn the_least_heard_unnamed_speaker_is_pruned_never_a_named_one_and_ids_are_not_reused() {
        let dir = tempfile::tempdir().unwrap();
        let mut roster = open(dir.path());
        hear(&mut roster, &voice(0, 0.0), 1.0); // spk_0001: least heard, but named
        hear(&mut roster, &voice(2, 0.0), 3.0); // spk_0002
        hear(&mut roster, &voice(4, 0.0), 2.0); // spk_0003
        let names = BTreeMap::from([("spk_0001".to_owned(), "Ana".to_owned())]);
        assert!(roster.set_names(&names).unwrap());
        assert!(!roster.set_names(&names).unwrap(), "the same names are no change");
        let fourth = hear(&mut roster, &voice(6, 0.0), 1.0);
        assert_eq!(fourth.id, "spk_0004");
        assert_eq!(fourth.pruned, ["spk_0003"]);
        let ids: Vec<String> = roster.speakers().map(|s| s.id.clone()).collect();
        assert_eq!(ids, ["spk_0001", "spk_0002", "spk_0004"], "spk_0003 pruned");
        assert!(!dir.path().join("spk_0003.wav").exists(), "its sample went with it");
        // A named roster over the limit keeps everyone named.
        let all: BTreeMap<String, String> =
            ids.iter().map(|id| (id.clone(), format!("N{id}"))).collect();
        roster.set_names(&all).unwrap();
        hear(&mut roster, &voice(5, 0.0), 1.0);
        assert_eq!(roster.speakers().len(), 4, "no unnamed one to prune but the newest");
        drop(roster);
        let mut again = open(dir.path());
        assert_eq!(hear(&mut again, &voice(7, 0.0), 1.0).id, "spk_0006", "never reused");
    }

    #[test]
    fn the_roster_survives_a_restart_exactly_privately() {
        let dir = tempfile::tempdir().unwrap();
        let speakers = dir.path().join("speakers");
        let mut roster = open(&speakers);
        hear(&mut roster, &voice(0, 0.0), 2.0);
        hear(&mut roster, &voice(0, 0.2), 3.0);
        hear(&mut roster, &voice(3, 0.0), 2.0);
        let again = open(&speakers);
        assert!(again.warnings.is_empty(), "{:?}", again.warnings);
        assert_eq!(again.entries, roster.entries);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&speakers), 0o700);
        for file in [FILE, PROTOTYPES_FILE, "spk_0001.wav", "spk_0002.wav"] {
            assert_eq!(mode(&speakers.join(file)), 0o600, "{file}");
        }
        let wav = std::fs::read(speakers.join("spk_0001.wav")).unwrap();
        assert_eq!(&wav[..4], b"RIFF");
        assert_eq!(wav.len(), 44 + 1600 * 2);
    }

    #[test]
    fn a_corrupt_roster_is_moved_aside_and_its_ids_are_not_reused() {
        let dir = tempfile::tempdir().unwrap();
        let mut roster = open(dir.path());
        hear(&mut roster, &voice(0, 0.0), 2.0);
        hear(&mut roster, &voice(3, 0.0), 2.0);
        std::fs::write(dir.path().join(FILE), b"{\"version\": 1, \"spea").unwrap();
        let mut fresh = open(dir.path());
        assert_eq!(fresh.speakers().len(), 0);
        assert_eq!(fresh.warnings.len(), 1, "{:?}", fresh.warnings);
        assert!(fresh.warnings[0].contains("moved aside"), "{:?}", fresh.warnings);
        assert!(dir.path().join("speakers.json.corrupt").exists());
        assert_eq!(hear(&mut fresh, &voice(5, 0.0), 2.0).id, "spk_0003");
    }

    #[test]
    fn forget_and_merge_change_the_roster_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut roster = open(dir.path());
        hear(&mut roster, &voice(0, 0.0), 2.0); // spk_0001
        hear(&mut roster, &voice(2, 0.0), 2.0); // spk_0002
        hear(&mut roster, &voice(4, 0.0), 4.0); // spk_0003
        roster.set_names(&BTreeMap::from([("spk_0003".into(), "Ana".into())])).unwrap();
        assert!(roster.forget("spk_0002", 7).unwrap());
        assert!(!dir.path().join("spk_0002.wav").exists());
        assert_eq!(roster.edits_applied(), 7);
        assert!(roster.merge("spk_0003", "spk_0001", 8).unwrap());
        let only = &roster.entries[0].speaker;
        assert_eq!(roster.speakers().len(), 1);
        assert_eq!((only.id.as_str(), only.name.as_deref()), ("spk_0001", Some("Ana")));
        assert_eq!((only.cumulative_s, only.status), (6.0, State::Confirmed));
        // The merged print is between the two voices: both now match.
        let a = cosine(&voice(0, 0.0), &roster.entries[0].print.vector);
        let b = cosine(&voice(4, 0.0), &roster.entries[0].print.vector);
        assert!(a > 0.4 && b > 0.4, "{a} {b}");
        assert!(!roster.merge("spk_0001", "spk_0009", 9).unwrap(), "no such speaker");
        assert!(!roster.forget("spk_0002", 10).unwrap(), "already gone");
        let again = open(dir.path());
        assert_eq!(again.edits_applied(), 10);
        assert_eq!(again.entries, roster.entries);
    }
}
