//! `stt-daemon`: thin entry point; see the library half of this package.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let unmapping = return_big_frees_to_the_system();
    let cli = stt_daemon::Cli::parse();
    // Under `up --with-tui` the TUI owns the terminal: nothing else may write to it.
    let tui = matches!(&cli.command, Some(stt_daemon::Command::Up(up)) if up.with_tui);
    if !tui {
        stt_app::init_logging("info");
    }
    if !unmapping {
        tracing::warn!("glibc refused M_MMAP_THRESHOLD: the daemon's memory may only grow");
    }
    stt_app::exit_with("stt-daemon", stt_daemon::run(cli))
}

/// Makes glibc serve every allocation of 128 KiB or more with its own mapping, and unmap it
/// when freed. By default glibc raises that threshold to the size of each large block freed
/// (up to 32 MiB), after which whisper's buffers come from the heap and freeing them returns
/// nothing: the whisper worker renews its decoding state whenever it goes idle to give back
/// the tens of MB a long segment touched, and without this the daemon's memory would only
/// grow (docs/PERFORMANCE.md, "Idle, and memory").
/// False when glibc refused (other C libraries are left as they are).
fn return_big_frees_to_the_system() -> bool {
    #[cfg(target_env = "gnu")]
    {
        #[allow(unsafe_code)]
        // SAFETY: `mallopt` only sets an allocator parameter; it is called here, first thing
        // in `main`, before any other thread exists, with a valid parameter and value.
        let set = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024) };
        set != 0
    }
    #[cfg(not(target_env = "gnu"))]
    true
}
