//! The corrections: an old note and a new fact for the dream's check, and what the model made
//! of each.

/// An old note and new information for the dream's correction check; the spellings of the
/// new value and of the old; whether the new information corrects the note (when it does
/// not, the note must stay as it was).
pub struct Rewrite {
    pub was: &'static str,
    pub now: &'static str,
    pub new: &'static [&'static str],
    pub old: &'static [&'static str],
    pub corrects: bool,
}

pub const REWRITES: [Rewrite; 11] = [
    Rewrite {
        was: "The user's sister lives in Lisbon.",
        now: "The user's sister moved to Porto last month.",
        new: &["porto"],
        old: &["lisbon"],
        corrects: true,
    },
    Rewrite {
        was: "The dentist appointment is on Tuesday at 10.",
        now: "The dentist moved the appointment to Friday.",
        new: &["friday"],
        old: &["tuesday"],
        corrects: true,
    },
    Rewrite {
        was: "The user's gym membership costs 30 euros a month.",
        now: "The gym raised the price to 35 euros a month.",
        new: &["35"],
        old: &["30"],
        corrects: true,
    },
    Rewrite {
        was: "The user's son Leo is 7 years old.",
        now: "Leo turned 8 yesterday.",
        new: &["8", "eight"],
        old: &["7", "seven"],
        corrects: true,
    },
    Rewrite {
        was: "The user drives a grey Skoda.",
        now: "The user sold the Skoda and now drives a blue Volvo.",
        new: &["volvo"],
        old: &["skoda"],
        corrects: true,
    },
    Rewrite {
        was: "The team meeting is at 9:30 on Mondays.",
        now: "From next week the team meeting starts at 10:15.",
        new: &["10:15"],
        old: &["9:30"],
        corrects: true,
    },
    Rewrite {
        was: "The user's manager is called Priya.",
        now: "The user has a new manager, Daniel.",
        new: &["daniel"],
        old: &["priya"],
        corrects: true,
    },
    Rewrite {
        was: "The user's sister lives in Lisbon.",
        now: "The user's brother lives in Madrid.",
        new: &["madrid"],
        old: &["lisbon"],
        corrects: false,
    },
    Rewrite {
        was: "The user is allergic to peanuts.",
        now: "The user started learning the piano.",
        new: &["piano"],
        old: &["peanut", "peanuts"],
        corrects: false,
    },
    // Something else about the same person or thing: the note stands.
    Rewrite {
        was: "The user's sister lives in Lisbon.",
        now: "The user's sister is a nurse.",
        new: &["nurse"],
        old: &["lisbon"],
        corrects: false,
    },
    Rewrite {
        was: "The user plays tennis on Saturdays.",
        now: "The user's tennis partner is Marco.",
        new: &["marco"],
        old: &["saturdays", "saturday"],
        corrects: false,
    },
];

/// One correction check's outcome.
#[derive(Debug)]
pub struct Rewritten {
    /// The model's rewrite, when the proxy saw it.
    pub text: Option<String>,
    pub right: bool,
    /// The dream's verdict: whether it would supersede the old note.
    pub supersedes: bool,
}
