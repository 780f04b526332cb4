//! `stt-daemon`: thin entry point; see the library half of this package.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = stt_daemon::Cli::parse();
    stt_app::init_logging("info");
    stt_app::exit_with("stt-daemon", stt_daemon::run(cli))
}
