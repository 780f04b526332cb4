//! `stt-tui`: thin entry point; see the library half of this package.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = stt_tui::Cli::parse();
    // The TUI draws on the terminal, so logs go to stderr only when asked for.
    stt_app::init_logging("warn");
    stt_app::exit_with("stt-tui", stt_tui::run(cli))
}
