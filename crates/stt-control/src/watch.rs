//! `stt-ctl watch`: what the assistant is doing, for a status bar, one line per change:
//! `idle`, `listening`, `thinking`, `speaking`, `dictating`, `wake off` (idle, and no wake
//! phrase listened for), or `off` while the assistant cannot be reached. It follows the
//! assistant's events (not as a viewer) and reconnects by itself, so a bar can start it once.
//!
//! `--format plain` (i3blocks, polybar's `tail = true`) prints the state alone; `--format
//! waybar` prints waybar's JSON (`text`, `alt`, `class`, and a `tooltip` with the last words
//! heard). `bar/` has a module for each.

use std::io::Write;
use std::path::Path;

use stt_bus::{Link, Subscription};
use stt_proto::{AssistantEvent, Mode};

/// How each line is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The state alone.
    Plain,
    /// waybar's custom module JSON.
    Waybar,
}

/// What a bar shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Off,
    WakeOff,
    Idle,
    Listening,
    Thinking,
    Speaking,
    Dictating,
}

impl Shown {
    pub fn as_str(self) -> &'static str {
        match self {
            Shown::Off => "off",
            Shown::WakeOff => "wake off",
            Shown::Idle => "idle",
            Shown::Listening => "listening",
            Shown::Thinking => "thinking",
            Shown::Speaking => "speaking",
            Shown::Dictating => "dictating",
        }
    }

    /// The state as a CSS class and icon name (no space).
    fn class(self) -> &'static str {
        match self {
            Shown::WakeOff => "wake-off",
            other => other.as_str(),
        }
    }
}

/// What is known of the assistant, from its events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Watched {
    up: bool,
    mode: Option<Mode>,
    speaking: bool,
    busy: bool,
    wake: Option<String>,
    /// The last words heard, for the tooltip.
    last: String,
}

impl Watched {
    /// The link came up or went down.
    pub fn link(&mut self, up: bool) {
        *self = Watched { up, last: std::mem::take(&mut self.last), ..Watched::default() };
    }

    /// An event from the assistant.
    pub fn event(&mut self, event: &AssistantEvent) {
        match event {
            AssistantEvent::Mode { mode } => self.mode = Some(*mode),
            AssistantEvent::Heartbeat(beat) => {
                self.mode = Some(beat.mode);
                self.speaking = beat.speaking;
                self.busy = beat.inference_busy;
                self.wake.clone_from(&beat.wake);
            }
            AssistantEvent::Transcript(t) if !t.text.trim().is_empty() => {
                self.last = t.text.trim().to_owned();
            }
            _ => {}
        }
    }

    /// What the bar shows now.
    pub fn shown(&self) -> Shown {
        let Some(mode) = self.mode.filter(|_| self.up) else { return Shown::Off };
        match mode {
            Mode::Dictate => Shown::Dictating,
            _ if self.speaking => Shown::Speaking,
            Mode::Executing => Shown::Thinking,
            Mode::Chat if self.busy => Shown::Thinking,
            Mode::CommandArmed | Mode::Chat => Shown::Listening,
            Mode::Idle if self.wake.is_some() => Shown::Idle,
            Mode::Idle => Shown::WakeOff,
        }
    }

    /// The line for the bar, in `format`.
    pub fn line(&self, format: Format) -> String {
        let shown = self.shown();
        match format {
            Format::Plain => format!("{}\n", shown.as_str()),
            Format::Waybar => {
                let tooltip = if self.last.is_empty() {
                    format!("stt: {}", shown.as_str())
                } else {
                    format!("stt: {}\nlast heard: {}", shown.as_str(), self.last)
                };
                let json = serde_json::json!({
                    "text": shown.as_str(),
                    "alt": shown.class(),
                    "class": shown.class(),
                    "tooltip": tooltip,
                });
                format!("{json}\n")
            }
        }
    }
}

/// Follows the assistant at `socket`, writing a line to `out` whenever what it shows changes
/// (the first at once); returns only when `out` is closed.
pub fn run(socket: &Path, format: Format, out: &mut dyn Write) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut link = Subscription::assistant(socket.to_owned(), "stt-ctl watch", false);
        let mut watched = Watched::default();
        let mut shown = watched.line(format);
        out.write_all(shown.as_bytes())?;
        out.flush()?;
        loop {
            match link.next().await {
                Link::Up(_) => watched.link(true),
                Link::Down(_) => watched.link(false),
                Link::Event(event) => watched.event(&event),
            }
            let line = watched.line(format);
            if line != shown {
                out.write_all(line.as_bytes())?;
                out.flush()?;
                shown = line;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use stt_proto::{AssistantHeartbeat, SpeakerStatus, Transcript};

    use super::*;

    fn beat(mode: Mode, speaking: bool, busy: bool, wake: Option<&str>) -> AssistantEvent {
        AssistantEvent::Heartbeat(AssistantHeartbeat {
            seq: 1,
            mode,
            stt_healthy: true,
            daemon_backlog: 0,
            inference_queue: 0,
            inference_busy: busy,
            stt_remote: None,
            wake: wake.map(String::from),
            speaking,
        })
    }

    /// Each state as the assistant's mode, voice, model and wake phrase make it.
    #[test]
    fn the_state_follows_the_mode_the_voice_and_the_wake_phrase() {
        let mut watched = Watched::default();
        assert_eq!(watched.shown(), Shown::Off);
        watched.link(true);
        for (event, shown) in [
            (beat(Mode::Idle, false, false, None), Shown::WakeOff),
            (beat(Mode::Idle, false, false, Some("hey_jarvis")), Shown::Idle),
            (AssistantEvent::Mode { mode: Mode::CommandArmed }, Shown::Listening),
            (AssistantEvent::Mode { mode: Mode::Executing }, Shown::Thinking),
            (beat(Mode::Executing, true, true, Some("hey_jarvis")), Shown::Speaking),
            (beat(Mode::Chat, false, true, Some("hey_jarvis")), Shown::Thinking),
            (beat(Mode::Chat, false, false, Some("hey_jarvis")), Shown::Listening),
            (beat(Mode::Dictate, true, false, None), Shown::Dictating),
        ] {
            watched.event(&event);
            assert_eq!(watched.shown(), shown, "{event:?}");
        }
        watched.link(false);
        assert_eq!(watched.shown(), Shown::Off);
    }

    #[test]
    fn waybar_gets_its_json_with_the_last_words_heard_and_plain_the_state_alone() {
        let mut watched = Watched::default();
        watched.link(true);
        watched.event(&beat(Mode::Idle, false, false, None));
        assert_eq!(watched.line(Format::Plain), "wake off\n");
        watched.event(&AssistantEvent::Transcript(Transcript {
            seg_id: 1,
            text: " what time is it ".into(),
            language: "en".into(),
            start: 0.0,
            end: 1.0,
            duration: 1.0,
            speaker_id: None,
            speaker_status: SpeakerStatus::None,
            speaker: None,
            speaker_score: None,
        }));
        let line = watched.line(Format::Waybar);
        assert!(line.ends_with('\n') && !line.trim_end().contains('\n'), "{line:?}");
        let json: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(json["text"], "wake off");
        assert_eq!(json["class"], "wake-off");
        assert_eq!(json["tooltip"], "stt: wake off\nlast heard: what time is it");
        // The last words outlive a reconnection.
        watched.link(false);
        assert!(watched.line(Format::Waybar).contains("last heard: what time is it"));
    }
}
