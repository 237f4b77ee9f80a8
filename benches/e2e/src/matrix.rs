//! `--matrix` and `--saturate`: batched against unbatched against stock,
//! over message sizes and stream lengths, driven by the raw HTTP/2 client
//! ([`crate::h2client`]) so DATA frames are counted and each message timed;
//! `--sections unary` and `--sections large` add unary calls and 4 × 1 MiB
//! streams on the adapters, stock and the floor.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;

use crate::h2client::{self, Call, Encoding, Observer, Shape, Windows};
use crate::measure::{CpuUse, CpuWindow, Throttle};
use crate::server::Server;

/// Which server stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stack {
    /// volo-grpc (`volo-echo-server`).
    Volo,
    /// tonic; this crate's arms use its full framing.
    Tonic,
    /// hyper and prost, no framework (`bare-echo-server`): the floor.
    Bare,
}

/// How the stack frames responses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// This crate, 32 KiB batch threshold (the default).
    Batched,
    /// This crate, threshold 0: one message per batch.
    Unbatched,
    /// The framework as shipped.
    Stock,
    /// The bare server: every response of a call in one buffer.
    Floor,
    /// This crate batched, with a receive budget large enough never to
    /// wait ([`RECEIVE_BUDGET`]): what the budget costs on the hot path.
    Budget,
    /// This crate batched, no budget, on the HTTP/2 windows and stream
    /// limit the [`Variant::Budget`] arms get: their like-for-like baseline.
    Windows,
}

/// The budget of the [`Variant::Budget`] arms: 1 GiB, far above what the
/// matrix ever has in flight, so no stream waits.
pub const RECEIVE_BUDGET: usize = 1 << 30;

/// One server of the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MatrixArm {
    /// The stack.
    pub stack: Stack,
    /// The framing.
    pub variant: Variant,
}

impl MatrixArm {
    /// Every arm, in report order.
    pub const ALL: [MatrixArm; 7] = [
        MatrixArm::new(Stack::Volo, Variant::Batched),
        MatrixArm::new(Stack::Volo, Variant::Unbatched),
        MatrixArm::new(Stack::Volo, Variant::Stock),
        MatrixArm::new(Stack::Tonic, Variant::Batched),
        MatrixArm::new(Stack::Tonic, Variant::Unbatched),
        MatrixArm::new(Stack::Tonic, Variant::Stock),
        MatrixArm::new(Stack::Bare, Variant::Floor),
    ];

    /// The receive-budget arms (`--sections budget`), not in [`Self::ALL`]:
    /// each stack's batched server on the budget's HTTP/2 windows, without
    /// and with the budget.
    pub const BUDGET: [MatrixArm; 4] = [
        MatrixArm::new(Stack::Volo, Variant::Windows),
        MatrixArm::new(Stack::Tonic, Variant::Windows),
        MatrixArm::new(Stack::Volo, Variant::Budget),
        MatrixArm::new(Stack::Tonic, Variant::Budget),
    ];

    const fn new(stack: Stack, variant: Variant) -> MatrixArm {
        MatrixArm { stack, variant }
    }

    /// Short name, for `--matrix-arms` and the JSON.
    pub fn key(self) -> &'static str {
        match (self.stack, self.variant) {
            (Stack::Volo, Variant::Batched) => "volo-batched",
            (Stack::Volo, Variant::Unbatched) => "volo-unbatched",
            (Stack::Volo, Variant::Budget) => "volo-budget",
            (Stack::Tonic, Variant::Budget) => "tonic-full-budget",
            (Stack::Volo, Variant::Windows) => "volo-windows",
            (Stack::Tonic, Variant::Windows) => "tonic-full-windows",
            (Stack::Volo, _) => "volo-stock",
            (Stack::Tonic, Variant::Batched) => "tonic-full-batched",
            (Stack::Tonic, Variant::Unbatched) => "tonic-full-unbatched",
            (Stack::Tonic, _) => "tonic-stock",
            (Stack::Bare, _) => "bare-hyper",
        }
    }

    /// Parses [`MatrixArm::key`].
    pub fn from_key(key: &str) -> Option<MatrixArm> {
        MatrixArm::ALL
            .into_iter()
            .chain(MatrixArm::BUDGET)
            .find(|arm| arm.key() == key)
    }

    /// The stock arm of the same stack (bare hyper compares with itself; a
    /// budget arm with the same server on the same windows without a
    /// budget, and that one with the batched server on default windows).
    pub fn baseline(self) -> MatrixArm {
        match (self.stack, self.variant) {
            (Stack::Bare, _) => self,
            (stack, Variant::Budget) => MatrixArm::new(stack, Variant::Windows),
            (stack, Variant::Windows) => MatrixArm::new(stack, Variant::Batched),
            (stack, _) => MatrixArm::new(stack, Variant::Stock),
        }
    }

    /// Whether the server honours compression and `x-pace-micros`.
    pub fn full_service(self) -> bool {
        self.stack != Stack::Bare
    }

    /// The server binary and its flags.
    pub fn command(self) -> (&'static str, Vec<String>) {
        let binary = match self.stack {
            Stack::Bare => return ("bare-echo-server", Vec::new()),
            Stack::Volo => "volo-echo-server",
            Stack::Tonic => "tonic-echo-server",
        };
        if matches!(self.variant, Variant::Stock | Variant::Floor) {
            return (binary, vec!["--stock".to_owned()]);
        }
        let mut flags: Vec<String> = Vec::new();
        if self.stack == Stack::Tonic {
            flags.extend(["--framing".into(), "full".into()]);
        }
        let threshold = match self.variant {
            Variant::Unbatched => 0,
            _ => 32 * 1024,
        };
        flags.extend(["--batch-threshold".into(), threshold.to_string()]);
        let budget_flag = match self.variant {
            Variant::Budget => Some("--receive-budget"),
            Variant::Windows => Some("--budget-windows"),
            _ => None,
        };
        if let Some(flag) = budget_flag {
            flags.extend([flag.to_owned(), RECEIVE_BUDGET.to_string()]);
        }
        (binary, flags)
    }
}

/// The part of the report a measurement belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Section {
    /// Size × count, uncompressed, every message ready.
    Matrix,
    /// gzip and zstd.
    Compressed,
    /// Messages produced one at a time with a gap.
    Paced,
    /// The headline shape with the server as the bottleneck.
    Saturated,
    /// The receive-budget arms against the same servers without a budget.
    Budget,
    /// Unary calls: one request echoed back.
    Unary,
    /// 4 × 1 MiB streams on the matrix's client windows.
    Large,
    /// 4 × 1 MiB streams on client windows wide enough that the server
    /// never waits for a window update.
    LargeWide,
}

impl Section {
    /// Name in the JSON.
    pub fn key(self) -> &'static str {
        match self {
            Section::Matrix => "matrix",
            Section::Compressed => "compressed",
            Section::Paced => "paced",
            Section::Saturated => "saturated",
            Section::Budget => "budget",
            Section::Unary => "unary",
            Section::Large => "large",
            Section::LargeWide => "large-wide",
        }
    }
}

/// How one section is run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Which section.
    pub section: Section,
    /// The shapes, in report order.
    pub shapes: Vec<Shape>,
    /// Streams in flight.
    pub concurrency: usize,
    /// HTTP/2 connections they share.
    pub connections: usize,
    /// Limit the server to this share of its CPU ([`Throttle`]).
    pub server_quota: Option<f64>,
    /// The arms this section runs, when not every arm of the run.
    pub arms: Option<Vec<MatrixArm>>,
    /// What the client's connections advertise.
    pub windows: Windows,
}

/// The settings of a matrix run.
#[derive(Clone, Debug)]
pub struct MatrixSettings {
    /// Sections to run.
    pub plans: Vec<Plan>,
    /// Arms to run.
    pub arms: Vec<MatrixArm>,
    /// Warm-up per cell.
    pub warmup: Duration,
    /// Measured window per cell.
    pub window: Duration,
    /// Rounds (arms alternate order); medians are reported.
    pub rounds: usize,
}

const SIZES: [u32; 6] = [64, 256, 1024, 4096, 16 * 1024, 64 * 1024];
const COUNTS: [u32; 3] = [1, 16, 256];

fn shape(size: u32, count: u32) -> Shape {
    Shape {
        size,
        count,
        compression: None,
        pace_micros: 0,
        call: Call::ServerStream,
    }
}

/// The arms that show what a call costs: each adapter against its stock
/// stack, and the floor. Unbatched is left out: a one-message call, or one
/// whose every message is over the threshold, is the same batched or not.
const CALL_COST_ARMS: [MatrixArm; 5] = [
    MatrixArm::new(Stack::Volo, Variant::Batched),
    MatrixArm::new(Stack::Volo, Variant::Stock),
    MatrixArm::new(Stack::Tonic, Variant::Batched),
    MatrixArm::new(Stack::Tonic, Variant::Stock),
    MatrixArm::new(Stack::Bare, Variant::Floor),
];

/// The sizes of the unary section's requests (and echoed responses).
pub const UNARY_SIZES: [u32; 2] = [100, 16 * 1024];

/// The wide plan's stream and connection windows, unless given.
pub const WIDE_WINDOW: u32 = 16 * 1024 * 1024;

impl Plan {
    /// Every size × count, uncompressed and ready.
    pub fn matrix(concurrency: usize) -> Plan {
        Plan {
            section: Section::Matrix,
            shapes: COUNTS
                .iter()
                .flat_map(|&count| SIZES.iter().map(move |&size| shape(size, count)))
                .collect(),
            concurrency,
            connections: 4,
            server_quota: None,
            arms: None,
            windows: Windows::DEFAULT,
        }
    }

    /// gzip and zstd for 16 × 256 B, 16 × 4 KiB and 16 × 64 KiB.
    pub fn compressed(concurrency: usize) -> Plan {
        let mut shapes = Vec::new();
        for encoding in [Encoding::Gzip, Encoding::Zstd] {
            for size in [256, 4096, 64 * 1024] {
                shapes.push(Shape {
                    compression: Some(encoding),
                    ..shape(size, 16)
                });
            }
        }
        Plan {
            section: Section::Compressed,
            shapes,
            concurrency,
            connections: 4,
            server_quota: None,
            arms: None,
            windows: Windows::DEFAULT,
        }
    }

    /// 16 messages of 256 B and 4 KiB, one every `gap_micros`.
    pub fn paced(concurrency: usize, gap_micros: u32) -> Plan {
        Plan {
            section: Section::Paced,
            shapes: [256, 4096]
                .into_iter()
                .map(|size| Shape {
                    pace_micros: gap_micros,
                    ..shape(size, 16)
                })
                .collect(),
            concurrency,
            connections: 4,
            server_quota: None,
            arms: None,
            windows: Windows::DEFAULT,
        }
    }

    /// The receive-budget section: 16 × 256 B and 16 × 64 KiB, received by
    /// the client (server streams) and sent by it (client streams, where the
    /// server's decoder takes from the budget for every message), on the
    /// batched arms with and without a budget.
    pub fn budget(concurrency: usize) -> Plan {
        let mut shapes = Vec::new();
        for call in [Call::ServerStream, Call::ClientStream] {
            for size in [256, 64 * 1024] {
                shapes.push(Shape {
                    call,
                    ..shape(size, 16)
                });
            }
        }
        let mut arms = vec![
            MatrixArm::new(Stack::Volo, Variant::Batched),
            MatrixArm::new(Stack::Tonic, Variant::Batched),
        ];
        arms.extend(MatrixArm::BUDGET);
        Plan {
            section: Section::Budget,
            shapes,
            concurrency,
            connections: 4,
            server_quota: None,
            arms: Some(arms),
            windows: Windows::DEFAULT,
        }
    }

    /// Unary calls of `sizes` bytes echoed back, on the adapters, stock and
    /// the floor.
    pub fn unary(concurrency: usize, sizes: &[u32]) -> Plan {
        Plan {
            section: Section::Unary,
            shapes: sizes
                .iter()
                .map(|&size| Shape {
                    call: Call::Unary,
                    ..shape(size, 1)
                })
                .collect(),
            concurrency,
            connections: 4,
            server_quota: None,
            arms: Some(CALL_COST_ARMS.to_vec()),
            windows: Windows::DEFAULT,
        }
    }

    /// 4 × 1 MiB `ServerStream` on the adapters, stock and the floor, on the
    /// matrix's client windows.
    pub fn large(concurrency: usize) -> Plan {
        Plan {
            section: Section::Large,
            shapes: vec![shape(1024 * 1024, 4)],
            concurrency,
            connections: 4,
            server_quota: None,
            arms: Some(CALL_COST_ARMS.to_vec()),
            windows: Windows::DEFAULT,
        }
    }

    /// [`Plan::large`] with the client advertising `windows`: wide ones
    /// ([`Windows::wide`]) take flow control out of the server's way.
    pub fn large_wide(concurrency: usize, windows: Windows) -> Plan {
        Plan {
            section: Section::LargeWide,
            windows,
            ..Plan::large(concurrency)
        }
    }

    /// The headline shape (16 × 256 B) with many streams in flight, and the
    /// server held to `quota` of its CPU when given.
    pub fn saturated(concurrency: usize, quota: Option<f64>) -> Plan {
        Plan {
            section: Section::Saturated,
            shapes: vec![shape(256, 16)],
            concurrency,
            connections: 8,
            server_quota: quota,
            arms: None,
            windows: Windows::DEFAULT,
        }
    }
}

/// Response bytes in flight the matrix allows: streams of 16 MiB run 2 at
/// a time instead of 16, so a window still completes enough of them to
/// read latencies from.
const IN_FLIGHT_BYTES: u64 = 32 * 1024 * 1024;

/// Streams in flight for `shape` under a plan that asks for `wanted`.
pub fn concurrency_for(shape: &Shape, wanted: usize) -> usize {
    let stream_bytes = u64::from(shape.size.max(1)) * u64::from(shape.count.max(1));
    let fits = (IN_FLIGHT_BYTES / stream_bytes).max(2) as usize;
    wanted.min(fits).max(1)
}

/// One measured window of one arm on one shape.
#[derive(Clone, Copy, Debug, Default)]
pub struct CellSample {
    /// Streams completed in the window.
    pub streams: u64,
    /// Messages received in the window.
    pub messages: u64,
    /// Of them, with the compressed flag.
    pub compressed_messages: u64,
    /// DATA frames received in the window.
    pub frames: u64,
    /// CPU of both sides over the window.
    pub cpu: CpuUse,
    /// Latency to the first message, µs: p50, p99.
    pub first_p50: f64,
    /// See `first_p50`.
    pub first_p99: f64,
    /// Latency of the whole stream, µs: p50, p99.
    pub whole_p50: f64,
    /// See `whole_p50`.
    pub whole_p99: f64,
}

impl CellSample {
    /// Server CPU per message, µs.
    pub fn server_us_per_message(&self) -> f64 {
        self.cpu.server_us / self.messages.max(1) as f64
    }

    /// Server CPU per stream, µs.
    pub fn server_us_per_stream(&self, count: u32) -> f64 {
        self.server_us_per_message() * count.max(1) as f64
    }

    /// DATA frames per stream: frames over the streams' worth of messages
    /// that arrived in the same window.
    pub fn frames_per_stream(&self, count: u32) -> f64 {
        self.frames as f64 * count.max(1) as f64 / self.messages.max(1) as f64
    }

    /// Messages per second.
    pub fn messages_per_second(&self) -> f64 {
        self.messages as f64 / self.cpu.seconds.max(1e-9)
    }
}

/// Every sample of one (section, shape, arm).
#[derive(Clone, Debug)]
pub struct Cell {
    /// The section.
    pub section: Section,
    /// The shape.
    pub shape: Shape,
    /// The arm.
    pub arm: MatrixArm,
    /// Streams in flight.
    pub concurrency: usize,
    /// Server CPU quota, if throttled.
    pub server_quota: Option<f64>,
    /// What the client's connections advertised.
    pub windows: Windows,
    /// One per round.
    pub samples: Vec<CellSample>,
    /// A call that failed, if any (the cell then has no sample).
    pub error: Option<String>,
}

/// Runs every plan for every arm and round.
pub async fn run(settings: &MatrixSettings) -> Vec<Cell> {
    let mut cells = Vec::new();
    for plan in &settings.plans {
        for shape in &plan.shapes {
            for &arm in &settings.arms {
                if shape_needs_full_service(shape) && !arm.full_service() {
                    continue;
                }
                let in_plan = match &plan.arms {
                    Some(arms) => arms.contains(&arm),
                    None => !matches!(arm.variant, Variant::Budget | Variant::Windows),
                };
                if !in_plan {
                    continue;
                }
                cells.push(Cell {
                    section: plan.section,
                    shape: *shape,
                    arm,
                    concurrency: concurrency_for(shape, plan.concurrency),
                    server_quota: plan.server_quota,
                    windows: plan.windows,
                    samples: Vec::new(),
                    error: None,
                });
            }
        }
    }
    for round in 0..settings.rounds {
        let mut arms = settings.arms.clone();
        if round % 2 == 1 {
            arms.reverse();
        }
        for arm in arms {
            if !cells.iter().any(|cell| cell.arm == arm) {
                continue;
            }
            eprintln!(
                "matrix round {}/{}: {}",
                round + 1,
                settings.rounds,
                arm.key()
            );
            let (binary, flags) = arm.command();
            let server = Server::spawn(binary, &flags);
            for plan in &settings.plans {
                if !cells
                    .iter()
                    .any(|cell| cell.arm == arm && cell.section == plan.section)
                {
                    continue;
                }
                let connections =
                    match connect_all(&server.addr, plan.connections, plan.windows).await {
                        Ok(connections) => connections,
                        Err(err) => panic!("{}: {err}", arm.key()),
                    };
                for cell in cells
                    .iter_mut()
                    .filter(|cell| cell.arm == arm && cell.section == plan.section)
                {
                    if cell.error.is_some() {
                        continue;
                    }
                    let throttle = plan
                        .server_quota
                        .map(|share| Throttle::start(server.pid(), share));
                    let measured = run_cell(
                        &server,
                        &connections,
                        &cell.shape,
                        cell.concurrency,
                        settings,
                    )
                    .await;
                    drop(throttle);
                    match measured {
                        Ok(sample) => cell.samples.push(sample),
                        Err(err) => {
                            eprintln!("  {} {:?}: {err}", arm.key(), cell.shape);
                            cell.error = Some(err);
                        }
                    }
                }
            }
        }
    }
    cells
}

/// How many cells failed: a call failed, or no round gave a sample.
pub fn failed_cells(cells: &[Cell]) -> usize {
    cells
        .iter()
        .filter(|cell| cell.error.is_some() || cell.samples.is_empty())
        .count()
}

fn shape_needs_full_service(shape: &Shape) -> bool {
    shape.compression.is_some() || shape.pace_micros > 0
}

async fn connect_all(
    addr: &str,
    count: usize,
    windows: Windows,
) -> Result<Vec<SendRequest<Bytes>>, String> {
    let mut connections = Vec::with_capacity(count);
    for _ in 0..count {
        connections.push(h2client::connect(addr, windows).await?);
    }
    Ok(connections)
}

/// Counters shared by a cell's workers; they count only while `measuring`.
#[derive(Default)]
struct Counters {
    measuring: AtomicBool,
    stop: AtomicBool,
    frames: AtomicU64,
    messages: AtomicU64,
    compressed: AtomicU64,
    streams: AtomicU64,
    first: Mutex<Vec<u32>>,
    whole: Mutex<Vec<u32>>,
}

impl Observer for Counters {
    fn data_frame(&self) {
        if self.measuring.load(Ordering::Relaxed) {
            self.frames.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn message(&self, compressed: bool) {
        if self.measuring.load(Ordering::Relaxed) {
            self.messages.fetch_add(1, Ordering::Relaxed);
            if compressed {
                self.compressed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// `concurrency` closed-loop callers for warm-up plus one window.
async fn run_cell(
    server: &Server,
    connections: &[SendRequest<Bytes>],
    shape: &Shape,
    concurrency: usize,
    settings: &MatrixSettings,
) -> Result<CellSample, String> {
    let counters = Arc::new(Counters::default());
    let body = h2client::request_body(shape);
    let mut workers = Vec::with_capacity(concurrency);
    for worker in 0..concurrency {
        let send = connections[worker % connections.len()].clone();
        let authority = server.addr.clone();
        let counters = counters.clone();
        let (shape, body) = (*shape, body.clone());
        workers.push(tokio::spawn(async move {
            let (mut first, mut whole) = (Vec::new(), Vec::new());
            while !counters.stop.load(Ordering::Relaxed) {
                let stats =
                    h2client::call(&send, &authority, &shape, body.clone(), counters.as_ref())
                        .await?;
                if counters.measuring.load(Ordering::Relaxed) {
                    counters.streams.fetch_add(1, Ordering::Relaxed);
                    first.push(stats.first_message.as_micros() as u32);
                    whole.push(stats.whole_stream.as_micros() as u32);
                }
            }
            counters
                .first
                .lock()
                .map_err(|e| e.to_string())?
                .extend(first);
            counters
                .whole
                .lock()
                .map_err(|e| e.to_string())?
                .extend(whole);
            Ok::<(), String>(())
        }));
    }
    tokio::time::sleep(settings.warmup).await;
    counters.measuring.store(true, Ordering::Relaxed);
    let window = CpuWindow::start(server.pid());
    tokio::time::sleep(settings.window).await;
    counters.measuring.store(false, Ordering::Relaxed);
    let cpu = window.finish();
    counters.stop.store(true, Ordering::Relaxed);
    let mut failure = None;
    for worker in workers {
        match worker.await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => failure = Some(err),
            Err(err) => failure = Some(format!("worker panicked: {err}")),
        }
    }
    if let Some(err) = failure {
        return Err(err);
    }
    let sorted = |samples: &Mutex<Vec<u32>>| {
        let mut samples = samples.lock().map(|s| s.clone()).unwrap_or_default();
        samples.sort_unstable();
        samples
    };
    let (first, whole) = (sorted(&counters.first), sorted(&counters.whole));
    use crate::measure::quantile;
    Ok(CellSample {
        streams: counters.streams.load(Ordering::Relaxed),
        messages: counters.messages.load(Ordering::Relaxed),
        compressed_messages: counters.compressed.load(Ordering::Relaxed),
        frames: counters.frames.load(Ordering::Relaxed),
        cpu,
        first_p50: quantile(&first, 0.5),
        first_p99: quantile(&first, 0.99),
        whole_p50: quantile(&whole, 0.5),
        whole_p99: quantile(&whole, 0.99),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(samples: usize, error: Option<&str>) -> Cell {
        Cell {
            section: Section::Matrix,
            shape: shape(256, 16),
            arm: MatrixArm::ALL[0],
            concurrency: 1,
            server_quota: None,
            windows: Windows::DEFAULT,
            samples: vec![CellSample::default(); samples],
            error: error.map(str::to_owned),
        }
    }

    /// The matrix exits non-zero on these: a failed call, or no sample.
    #[test]
    fn failed_cells_are_errors_and_cells_without_samples() {
        assert_eq!(failed_cells(&[cell(3, None), cell(1, None)]), 0);
        assert_eq!(failed_cells(&[cell(3, None), cell(0, Some("reset"))]), 1);
        assert_eq!(failed_cells(&[cell(2, Some("reset after a sample"))]), 1);
        assert_eq!(failed_cells(&[cell(0, None), cell(0, Some("x"))]), 2);
    }

    /// The call-cost sections run the adapters, stock and the floor; only
    /// the server-bound one changes the client's windows.
    #[test]
    fn call_cost_plans_run_five_arms_and_the_wide_plan_wide_windows() {
        let wide = Windows::wide(WIDE_WINDOW, None);
        let plans = [
            Plan::unary(16, &UNARY_SIZES),
            Plan::large(16),
            Plan::large_wide(16, wide),
        ];
        for plan in &plans {
            assert_eq!(plan.arms.as_deref(), Some(&CALL_COST_ARMS[..]));
        }
        assert!(plans[0].shapes.iter().all(|s| s.call == Call::Unary));
        assert_eq!(
            plans[0].shapes.iter().map(|s| s.size).collect::<Vec<_>>(),
            UNARY_SIZES
        );
        assert_eq!(plans[1].shapes, [shape(1024 * 1024, 4)]);
        assert_eq!(plans[2].shapes, plans[1].shapes);
        assert_eq!(plans[1].windows, Windows::DEFAULT);
        assert_eq!(plans[2].windows, wide);
        assert_eq!(concurrency_for(&plans[1].shapes[0], 16), 8);
    }

    /// The flags each arm starts its server with: the example servers'
    /// stable flags, the same threshold on both stacks.
    #[test]
    fn arms_start_their_servers_with_these_flags() {
        let budget = format!("--receive-budget {RECEIVE_BUDGET}");
        let windows = format!("--budget-windows {RECEIVE_BUDGET}");
        let expected = [
            (
                Stack::Bare,
                Variant::Batched,
                "bare-echo-server ".to_owned(),
            ),
            (
                Stack::Volo,
                Variant::Floor,
                "volo-echo-server --stock".into(),
            ),
            (
                Stack::Tonic,
                Variant::Stock,
                "tonic-echo-server --stock".into(),
            ),
            (
                Stack::Volo,
                Variant::Unbatched,
                "volo-echo-server --batch-threshold 0".into(),
            ),
            (
                Stack::Tonic,
                Variant::Batched,
                "tonic-echo-server --framing full --batch-threshold 32768".into(),
            ),
            (
                Stack::Volo,
                Variant::Budget,
                format!("volo-echo-server --batch-threshold 32768 {budget}"),
            ),
            (
                Stack::Tonic,
                Variant::Windows,
                format!("tonic-echo-server --framing full --batch-threshold 32768 {windows}"),
            ),
        ];
        for (stack, variant, command) in expected {
            let (binary, flags) = MatrixArm::new(stack, variant).command();
            assert_eq!(format!("{binary} {}", flags.join(" ")), command);
        }
    }
}
