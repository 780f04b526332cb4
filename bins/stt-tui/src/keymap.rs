//! The TUI's keys, written once. [`BINDINGS`] is the table: [`lookup`] is how
//! [`crate::update`] reads a key, [`footer`] the hints on the bottom line, [`help`] the keys
//! in `--help`, and [`markdown`] the table in the README (a test holds the README to it).

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use stt_proto::Mode;

use crate::state::{Input, State};

/// What keys are read for: what the bottom panel is doing ([`Input`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// Wherever the keys are read.
    Anywhere,
    /// The footer's keys.
    Normal,
    /// The command editor (`e`): other printable keys are typed into the buffer.
    Editing,
    /// The chat line (`i`, `/`): other printable keys are typed into it.
    Chatting,
    /// Either line: the command editor and the chat line edit alike.
    Line,
    /// `c` asked whether to clear.
    ConfirmClear,
}

impl Context {
    /// The context `input` reads keys in.
    pub fn of(input: &Input) -> Self {
        match input {
            Input::Normal => Self::Normal,
            Input::Editing(_) => Self::Editing,
            Input::Chatting(_) => Self::Chatting,
            Input::ConfirmClear => Self::ConfirmClear,
        }
    }

    /// Whether a binding of this context is read in `context`.
    fn reads_in(self, context: Self) -> bool {
        match self {
            Self::Anywhere => true,
            Self::Line => matches!(context, Self::Editing | Self::Chatting | Self::Line),
            _ => self == context,
        }
    }

    /// The heading of its keys in `--help` and the README.
    fn heading(self) -> &'static str {
        match self {
            Self::Anywhere | Self::Normal => "Keys",
            Self::Editing => "Editing a command (e)",
            Self::Chatting => "The chat line (i, /)",
            Self::Line => "Editing either line",
            Self::ConfirmClear => "Asked whether to clear (c)",
        }
    }
}

/// What the screen shows, as far as which keys are worth a hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Situation {
    /// Not connected to the assistant.
    Offline,
    /// A tool call waits for a yes or no.
    Pending,
    Idle,
    Armed,
    Executing,
    Chat,
    /// Dictating into the focused window.
    Dictating,
    /// A chat reply streams in (and no command is armed or running): Enter stops it.
    Replying,
    Editing,
    /// The chat line is open.
    ChatLine,
    /// The chat line is open and a reply streams in: Enter stops it.
    ChatLineReplying,
    ConfirmClear,
}

impl Situation {
    pub fn of(state: &State) -> Self {
        match &state.input {
            Input::Editing(_) => Self::Editing,
            Input::Chatting(_) if state.enter_stops_reply() => Self::ChatLineReplying,
            Input::Chatting(_) => Self::ChatLine,
            Input::ConfirmClear => Self::ConfirmClear,
            Input::Normal if !state.is_up() => Self::Offline,
            Input::Normal if !state.pending.is_empty() => Self::Pending,
            Input::Normal if state.enter_stops_reply() => Self::Replying,
            Input::Normal => match state.mode {
                Mode::Idle => Self::Idle,
                Mode::CommandArmed => Self::Armed,
                Mode::Executing => Self::Executing,
                Mode::Chat => Self::Chat,
                Mode::Dictate => Self::Dictating,
            },
        }
    }
}

/// How far a scroll key moves the focused pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    PageUp,
    PageDown,
    Up(usize),
    Down(usize),
    Top,
    Bottom,
}

/// What a key asks for; [`crate::update`] says what each does in the state it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Quit,
    Arm,
    Execute,
    Cancel,
    Edit,
    ToggleChat,
    /// Dictation into the focused window on or off.
    ToggleDictate,
    /// Spoken replies on or off.
    ToggleVoice,
    /// The triage panel shown or hidden.
    ToggleTriage,
    /// The planner's next actions, in the conversation pane.
    NextActions,
    /// Open the chat line, empty.
    OpenChat,
    /// Open the chat line with a `/` typed, for a slash command.
    OpenChatCommand,
    AskClear,
    Allow,
    Deny,
    SwitchPane,
    Scroll(Step),
    SendEdit,
    AbandonEdit,
    /// Send the chat line, or stop the reply that streams.
    SendChat,
    CloseChat,
    Left,
    Right,
    LineStart,
    LineEnd,
    CutBefore,
    CutAfter,
    Backspace,
    Delete,
    Clear,
    KeepAll,
}

/// A key as the table names it: its code and whether Ctrl is held (Shift is in the code,
/// Alt is ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
}

const fn key(code: KeyCode) -> Key {
    Key { code, ctrl: false }
}

const fn char(c: char) -> Key {
    key(KeyCode::Char(c))
}

const fn ctrl(c: char) -> Key {
    Key { code: KeyCode::Char(c), ctrl: true }
}

/// One line of the table: keys read in a context, each asking for a command.
#[derive(Debug)]
pub struct Binding {
    pub context: Context,
    pub keys: &'static [(Key, Command)],
    /// How `--help` and the README write the keys.
    pub label: &'static str,
    /// What they do, for `--help` and the README.
    pub does: &'static str,
    /// How the footer writes the keys.
    pub short: &'static str,
    /// The footer's hint in each situation that shows one.
    pub hints: &'static [(Situation, &'static str)],
}

use Situation as S;

/// Every key of the TUI, in the order of the footer and `--help`.
pub const BINDINGS: &[Binding] = &[
    Binding {
        context: Context::Anywhere,
        keys: &[(ctrl('c'), Command::Quit)],
        label: "Ctrl-C",
        does: "quit, whatever the screen shows",
        short: "Ctrl-C",
        hints: &[],
    },
    Binding {
        context: Context::Normal,
        keys: &[(char('a'), Command::Arm)],
        label: "a",
        does: "arm a command (command_start)",
        short: "a",
        hints: &[(S::Idle, "arm a command")],
    },
    Binding {
        context: Context::Normal,
        keys: &[(key(KeyCode::Enter), Command::Execute)],
        label: "Enter",
        does: "execute it once your last words are in (command_execute, waiting up to 3 s); \
               while a chat reply streams in, stop it (chat_stop)",
        short: "Enter",
        hints: &[(S::Armed, "execute"), (S::Replying, "stop the reply")],
    },
    Binding {
        context: Context::Normal,
        keys: &[(key(KeyCode::Esc), Command::Cancel)],
        label: "Esc",
        does: "cancel the armed or running command (command_cancel)",
        short: "Esc",
        hints: &[(S::Armed, "cancel"), (S::Executing, "cancel")],
    },
    Binding {
        context: Context::Normal,
        keys: &[(char('e'), Command::Edit)],
        label: "e",
        does: "edit the armed command in place",
        short: "e",
        hints: &[(S::Armed, "edit")],
    },
    Binding {
        context: Context::Normal,
        keys: &[(char('t'), Command::ToggleChat)],
        label: "t",
        does: "chat mode on or off (chat_toggle)",
        short: "t",
        hints: &[(S::Idle, "chat"), (S::Chat, "leave chat"), (S::Replying, "leave chat")],
    },
    Binding {
        context: Context::Normal,
        keys: &[(char('d'), Command::ToggleDictate)],
        label: "d",
        does: "dictation on or off: what you say is typed into the focused window \
               (dictate_toggle; README, Dictation)",
        short: "d",
        hints: &[(S::Dictating, "stop dictating")],
    },
    Binding {
        context: Context::Normal,
        keys: &[(char('v'), Command::ToggleVoice)],
        label: "v",
        does: "spoken replies on or off (voice_toggle; docs/VOICE.md)",
        short: "v",
        hints: &[],
    },
    Binding {
        context: Context::Normal,
        keys: &[(char('g'), Command::ToggleTriage)],
        label: "g",
        does: "show or hide the triage panel, with [triage] on (docs/TRIAGE.md)",
        short: "g",
        hints: &[],
    },
    Binding {
        context: Context::Normal,
        keys: &[(char('w'), Command::NextActions)],
        label: "w",
        does: "what to do next: the planner's next actions, in the conversation pane (task next)",
        short: "w",
        hints: &[],
    },
    Binding {
        context: Context::Normal,
        keys: &[(char('i'), Command::OpenChat)],
        label: "i",
        does: "open the chat line to type to the model (chat_send; from idle it starts chat mode)",
        short: "i",
        hints: &[
            (S::Idle, "type to chat"),
            (S::Chat, "type a message"),
            (S::Replying, "type a message"),
        ],
    },
    Binding {
        context: Context::Normal,
        keys: &[(char('/'), Command::OpenChatCommand)],
        label: "/",
        does: "open the chat line with a / typed, for a slash command (chat_command; /help \
               lists them)",
        short: "/",
        hints: &[],
    },
    Binding {
        context: Context::Normal,
        keys: &[(char('c'), Command::AskClear)],
        label: "c",
        does: "clear the conversation and the chat history, after asking",
        short: "c",
        hints: &[
            (S::Idle, "clear"),
            (S::Armed, "clear"),
            (S::Executing, "clear"),
            (S::Chat, "clear"),
            (S::Replying, "clear"),
        ],
    },
    Binding {
        context: Context::Normal,
        keys: &[(char('y'), Command::Allow)],
        label: "y",
        does: "allow the tool call that waits for confirmation (confirm)",
        short: "y",
        hints: &[(S::Pending, "allow the tool call")],
    },
    Binding {
        context: Context::Normal,
        keys: &[(char('n'), Command::Deny)],
        label: "n",
        does: "deny it (deny)",
        short: "n",
        hints: &[(S::Pending, "deny it")],
    },
    Binding {
        context: Context::Normal,
        keys: &[
            (key(KeyCode::PageUp), Command::Scroll(Step::PageUp)),
            (key(KeyCode::PageDown), Command::Scroll(Step::PageDown)),
            (key(KeyCode::Home), Command::Scroll(Step::Top)),
            (key(KeyCode::End), Command::Scroll(Step::Bottom)),
            (key(KeyCode::Up), Command::Scroll(Step::Up(1))),
            (key(KeyCode::Down), Command::Scroll(Step::Down(1))),
        ],
        label: "PgUp PgDn Home End ↑ ↓",
        does: "scroll the focused pane; End follows new lines again",
        short: "PgUp/PgDn/Home/End",
        hints: &[
            (S::Offline, "scroll"),
            (S::Pending, "scroll"),
            (S::Idle, "scroll"),
            (S::Armed, "scroll"),
            (S::Executing, "scroll"),
            (S::Chat, "scroll"),
            (S::Replying, "scroll"),
        ],
    },
    Binding {
        context: Context::Normal,
        keys: &[
            (key(KeyCode::Tab), Command::SwitchPane),
            (key(KeyCode::BackTab), Command::SwitchPane),
        ],
        label: "Tab",
        does: "focus the other pane",
        short: "Tab",
        hints: &[
            (S::Offline, "pane"),
            (S::Idle, "pane"),
            (S::Executing, "pane"),
            (S::Chat, "pane"),
        ],
    },
    Binding {
        context: Context::Normal,
        keys: &[(char('q'), Command::Quit)],
        label: "q",
        does: "quit",
        short: "q",
        hints: &[
            (S::Offline, "quit"),
            (S::Pending, "quit"),
            (S::Idle, "quit"),
            (S::Armed, "quit"),
            (S::Executing, "quit"),
            (S::Chat, "quit"),
            (S::Replying, "quit"),
        ],
    },
    Binding {
        context: Context::Editing,
        keys: &[(key(KeyCode::Enter), Command::SendEdit)],
        label: "Enter",
        does: "send the edit (command_edit)",
        short: "Enter",
        hints: &[(S::Editing, "send the edit")],
    },
    Binding {
        context: Context::Editing,
        keys: &[(key(KeyCode::Esc), Command::AbandonEdit)],
        label: "Esc",
        does: "abandon it",
        short: "Esc",
        hints: &[(S::Editing, "abandon it")],
    },
    Binding {
        context: Context::Chatting,
        keys: &[(key(KeyCode::Enter), Command::SendChat)],
        label: "Enter",
        does: "send it (chat_send, or chat_command when it starts with /), keeping the line \
               open for the next; while a reply streams in, stop it instead (chat_stop)",
        short: "Enter",
        hints: &[(S::ChatLine, "send"), (S::ChatLineReplying, "stop the reply")],
    },
    Binding {
        context: Context::Chatting,
        keys: &[(key(KeyCode::Esc), Command::CloseChat)],
        label: "Esc",
        does: "close the chat line",
        short: "Esc",
        hints: &[(S::ChatLine, "close"), (S::ChatLineReplying, "close")],
    },
    Binding {
        context: Context::Chatting,
        keys: &[
            (key(KeyCode::PageUp), Command::Scroll(Step::PageUp)),
            (key(KeyCode::PageDown), Command::Scroll(Step::PageDown)),
        ],
        label: "PgUp PgDn",
        does: "scroll the focused pane",
        short: "PgUp/PgDn",
        hints: &[(S::ChatLine, "scroll"), (S::ChatLineReplying, "scroll")],
    },
    Binding {
        context: Context::Line,
        keys: &[
            (key(KeyCode::Left), Command::Left),
            (key(KeyCode::Right), Command::Right),
            (key(KeyCode::Home), Command::LineStart),
            (key(KeyCode::End), Command::LineEnd),
            (ctrl('a'), Command::LineStart),
            (ctrl('e'), Command::LineEnd),
        ],
        label: "← → Home End Ctrl-A Ctrl-E",
        does: "move the cursor",
        short: "←/→/Home/End",
        hints: &[(S::Editing, "move"), (S::ChatLine, "move"), (S::ChatLineReplying, "move")],
    },
    Binding {
        context: Context::Line,
        keys: &[(ctrl('u'), Command::CutBefore), (ctrl('k'), Command::CutAfter)],
        label: "Ctrl-U Ctrl-K",
        does: "cut before / after the cursor",
        short: "Ctrl-U/Ctrl-K",
        hints: &[
            (S::Editing, "cut before/after"),
            (S::ChatLine, "cut before/after"),
            (S::ChatLineReplying, "cut"),
        ],
    },
    Binding {
        context: Context::Line,
        keys: &[
            (key(KeyCode::Backspace), Command::Backspace),
            (key(KeyCode::Delete), Command::Delete),
        ],
        label: "Backspace Delete",
        does: "delete before / at the cursor",
        short: "Backspace/Delete",
        hints: &[],
    },
    Binding {
        context: Context::ConfirmClear,
        keys: &[(char('y'), Command::Clear), (char('Y'), Command::Clear)],
        label: "y",
        does: "clear (clear)",
        short: "y",
        hints: &[(S::ConfirmClear, "clear the conversation")],
    },
    Binding {
        context: Context::ConfirmClear,
        keys: &[
            (char('n'), Command::KeepAll),
            (char('N'), Command::KeepAll),
            (key(KeyCode::Esc), Command::KeepAll),
        ],
        label: "n Esc",
        does: "keep everything",
        short: "n/Esc",
        hints: &[(S::ConfirmClear, "keep it")],
    },
];

/// The command `key` asks for in `context`, if any.
pub fn lookup(context: Context, key: &KeyEvent) -> Option<Command> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    BINDINGS
        .iter()
        .filter(|b| b.context.reads_in(context))
        .flat_map(|b| b.keys)
        .find(|(k, _)| k.code == key.code && k.ctrl == ctrl)
        .map(|(_, command)| *command)
}

/// The footer's hints in `situation`: (keys, what they do), in table order.
pub fn footer(situation: Situation) -> Vec<(&'static str, &'static str)> {
    BINDINGS
        .iter()
        .filter_map(|b| {
            b.hints.iter().find(|(s, _)| *s == situation).map(|(_, hint)| (b.short, *hint))
        })
        .collect()
}

/// The keys for `--help`, a heading per context.
pub fn help() -> String {
    let mut out = String::new();
    let mut heading = "";
    for binding in BINDINGS {
        let this = binding.context.heading();
        if this != heading {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(this);
            out.push_str(":\n");
            heading = this;
        }
        out.push_str(&format!("  {:<26} {}\n", binding.label, binding.does));
    }
    out.push_str(
        "\nMouse (with [tui].mouse): the wheel scrolls the pane under the pointer, a click\n\
         focuses it.",
    );
    out
}

/// The keys as the README's table.
pub fn markdown() -> String {
    let mut out = String::from("| where | key | does |\n|---|---|---|\n");
    for binding in BINDINGS {
        let keys: Vec<String> = binding.label.split(' ').map(|k| format!("`{k}`")).collect();
        let where_ = match binding.context {
            Context::Anywhere => "anywhere",
            Context::Normal => "the screen",
            Context::Editing => "editing a command",
            Context::Chatting => "the chat line",
            Context::Line => "either line",
            Context::ConfirmClear => "asked to clear",
        };
        out.push_str(&format!("| {where_} | {} | {} |\n", keys.join(" "), binding.does));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every situation of the footer's keys.
    const NORMAL: &[Situation] =
        &[S::Offline, S::Pending, S::Idle, S::Armed, S::Executing, S::Chat, S::Replying];

    #[test]
    fn no_key_means_two_things_in_one_context() {
        for (i, a) in BINDINGS.iter().enumerate() {
            for b in &BINDINGS[i..] {
                let overlap = a.context.reads_in(b.context) || b.context.reads_in(a.context);
                for (ka, ca) in a.keys {
                    for (kb, cb) in b.keys {
                        if overlap && ka == kb {
                            assert_eq!(
                                ca, cb,
                                "{ka:?} is bound twice: {} and {}",
                                a.label, b.label
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_situation_has_a_way_out() {
        for s in NORMAL {
            assert!(footer(*s).iter().any(|(k, _)| *k == "q"), "{s:?} shows no q");
        }
        for s in [S::Editing, S::ChatLine, S::ChatLineReplying] {
            assert!(footer(s).iter().any(|(k, _)| *k == "Esc"), "{s:?} shows no Esc");
        }
        assert!(!footer(Situation::ConfirmClear).is_empty());
    }

    #[test]
    fn every_footer_fits_a_100_column_screen() {
        let all = [
            S::Offline,
            S::Pending,
            S::Idle,
            S::Armed,
            S::Executing,
            S::Chat,
            S::Replying,
            S::Editing,
            S::ChatLine,
            S::ChatLineReplying,
            S::ConfirmClear,
        ];
        for s in all {
            // As the view writes it: " key" then " what " for each.
            let width: usize = footer(s)
                .iter()
                .map(|(k, what)| {
                    unicode_width::UnicodeWidthStr::width(*k) + what.chars().count() + 3
                })
                .sum();
            assert!(width <= 100, "{s:?}'s footer takes {width} columns");
        }
    }

    #[test]
    fn the_readme_lists_every_key() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
        let readme = std::fs::read_to_string(path).expect("README.md");
        let table = markdown();
        assert!(
            readme.contains(&table),
            "README.md's table of the TUI's keys is not the keymap's; put this in its place:\n\n{table}"
        );
    }
}
