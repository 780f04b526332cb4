//! Another place's time zone, by its name or its city's: the `zone` slot ("what time is it
//! in Tokyo") and `get_datetime`'s `zone` argument. The IANA database is compiled in (`chrono-tz`), so it needs
//! no tzdata on the machine and never goes out of date with it; it names zones by region
//! and city (`Asia/Tokyo`, `America/New_York`), so a city a zone is named after is found,
//! and any other place is not: it is said so, never guessed.

use chrono::{DateTime, Utc};
use chrono_tz::TZ_VARIANTS;
pub use chrono_tz::Tz;

/// The zone `place` names: a zone's name in any case (`asia/tokyo`, `UTC`), or the city or
/// region it is named after, with spaces for its underscores (`Tokyo`, `new york`,
/// `Sao Paulo`). The first of several zones of one city name wins (there is one in practice).
pub fn find(place: &str) -> Option<Tz> {
    let wanted = key(place);
    if wanted.is_empty() {
        return None;
    }
    TZ_VARIANTS
        .iter()
        .find(|tz| key(tz.name()) == wanted)
        .or_else(|| {
            TZ_VARIANTS.iter().find(|tz| {
                // Skip the old aliases (`Japan`, `US/Eastern`): a place is said by its city.
                tz.name().contains('/')
                    && tz.name().rsplit('/').next().map(key) == Some(wanted.clone())
            })
        })
        .copied()
}

/// A name as compared: lower case, its underscores and hyphens spaces, "the" and
/// punctuation around it gone, accents as typed without them (`são paulo` = `sao paulo`).
fn key(name: &str) -> String {
    let plain: String = name
        .trim()
        .trim_matches(|c: char| c.is_ascii_punctuation())
        .chars()
        .map(|c| match c {
            '_' | '-' => ' ',
            'á' | 'à' | 'â' | 'ã' | 'ä' => 'a',
            'é' | 'è' | 'ê' | 'ë' => 'e',
            'í' | 'ì' | 'î' | 'ï' => 'i',
            'ó' | 'ò' | 'ô' | 'õ' | 'ö' => 'o',
            'ú' | 'ù' | 'û' | 'ü' => 'u',
            'ç' => 'c',
            'ñ' => 'n',
            c => c,
        })
        .collect::<String>()
        .to_lowercase();
    let words: Vec<&str> = plain.split_whitespace().collect();
    let words = match words.as_slice() {
        ["the", rest @ ..] => rest,
        all => all,
    };
    words.join(" ")
}

/// The city a zone is named after, as a person says it: `Asia/Tokyo` → "Tokyo",
/// `America/New_York` → "New York", `UTC` → "UTC".
pub fn city(zone: Tz) -> String {
    zone.name().rsplit('/').next().unwrap_or(zone.name()).replace('_', " ")
}

/// The time in `zone` at `now`, as `get_datetime` reports it.
pub fn time_in(zone: Tz, now: DateTime<Utc>) -> String {
    let there = now.with_timezone(&zone);
    format!(
        "{} in {} ({})",
        there.format("%A %-d %B %Y, %H:%M:%S"),
        zone.name(),
        there.format("%:z")
    )
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn a_zone_is_found_by_its_name_or_its_citys() {
        for (place, zone) in [
            ("Tokyo", "Asia/Tokyo"),
            ("tokyo?", "Asia/Tokyo"),
            ("Asia/Tokyo", "Asia/Tokyo"),
            ("new york", "America/New_York"),
            ("New_York", "America/New_York"),
            ("São Paulo", "America/Sao_Paulo"),
            ("london", "Europe/London"),
            ("UTC", "UTC"),
            ("Los Angeles", "America/Los_Angeles"),
        ] {
            assert_eq!(find(place).map(|tz| tz.name()), Some(zone), "{place}");
        }
        for place in ["", "the meeting", "Narnia", "my office"] {
            assert_eq!(find(place), None, "{place}");
        }
    }

    #[test]
    fn a_zone_is_said_by_its_city() {
        assert_eq!(city(find("new york").unwrap()), "New York");
        assert_eq!(city(find("utc").unwrap()), "UTC");
    }

    #[test]
    fn the_time_there_is_said_with_its_offset() {
        let now = Utc.with_ymd_and_hms(2026, 12, 7, 17, 53, 7).unwrap();
        assert_eq!(
            time_in(find("Tokyo").unwrap(), now),
            "Tuesday 8 December 2026, 02:53:07 in Asia/Tokyo (+09:00)"
        );
        assert_eq!(
            time_in(find("new york").unwrap(), now),
            "Monday 7 December 2026, 12:53:07 in America/New_York (-05:00)"
        );
    }
}
