//! A room for the voice: a private PulseAudio server whose default output is a null sink (the
//! speakers), looped into a second null sink (the room) whose monitor is the default input.
//! What stt says through cpal's default device is what its microphone hears, 20 ms later and
//! `echo_db` down, as through laptop speakers, and a person can speak in the room too
//! ([`Room::say`]). Real devices end to end:
//! cpal → ALSA's pulse plugin → the server → the monitor → ALSA → cpal.
//!
//! The server is this test's own (its socket in the sandbox, anonymous, no cookie), reached by
//! the processes given [`Room::env`]; it goes when the [`Room`] is dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

/// A private sound server with one null sink, `room`.
#[derive(Debug)]
pub struct Room {
    server: Child,
    socket: PathBuf,
    log: PathBuf,
}

impl Room {
    /// Starts the server under `root`; `None` (the reason printed) when PulseAudio is not
    /// installed and may not be: the desktop has PipeWire's server instead. Under
    /// `scripts/test` (`STT_TEST_STRICT`) a missing PulseAudio on a machine without PipeWire
    /// fails the test: `scripts/setup` installs it.
    ///
    /// With `echo_cancelled`, the room is the set-up docs/VOICE.md recommends: the voice plays
    /// into PulseAudio's echo-cancelling sink (WebRTC's canceller), whose far end is a second
    /// null sink looped into the room 20 ms late, and the microphone is the cancelled source.
    /// A person ([`Room::say`]) speaks into the room itself.
    #[allow(clippy::print_stderr, reason = "a skip is reported where cargo test shows it")]
    ///
    /// The voice reaches the room `echo_db` dB down (a person, [`Room::say`] at 100%, is at
    /// full level).
    pub fn start(root: &Path, echo_cancelled: bool, echo_db: f64) -> Option<Room> {
        if Command::new("pulseaudio").arg("--version").output().is_err() {
            let pipewire = Path::new("/usr/bin/pipewire-pulse").exists();
            assert!(
                pipewire || std::env::var_os("STT_TEST_STRICT").is_none(),
                "pulseaudio is not installed: run scripts/setup (it installs pulseaudio, \
                 pulseaudio-utils and libasound2-plugins for the voice's loopback tests)"
            );
            eprintln!("SKIPPED: no pulseaudio for the loopback room (PipeWire's server is here)");
            return None;
        }
        let dir = root.join("room");
        std::fs::create_dir_all(dir.join("run")).unwrap_or_else(|e| panic!("room: {e}"));
        let socket = dir.join("run/native");
        let log = dir.join("pulseaudio.log");
        let server = Command::new("pulseaudio")
            .args(["--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no", "-n"])
            .args(["--disallow-exit", "--log-level=notice"])
            .arg(format!("--log-target=file:{}", log.display()))
            .arg("--load=module-null-sink sink_name=room rate=48000")
            .arg(format!(
                "--load=module-native-protocol-unix auth-anonymous=1 socket={}",
                socket.display()
            ))
            .env("HOME", &dir)
            .env("XDG_RUNTIME_DIR", dir.join("run"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env_remove("PULSE_SERVER")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start pulseaudio: {e}"));
        let room = Room { server, socket, log };
        let up = crate::wait_until(crate::DEADLINE, || {
            let info = room.pactl(&["info"]).ok()?;
            info.contains("Default Source: room.monitor").then_some(())
        });
        assert!(up.is_some(), "the room's pulseaudio did not come up: {}", room.log());
        // The speakers: a sink of their own, heard in the room 20 ms later and `echo_db` down.
        // PulseAudio's volume is cubic: 79% is half the amplitude (-6 dB), 50% an eighth.
        let percent = 100.0 * 10f64.powf(-echo_db.abs() / 60.0);
        let volume = format!("set-sink-volume out {percent:.1}%");
        let mut set_up = vec![
            "load-module module-null-sink sink_name=out rate=48000",
            "load-module module-loopback source=out.monitor sink=room latency_msec=20",
            &volume,
            "set-default-sink out",
            // A new sink's monitor becomes the default source: the microphone is the room's.
            "set-default-source room.monitor",
        ];
        if echo_cancelled {
            set_up.extend([
                "load-module module-echo-cancel source_master=room.monitor sink_master=out \
                 aec_method=webrtc source_name=mic sink_name=speakers",
                "set-default-sink speakers",
                "set-default-source mic",
            ]);
        }
        {
            for args in set_up {
                let args: Vec<&str> = args.split_whitespace().collect();
                if let Err(e) = room.pactl(&args) {
                    panic!("pactl {args:?}: {e}\n{}", room.log());
                }
            }
        }
        Some(room)
    }

    /// What a process needs in its environment to play and record in the room.
    pub fn env(&self) -> [(&'static str, String); 1] {
        [("PULSE_SERVER", format!("unix:{}", self.socket.display()))]
    }

    /// A person in the room says what `wav` holds (`paplay`, at `volume` percent); returns
    /// when it started playing, about.
    pub fn say(&self, wav: &Path, volume: u32) -> Instant {
        let scaled = u64::from(volume) * 65_536 / 100;
        let child = Command::new("paplay")
            .args(["--device=room", &format!("--volume={scaled}")])
            .arg(wav)
            .envs(self.env().iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run paplay (pulseaudio-utils): {e}"));
        let started = Instant::now();
        // Reaped by a thread: the test goes on while it plays.
        std::thread::spawn(move || {
            let mut child = child;
            let _ = child.wait();
        });
        started
    }

    /// `pactl ARGS` against the room's server: its output.
    pub fn pactl(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("pactl")
            .args(args)
            .envs(self.env().iter().map(|(k, v)| (*k, v.as_str())))
            .output()
            .map_err(|e| format!("cannot run pactl (pulseaudio-utils): {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// The server's log, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}
