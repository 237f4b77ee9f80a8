//! End-to-end streaming benchmark.
//!
//! Every arm is a real server process (the example servers of this
//! repository, stock or with grpc-stream-codec) pinned to CPU 0 with one
//! runtime worker; the same tonic client, pinned to CPU 1, drives them all
//! over the Echo proto. Arms run in alternating order for several rounds and
//! the median is reported. On two cores the client saturates before a fast
//! server does, so besides streams/s the benchmark reads the server's CPU
//! time from `/proc/<pid>/stat` over the measured window and compares arms on
//! server CPU per stream too.
//!
//! ```text
//! cargo run --release -p e2e-bench              # short default, about 2 minutes
//! cargo run --release -p e2e-bench -- --full    # longer windows, more rounds
//! ```

mod arms;
mod measure;
mod report;
mod server;
mod workload;

use std::path::PathBuf;
use std::time::Duration;

use arms::Arm;

/// Run settings, from the command line.
#[derive(Clone, Debug)]
pub struct Settings {
    warmup: Duration,
    window: Duration,
    rounds: usize,
    concurrency: Vec<usize>,
    memory_streams: usize,
    arms: Vec<Arm>,
    json: PathBuf,
    build: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: e2e-bench [--full] [--rounds N] [--window SECS] [--warmup SECS]\n\
         \x20                [--arms a,b,..] [--memory-streams N] [--json PATH] [--no-build]\n\
         arms: {}",
        Arm::ALL
            .iter()
            .map(|arm| arm.key())
            .collect::<Vec<_>>()
            .join(",")
    );
    std::process::exit(2)
}

fn parse_settings() -> Settings {
    let root = workspace_root();
    let mut settings = Settings {
        warmup: Duration::from_millis(500),
        window: Duration::from_millis(1500),
        rounds: 2,
        concurrency: vec![32, 128],
        memory_streams: 1000,
        arms: Arm::ALL.to_vec(),
        json: root.join("target/e2e-bench.json"),
        build: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--full" => {
                settings.warmup = Duration::from_secs(2);
                settings.window = Duration::from_secs(5);
                settings.rounds = 5;
            }
            "--rounds" => settings.rounds = value().parse().unwrap_or_else(|_| usage()),
            "--window" => {
                settings.window =
                    Duration::from_secs_f64(value().parse().unwrap_or_else(|_| usage()))
            }
            "--warmup" => {
                settings.warmup =
                    Duration::from_secs_f64(value().parse().unwrap_or_else(|_| usage()))
            }
            "--memory-streams" => {
                settings.memory_streams = value().parse().unwrap_or_else(|_| usage())
            }
            "--arms" => {
                settings.arms = value()
                    .split(',')
                    .map(|key| Arm::from_key(key).unwrap_or_else(|| usage()))
                    .collect()
            }
            "--json" => settings.json = PathBuf::from(value()),
            "--no-build" => settings.build = false,
            _ => usage(),
        }
    }
    settings
}

/// The repository root (this crate lives in `benches/e2e`).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn main() {
    let settings = parse_settings();
    if settings.build {
        server::build_servers();
    }
    // The client gets CPU 1, the servers CPU 0; threads inherit the mask.
    measure::pin_current_process(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let results = runtime.block_on(workload::run_all(&settings));
    report::print_table(&results);
    report::write_json(&settings, &results);
}
