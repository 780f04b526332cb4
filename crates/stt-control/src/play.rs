//! `stt-ctl speaker-play ID`: hearing who a speaker id is before naming, merging or
//! forgetting it.
//!
//! The daemon keeps a short WAV of each speaker's clearest speech and the roster says where
//! (`sample_path`, relative to the data directory or absolute). The assistant only relays
//! the roster, so the playing happens here: ask `speaker_list`, find the file, and run the
//! first player on `PATH` ([`PLAYERS`]), waiting for it. With `--print`, or with no player,
//! the path is printed instead, for any other player.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use stt_proto::{AssistantEvent, ErrorCode, ErrorMsg, Speaker};

use crate::{Cli, EXIT_OK, EXIT_REFUSED};

/// The players tried, in order, with the arguments before the file: PipeWire's, then
/// PulseAudio's (also served by PipeWire), then ALSA's.
pub const PLAYERS: &[(&str, &[&str])] = &[("pw-play", &[]), ("paplay", &[]), ("aplay", &["-q"])];

/// Plays (or with `print`, prints the path of) speaker `id`'s sample; returns the exit
/// status.
pub fn run(cli: &Cli, id: &str, print: bool, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let reply = match crate::roster(cli, err) {
        Ok(reply) => reply,
        Err(code) => return code,
    };
    let list = match reply.event {
        AssistantEvent::SpeakerList(list) => list,
        AssistantEvent::Error(e) => return refuse(cli, e, out, err),
        other => {
            let _ = writeln!(err, "stt-ctl: expected the speaker list, got {other:?}");
            return EXIT_REFUSED;
        }
    };
    let Some(speaker) = list.speakers.iter().find(|s| s.id == id) else {
        // The wording of the assistant's own refusal (`speaker_name`).
        let message = format!("no speaker '{id}': `stt-ctl speaker-list` shows the ids");
        return refuse(cli, ErrorMsg::new(ErrorCode::UnknownSpeaker, message), out, err);
    };
    let path = match sample(speaker, stt_config::dirs::data_dir) {
        Ok(path) => path,
        Err(e) => return refuse(cli, e, out, err),
    };
    if print {
        let _ = writeln!(out, "{}", path.display());
        return EXIT_OK;
    }
    let Some((player, args)) = find_player(std::env::var_os("PATH").as_deref()) else {
        let _ = writeln!(out, "{}", path.display());
        let _ = writeln!(
            err,
            "stt-ctl: no player found on PATH ({}): play the file above with any player, or \
             install one (pipewire-bin, pulseaudio-utils or alsa-utils)",
            names()
        );
        return EXIT_OK;
    };
    let name = player.file_name().map(OsStr::to_string_lossy).unwrap_or_default().into_owned();
    let played = Command::new(&player)
        .args(args)
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    let problem = match played {
        Ok(done) if done.status.success() => {
            let who = speaker.name.as_deref().unwrap_or("unnamed");
            let _ = writeln!(out, "{id} ({who}): played {} with {name}", path.display());
            return EXIT_OK;
        }
        Ok(done) => {
            let said = String::from_utf8_lossy(&done.stderr);
            match said.lines().rev().find(|l| !l.trim().is_empty()) {
                Some(line) => format!("{} ({})", line.trim(), done.status),
                None => done.status.to_string(),
            }
        }
        Err(e) => format!("cannot run {}: {e}", player.display()),
    };
    let _ = writeln!(
        err,
        "stt-ctl: {name} could not play '{}': {problem}; check the sound output, or play the \
         file with another player (`stt-ctl speaker-play {id} --print` prints its path)",
        path.display()
    );
    EXIT_REFUSED
}

/// Where `speaker`'s sample is: its `sample_path`, under the data directory when relative.
/// No sample, or none there, is an error that says why.
fn sample<E: std::fmt::Display>(
    speaker: &Speaker,
    data_dir: impl FnOnce() -> Result<PathBuf, E>,
) -> Result<PathBuf, ErrorMsg> {
    let id = &speaker.id;
    let Some(given) = speaker.sample_path.as_deref().filter(|p| !p.is_empty()) else {
        return Err(ErrorMsg::new(
            ErrorCode::NotReady,
            format!(
                "{id} has no sample yet: stt-daemon keeps one of each speaker's clearest \
                 speech; try again once {id} has spoken"
            ),
        ));
    };
    let path = if Path::new(given).is_absolute() {
        PathBuf::from(given)
    } else {
        let data = data_dir().map_err(|e| {
            ErrorMsg::new(ErrorCode::NotReady, format!("{id}'s sample '{given}': {e}"))
        })?;
        data.join(given)
    };
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() => Ok(path),
        Ok(_) => Err(ErrorMsg::new(
            ErrorCode::NotReady,
            format!("{id}'s sample '{}' is not a file", path.display()),
        )),
        Err(e) => Err(ErrorMsg::new(
            ErrorCode::NotReady,
            format!(
                "cannot read {id}'s sample '{}': {e}; does stt-ctl see the data directory \
                 stt-daemon writes ($STT_DATA_DIR, $XDG_DATA_HOME)?",
                path.display()
            ),
        )),
    }
}

/// The first of [`PLAYERS`] that is an executable file in a directory of `path` (a `PATH`
/// value), with its arguments.
pub fn find_player(path: Option<&OsStr>) -> Option<(PathBuf, &'static [&'static str])> {
    PLAYERS
        .iter()
        .find_map(|(name, args)| stt_os::find_program(Path::new(name), path).map(|p| (p, *args)))
}

/// The players' names, for a message.
fn names() -> String {
    PLAYERS.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
}

/// Writes `error` as the assistant's refusals are written (the JSON line on stdout with
/// `--json`, else on stderr with its code); returns the exit status.
fn refuse(cli: &Cli, error: ErrorMsg, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    if cli.json {
        let _ = out.write_all(&stt_proto::error_line(error));
    } else {
        let _ = writeln!(err, "stt-ctl: {error}");
    }
    EXIT_REFUSED
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn speaker(sample_path: Option<&str>) -> Speaker {
        Speaker {
            id: "spk_0002".into(),
            name: None,
            status: stt_proto::SpeakerState::Confirmed,
            cumulative_s: 3.0,
            sample_path: sample_path.map(Into::into),
            created_at: "2026-12-03T10:00:00Z".into(),
        }
    }

    fn touch(path: &Path, mode: u32) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn the_first_executable_player_on_path_is_chosen() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        touch(&a.join("pw-play"), 0o644); // not executable: skipped
        touch(&a.join("aplay"), 0o755);
        touch(&b.join("paplay"), 0o755);
        let path = std::env::join_paths([&a, &b]).unwrap();
        let (found, args) = find_player(Some(&path)).unwrap();
        assert_eq!(found, b.join("paplay"), "paplay comes before aplay, whatever the dirs");
        assert!(args.is_empty());
        let path = std::env::join_paths([&a]).unwrap();
        assert_eq!(find_player(Some(&path)), Some((a.join("aplay"), &["-q"][..])));
        let empty = dir.path().join("empty");
        assert_eq!(find_player(Some(empty.as_os_str())), None);
        assert_eq!(find_player(None), None);
    }

    #[test]
    fn a_sample_is_found_under_the_data_dir_or_where_it_says() {
        let dir = tempfile::tempdir().unwrap();
        let data = || Ok::<_, String>(dir.path().to_path_buf());
        let wav = dir.path().join("speakers/spk_0002.wav");
        touch(&wav, 0o600);
        assert_eq!(sample(&speaker(Some("speakers/spk_0002.wav")), data), Ok(wav.clone()));
        let absolute = wav.display().to_string();
        let no_data = || Err::<PathBuf, _>("no data dir");
        assert_eq!(sample(&speaker(Some(&absolute)), no_data), Ok(wav));

        let check = |path: Option<&str>, needle: &str| {
            let e = sample(&speaker(path), data).unwrap_err();
            assert_eq!(e.code, ErrorCode::NotReady);
            assert!(e.message.contains(needle), "{:?} lacks {needle:?}", e.message);
        };
        check(None, "no sample yet");
        check(Some(""), "no sample yet");
        check(Some("speakers/spk_0009.wav"), "cannot read spk_0002's sample");
        check(Some("speakers"), "not a file");
    }
}
