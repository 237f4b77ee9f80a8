//! What an example server reports about itself: on standard input,
//! `memory` is answered with `live_bytes N` and `budget` with its receive
//! budget's figures ([`BudgetFigures`]); stopped with SIGTERM, it prints
//! one `exit ...` line of both, so a soak run or an outside check sees what
//! the process held at the end.

use std::fmt;
use std::io::{BufRead, Write};
use std::sync::Arc;

use crate::alloc;

/// A receive budget's figures, as a server reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BudgetFigures {
    /// Bytes counted now.
    pub in_use: usize,
    /// The most ever counted at once.
    pub peak: usize,
    /// Grants that had to wait.
    pub waits: u64,
    /// Streams waiting now.
    pub waiting: usize,
    /// Waits that ended in `resource_exhausted`.
    pub timed_out: u64,
}

impl fmt::Display for BudgetFigures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "budget_in_use {} budget_waiting {} budget_timed_out {} budget_peak {} budget_waits {}",
            self.in_use, self.waiting, self.timed_out, self.peak, self.waits
        )
    }
}

/// Reads a server's budget, when it has one.
pub type BudgetSource = Arc<dyn Fn() -> BudgetFigures + Send + Sync>;

/// Answers `memory` and (with a budget) `budget` lines on standard input,
/// from a plain thread so it works whatever the runtime is doing; counting
/// starts now.
pub fn answer_stdin(budget: Option<BudgetSource>) {
    alloc::enable();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            let answer = match (line.trim(), &budget) {
                ("memory", _) => format!("live_bytes {}", alloc::global_live()),
                ("budget", Some(budget)) => budget().to_string(),
                _ => continue,
            };
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{answer}");
            let _ = stdout.flush();
        }
    });
}

/// On SIGTERM, prints `exit` followed by the budget's figures (when there
/// is a budget) and `live_bytes N` (when counting was started) as one line,
/// and ends the process with status 0. Call it inside the tokio runtime.
///
/// # Panics
///
/// Outside a tokio runtime, or where SIGTERM cannot be watched.
pub fn on_sigterm(budget: Option<BudgetSource>) {
    on_sigterm_print(move || {
        let mut figures = Vec::new();
        if let Some(budget) = &budget {
            figures.push(budget().to_string());
        }
        if alloc::is_enabled() {
            figures.push(format!("live_bytes {}", alloc::global_live()));
        }
        figures.join(" ")
    });
}

fn on_sigterm_print(figures: impl FnOnce() -> String + Send + 'static) {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("watch SIGTERM");
    tokio::spawn(async move {
        terminate.recv().await;
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "exit {}", figures());
        let _ = stdout.flush();
        std::process::exit(0);
    });
}

/// The line a server stopped by SIGTERM printed, `exit ...`, as `(name, value)`
/// pairs: `exit budget_in_use 0 live_bytes 10` gives
/// `[("budget_in_use", 0), ("live_bytes", 10)]`.
pub fn parse_exit(line: &str) -> Option<Vec<(String, i64)>> {
    let mut words = line.trim().strip_prefix("exit ")?.split_whitespace();
    let mut figures = Vec::new();
    while let Some(name) = words.next() {
        figures.push((name.to_owned(), words.next()?.parse().ok()?));
    }
    Some(figures)
}

#[cfg(test)]
mod tests {
    use super::parse_exit;

    #[test]
    fn figures_are_read_back_in_order() {
        let figures = parse_exit("exit budget_in_use 0 budget_peak 42 live_bytes -3\n").unwrap();
        assert_eq!(
            figures,
            [
                ("budget_in_use".to_owned(), 0),
                ("budget_peak".to_owned(), 42),
                ("live_bytes".to_owned(), -3)
            ]
        );
        assert_eq!(parse_exit("listening on 127.0.0.1:1"), None);
        assert_eq!(parse_exit("exit budget_in_use"), None);
    }
}
