//! What a model job is for, and how the loop treats each kind. One declaration ([`kinds!`]),
//! in priority order (the first runs first), gives each kind its variant, its name and its
//! row ([`Rule`]), and [`JobKind::ALL`]: a kind added tomorrow is one entry, and renumbers
//! nothing. Everything the loop does differently for a kind is asked of its row (or matched
//! on the kind, exhaustively), never inferred from what it is not. The queue and the model
//! code both read this module; it reads neither.

/// Declares the kinds, `Kind = "name" => Rule { … },` each, in priority order.
macro_rules! kinds {
    ($($(#[$doc:meta])* $kind:ident = $name:literal => $rule:expr,)+) => {
        /// What a model job is for.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum JobKind {
            $($(#[$doc])* $kind,)+
        }

        impl JobKind {
            /// Every kind, in priority order.
            pub const ALL: &[JobKind] = &[$(JobKind::$kind),+];

            /// This kind's row.
            pub const fn rule(self) -> Rule {
                match self {
                    $(JobKind::$kind => $rule,)+
                }
            }

            /// The kind as logs and the status say it.
            pub const fn name(self) -> &'static str {
                match self {
                    $(JobKind::$kind => $name,)+
                }
            }
        }
    };
}

kinds! {
    /// A person's spoken or typed command, through the tool loop.
    Command = "command" => Rule {
        person: true,
        yields: Yields::Never,
        tools: true,
        resumes: Resumes::AtOnce,
        aborts: true,
        newest: false,
    },
    /// A chat turn.
    Chat = "chat" => Rule {
        person: true,
        yields: Yields::Never,
        tools: false,
        resumes: Resumes::AtOnce,
        aborts: true,
        newest: false,
    },
    /// The assistant speaking up on its own (a reminder, when it wakes). Below a person's
    /// work, above background work: a reminder is of the moment. It never talks over anyone
    /// (it stops for speech too) and is dropped when stopped: the next wake-up comes anyway,
    /// and a stale reminder is worse than none.
    Proactive = "proactive" => Rule {
        person: false,
        yields: Yields::Speech,
        tools: true,
        resumes: Resumes::Never,
        aborts: true,
        newest: true,
    },
    /// The memory tree's next summary. It gives way to a person's job, not to talk nobody
    /// asks the model about (in a busy room it would never be written), and goes on right
    /// after: the chat's context stays bounded only while summaries keep up.
    Tree = "tree" => Rule {
        person: false,
        yields: Yields::Person,
        tools: false,
        resumes: Resumes::AtOnce,
        aborts: false,
        newest: false,
    },
    /// Memory's consolidation.
    Dream = "dream" => Rule {
        person: false,
        yields: Yields::Speech,
        tools: true,
        resumes: Resumes::AfterQuiet,
        aborts: true,
        newest: false,
    },
    /// Triage's extraction: the tasks, dates, people and decision in what was just said.
    /// Display only, and about what was just said: the last in line, stopped for a person
    /// and then dropped, and a newer window's ask replaces one still waiting.
    Triage = "triage" => Rule {
        person: false,
        yields: Yields::Person,
        tools: false,
        resumes: Resumes::Never,
        aborts: true,
        newest: true,
    },
}

impl JobKind {
    /// Where it stands in line: its place in the declaration (lower runs first).
    pub const fn priority(self) -> u8 {
        self as u8
    }
}

/// How the loop treats one kind of job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// A person waits for it: its start and end count as activity (the quiet a dream waits
    /// for starts over).
    pub person: bool,
    /// Who stops it when it runs (it is wanted again, and goes on later).
    pub yields: Yields,
    /// It calls tools: a provider it fails over to must run them too.
    pub tools: bool,
    /// Background work a person stopped: when it may go on.
    pub resumes: Resumes,
    /// Stopped, it is aborted at once; otherwise it ends itself at its next safe point (a
    /// summary stops while the model writes it, but once written it is kept with its note).
    pub aborts: bool,
    /// Wanted again before it started, the newer ask replaces the one waiting (otherwise the
    /// first stands).
    pub newest: bool,
}

/// When background work a person stopped goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resumes {
    /// As soon as the model is free again.
    AtOnce,
    /// Once things have been quiet a while (the loop says when).
    AfterQuiet,
    /// Never: it is dropped (newer work of its kind will come).
    Never,
}

/// Whom a running job gives the model up to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Yields {
    /// Nobody: it runs to its end.
    Never,
    /// A person who wants the model: a command armed, run or edited, a chat turn coming.
    Person,
    /// Anyone speaking at all, and a person who wants the model.
    Speech,
}

/// Why the model is wanted now, by whom: what a running job may yield to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// A command is armed, run or edited (or spoken while armed).
    Command,
    /// Chat was entered, or a turn typed or spoken in it.
    Chat,
    /// Someone speaks with no command armed and chat off: nobody asks the model yet.
    Speech,
    /// Someone speaks over a spoken reply: the reply stops, whatever its row (as
    /// `chat_stop` would stop it), and background work yields as to any speech.
    BargeIn,
}

impl Need {
    pub fn name(self) -> &'static str {
        match self {
            Need::Command => "a command",
            Need::Chat => "chat",
            Need::Speech => "speech",
            Need::BargeIn => "a person talking over the reply",
        }
    }
}

impl Rule {
    /// Whether a running job of this row stops for `need`.
    pub const fn yields_to(self, need: Need) -> bool {
        match (self.yields, need) {
            (Yields::Never, _) | (Yields::Person, Need::Speech | Need::BargeIn) => false,
            (Yields::Person, Need::Command | Need::Chat) | (Yields::Speech, _) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table, as a person reads it: commands before chat before background work; a
    /// person waits on commands and chat only; commands and dreams call tools.
    #[test]
    fn each_kind_has_its_row() {
        type Row = (&'static str, u8, bool, Yields, bool, Resumes, bool, bool);
        let rows: Vec<Row> = JobKind::ALL
            .iter()
            .map(|k| {
                let r = k.rule();
                (k.name(), k.priority(), r.person, r.yields, r.tools, r.resumes, r.aborts, r.newest)
            })
            .collect();
        use Resumes::{AfterQuiet, AtOnce, Never};
        assert_eq!(
            rows,
            [
                ("command", 0, true, Yields::Never, true, AtOnce, true, false),
                ("chat", 1, true, Yields::Never, false, AtOnce, true, false),
                ("proactive", 2, false, Yields::Speech, true, Never, true, true),
                ("tree", 3, false, Yields::Person, false, AtOnce, false, false),
                ("dream", 4, false, Yields::Speech, true, AfterQuiet, true, false),
                ("triage", 5, false, Yields::Person, false, Never, true, true),
            ]
        );
    }

    /// Preemption, every running kind against every need: a person's jobs never stop for
    /// another; a summary stops for a command or chat, a dream for anyone speaking too. What
    /// stops is background work, which is wanted again (the loop's `finished`).
    #[test]
    fn who_stops_what() {
        let table: Vec<(&str, [bool; 4])> = JobKind::ALL
            .iter()
            .map(|k| {
                let r = k.rule();
                let needs = [Need::Command, Need::Chat, Need::Speech, Need::BargeIn];
                (k.name(), needs.map(|n| r.yields_to(n)))
            })
            .collect();
        assert_eq!(
            table,
            [
                ("command", [false, false, false, false]),
                ("chat", [false, false, false, false]),
                ("proactive", [true, true, true, true]),
                ("tree", [true, true, false, false]),
                ("dream", [true, true, true, true]),
                ("triage", [true, true, false, false]),
            ]
        );
        for kind in JobKind::ALL {
            let rule = kind.rule();
            assert!(
                !rule.person || rule.yields == Yields::Never,
                "{}: a person's job is not stopped for another's",
                kind.name()
            );
        }
    }
}
