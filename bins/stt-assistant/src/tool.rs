//! The tool a model's call names, read once from its string: one of stt's built-in tools
//! ([`stt_tools::Builtin`]), memory's or the planner's ([`crate::memory::Tool`]), a wake-up's
//! ([`crate::wake::Tool`]), or another name: one of the user's own (`[[tools.command]]`) or
//! one nobody offered. Code that treats a tool its own way matches on this, never on the name.

use stt_tools::Builtin;

use crate::{memory, wake};

/// The tool a call names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    Builtin(Builtin),
    Memory(memory::Tool),
    Wake(wake::Tool),
    /// One of the user's own, or none at all: the registry knows which.
    Other,
}

impl Named {
    /// What `name` names. A configured command may not take a name of the first three
    /// (`serve` refuses one), so a name is read one way only.
    pub fn of(name: &str) -> Self {
        if let Some(tool) = Builtin::named(name) {
            Self::Builtin(tool)
        } else if let Some(tool) = memory::Tool::named(name) {
            Self::Memory(tool)
        } else if let Some(tool) = wake::Tool::named(name) {
            Self::Wake(tool)
        } else {
            Self::Other
        }
    }

    /// Whether its result is outside content: text stt did not write and the user did not
    /// say (a page, a file, a folder's names, search results, the screen, what one of the
    /// user's own tools printed), which may carry words written to steer the model. Once a
    /// request holds some, a call that can reach the network or change the desktop waits for
    /// the user's yes (docs/RELIABILITY.md, "Outside content").
    pub fn brings_outside(self) -> bool {
        match self {
            Self::Builtin(tool) => Builtin::CONTEXT.contains(&tool),
            Self::Other => true,
            Self::Memory(_) | Self::Wake(_) => false,
        }
    }

    /// Whether it is memory's or the planner's (run on the memory thread).
    pub fn is_memory(self) -> bool {
        matches!(self, Self::Memory(_))
    }
}

impl From<Builtin> for Named {
    fn from(tool: Builtin) -> Self {
        Self::Builtin(tool)
    }
}

impl From<memory::Tool> for Named {
    fn from(tool: memory::Tool) -> Self {
        Self::Memory(tool)
    }
}

impl From<wake::Tool> for Named {
    fn from(tool: wake::Tool) -> Self {
        Self::Wake(tool)
    }
}

/// Whether `name` (a call's) names `tool`.
pub fn is(name: &str, tool: impl Into<Named>) -> bool {
    Named::of(name) == tool.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_of_ours_is_read_back_one_way() {
        let ours: Vec<(&str, Named)> = Builtin::ALL
            .iter()
            .map(|t| (t.name(), Named::from(*t)))
            .chain(memory::Tool::ALL.iter().map(|t| (t.name(), Named::from(*t))))
            .chain(wake::Tool::ALL.iter().map(|t| (t.name(), Named::from(*t))))
            .collect();
        for (name, named) in &ours {
            assert_eq!(Named::of(name), *named, "{name}");
            assert_eq!(ours.iter().filter(|(n, _)| n == name).count(), 1, "{name} twice");
        }
        assert_eq!(Named::of("lights"), Named::Other);
        let outside: Vec<&str> = Builtin::ALL
            .iter()
            .filter(|t| Named::from(**t).brings_outside())
            .map(|t| t.name())
            .collect();
        assert_eq!(outside, ["list_dir", "read_file", "fetch_web", "web_search", "capture_screen"]);
        assert!(Named::Other.brings_outside(), "a user's own tool prints what it likes");
        assert!(!memory::Tool::ALL.iter().any(|t| Named::from(*t).brings_outside()));
        assert!(is("add_intention", memory::Tool::AddIntention));
        assert!(!is("set_timer", memory::Tool::AddIntention));
    }
}
