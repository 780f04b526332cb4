//! `stt-tui`: thin entry point; see the library half of this package. Logging is set up
//! by `run` once the config says where it may go: never onto the screen it draws.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = stt_tui::Cli::parse();
    stt_app::exit_with("stt-tui", stt_tui::run(cli))
}
