//! What the assistant may do, and the record of what it did.
//!
//! Modules, in reading order:
//! - [`registry`]: the tools, built in (`get_datetime`, `set_timer`, `notify`,
//!   `clipboard_copy`, `open_url`) and configured (`[[tools.command]]`), each with its
//!   schema, side effect and confirmation rule, and how each runs (never through a shell).
//! - [`context`]: what the document and web tools read (`list_dir`, `read_file` under
//!   `[tools].document_roots`; `fetch_web`; `web_search` with `[tools].search_url`), capped.
//! - [`offer`]: which of the tools a command's words call for (the few a small model is
//!   shown; the user's own tools always).
//! - [`screen`]: `capture_screen`, the screen's text: a screenshot by the desktop's own tool,
//!   read by OCR (`stt-ocr`), with `[tools].screen = true`.
//! - [`audit`]: the append-only audit log of actions, one JSON line per action in
//!   `<data_dir>/audit/YYYY-MM-DD.jsonl` (file 0600, directory 0700). Only actions are
//!   written: never chat, never audio.
//!
//! # Invariants
//!
//! No tool runs a shell string: configured commands are argv templates filled one element at
//! a time. Only actions are audited; chat never touches the disk.

pub mod audit;
pub mod context;
pub mod offer;
pub mod registry;
pub mod screen;

pub use audit::{ActionRecord, AuditLog, DictationRecord, SpeakerRecord};
pub use registry::{Builtin, Outcome, Registry, ToolSpec};

/// Declares an enum of tools, each with the name the model calls it by: the enum, `ALL` (in
/// declaration order), `name()` and `named()`, the one place a tool's name is spelled. The
/// model's call names a tool as a string; it is read into the enum once, where it comes in,
/// and matched as the enum (exhaustively) from there on.
#[macro_export]
macro_rules! tools {
    ($(#[$meta:meta])* $vis:vis enum $ty:ident { $($(#[$doc:meta])* $tool:ident = $name:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $ty {
            $($(#[$doc])* $tool,)+
        }

        impl $ty {
            /// Every tool, in declaration order.
            pub const ALL: &[$ty] = &[$($ty::$tool),+];

            /// The name the model calls it by.
            pub const fn name(self) -> &'static str {
                match self {
                    $($ty::$tool => $name,)+
                }
            }

            /// The tool the model's call names, if it is one of these.
            pub fn named(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|tool| tool.name() == name)
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}
