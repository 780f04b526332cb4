//! `stt-ctl`: one control verb per call. All the logic lives in the `stt-control` crate.

fn main() -> std::process::ExitCode {
    stt_control::main()
}
