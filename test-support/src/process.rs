//! A server binary a test starts: it prints `listening on ADDR` as its
//! first line (every server of the workspace, and the grpcio one, does),
//! and is killed when the test drops it.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, ChildStdout, Command, Stdio};

/// A running server process; killed and reaped when dropped.
pub struct ListeningProcess {
    /// The process (its stdin is the caller's to set up and take).
    pub child: Child,
    /// Its standard output, after the `listening on` line.
    pub stdout: BufReader<ChildStdout>,
    /// The address it printed.
    pub addr: SocketAddr,
}

impl ListeningProcess {
    /// Starts `command` with its stdout piped and waits for its first line,
    /// `listening on ADDR`. A process that prints anything else is a broken
    /// test setup: that panics, naming what it printed.
    pub fn start(mut command: Command) -> Self {
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("start {command:?}: {err}"));
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .unwrap_or_else(|err| panic!("read {command:?}'s first line: {err}"));
        let Some(addr) = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|addr| addr.parse().ok())
        else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} printed {line:?}, not `listening on ADDR`");
        };
        ListeningProcess {
            child,
            stdout,
            addr,
        }
    }
}

impl Drop for ListeningProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
