//! Times as memory's tools write and read them: local `YYYY-MM-DD HH:MM`.

/// The local date at Unix time `at`, `YYYY-MM-DD`.
pub fn local_date(at: f64) -> String {
    when(at).chars().take(10).collect()
}

/// A Unix time as local "YYYY-MM-DD HH:MM".
pub fn when(at: f64) -> String {
    use chrono::TimeZone;
    let secs = at.floor() as i64;
    match chrono::Local.timestamp_opt(secs, 0) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
            t.format("%Y-%m-%d %H:%M").to_string()
        }
        chrono::LocalResult::None => stt_memory::text::date_time(at),
    }
}

/// Local "YYYY-MM-DD HH:MM" (or a date alone, at 09:00) as a Unix time.
pub fn parse_local(text: &str) -> Option<f64> {
    use chrono::{NaiveDate, NaiveDateTime, TimeZone};
    let text = text.trim();
    let naive = NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M")
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M"))
        .ok()
        .or_else(|| NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?.and_hms_opt(9, 0, 0))?;
    let local = chrono::Local.from_local_datetime(&naive).earliest()?;
    Some(local.timestamp() as f64)
}
