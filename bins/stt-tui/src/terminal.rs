//! Taking the terminal over (raw mode, the alternate screen, bracketed paste) and always
//! giving it back: when the [`Screen`] is dropped, and from a panic hook before the panic
//! message is printed, so a crash never leaves a shell without echo.
//!
//! The mouse is captured only when `[tui].mouse` asks for it; then most terminals still
//! select text natively while Shift is held.

use std::io::{self, Stdout};
use std::sync::Once;

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::Show;
use ratatui::crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

/// The terminal, drawn on through crossterm.
pub type Tui = Terminal<CrosstermBackend<Stdout>>;

/// The terminal while the TUI owns it; dropping it restores the terminal.
#[derive(Debug)]
pub struct Screen {
    /// The terminal to draw on.
    pub terminal: Tui,
}

impl Screen {
    /// Installs the panic hook, enters raw mode and the alternate screen, and captures the
    /// mouse if `mouse`.
    pub fn enter(mouse: bool) -> io::Result<Self> {
        install_panic_hook();
        enable_raw_mode()?;
        let setup = execute!(io::stdout(), EnterAlternateScreen, EnableBracketedPaste)
            .and_then(|()| if mouse { execute!(io::stdout(), EnableMouseCapture) } else { Ok(()) })
            .and_then(|()| Terminal::new(CrosstermBackend::new(io::stdout())));
        match setup {
            Ok(terminal) => Ok(Self { terminal }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// Leaves raw mode, the alternate screen and mouse capture, and shows the cursor. Safe to
/// call twice.
pub fn restore() {
    // Nothing useful can be done if the terminal is gone; carry on restoring the rest.
    let _ = disable_raw_mode();
    let _ = execute!(
        io::stdout(),
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        Show
    );
}

/// Restores the terminal before the default hook prints the panic, then exits: a panic in
/// any task ends the program rather than leave it drawing on a restored terminal.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
            std::process::exit(101);
        }));
    });
}
