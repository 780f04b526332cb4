//! The summaries: three made-up chats with names, numbers and dates planted in them, the
//! memory tree's sizes that make each due for one summary, and how a summary is scored.

use std::collections::BTreeSet;

use stt_memory::tree::TreeRules;

use crate::text::holds;

/// The memory tree's sizes for the summaries: the 41st message makes the 40 before it due,
/// so one summary covers a whole chat of 20 turns, with the 41st after it as the tree's
/// default sizes would have 20 more.
pub const SUMMARY_RULES: TreeRules = TreeRules { raw_max: 41, compress: 40, fanout_max: 8 };

/// A planted fact: what it is, the spellings that keep it, and the values that would
/// contradict it (an old value the chat changed later).
pub struct Fact {
    what: &'static str,
    pub kept: &'static [&'static str],
    pub wrong: &'static [&'static str],
}

/// A made-up chat of 20 turns (the user's words, the assistant's), the user's next message
/// (which makes the 20 turns due for a summary), and the facts its summary must keep.
pub struct SummaryChat {
    pub topic: &'static str,
    pub turns: [(&'static str, &'static str); 20],
    pub next: &'static str,
    pub facts: &'static [Fact],
}

/// Shorthand for the tables below.
const fn fact(what: &'static str, kept: &'static [&'static str]) -> Fact {
    Fact { what, kept, wrong: &[] }
}

pub const CHATS: [SummaryChat; 3] = [
    SummaryChat {
        topic: "a trip to Porto",
        turns: [
            (
                "I'm planning a trip to Porto to see my sister Ines.",
                "Lovely! How long will you stay?",
            ),
            ("Three nights. I fly out on the 14th of March.", "Noted: three nights from 14 March."),
            (
                "The flight leaves at 7:45 in the morning, so I need to be at the airport early.",
                "Then aim to be at the airport by 6:15.",
            ),
            (
                "What's the weather usually like there in March?",
                "Mild and often rainy, around 15 degrees.",
            ),
            ("Good, I'll pack a rain jacket.", "Good idea."),
            (
                "I booked a room at Casa Azul, it's near the river.",
                "Casa Azul by the river, noted.",
            ),
            (
                "My budget for the whole trip is 600 euros.",
                "600 euros should be enough for three nights if you're careful.",
            ),
            (
                "I was going to rent a car to get around.",
                "A car gives you freedom, but parking in Porto is hard.",
            ),
            ("Any good food I should try?", "Try a francesinha and some pasteis de nata."),
            (
                "Ines says the francesinha at her local cafe is the best.",
                "Then you know where to go.",
            ),
            (
                "Actually, forget the car. I'll take the train from the airport instead.",
                "The train it is, then. It's cheaper too.",
            ),
            (
                "My colleague Tomas will cover my work while I'm away.",
                "Good that Tomas can cover for you.",
            ),
            ("Do I need to bring anything for Ines?", "A small gift is always nice."),
            ("She likes dark chocolate, I'll bring some.", "Dark chocolate for Ines, noted."),
            ("What's a good day trip from Porto?", "The Douro valley is a beautiful day trip."),
            ("Maybe, if the weather is good.", "Keep it as an option."),
            ("I should also tell my landlord I'm away.", "A quick message should do."),
            ("How do you say thank you in Portuguese?", "Obrigado, or obrigada from a woman."),
            ("Obrigado then. I think that's everything for the trip.", "Sounds well planned."),
            ("Thanks for the help.", "You're welcome, enjoy Porto!"),
        ],
        next: "Oh, and is Portugal in the same time zone as London?",
        facts: &[
            fact("sister Ines", &["ines"]),
            fact(
                "flies on 14 March",
                &["14 march", "march 14", "14th of march", "march 14th", "14th march"],
            ),
            fact("flight at 7:45", &["7:45", "7.45", "07:45", "seven forty-five"]),
            fact("three nights", &["three nights", "3 nights"]),
            fact("hotel Casa Azul", &["casa azul"]),
            fact("budget 600 euros", &["600", "six hundred"]),
            Fact {
                what: "train from the airport, not a car",
                kept: &["train"],
                wrong: &["rent a car", "rental car", "hire a car", "by car"],
            },
            fact("colleague Tomas covers", &["tomas", "tomás"]),
        ],
    },
    SummaryChat {
        topic: "a kitchen renovation",
        turns: [
            ("We're finally redoing the kitchen.", "Exciting! Who is doing the work?"),
            ("A contractor called Bogdan. He came round yesterday.", "What did Bogdan think?"),
            ("His quote is 4,800 euros for everything.", "4,800 euros, materials included?"),
            (
                "Yes, materials included. We already paid a deposit of 1,200.",
                "So 3,600 is left to pay.",
            ),
            ("He wants to start on the 26th of May.", "Noted: the work starts on 26 May."),
            ("It should take about three weeks.", "Three weeks, so done by the middle of June."),
            (
                "For the tiles we're thinking sage green.",
                "Sage green is a calm choice for a kitchen.",
            ),
            ("My partner loves it too.", "Then it's settled."),
            ("We also need a new dishwasher.", "Any brand in mind?"),
            ("A Bosch, the quiet one.", "Bosch dishwashers are reliable."),
            (
                "How do I keep the dust out of the living room?",
                "Hang plastic sheeting over the doorway and tape the edges.",
            ),
            ("Good tip.", "Glad it helps."),
            (
                "Bogdan just called: he can't start in May, so the start moves to the 2nd of June.",
                "Okay, the work now starts on 2 June.",
            ),
            ("We'll be away that first weekend anyway.", "Handy timing."),
            (
                "Our neighbour Mrs Okafor will keep the spare key for Bogdan.",
                "Mrs Okafor has the spare key, noted.",
            ),
            (
                "Should we eat out while the work is going on?",
                "A microwave in another room helps a lot.",
            ),
            ("We'll set up the microwave in the dining room.", "Good plan."),
            (
                "What should I ask Bogdan before he starts?",
                "Ask about the schedule, taking the rubbish away and when to pay.",
            ),
            ("He said the rest is paid when it's finished.", "So the rest is due on completion."),
            ("Thanks, that helps.", "Good luck with the kitchen!"),
        ],
        next: "Remind me, what colour were the tiles going to be?",
        facts: &[
            fact("contractor Bogdan", &["bogdan"]),
            fact("quote 4,800 euros", &["4,800", "4800", "4.800", "4 800"]),
            fact("deposit 1,200 paid", &["1,200", "1200", "1.200", "1 200"]),
            Fact {
                what: "starts on 2 June (moved from 26 May)",
                kept: &[
                    "2 june",
                    "june 2",
                    "2nd of june",
                    "june 2nd",
                    "2nd june",
                    "june second",
                    "second of june",
                ],
                wrong: &["26 may", "may 26", "26th of may", "may 26th", "26th may"],
            },
            fact("takes three weeks", &["three weeks", "3 weeks"]),
            fact("sage green tiles", &["sage"]),
            fact("Bosch dishwasher", &["bosch"]),
            fact("Mrs Okafor keeps the key", &["okafor"]),
        ],
    },
    SummaryChat {
        topic: "a birthday party and the dentist",
        turns: [
            ("My son Leo turns 8 next month.", "How exciting! Are you planning a party?"),
            ("Yes, on Saturday the 9th of November.", "Saturday 9 November, noted."),
            ("We invited 12 kids from his class.", "12 kids makes a lively party."),
            ("It's at the climbing gym, Boulderhaus.", "Boulderhaus sounds fun for that age."),
            ("It starts at 3 pm and goes on for two hours.", "From 3 until 5 then."),
            ("Any ideas for the cake?", "Chocolate cake is always popular."),
            ("Leo wants chocolate with raspberries.", "Chocolate and raspberry it is."),
            ("My mother will bake it.", "How nice of her."),
            ("What should go in the party bags?", "Stickers, a small toy and some sweets."),
            ("Nothing too sugary though.", "Then pencils or a bouncy ball."),
            (
                "Separate thing: I have a dentist appointment with Dr Haddad on Tuesday.",
                "Noted: Dr Haddad on Tuesday.",
            ),
            ("It's at 4:30.", "Tuesday at 4:30."),
            ("Can you remind me to floss more?", "I can set a reminder whenever you like."),
            (
                "Later. What's good for sensitive teeth?",
                "A toothpaste for sensitive teeth and a soft brush.",
            ),
            (
                "The dentist's office called, they moved my appointment to Thursday, same time.",
                "Okay: Dr Haddad on Thursday at 4:30.",
            ),
            ("That works better anyway.", "Good."),
            (
                "Back to the party: should I hire an entertainer?",
                "At a climbing gym the climbing is the entertainment.",
            ),
            ("True. I'll ask Boulderhaus if they give a tour.", "Good idea."),
            ("I think we're all set.", "Sounds like a great party."),
            ("Thanks!", "You're welcome."),
        ],
        next: "What was I going to ask the gym?",
        facts: &[
            fact("son Leo", &["leo"]),
            fact("turns 8", &["8", "eight", "8th", "eighth"]),
            fact(
                "party on 9 November",
                &[
                    "9 november",
                    "november 9",
                    "9th of november",
                    "november 9th",
                    "9th november",
                    "nov 9",
                ],
            ),
            fact("12 kids", &["12", "twelve"]),
            fact("at Boulderhaus", &["boulderhaus"]),
            fact("chocolate cake with raspberries", &["raspberry", "raspberries"]),
            fact("dentist Dr Haddad", &["haddad"]),
            Fact {
                what: "dentist on Thursday (moved from Tuesday)",
                kept: &["thursday"],
                wrong: &["tuesday"],
            },
            fact("at 4:30", &["4:30", "4.30", "16:30", "half past four"]),
        ],
    },
];

/// The numbers in `text`: runs of digits, thousands separators dropped, leading zeros too.
fn numbers(text: &str) -> BTreeSet<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut joined = String::new();
    for (i, c) in chars.iter().enumerate() {
        let between_digits = i > 0
            && chars[i - 1].is_ascii_digit()
            && chars.get(i + 1).is_some_and(char::is_ascii_digit);
        if !(*c == ',' && between_digits) {
            joined.push(*c);
        }
    }
    joined
        .split(|c: char| !c.is_ascii_digit())
        .filter(|run| !run.is_empty())
        .map(|run| {
            let trimmed = run.trim_start_matches('0');
            if trimmed.is_empty() { "0".to_owned() } else { trimmed.to_owned() }
        })
        .collect()
}

/// One summary's outcome.
#[derive(Debug)]
pub struct SummaryScore {
    pub kept: usize,
    pub dropped: Vec<&'static str>,
    pub changed: Vec<&'static str>,
    /// Numbers in the summary the chat never said.
    pub invented: Vec<String>,
    /// Why the tree has no summary of the model's, if it has none.
    pub failed: Option<String>,
    /// The model wrote a sentence three times or more.
    pub repeats: bool,
}

pub fn score_summary(
    chat: &SummaryChat,
    text: Option<&str>,
    failed: Option<String>,
) -> SummaryScore {
    let Some(text) = text.filter(|_| failed.is_none()) else {
        return SummaryScore {
            kept: 0,
            dropped: chat.facts.iter().map(|f| f.what).collect(),
            changed: Vec::new(),
            invented: Vec::new(),
            failed: Some(failed.unwrap_or_else(|| "no summary".into())),
            repeats: false,
        };
    };
    let mut score = SummaryScore {
        kept: 0,
        dropped: Vec::new(),
        changed: Vec::new(),
        invented: Vec::new(),
        failed: None,
        repeats: false,
    };
    for fact in chat.facts {
        if holds(text, fact.kept) {
            score.kept += 1;
        } else {
            score.dropped.push(fact.what);
            if holds(text, fact.wrong) {
                score.changed.push(fact.what);
            }
        }
    }
    let said: String = chat
        .turns
        .iter()
        .flat_map(|(u, a)| [*u, *a])
        .chain([chat.next])
        .collect::<Vec<_>>()
        .join("\n");
    let said = numbers(&said);
    score.invented = numbers(text).into_iter().filter(|n| !said.contains(n)).collect();
    score
}

/// Whether `text` has a sentence (of some length) three times or more: a model in a loop.
pub fn repeats(text: &str) -> bool {
    let sentences: Vec<&str> =
        text.split(['.', '\n']).map(str::trim).filter(|s| s.len() > 20).collect();
    sentences.iter().any(|s| sentences.iter().filter(|t| *t == s).count() >= 3)
}

/// The reason in a note such as "context trimmed: … (summarizing failed: WHY); …".
pub fn reason(note: &str) -> &str {
    note.split_once("summarizing failed: ")
        .map_or(note, |(_, rest)| rest.split_once("); ").map_or(rest, |(why, _)| why))
}
