//! The processes on this machine as `/proc` shows them: who is whose child, which are still
//! alive. For the supervisor tests, which must prove that no child outlives `stt-daemon up`.

/// One process, from `/proc/<pid>/stat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: i32,
    /// The executable's name, cut to 15 bytes by the kernel (`stt-assistant`).
    pub comm: String,
    /// `R`, `S`, `D`, `Z` (exited, not yet reaped), …
    pub state: char,
    pub ppid: i32,
    /// Its process group.
    pub pgid: i32,
}

impl ProcInfo {
    /// Running, or able to run: not a zombie.
    pub fn is_alive(&self) -> bool {
        !matches!(self.state, 'Z' | 'X')
    }
}

/// One process, `None` if it is gone (or its `stat` cannot be read).
pub fn info(pid: i32) -> Option<ProcInfo> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// Every process now.
pub fn all() -> Vec<ProcInfo> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(info)
        .collect()
}

/// Whether `pid` exists and is not a zombie.
pub fn is_alive(pid: i32) -> bool {
    info(pid).is_some_and(|p| p.is_alive())
}

/// The living children of `parent`.
pub fn children(parent: i32) -> Vec<ProcInfo> {
    all().into_iter().filter(|p| p.ppid == parent && p.is_alive()).collect()
}

/// The living child of `parent` named `comm`, if there is exactly one.
pub fn child_named(parent: i32, comm: &str) -> Option<ProcInfo> {
    let mut found = children(parent).into_iter().filter(|p| p.comm == comm);
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// Living processes that are one of `pids`, a child of one, or in the process group of
/// one: what would be left behind by them.
pub fn left_behind(pids: &[i32]) -> Vec<ProcInfo> {
    all()
        .into_iter()
        .filter(|p| p.is_alive())
        .filter(|p| pids.contains(&p.pid) || pids.contains(&p.ppid) || pids.contains(&p.pgid))
        .collect()
}

/// `pid (comm) state ppid pgrp …`; the name may hold spaces and parentheses, so it ends at
/// the last `)`.
fn parse_stat(text: &str) -> Option<ProcInfo> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = text.get(open + 1..close)?.to_owned();
    let mut rest = text.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    let pgid = rest.next()?.parse().ok()?;
    Some(ProcInfo { pid, comm, state, ppid, pgid })
}

/// The pids of a running `stt-daemon up`'s daemon and assistant, once the assistant answers
/// `status` (fails, with `up`'s log, if `up` exits first).
pub fn up_children(sandbox: &crate::Sandbox, up: &mut crate::Proc) -> (i32, i32) {
    let pid = up.pid();
    crate::expect_within("up's daemon and assistant answer", crate::DEADLINE, || {
        if !up.is_running() {
            return Err(format!("up exited: {}", up.log()));
        }
        let out = sandbox.run("stt-ctl", &["status"]);
        match (out.code, child_named(pid, "stt-daemon"), child_named(pid, "stt-assistant")) {
            (Some(0), Some(daemon), Some(assistant)) => Ok((daemon.pid, assistant.pid)),
            other => Err(format!("{other:?}\n{}", up.log())),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_even_with_odd_names() {
        let p = parse_stat("42 (a (b) c) S 7 42 42 0 -1 4194560").unwrap();
        assert_eq!(p, ProcInfo { pid: 42, comm: "a (b) c".into(), state: 'S', ppid: 7, pgid: 42 });
        assert!(p.is_alive());
        assert!(!parse_stat("43 (z) Z 1 43 43").unwrap().is_alive());
    }

    #[test]
    fn this_process_is_alive_and_the_child_of_its_parent() {
        let me = i32::try_from(std::process::id()).unwrap();
        let info = info(me).unwrap();
        assert!(is_alive(me));
        assert!(children(info.ppid).iter().any(|p| p.pid == me));
    }
}
