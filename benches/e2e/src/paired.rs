//! `--paired`: each arm measured at the same time as its baseline.
//!
//! Run one after another, the same server differs by 10-30% from one window
//! to the next on a shared machine, more than a few percent of cost can be
//! told apart by. Here both servers of a pair run on CPU 0 at once, each
//! driven by its own copy of the workload over the same window, so what
//! the machine does to one it does to the other, and the ratio of their
//! server CPU per stream is read round by round.

use crate::Settings;
use crate::arms::Arm;
use crate::measure::median;
use crate::report::print_columns;
use crate::server::Server;
use crate::workload::{CONNECTIONS, Sample, client_streaming, connect, server_streaming};

/// One workload's samples of a pair, round by round: (arm, baseline).
type PairSamples = Vec<(Sample, Sample)>;

/// What one pair measured: per workload (a concurrency level of the
/// server-streaming workload, or the client-streaming one), its samples.
struct Pair {
    arm: Arm,
    baseline: Arm,
    workloads: Vec<(String, PairSamples)>,
}

/// Runs every arm of `settings` whose baseline is an arm of the run too,
/// each round in alternating order, and prints the pairs' ratios.
pub async fn run(settings: &Settings) {
    let mut pairs: Vec<Pair> = settings
        .arms
        .iter()
        .filter(|&&arm| arm.baseline() != arm && settings.arms.contains(&arm.baseline()))
        .map(|&arm| Pair {
            arm,
            baseline: arm.baseline(),
            workloads: Vec::new(),
        })
        .collect();
    for round in 0..settings.rounds {
        let count = pairs.len();
        for index in 0..count {
            let index = if round % 2 == 1 {
                count - 1 - index
            } else {
                index
            };
            let pair = &mut pairs[index];
            // Two rounds per layout, so each layout runs in both orders.
            let layout = settings.layouts.map(|count| (round / 2) as u32 % count + 1);
            eprintln!(
                "round {}/{}{}: {} with {}",
                round + 1,
                settings.rounds,
                layout.map_or(String::new(), |seed| format!(" (layout {seed})")),
                pair.arm.label(),
                pair.baseline.label()
            );
            // Which starts first alternates too: neither always gets the
            // lower port or the warmer allocator.
            let (arm, baseline) = if round % 2 == 0 {
                let arm = Server::start_laid_out(pair.arm, layout);
                (arm, Server::start_laid_out(pair.baseline, layout))
            } else {
                let baseline = Server::start_laid_out(pair.baseline, layout);
                (Server::start_laid_out(pair.arm, layout), baseline)
            };
            let arm_channels = connect(&arm.addr, CONNECTIONS).await;
            let baseline_channels = connect(&baseline.addr, CONNECTIONS).await;
            let mut measured = Vec::new();
            for &level in &settings.concurrency {
                let both = tokio::join!(
                    server_streaming(&arm, &arm_channels, level, settings),
                    server_streaming(&baseline, &baseline_channels, level, settings),
                );
                measured.push((format!("{level} streams"), both));
            }
            let both = tokio::join!(
                client_streaming(&arm, &arm_channels[0], settings),
                client_streaming(&baseline, &baseline_channels[0], settings),
            );
            measured.push(("client-streaming (10 msgs)".to_owned(), both));
            for (name, both) in measured {
                match pair.workloads.iter_mut().find(|(known, _)| *known == name) {
                    Some((_, samples)) => samples.push(both),
                    None => pair.workloads.push((name, vec![both])),
                }
            }
        }
    }
    print_pairs(&pairs);
    if let Some(count) = settings.layouts {
        println!(
            "code layouts: {count} (lld --shuffle-sections seeds 1..={count}, \
             two rounds each, both servers of a pair on one seed)"
        );
    }
}

/// Per pair and workload: both medians and the round-by-round ratio
/// (baseline's server CPU per stream over the arm's, above 1 the arm is
/// cheaper) with its range.
fn print_pairs(pairs: &[Pair]) {
    let mut rows = Vec::new();
    for pair in pairs {
        for (workload, samples) in &pair.workloads {
            let arm = median(samples.iter().map(|(a, _)| a.server_cpu_us).collect());
            let base = median(samples.iter().map(|(_, b)| b.server_cpu_us).collect());
            let ratios: Vec<f64> = samples
                .iter()
                .map(|(a, b)| b.server_cpu_us / a.server_cpu_us)
                .filter(|ratio| ratio.is_finite())
                .collect();
            let low = ratios.iter().copied().fold(f64::INFINITY, f64::min);
            let high = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            rows.push(vec![
                pair.arm.label().to_owned(),
                pair.baseline.label().to_owned(),
                workload.clone(),
                format!("{arm:.1}"),
                format!("{base:.1}"),
                format!("{:.3}x", median(ratios)),
                format!("{low:.3}-{high:.3}"),
            ]);
        }
    }
    println!();
    print_columns(
        &[
            "arm",
            "run with",
            "workload",
            "arm µs/str",
            "with µs/str",
            "ratio",
            "range",
        ],
        &rows,
        3,
    );
}
