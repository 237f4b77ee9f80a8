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
//! cargo run --release -p e2e-bench -- --matrix  # batched vs unbatched vs stock
//! cargo run --release -p e2e-bench -- --saturate
//! cargo run --release -p e2e-bench -- --sections clients   # client arms
//! cargo run --release -p e2e-bench -- --matrix --sections budget
//! cargo run --release -p e2e-bench -- --matrix --sections unary,large
//! cargo run --release -p e2e-bench -- --chart-from docs/e2e-bench.json
//! cargo run --release -p e2e-bench -- --observe   # the metrics' cost
//! ```
//!
//! `--observe` runs volo-grpc and tonic's full framing three ways each: built
//! without the crate's `opentelemetry` feature but serving the same
//! Prometheus exporter (`--metrics-listen`, nothing recorded on it), built
//! as the other arms are (the example servers turn the feature on; nothing
//! installed), and recording on that exporter; each is compared with the
//! one before it. Both builds link the exporter, so the ratios are the
//! feature's, not the SDK's code moving the hot code about.
//!
//! `--paired` (with the default arms or `--observe`) runs each arm at the
//! same time as its baseline instead, both servers on CPU 0 and one
//! workload against each, and reports the ratio of their server CPU per
//! stream round by round: what the machine does to both cancels, where
//! arms run one after another differ by as much as what they measure.
//!
//! `--arms volo-recording,volo-codec,tonic-full-recording,tonic-full
//! --paired` reads the recording alone: each recording server against the
//! same binary with nothing installed, so in one code layout.
//!
//! `--layouts N` (with `--paired`) first relinks every example server N
//! times, each with its functions in an order the linker shuffles by a seed
//! (lld's `--shuffle-sections`), and runs each pair's rounds two by two on
//! one layout after another, both servers of a pair on the same seed. Two
//! builds of different code are laid out differently, and where hot h2,
//! hyper and tokio functions fall in the instruction cache moves a server's
//! cost by a few percent on its own (docs/observability.md); spread over
//! layouts, the ratio is the code's cost, not its build's luck.
//!
//! Each run writes its JSON (`target/e2e-bench.json`, or
//! `target/e2e-matrix.json` with `--matrix`) and an SVG chart of the same
//! numbers next to it (`target/e2e-bench.svg`, `target/e2e-matrix.svg`).
//! `--chart-from PATH` redraws the chart of an existing JSON into the `.svg`
//! next to it without running anything; with `--arms a,b,..` it draws only
//! those arms of the default run's JSON.
//!
//! `--matrix` drives seven servers (this crate batched at 32 KiB and
//! unbatched at threshold 0, and stock, on volo-grpc and on tonic's full
//! framing; bare hyper as the floor) with a raw HTTP/2 client that counts
//! DATA frames and times every message: message size {64 B .. 64 KiB} ×
//! messages per stream {1, 16, 256}, then gzip and zstd, then a paced
//! source. `--saturate` runs the headline shape (16 × 256 B) with many
//! streams in flight and the server held to part of its CPU, so the server
//! is the bottleneck. `--sections unary` (unary calls of 100 B and 16 KiB)
//! and `--sections large` (4 × 1 MiB streams, on the matrix's client windows
//! and on wide ones, `--large-window`) run the adapters, stock and the floor
//! only. Every row states both sides' CPU use.
//!
//! The servers and load clients run from `target/release`, or from
//! `E2E_BIN_DIR` when set: with `--no-build`, a copy of an older build there
//! compares two builds in one session.

mod arms;
mod chart;
mod clients;
mod h2client;
mod matrix;
mod matrix_report;
mod measure;
mod paired;
mod proto;
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
    /// `--paired`: each arm at the same time as its baseline.
    paired: bool,
    /// `--layouts N`: with `--paired`, the servers relinked in N code
    /// layouts, and each pair's rounds spread over them.
    layouts: Option<u32>,
    arms: Vec<Arm>,
    json: PathBuf,
    build: bool,
    matrix: Option<matrix::MatrixSettings>,
    matrix_json: PathBuf,
    clients: Option<clients::ClientSettings>,
    clients_json: PathBuf,
    /// `--arms` as given, to restrict `--chart-from` to them.
    arm_keys: Option<Vec<String>>,
    /// `--chart-from`: redraw this JSON's chart and stop.
    chart_from: Option<PathBuf>,
}

fn usage() -> ! {
    eprintln!(
        "usage: e2e-bench [--full] [--rounds N] [--window SECS] [--warmup SECS]\n\
         \x20                [--arms a,b,..] [--observe] [--paired [--layouts N]] [--memory-streams N] [--json PATH] [--no-build]\n\
         \x20      e2e-bench [--matrix] [--saturate] [--matrix-arms a,b,..] [--cell-window SECS]\n\
         \x20                [--cell-warmup SECS] [--matrix-rounds N] [--matrix-streams N]\n\
         \x20                [--saturate-streams N] [--server-quota SHARE|none] [--pace-micros N]\n\
         \x20                [--sections matrix,compressed,paced,budget,unary,large,large-wide,clients]\n\
         \x20                [--unary-sizes N,..] [--large-window BYTES] [--large-max-frame BYTES]\n\
         \x20                [--client-arms a,b,..] [--client-streams N]\n\
         \x20                [--matrix-shapes SIZExCOUNT,..]\n\
         \x20                [--client-saturate-streams N] [--clients-json PATH]\n\
         \x20                [--matrix-json PATH] [--no-build]\n\
         \x20      e2e-bench --chart-from PATH.json [--arms a,b,..]\n\
         arms: {}\n\
         matrix arms: {}\n\
         client arms: {}",
        Arm::ALL
            .iter()
            .chain(Arm::OBSERVE.iter().filter(|arm| !Arm::ALL.contains(arm)))
            .chain(Arm::RECORDING.iter())
            .map(|arm| arm.key())
            .collect::<Vec<_>>()
            .join(","),
        matrix::MatrixArm::ALL
            .iter()
            .chain(matrix::MatrixArm::BUDGET.iter())
            .map(|arm| arm.key())
            .collect::<Vec<_>>()
            .join(","),
        clients::ClientArm::ALL
            .iter()
            .map(|arm| arm.key())
            .collect::<Vec<_>>()
            .join(",")
    );
    std::process::exit(2)
}

/// What `--matrix` / `--saturate` ask for, before the plans are built.
struct MatrixFlags {
    matrix: bool,
    saturate: bool,
    arms: Vec<matrix::MatrixArm>,
    warmup: Duration,
    window: Duration,
    rounds: usize,
    streams: usize,
    saturate_streams: usize,
    quota: Option<f64>,
    pace_micros: u32,
    sections: Vec<String>,
    shapes: Vec<(u32, u32)>,
    client_arms: Vec<clients::ClientArm>,
    client_streams: usize,
    client_saturate_streams: usize,
    /// `--client-rpcs`: the client shapes of these calls only (all if empty).
    client_rpcs: Vec<String>,
    /// `--unary-sizes`: the unary section's request sizes.
    unary_sizes: Vec<u32>,
    /// `--large-window`: both windows of the server-bound large plan.
    large_window: u32,
    /// `--large-max-frame`: `SETTINGS_MAX_FRAME_SIZE` of that plan.
    large_max_frame: Option<u32>,
}

impl MatrixFlags {
    fn settings(self) -> Option<matrix::MatrixSettings> {
        let mut plans = Vec::new();
        let wanted =
            |name: &str| self.sections.is_empty() || self.sections.iter().any(|s| s == name);
        if self.matrix {
            if wanted("matrix") {
                plans.push(matrix::Plan::matrix(self.streams));
            }
            if wanted("compressed") {
                plans.push(matrix::Plan::compressed(self.streams));
            }
            if wanted("paced") {
                plans.push(matrix::Plan::paced(self.streams, self.pace_micros));
            }
        }
        let named = |name: &str| self.sections.iter().any(|s| s == name);
        // Opt-in: the receive-budget arms against the same servers without
        // a budget.
        if named("budget") {
            plans.push(matrix::Plan::budget(self.streams));
        }
        // Opt-in too: a plain `--matrix` runs its own three sections only.
        if named("unary") {
            plans.push(matrix::Plan::unary(self.streams, &self.unary_sizes));
        }
        if named("large") {
            plans.push(matrix::Plan::large(self.streams));
        }
        if named("large") || named("large-wide") {
            let windows = h2client::Windows::wide(self.large_window, self.large_max_frame);
            plans.push(matrix::Plan::large_wide(self.streams, windows));
        }
        if self.saturate {
            plans.push(matrix::Plan::saturated(self.saturate_streams, self.quota));
        }
        if !self.shapes.is_empty() {
            for plan in &mut plans {
                plan.shapes
                    .retain(|shape| self.shapes.contains(&(shape.size, shape.count)));
            }
        }
        let mut arms = self.arms;
        // The budget arms join the default arms; `--matrix-arms` names them.
        if arms == matrix::MatrixArm::ALL
            && plans
                .iter()
                .any(|plan| plan.section == matrix::Section::Budget)
        {
            for arm in matrix::MatrixArm::BUDGET {
                if !arms.contains(&arm) {
                    arms.push(arm);
                }
            }
        }
        (!plans.is_empty()).then_some(matrix::MatrixSettings {
            plans,
            arms,
            warmup: self.warmup,
            window: self.window,
            rounds: self.rounds,
        })
    }
}

fn parse_settings() -> Settings {
    let root = workspace_root();
    let mut settings = Settings {
        warmup: Duration::from_millis(500),
        window: Duration::from_millis(1500),
        rounds: 2,
        concurrency: vec![32, 128],
        memory_streams: 1000,
        paired: false,
        layouts: None,
        arms: Arm::ALL.to_vec(),
        json: root.join("target/e2e-bench.json"),
        build: true,
        matrix: None,
        matrix_json: root.join("target/e2e-matrix.json"),
        clients: None,
        clients_json: root.join("target/e2e-clients.json"),
        arm_keys: None,
        chart_from: None,
    };
    let mut flags = MatrixFlags {
        matrix: false,
        saturate: false,
        arms: matrix::MatrixArm::ALL.to_vec(),
        warmup: Duration::from_millis(300),
        window: Duration::from_millis(1000),
        rounds: 1,
        streams: 16,
        saturate_streams: 128,
        quota: Some(0.5),
        pace_micros: 1000,
        sections: Vec::new(),
        shapes: Vec::new(),
        client_arms: clients::ClientArm::ALL.to_vec(),
        client_streams: 16,
        client_saturate_streams: 128,
        client_rpcs: Vec::new(),
        unary_sizes: matrix::UNARY_SIZES.to_vec(),
        large_window: matrix::WIDE_WINDOW,
        large_max_frame: None,
    };
    let seconds =
        |value: String| Duration::from_secs_f64(value.parse().unwrap_or_else(|_| usage()));
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
                let keys: Vec<String> = value().split(',').map(str::to_owned).collect();
                settings.arms = keys
                    .iter()
                    .map(|key| Arm::from_key(key).unwrap_or_else(|| usage()))
                    .collect();
                settings.arm_keys = Some(keys);
            }
            "--observe" => {
                settings.arms = Arm::OBSERVE.to_vec();
                settings.arm_keys = Some(Arm::OBSERVE.iter().map(|a| a.key().to_owned()).collect());
            }
            "--paired" => settings.paired = true,
            "--layouts" => {
                let count: u32 = value().parse().unwrap_or_else(|_| usage());
                settings.layouts = Some(count.max(1));
            }
            "--chart-from" => settings.chart_from = Some(PathBuf::from(value())),
            "--json" => settings.json = PathBuf::from(value()),
            "--no-build" => settings.build = false,
            "--matrix" => flags.matrix = true,
            "--saturate" => flags.saturate = true,
            "--matrix-arms" => {
                flags.arms = value()
                    .split(',')
                    .map(|key| matrix::MatrixArm::from_key(key).unwrap_or_else(|| usage()))
                    .collect()
            }
            "--cell-window" => flags.window = seconds(value()),
            "--cell-warmup" => flags.warmup = seconds(value()),
            "--matrix-rounds" => flags.rounds = value().parse().unwrap_or_else(|_| usage()),
            "--matrix-streams" => flags.streams = value().parse().unwrap_or_else(|_| usage()),
            "--saturate-streams" => {
                flags.saturate_streams = value().parse().unwrap_or_else(|_| usage())
            }
            "--server-quota" => {
                flags.quota = match value().as_str() {
                    "none" => None,
                    share => Some(share.parse().unwrap_or_else(|_| usage())),
                }
            }
            "--pace-micros" => flags.pace_micros = value().parse().unwrap_or_else(|_| usage()),
            "--sections" => {
                flags.sections = value().split(',').map(str::to_owned).collect();
                if let Some(bad) = flags.sections.iter().find(|s| {
                    ![
                        "matrix",
                        "compressed",
                        "paced",
                        "budget",
                        "unary",
                        "large",
                        "large-wide",
                        "clients",
                    ]
                    .contains(&s.as_str())
                }) {
                    eprintln!("unknown section {bad}");
                    usage()
                }
            }
            "--matrix-json" => settings.matrix_json = PathBuf::from(value()),
            "--matrix-shapes" => {
                flags.shapes = value()
                    .split(',')
                    .map(|shape| {
                        shape
                            .split_once('x')
                            .and_then(|(size, count)| {
                                Some((size.parse().ok()?, count.parse().ok()?))
                            })
                            .unwrap_or_else(|| usage())
                    })
                    .collect()
            }
            "--client-arms" => {
                flags.client_arms = value()
                    .split(',')
                    .map(|key| clients::ClientArm::from_key(key).unwrap_or_else(|| usage()))
                    .collect()
            }
            "--client-streams" => {
                flags.client_streams = value().parse().unwrap_or_else(|_| usage())
            }
            "--client-saturate-streams" => {
                flags.client_saturate_streams = value().parse().unwrap_or_else(|_| usage())
            }
            "--client-rpcs" => flags.client_rpcs = value().split(',').map(str::to_owned).collect(),
            "--clients-json" => settings.clients_json = PathBuf::from(value()),
            "--unary-sizes" => {
                flags.unary_sizes = value()
                    .split(',')
                    .map(|size| size.parse().unwrap_or_else(|_| usage()))
                    .collect()
            }
            "--large-window" => {
                flags.large_window = value().parse().unwrap_or_else(|_| usage());
                // The protocol's largest window (RFC 9113, 6.9.1).
                if flags.large_window > (1 << 31) - 1 {
                    usage()
                }
            }
            "--large-max-frame" => {
                let max_frame: u32 = value().parse().unwrap_or_else(|_| usage());
                // The protocol's bounds (RFC 9113, 6.5.2).
                if !(16_384..=16_777_215).contains(&max_frame) {
                    usage()
                }
                flags.large_max_frame = Some(max_frame);
            }
            _ => usage(),
        }
    }
    if flags.sections.iter().any(|s| s == "clients") {
        settings.clients = Some(clients::ClientSettings {
            arms: flags.client_arms.clone(),
            shapes: clients::shapes(flags.client_streams, flags.client_saturate_streams)
                .into_iter()
                .filter(|shape| {
                    flags.client_rpcs.is_empty()
                        || flags.client_rpcs.iter().any(|rpc| rpc == shape.rpc.flag())
                })
                .collect(),
            warmup: flags.warmup,
            window: flags.window,
            rounds: flags.rounds,
        });
    }
    settings.matrix = flags.settings();
    settings
}

/// The repository root (this crate lives in `benches/e2e`), without `..`
/// steps, so the paths built on it print as a user would type them.
pub fn workspace_root() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::canonicalize(&root).unwrap_or_else(|_| report::normalize(&root))
}

/// `--chart-from`: reads the JSON at `path` and draws its chart next to it.
fn chart_from(path: &std::path::Path, only: Option<&[String]>) -> std::process::ExitCode {
    let document = match std::fs::read_to_string(path)
        .map_err(|err| err.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|err| err.to_string()))
    {
        Ok(document) => document,
        Err(err) => {
            eprintln!("cannot read {}: {err}", report::shown(path));
            return std::process::ExitCode::from(2);
        }
    };
    match report::write_chart(&document, path, only) {
        Some(_) => std::process::ExitCode::SUCCESS,
        None => std::process::ExitCode::FAILURE,
    }
}

/// Where the server and load-client binaries are run from: `target/release`
/// of the workspace, or `E2E_BIN_DIR` when set (a copy of an older build, to
/// compare two builds in one session with `--no-build`).
pub fn bin_dir() -> PathBuf {
    std::env::var_os("E2E_BIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/release"))
}

fn main() -> std::process::ExitCode {
    let settings = parse_settings();
    if let Some(path) = &settings.chart_from {
        return chart_from(path, settings.arm_keys.as_deref());
    }
    if settings.layouts.is_some() && !settings.paired {
        usage();
    }
    if settings.build {
        let feature_off = settings.arms.iter().any(|arm| arm.feature_off());
        if let Some(count) = settings.layouts {
            server::build_layouts(count, feature_off);
        }
        server::build_servers(feature_off);
    }
    // The client gets CPU 1, the servers CPU 0; threads inherit the mask.
    measure::pin_current_process(1);
    if let Some(client_settings) = &settings.clients {
        let cells = clients::run(client_settings);
        clients::print_table(&cells, &client_settings.arms);
        clients::write(&cells, &settings.clients_json);
        if settings.matrix.is_none() {
            return std::process::ExitCode::SUCCESS;
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Some(matrix_settings) = &settings.matrix {
        let cells = runtime.block_on(matrix::run(matrix_settings));
        matrix_report::print_tables(&cells);
        matrix_report::write(matrix_settings, &cells, &settings.matrix_json);
        // A cell without a sample is a failed run, not a slow one: the tables
        // and the JSON are written for a look at it, and the exit says so.
        let failed = matrix::failed_cells(&cells);
        if failed > 0 {
            eprintln!("{failed} of {} matrix cells failed", cells.len());
            return std::process::ExitCode::FAILURE;
        }
        return std::process::ExitCode::SUCCESS;
    }
    if settings.paired {
        runtime.block_on(paired::run(&settings));
        return std::process::ExitCode::SUCCESS;
    }
    let results = runtime.block_on(workload::run_all(&settings));
    report::print_table(&results, settings.memory_streams);
    report::write_json(&settings, &results);
    std::process::ExitCode::SUCCESS
}
