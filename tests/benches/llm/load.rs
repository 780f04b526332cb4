//! The machine's load while the battery runs: its busy CPU time, a process's, the load
//! average.

/// Clock ticks per second of `/proc`'s CPU times (`CLK_TCK`, 100 on Linux).
pub const TICKS_PER_S: f64 = 100.0;

/// The machine's busy CPU time so far (all but idle and waiting for I/O), in clock ticks.
pub fn machine_busy() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> =
        stat.lines().next()?.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    let total: u64 = fields.iter().take(8).sum();
    Some(total - fields.get(3)? - fields.get(4)?)
}

/// The CPU time (user and system) of the process `pid` (or `self`) so far, in clock ticks.
pub fn process_cpu(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
