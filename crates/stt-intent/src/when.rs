//! Numbers, lengths of time, times of day and dates, read from a slot's keys (as
//! [`crate::words`] writes them), and moments resolved against the local time now.
//!
//! A time of day without "am" or "pm" is read as people mean it: the next time the clock
//! shows it ("at nine" at 14:00 is 21:00 today); on another day, 7 to 11 is the morning and
//! 1 to 6 the afternoon ("tomorrow at five" is 17:00). A moment that has passed is no
//! moment: the slot does not match, and the sentence goes to the model.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Weekday};

/// A number written as one key: digits, maybe with a decimal point.
pub fn number(keys: &[&str]) -> Option<f64> {
    match keys {
        [one] => digits(one),
        _ => None,
    }
}

fn digits(key: &str) -> Option<f64> {
    let ok = !key.is_empty()
        && key.chars().all(|c| c.is_ascii_digit() || c == '.')
        && key.chars().next().is_some_and(|c| c.is_ascii_digit());
    ok.then(|| key.parse().ok()).flatten()
}

/// A whole number of one key.
fn whole(key: &str) -> Option<u32> {
    key.chars().all(|c| c.is_ascii_digit()).then(|| key.parse().ok()).flatten()
}

/// Seconds in one of `key`, a unit of time.
fn unit(key: &str) -> Option<f64> {
    Some(match key {
        "second" | "seconds" | "sec" | "secs" | "s" => 1.0,
        "minute" | "minutes" | "min" | "mins" | "m" => 60.0,
        "hour" | "hours" | "hr" | "hrs" | "h" => 3600.0,
        "day" | "days" => 86400.0,
        "week" | "weeks" => 7.0 * 86400.0,
        _ => return None,
    })
}

/// "a", "an", or a number.
fn count(key: &str) -> Option<f64> {
    match key {
        "a" | "an" | "one" => Some(1.0),
        _ => digits(key),
    }
}

/// A length of time, all of `keys`: "10 minutes", "an hour and a half", "1 hour and 30
/// minutes", "half an hour", "90 seconds". Seconds.
pub fn duration(keys: &[&str]) -> Option<f64> {
    let mut rest = keys;
    let mut total = 0.0;
    loop {
        let (seconds, used) = one_duration(rest)?;
        total += seconds;
        rest = &rest[used..];
        match rest {
            [] => break,
            ["and", more @ ..] if !more.is_empty() => rest = more,
            _ => {}
        }
    }
    (total > 0.0).then_some(total)
}

/// One length at the start of `keys`: (seconds, keys used).
fn one_duration(keys: &[&str]) -> Option<(f64, usize)> {
    let half = |k: &[&str]| matches!(k, ["and", "a", "half", ..]);
    match keys {
        ["half", "an" | "a", u, ..] => Some((unit(u)? / 2.0, 3)),
        ["a", "quarter", "of", "an" | "a", u, ..] => Some((unit(u)? / 4.0, 5)),
        ["quarter", "of", "an" | "a", u, ..] => Some((unit(u)? / 4.0, 4)),
        ["a", "quarter", "hour", ..] => Some((900.0, 3)),
        ["a", "couple", "of", u, ..] => Some((2.0 * unit(u)?, 4)),
        [n, u, rest @ ..] if half(rest) => Some(((count(n)? + 0.5) * unit(u)?, 5)),
        [n, "and", "a", "half", u, ..] => Some(((count(n)? + 0.5) * unit(u)?, 5)),
        [n, u, ..] => Some((count(n)? * unit(u)?, 2)),
        _ => None,
    }
}

/// Morning or afternoon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Half {
    Am,
    Pm,
}

/// A time of day as said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tod {
    hour: u32,
    minute: u32,
    half: Option<Half>,
    /// Said on the 24-hour clock, or noon or midnight: no half to choose.
    fixed: bool,
}

/// A time of day, all of `keys`: "9", "9:30", "21:00", "9 30", "9 am", "half past 9",
/// "quarter to 10", "10 past 9", "9 o'clock", "noon", "midnight".
fn time_of_day(keys: &[&str]) -> Option<Tod> {
    let (keys, half) = match keys {
        [rest @ .., "am"] => (rest, Some(Half::Am)),
        [rest @ .., "pm"] => (rest, Some(Half::Pm)),
        [rest @ .., "in", "the", "morning"] => (rest, Some(Half::Am)),
        [rest @ .., "in", "the", "afternoon" | "evening"] | [rest @ .., "at", "night"] => {
            (rest, Some(Half::Pm))
        }
        _ => (keys, None),
    };
    let keys = match keys {
        [rest @ .., "o'clock"] => rest,
        _ => keys,
    };
    let tod = match keys {
        ["noon" | "midday"] => Tod { hour: 12, minute: 0, half: None, fixed: true },
        ["midnight"] => Tod { hour: 0, minute: 0, half: None, fixed: true },
        [clock] => clock_time(clock)?,
        [h, m] if m.len() == 2 => {
            let (hour, minute) = (whole(h)?, whole(m)?);
            (1..=12).contains(&hour).then_some(())?;
            (minute < 60).then_some(Tod { hour, minute, half: None, fixed: false })?
        }
        ["half", "past", h] => past(h, 30)?,
        ["quarter", "past", h] | ["a", "quarter", "past", h] => past(h, 15)?,
        ["quarter", "to", h] | ["a", "quarter", "to", h] => to(h, 15)?,
        [m, "past", h] | [m, "minutes", "past", h] => past(h, whole(m).filter(|&m| m < 60)?)?,
        [m, "to", h] | [m, "minutes", "to", h] => {
            to(h, whole(m).filter(|&m| (1..60).contains(&m))?)?
        }
        _ => return None,
    };
    match half {
        Some(_) if tod.fixed || tod.hour == 0 || tod.hour > 12 => None,
        half => Some(Tod { half, ..tod }),
    }
}

/// "9", "9:30", "21:00".
fn clock_time(key: &str) -> Option<Tod> {
    let (h, m) = key.split_once(':').unwrap_or((key, "00"));
    let (hour, minute) = (whole(h)?, whole(m)?);
    if hour > 23 || minute > 59 || m.len() != 2 {
        return None;
    }
    let fixed = hour == 0 || hour > 12 || h.len() == 2 && h.starts_with('0');
    Some(Tod { hour, minute, half: None, fixed })
}

fn past(h: &str, minute: u32) -> Option<Tod> {
    let hour = whole(h).filter(|h| (1..=12).contains(h))?;
    Some(Tod { hour, minute, half: None, fixed: false })
}

fn to(h: &str, minutes: u32) -> Option<Tod> {
    let hour = whole(h).filter(|h| (1..=12).contains(h))?;
    let hour = if hour == 1 { 12 } else { hour - 1 };
    Some(Tod { hour, minute: 60 - minutes, half: None, fixed: false })
}

const WEEKDAYS: [(&str, Weekday); 7] = [
    ("monday", Weekday::Mon),
    ("tuesday", Weekday::Tue),
    ("wednesday", Weekday::Wed),
    ("thursday", Weekday::Thu),
    ("friday", Weekday::Fri),
    ("saturday", Weekday::Sat),
    ("sunday", Weekday::Sun),
];

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

fn month(key: &str) -> Option<u32> {
    let short = |m: &str| m.get(..3).is_some_and(|s| s == key) && key != "may";
    MONTHS.iter().position(|m| *m == key || short(m)).map(|i| i as u32 + 1)
}

/// A day of the month: "5" or "5th".
fn day_of_month(key: &str) -> Option<u32> {
    let digits = key.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &key[digits.len()..];
    let day = whole(digits).filter(|d| (1..=31).contains(d))?;
    (suffix.is_empty() || suffix == crate::words::suffix(u64::from(day))).then_some(day)
}

/// A date, all of `keys`, on or after `today`: "today", "tomorrow", "the day after
/// tomorrow", "friday" (the next Friday, not today), "december 12th", "the 12th", "in 3
/// days", "next week".
pub fn date(keys: &[&str], today: NaiveDate) -> Option<NaiveDate> {
    let keys = match keys {
        ["on", rest @ ..] => rest,
        _ => keys,
    };
    match keys {
        ["today"] => Some(today),
        ["tomorrow"] => today.succ_opt(),
        ["the", "day", "after", "tomorrow"] | ["day", "after", "tomorrow"] => {
            today.checked_add_signed(Duration::days(2))
        }
        ["next", "week"] => today.checked_add_signed(Duration::days(7)),
        ["in", n, "days" | "day"] => today.checked_add_signed(Duration::days(i64::from(whole(n)?))),
        ["in", n, "weeks" | "week"] => {
            let weeks = if *n == "a" || *n == "one" { 1 } else { whole(n)? };
            today.checked_add_signed(Duration::weeks(i64::from(weeks)))
        }
        [day] | ["this" | "next", day] => {
            let (_, weekday) = WEEKDAYS.iter().find(|(name, _)| name == day)?;
            let ahead =
                (7 + weekday.num_days_from_monday() - today.weekday().num_days_from_monday()) % 7;
            today.checked_add_signed(Duration::days(i64::from(if ahead == 0 { 7 } else { ahead })))
        }
        ["the", d] => {
            let day = day_of_month(d)?;
            let this = today.with_day(day).filter(|date| *date >= today);
            this.or_else(|| {
                let next = today.checked_add_months(chrono::Months::new(1))?;
                next.with_day(day)
            })
        }
        _ => month_day(keys, today),
    }
}

/// "december 12th", "12 december", "the 12th of december", "december the 12th".
fn month_day(keys: &[&str], today: NaiveDate) -> Option<NaiveDate> {
    let (m, d) = match keys {
        ["the", d, "of", m] | [d, "of", m] => (m, d),
        [m, "the", d] => (m, d),
        [a, b] if month(a).is_some() => (a, b),
        [d, m] => (m, d),
        _ => return None,
    };
    on_day(today, month(m)?, day_of_month(d)?)
}

/// `day` of `month` this year, or next year once it has passed.
fn on_day(today: NaiveDate, month: u32, day: u32) -> Option<NaiveDate> {
    let this = NaiveDate::from_ymd_opt(today.year(), month, day)?;
    if this >= today { Some(this) } else { NaiveDate::from_ymd_opt(today.year() + 1, month, day) }
}

/// A part of the day said instead of, or beside, a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Period {
    half: Half,
    /// The hour meant when no time is said.
    hour: u32,
    /// "tonight", "this evening": today.
    today: bool,
}

fn period(keys: &[&str]) -> Option<Period> {
    let p = |half, hour, today| Some(Period { half, hour, today });
    match keys {
        ["tonight"] => p(Half::Pm, 20, true),
        ["this", "morning"] => p(Half::Am, 9, true),
        ["this", "afternoon"] => p(Half::Pm, 15, true),
        ["this", "evening"] => p(Half::Pm, 19, true),
        ["morning"] | ["in", "the", "morning"] => p(Half::Am, 9, false),
        ["afternoon"] | ["in", "the", "afternoon"] => p(Half::Pm, 15, false),
        ["evening"] | ["in", "the", "evening"] => p(Half::Pm, 19, false),
        ["night"] | ["at", "night"] => p(Half::Pm, 21, false),
        _ => None,
    }
}

/// A moment to come, all of `keys`, after `now`: "in 10 minutes", "at 9", "tomorrow at 9
/// am", "at 5 on friday", "tonight", "tomorrow morning", "on december 12th" (at 9:00).
pub fn moment(keys: &[&str], now: NaiveDateTime) -> Option<NaiveDateTime> {
    if let ["in", rest @ ..] = keys
        && let Some(seconds) = duration(rest)
    {
        return now.checked_add_signed(Duration::milliseconds((seconds * 1000.0) as i64));
    }
    let keys = match keys {
        ["by" | "for", rest @ ..] => rest,
        _ => keys,
    };
    // A date, a time, a part of the day: each may be missing, in either order.
    let n = keys.len();
    let mut found = None;
    'search: for a in 0..=n {
        for b in a..=n {
            for order in [Order::DateFirst, Order::TimeFirst] {
                let (first, middle, last) = (&keys[..a], &keys[a..b], &keys[b..]);
                let (day, time) = match order {
                    Order::DateFirst => (first, last),
                    Order::TimeFirst => (last, first),
                };
                let Some(parts) = parts(day, middle, time, now.date()) else { continue };
                if let Some(at) = resolve(parts, now) {
                    found = Some(at);
                    break 'search;
                }
            }
        }
    }
    found
}

#[derive(Debug, Clone, Copy)]
enum Order {
    DateFirst,
    TimeFirst,
}

/// What a moment was said with.
#[derive(Debug, Clone, Copy)]
struct Parts {
    date: Option<NaiveDate>,
    tod: Option<Tod>,
    period: Option<Period>,
}

/// Reads `day` as a date, `middle` as a part of the day and `time` as a time of day, each
/// empty or read whole.
fn parts(day: &[&str], middle: &[&str], time: &[&str], today: NaiveDate) -> Option<Parts> {
    let date = if day.is_empty() { None } else { Some(date(day, today)?) };
    let period = if middle.is_empty() { None } else { Some(period(middle)?) };
    let time = match time {
        ["at" | "by", rest @ ..] => rest,
        _ => time,
    };
    let tod = if time.is_empty() { None } else { Some(time_of_day(time)?) };
    if date.is_none() && tod.is_none() && period.is_none() {
        return None;
    }
    // A part of the day after a date alone ("tomorrow morning"), or alone with its own day
    // ("tonight").
    if let Some(p) = period
        && ((date.is_some() && p.today) || (date.is_none() && !p.today && tod.is_none()))
    {
        return None;
    }
    Some(Parts { date, tod, period })
}

fn resolve(parts: Parts, now: NaiveDateTime) -> Option<NaiveDateTime> {
    let today = now.date();
    let date = parts.date.or_else(|| parts.period.filter(|p| p.today).map(|_| today));
    let half = parts.tod.and_then(|t| t.half).or_else(|| parts.period.map(|p| p.half));
    let at = |date: NaiveDate, hour: u32, minute: u32| {
        Some(date.and_time(NaiveTime::from_hms_opt(hour, minute, 0)?)).filter(|at| *at > now)
    };
    let Some(tod) = parts.tod else {
        let hour = parts.period.map_or(9, |p| p.hour);
        return at(date?, hour, 0);
    };
    let (h, m) = (tod.hour, tod.minute);
    if tod.fixed {
        return match date {
            Some(date) => at(date, h, m),
            None => at(today, h, m).or_else(|| at(today.succ_opt()?, h, m)),
        };
    }
    let twelve = |half: Half| match half {
        Half::Am => h % 12,
        Half::Pm => h % 12 + 12,
    };
    // On another day, without a half: 7 to 11 is the morning, 12 noon, 1 to 6 the afternoon.
    let daytime = if (1..=6).contains(&h) { h + 12 } else { h };
    match (date, half) {
        (Some(date), Some(half)) => at(date, twelve(half), m),
        (Some(date), None) if date != today => at(date, daytime, m),
        (Some(date), None) => at(date, h, m).or_else(|| at(date, twelve(Half::Pm), m)),
        (None, Some(half)) => {
            at(today, twelve(half), m).or_else(|| at(today.succ_opt()?, twelve(half), m))
        }
        (None, None) => at(today, h, m)
            .or_else(|| at(today, twelve(Half::Pm), m))
            .or_else(|| at(today.succ_opt()?, daytime, m)),
    }
}

/// Whether `key` is a word of time: a day, a month, a part of the day, a number, "am".
pub fn of_time(key: &str) -> bool {
    const WORDS: [&str; 18] = [
        "yesterday",
        "today",
        "tomorrow",
        "tonight",
        "morning",
        "afternoon",
        "evening",
        "night",
        "noon",
        "midnight",
        "am",
        "pm",
        "o'clock",
        "minutes",
        "hours",
        "seconds",
        "week",
        "days",
    ];
    WORDS.contains(&key)
        || WEEKDAYS.iter().any(|(name, _)| *name == key)
        || MONTHS.contains(&key)
        || key.starts_with(|c: char| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::words;

    /// Monday 7 December 2026, 14:20.
    fn now() -> NaiveDateTime {
        NaiveDate::from_ymd_opt(2026, 12, 7)
            .and_then(|d| d.and_hms_opt(14, 20, 0))
            .unwrap_or_default()
    }

    fn keys(text: &str) -> Vec<String> {
        words(text).into_iter().map(|w| w.key).collect()
    }

    fn read<T>(text: &str, f: impl Fn(&[&str]) -> Option<T>) -> Option<T> {
        let keys = keys(text);
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        f(&keys)
    }

    #[test]
    fn durations() {
        let check = |text: &str, seconds: Option<f64>| {
            assert_eq!(read(text, duration), seconds, "{text:?}");
        };
        check("ten minutes", Some(600.0));
        check("10 min", Some(600.0));
        check("a minute", Some(60.0));
        check("an hour", Some(3600.0));
        check("half an hour", Some(1800.0));
        check("an hour and a half", Some(5400.0));
        check("one and a half hours", Some(5400.0));
        check("1.5 hours", Some(5400.0));
        check("1 hour and 30 minutes", Some(5400.0));
        check("2 hours 15 minutes", Some(8100.0));
        check("ninety seconds", Some(90.0));
        check("a quarter of an hour", Some(900.0));
        check("a couple of minutes", Some(120.0));
        check("three days", Some(3.0 * 86400.0));
        check("0 minutes", None);
        check("minutes", None);
        check("ten", None);
        check("ten minutes and", None);
        check("the bakery", None);
    }

    #[test]
    fn moments() {
        let check = |text: &str, expected: Option<&str>| {
            let got =
                read(text, |k| moment(k, now())).map(|t| t.format("%a %Y-%m-%d %H:%M").to_string());
            assert_eq!(got.as_deref(), expected, "{text:?}");
        };
        // Monday 7 December 2026, 14:20.
        check("in ten minutes", Some("Mon 2026-12-07 14:30"));
        check("in an hour and a half", Some("Mon 2026-12-07 15:50"));
        check("at nine", Some("Mon 2026-12-07 21:00"));
        check("at 3", Some("Mon 2026-12-07 15:00"));
        check("at 2", Some("Tue 2026-12-08 14:00"));
        check("at 9 am", Some("Tue 2026-12-08 09:00"));
        check("at 9 pm", Some("Mon 2026-12-07 21:00"));
        check("tomorrow at nine", Some("Tue 2026-12-08 09:00"));
        check("tomorrow at five", Some("Tue 2026-12-08 17:00"));
        check("at five tomorrow", Some("Tue 2026-12-08 17:00"));
        check("tomorrow at 9:30 pm", Some("Tue 2026-12-08 21:30"));
        check("tomorrow at half past nine", Some("Tue 2026-12-08 09:30"));
        check("tomorrow at quarter to ten", Some("Tue 2026-12-08 09:45"));
        check("tomorrow morning", Some("Tue 2026-12-08 09:00"));
        check("tomorrow evening at 8", Some("Tue 2026-12-08 20:00"));
        check("tonight", Some("Mon 2026-12-07 20:00"));
        check("tonight at 11", Some("Mon 2026-12-07 23:00"));
        check("this evening", Some("Mon 2026-12-07 19:00"));
        check("at 9 in the morning", Some("Tue 2026-12-08 09:00"));
        check("on friday", Some("Fri 2026-12-11 09:00"));
        check("on friday at 3 pm", Some("Fri 2026-12-11 15:00"));
        check("on monday", Some("Mon 2026-12-14 09:00"));
        check("on december 12th at noon", Some("Sat 2026-12-12 12:00"));
        check("on the 3rd of january", Some("Sun 2027-01-03 09:00"));
        check("at 21:00", Some("Mon 2026-12-07 21:00"));
        check("at 09:00", Some("Tue 2026-12-08 09:00"));
        check("at midnight", Some("Tue 2026-12-08 00:00"));
        check("in 3 days", Some("Thu 2026-12-10 14:20"));
        check("next week", Some("Mon 2026-12-14 09:00"));
        // Passed, or not a moment.
        check("today at 9 am", None);
        check("this morning", None);
        check("at 25", None);
        check("at 13 pm", None);
        check("tomorrow tonight", None);
        check("morning", None);
        check("the bakery", None);
        check("at the meeting", None);
        check("friday the bakery", None);
    }

    #[test]
    fn dates() {
        let check = |text: &str, expected: Option<&str>| {
            let got = read(text, |k| date(k, now().date())).map(|d| d.to_string());
            assert_eq!(got.as_deref(), expected, "{text:?}");
        };
        check("today", Some("2026-12-07"));
        check("tomorrow", Some("2026-12-08"));
        check("the day after tomorrow", Some("2026-12-09"));
        check("on wednesday", Some("2026-12-09"));
        check("next monday", Some("2026-12-14"));
        check("the 5th", Some("2027-01-05"));
        check("the 20th", Some("2026-12-20"));
        check("march 3", Some("2027-03-03"));
        check("3 march", Some("2027-03-03"));
        check("the 31st of february", None);
        check("the 5rd", None);
        check("yesterday", None);
    }
}
