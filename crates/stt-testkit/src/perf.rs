//! Writing measured figures into `docs/PERFORMANCE.md`: each benchmark owns one section
//! between a pair of markers, rewritten in place (or appended the first time), and says when
//! and where it measured.

use std::path::Path;

/// What a new `docs/PERFORMANCE.md` starts with.
const HEADER: &str = "# Performance\n\nMeasured figures for stt, each section written by the \
                      benchmark named in its heading; rerun the command it gives to refresh it.\n";

/// Replaces the text from `start` to `end` (markers included; `section` must begin with
/// `start` and end with `end`) in the file at `path`, or appends `section` when the markers
/// are not there; creates the file if needed.
pub fn write_section(path: &Path, start: &str, end: &str, section: &str) -> std::io::Result<()> {
    let old = std::fs::read_to_string(path).unwrap_or_else(|_| HEADER.to_owned());
    std::fs::write(path, replace_section(&old, start, end, section))
}

fn replace_section(old: &str, start: &str, end: &str, section: &str) -> String {
    match (old.find(start), old.find(end)) {
        (Some(from), Some(to)) if from < to => {
            let after = &old[to + end.len()..];
            let after = after.strip_prefix('\n').unwrap_or(after);
            format!("{}{section}{after}", &old[..from])
        }
        _ => {
            let sep = if old.ends_with("\n\n") {
                ""
            } else if old.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            format!("{old}{sep}{section}")
        }
    }
}

/// The CPU model, the number of CPUs and the kernel.
pub fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("an unknown CPU", |(_, m)| m.trim())
        .to_owned();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{model} ({cpus} CPUs available), Linux {}", kernel.trim())
}

/// Today's date (UTC), as YYYY-MM-DD.
pub fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_is_replaced_in_place_or_appended() {
        let (s, e) = ("<!-- x:start -->", "<!-- x:end -->");
        let section = format!("{s}\nnew\n{e}\n");
        let old = format!("# P\n\n{s}\nold\n{e}\n\n## after\n");
        assert_eq!(replace_section(&old, s, e, &section), format!("# P\n\n{section}\n## after\n"));
        assert_eq!(replace_section("# P\n", s, e, &section), format!("# P\n\n{section}"));
        assert_eq!(replace_section("# P", s, e, &section), format!("# P\n\n{section}"));
    }
}

/// Percentiles of a set of samples (any unit), nearest rank.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
    pub n: usize,
}

impl Stats {
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "sample counts are small"
    )]
    pub fn of(mut samples: Vec<f64>) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        let rank = |p: f64| samples[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        Self {
            p50: rank(0.50),
            p95: rank(0.95),
            p99: rank(0.99),
            max: samples[n - 1],
            mean: samples.iter().sum::<f64>() / n as f64,
            n,
        }
    }

    /// The same figures divided by `by` (µs → ms, say).
    pub fn scaled(self, by: f64) -> Self {
        Self {
            p50: self.p50 / by,
            p95: self.p95 / by,
            p99: self.p99 / by,
            max: self.max / by,
            mean: self.mean / by,
            ..self
        }
    }

    /// As JSON, for a child process to hand its figures to its parent.
    pub fn to_json(self) -> serde_json::Value {
        serde_json::json!({"p50": self.p50, "p95": self.p95, "p99": self.p99, "max": self.max, "mean": self.mean, "n": self.n})
    }

    pub fn from_json(v: &serde_json::Value) -> Self {
        let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        Self {
            p50: f("p50"),
            p95: f("p95"),
            p99: f("p99"),
            max: f("max"),
            mean: f("mean"),
            n: v["n"].as_u64().and_then(|n| usize::try_from(n).ok()).unwrap_or(0),
        }
    }
}

/// A number from the environment variable `name` (a benchmark's knob), or `default`.
pub fn env_num(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v.parse().unwrap_or_else(|_| panic!("{name}={v} is not a number")),
        Err(_) => default,
    }
}
