//! The short facts: chat questions, right when the answer has an expected word.

/// Short questions for chat, and the words a right answer has (any of them).
pub const FACTS: [(&str, &[&str]); 5] = [
    ("Name a primary colour.", &["red", "blue", "yellow"]),
    ("What is the capital of Australia?", &["canberra"]),
    ("What is the chemical symbol for gold?", &["au"]),
    ("In which year did the Second World War end?", &["1945"]),
    ("How many legs does a spider have?", &["eight", "8"]),
];
