//! What `/proc` says about a process: whether it still runs and which process group it
//! leads. Used to tell a live broker (or a live port reservation's owner) from a stale
//! pid file.

use std::fs;

/// Fields of `/proc/PID/stat` after the command name: (state, pgid).
pub(super) fn proc_state(pid: u32) -> Option<(char, u32)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgid = fields.next()?.parse().ok()?;
    Some((state, pgid))
}

/// `pid` exists and is neither a zombie nor dead.
pub(super) fn process_alive(pid: u32) -> bool {
    proc_state(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}
