//! A server task a test owns: it runs until the test drops it.

use std::net::SocketAddr;

use tokio::task::JoinHandle;

/// A server task on `addr`; aborted when dropped, so a failing test never
/// leaves a server running into the next one.
pub struct Running {
    /// Where the server listens.
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Running {
    /// Owns `task`, the server listening on `addr`.
    pub fn new(addr: SocketAddr, task: JoinHandle<()>) -> Self {
        Running { addr, task }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}
