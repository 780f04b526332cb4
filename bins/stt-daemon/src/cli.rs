//! The command line.

use std::path::PathBuf;

/// Transcribe speech and publish it to subscribers on a Unix socket.
///
/// By default it listens to the microphone. `--input FILE.wav` reads a file instead (at real
/// time, or as fast as it can with `--fast`) and exits when it is done; `--input -` reads raw
/// PCM from stdin, so `arecord`, `parec` or `pw-record` can be piped in.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "stt-daemon", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub common: stt_app::CommonArgs,

    /// Event socket to serve instead of the configured one
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,

    /// Read a WAV file, or `-` for raw PCM on stdin, instead of the microphone
    #[arg(long, value_name = "FILE|-")]
    pub input: Option<PathBuf>,

    /// Keep serving after a file or stdin ends, instead of exiting
    #[arg(long)]
    pub stay: bool,

    /// Open the input only once a subscriber is connected, so it sees every event of a file
    #[arg(long)]
    pub wait_for_subscriber: bool,

    /// Open the input only when SIGUSR1 arrives (`stt-daemon up` sends it when you first arm
    /// a command or start chat); heartbeats say `audio: "idle"` until then
    #[arg(long)]
    pub hold_input: bool,

    #[command(flatten)]
    pub source: Source,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// How the daemon reads its input and which model it runs: flags of the daemon that
/// `stt-daemon up` takes too and passes on.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct Source {
    /// Raw PCM sample format on stdin: s16le, s32le, f32le or u8
    #[arg(long, value_name = "FORMAT", default_value = "s16le")]
    pub format: String,

    /// Raw PCM sample rate on stdin, in Hz
    #[arg(long, value_name = "HZ", default_value_t = 16_000)]
    pub rate: u32,

    /// Raw PCM channel count on stdin
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub channels: u16,

    /// Feed a file as fast as transcription takes it instead of at real time (no live
    /// partial transcripts then)
    #[arg(long)]
    pub fast: bool,

    /// Microphone to use instead of the configured one (`stt-daemon devices` lists them)
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,

    /// Whisper model file to use instead of the configured one
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
}

impl Default for Source {
    /// What the flags are when none is given (the same as clap's defaults above: a test
    /// holds them together).
    fn default() -> Self {
        Self {
            format: "s16le".to_owned(),
            rate: 16_000,
            channels: 1,
            fast: false,
            device: None,
            model: None,
        }
    }
}

/// Subcommands; without one, the daemon runs.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// List audio input devices
    Devices,
    /// Print the transcript of a WAV file, one line per segment, and exit
    Transcribe {
        /// The WAV file (any rate, any channel count)
        file: PathBuf,
    },
    /// Serve speech recognition to Home Assistant over the Wyoming protocol (README, "Home
    /// Assistant"): describe → info; transcribe, audio-start, audio-chunk, audio-stop →
    /// transcript. Same model, vocabulary and filters as the daemon; no microphone.
    Wyoming {
        /// Where to listen: tcp://ADDRESS:PORT or unix://PATH. The loopback address keeps it
        /// to this machine; another address lets anyone who reaches it send audio
        #[arg(long, value_name = "URI", default_value = "tcp://127.0.0.1:10300")]
        listen: String,
        /// Seconds a client may send nothing (mid-event or between events) before it is closed
        #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
        quiet_s: u64,
    },
    /// Enrol your own wake phrase from 3 to 5 recordings of you saying it (WAV files, any
    /// rate), for [wake].phrase = "enrolled"; kept in the data directory (0600)
    WakeEnroll {
        /// The recordings: each the phrase alone, said as you will say it
        #[arg(required = true, num_args = 3..=5, value_name = "FILE.wav")]
        clips: Vec<PathBuf>,
    },
    /// Start the daemon and the assistant (and the TUI, and a local model) as supervised
    /// children
    ///
    /// Each starts once the one before answers on its socket; one that crashes is restarted
    /// (250 ms, doubling to 5 s) and given up on after 5 crashes in 60 s or 3 failed starts
    /// in a row. SIGINT, SIGTERM or quitting the TUI stops them all; none outlives `up`.
    ///
    /// When no provider is configured ([llm] provider and endpoint are "") and nothing
    /// answers on 127.0.0.1:[llm].local_port (9931), it first starts llama-server with
    /// [llm].local_model (scripts/fetch-llm installs both), without waiting for the model to
    /// load; its log is $XDG_STATE_HOME/stt/llama-server.log. If it keeps failing, the rest
    /// runs on without it. STT_RUN_LLM=0 or [llm].local_server = false turns this off.
    Up(UpArgs),
}

/// `stt-daemon up`'s flags: its own, and those it passes to the daemon (`--config` goes to
/// every child).
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct UpArgs {
    /// Also run the TUI in this terminal; quitting it stops everything
    #[arg(long)]
    pub with_tui: bool,

    /// Append the children's logs (each line prefixed with its name) to FILE instead of
    /// writing them to stderr. With --with-tui (the TUI owns the terminal) they go to
    /// $XDG_STATE_HOME/stt/up.log unless this says otherwise (kept to 8 MiB: a longer one
    /// becomes up.log.1 at the next start)
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,

    /// Read a WAV file, or `-` for raw PCM on stdin, instead of the microphone. It plays when
    /// you first arm a command or start chat (or at once with --play-at-once), and the
    /// daemon keeps serving after it ends
    #[arg(long, value_name = "FILE|-")]
    pub input: Option<PathBuf>,

    /// With --input: play it as soon as the assistant follows the daemon, instead of
    /// waiting for the first arm or chat
    #[arg(long, requires = "input")]
    pub play_at_once: bool,

    #[command(flatten)]
    pub source: Source,
}

impl Cli {
    /// The daemon's own flags given before a subcommand, by name: `up` takes its flags after
    /// `up`, so these would be silently ignored there.
    pub fn daemon_flags_given(&self) -> Vec<&'static str> {
        let (source, default) = (&self.source, Source::default());
        let given = [
            ("--socket", self.socket.is_some()),
            ("--input", self.input.is_some()),
            ("--format", source.format != default.format),
            ("--rate", source.rate != default.rate),
            ("--channels", source.channels != default.channels),
            ("--fast", source.fast),
            ("--stay", self.stay),
            ("--wait-for-subscriber", self.wait_for_subscriber),
            ("--hold-input", self.hold_input),
            ("--device", source.device.is_some()),
            ("--model", source.model.is_some()),
        ];
        given.into_iter().filter(|(_, given)| *given).map(|(name, _)| name).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// Home Assistant's server is reachable from this machine only unless the person says
    /// otherwise: anyone who reaches it may send audio.
    #[test]
    fn wyoming_listens_on_the_loopback_address_unless_told() {
        let Some(Command::Wyoming { listen, .. }) = parse(&["stt-daemon", "wyoming"]).command
        else {
            panic!()
        };
        let url = listen.strip_prefix("tcp://").unwrap();
        let addr: std::net::SocketAddr = url.parse().unwrap();
        assert!(addr.ip().is_loopback(), "{listen}");
    }

    #[test]
    fn source_default_is_what_clap_gives_without_flags() {
        assert_eq!(parse(&["stt-daemon"]).source, Source::default());
        let Some(Command::Up(up)) = parse(&["stt-daemon", "up"]).command else { panic!() };
        assert_eq!(up.source, Source::default());
    }

    #[test]
    fn the_defaults_count_as_no_daemon_flags() {
        assert!(parse(&["stt-daemon"]).daemon_flags_given().is_empty());
        assert!(parse(&["stt-daemon", "up", "--input", "a.wav"]).daemon_flags_given().is_empty());
    }

    #[test]
    fn daemon_flags_before_up_are_named() {
        let cli = parse(&["stt-daemon", "--input", "a.wav", "--fast", "--rate", "8000", "up"]);
        assert_eq!(cli.daemon_flags_given(), ["--input", "--rate", "--fast"]);
    }

    #[test]
    fn up_takes_the_flags_it_passes_on_and_the_common_config() {
        let cli = parse(&[
            "stt-daemon",
            "up",
            "--with-tui",
            "--input",
            "-",
            "--format",
            "f32le",
            "--rate",
            "48000",
            "--channels",
            "2",
            "--fast",
            "--device",
            "USB",
            "--model",
            "m.bin",
            "--config",
            "c.toml",
            "--log",
            "up.log",
        ]);
        let Some(Command::Up(up)) = cli.command else { panic!("not up: {cli:?}") };
        assert_eq!(
            up,
            UpArgs {
                with_tui: true,
                log: Some("up.log".into()),
                input: Some("-".into()),
                play_at_once: false,
                source: Source {
                    format: "f32le".into(),
                    rate: 48_000,
                    channels: 2,
                    fast: true,
                    device: Some("USB".into()),
                    model: Some("m.bin".into()),
                },
            }
        );
        assert_eq!(cli.common.config, Some("c.toml".into()));
    }

    #[test]
    fn play_at_once_needs_an_input() {
        assert!(Cli::try_parse_from(["stt-daemon", "up", "--play-at-once"]).is_err());
    }
}
