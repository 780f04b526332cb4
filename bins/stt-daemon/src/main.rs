//! `stt-daemon`: thin entry point; see the library half of this package.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = stt_daemon::Cli::parse();
    // Under `up --with-tui` the TUI owns the terminal: nothing else may write to it.
    let tui = matches!(&cli.command, Some(stt_daemon::Command::Up(up)) if up.with_tui);
    if !tui {
        stt_app::init_logging("info");
    }
    stt_app::exit_with("stt-daemon", stt_daemon::run(cli))
}
