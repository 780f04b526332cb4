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

    /// Raw PCM sample format on stdin: s16le, s32le, f32le or u8
    #[arg(long, value_name = "FORMAT", default_value = "s16le")]
    pub format: String,

    /// Raw PCM sample rate on stdin, in Hz
    #[arg(long, value_name = "HZ", default_value_t = 16_000)]
    pub rate: u32,

    /// Raw PCM channel count on stdin
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub channels: u16,

    /// Feed a file as fast as transcription takes it instead of at real time
    #[arg(long)]
    pub fast: bool,

    /// Keep serving after a file or stdin ends, instead of exiting
    #[arg(long)]
    pub stay: bool,

    /// Open the input only once a subscriber is connected, so it sees every event of a file
    #[arg(long)]
    pub wait_for_subscriber: bool,

    /// Microphone to use instead of the configured one (`stt-daemon devices` lists them)
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,

    /// Whisper model file to use instead of the configured one
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Option<Command>,
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
    /// Start the daemon and the assistant (and the TUI) as supervised children
    Up {
        /// Also run the TUI in this terminal
        #[arg(long)]
        with_tui: bool,
    },
}
