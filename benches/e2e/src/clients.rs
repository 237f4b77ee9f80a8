//! `--sections clients`: the client arms. This crate's clients (tonic full
//! framing, the volo adapter) against stock tonic and stock volo-grpc, all
//! against one fixed server, the bare hyper floor (`bare-echo-server`), so
//! the server's cost is the same for every arm. Each client is a process of
//! its own (`tonic-echo-load-client`, `volo-echo-load-client`) pinned to
//! CPU 1 with one runtime worker, the server to CPU 0; the figure is the
//! client's CPU time per message over the window.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use crate::h2client::Encoding;
use crate::measure::{CpuWindow, median};
use crate::server::Server;

/// One client stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientArm {
    /// tonic's stock client.
    TonicStock,
    /// tonic with this crate's full framing (`ClientStack::Full`).
    TonicFull,
    /// volo-grpc as generated.
    VoloStock,
    /// volo-grpc through this crate's adapter.
    VoloAdapter,
}

impl ClientArm {
    /// Every arm, in report order.
    pub const ALL: [ClientArm; 4] = [
        ClientArm::TonicFull,
        ClientArm::TonicStock,
        ClientArm::VoloAdapter,
        ClientArm::VoloStock,
    ];

    /// Short name, for `--client-arms` and the JSON.
    pub fn key(self) -> &'static str {
        match self {
            ClientArm::TonicStock => "tonic-stock",
            ClientArm::TonicFull => "tonic-full",
            ClientArm::VoloStock => "volo-stock",
            ClientArm::VoloAdapter => "volo-adapter",
        }
    }

    /// Parses [`ClientArm::key`].
    pub fn from_key(key: &str) -> Option<ClientArm> {
        ClientArm::ALL.into_iter().find(|arm| arm.key() == key)
    }

    /// The stock client of the same framework.
    pub fn baseline(self) -> ClientArm {
        match self {
            ClientArm::TonicStock | ClientArm::TonicFull => ClientArm::TonicStock,
            ClientArm::VoloStock | ClientArm::VoloAdapter => ClientArm::VoloStock,
        }
    }

    fn command(self, addr: &str) -> (&'static str, Vec<String>) {
        let (binary, addr, stack) = match self {
            ClientArm::TonicStock => ("tonic-echo-load-client", format!("http://{addr}"), "stock"),
            ClientArm::TonicFull => ("tonic-echo-load-client", format!("http://{addr}"), "full"),
            ClientArm::VoloStock => ("volo-echo-load-client", addr.to_owned(), "stock"),
            ClientArm::VoloAdapter => ("volo-echo-load-client", addr.to_owned(), "adapter"),
        };
        (
            binary,
            vec!["--addr".into(), addr, "--stack".into(), stack.into()],
        )
    }
}

/// Which call a client shape makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientRpc {
    /// Receives a server stream.
    ServerStream,
    /// Receives one unary response (the request is empty).
    Unary,
    /// Sends a client stream.
    ClientStream,
}

impl ClientRpc {
    /// The load clients' `--rpc` value, and `--client-rpcs`' name.
    pub fn flag(self) -> &'static str {
        match self {
            ClientRpc::ServerStream => "server",
            ClientRpc::Unary => "unary",
            ClientRpc::ClientStream => "client",
        }
    }
}

/// One client workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClientShape {
    /// The call.
    pub rpc: ClientRpc,
    /// Payload bytes per message.
    pub size: u32,
    /// Messages per stream (1 for unary).
    pub count: u32,
    /// Requests and responses compressed with this.
    pub compression: Option<Encoding>,
    /// Calls in flight.
    pub streams: usize,
    /// Connections (channels) they share.
    pub connections: usize,
}

impl ClientShape {
    /// A label for tables, e.g. `receive 16 × 64 KiB, gzip`.
    pub fn label(&self) -> String {
        let size = if self.size >= 1024 * 1024 {
            format!("{} MiB", self.size / (1024 * 1024))
        } else if self.size >= 1024 {
            format!("{} KiB", self.size / 1024)
        } else {
            format!("{} B", self.size)
        };
        let what = match self.rpc {
            ClientRpc::ServerStream => format!("receive {} × {size}", self.count),
            ClientRpc::Unary => format!("receive unary {size}"),
            ClientRpc::ClientStream => format!("send {} × {size}", self.count),
        };
        let compression = self.compression.map_or("", |encoding| match encoding {
            Encoding::Gzip => ", gzip",
            Encoding::Zstd => ", zstd",
        });
        format!("{what}{compression}, {} streams", self.streams)
    }

    fn flags(&self) -> Vec<String> {
        let compression = self.compression.map_or("none", Encoding::name);
        [
            "--rpc",
            self.rpc.flag(),
            "--size",
            &self.size.to_string(),
            "--count",
            &self.count.to_string(),
            "--compression",
            compression,
            "--streams",
            &self.streams.to_string(),
            "--connections",
            &self.connections.to_string(),
        ]
        .map(str::to_owned)
        .to_vec()
    }
}

/// The shapes of the client section: receiving 16 × 256 B and 16 × 64 KiB
/// server streams, receiving a 1 MiB unary response and sending 16 × 256 B
/// client streams, each uncompressed, gzip and zstd, with `streams` calls in
/// flight; then the saturating row, 16 × 256 B received with
/// `saturate_streams` calls in flight.
pub fn shapes(streams: usize, saturate_streams: usize) -> Vec<ClientShape> {
    let mut shapes = Vec::new();
    for compression in [None, Some(Encoding::Gzip), Some(Encoding::Zstd)] {
        let shape = |rpc, size, count| ClientShape {
            rpc,
            size,
            count,
            compression,
            streams,
            connections: 4,
        };
        shapes.push(shape(ClientRpc::ServerStream, 256, 16));
        shapes.push(shape(ClientRpc::ServerStream, 64 * 1024, 16));
        // A few 1 MiB responses in flight are enough to keep the client busy.
        shapes.push(ClientShape {
            streams: streams.min(4),
            ..shape(ClientRpc::Unary, 1024 * 1024, 1)
        });
        shapes.push(shape(ClientRpc::ClientStream, 256, 16));
    }
    if saturate_streams > 0 {
        shapes.push(ClientShape {
            rpc: ClientRpc::ServerStream,
            size: 256,
            count: 16,
            compression: None,
            streams: saturate_streams,
            connections: 8,
        });
    }
    shapes
}

/// How the client section is run.
#[derive(Clone, Debug)]
pub struct ClientSettings {
    /// Arms to run.
    pub arms: Vec<ClientArm>,
    /// Shapes to run.
    pub shapes: Vec<ClientShape>,
    /// Warm-up per cell.
    pub warmup: Duration,
    /// Measured window per cell.
    pub window: Duration,
    /// Rounds (arms alternate order); medians are reported.
    pub rounds: usize,
}

/// One measured window of one client arm on one shape.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientSample {
    /// Messages the client counted in the window.
    pub messages: u64,
    /// Client CPU time over the window, µs.
    pub client_us: f64,
    /// Client CPU-seconds per second.
    pub client_share: f64,
    /// Server CPU-seconds per second.
    pub server_share: f64,
    /// Calls that failed in the window.
    pub errors: u64,
}

impl ClientSample {
    /// Client CPU per message, µs.
    pub fn us_per_message(&self) -> f64 {
        self.client_us / self.messages.max(1) as f64
    }
}

/// Every sample of one (shape, arm).
#[derive(Clone, Debug)]
pub struct ClientCell {
    /// The shape.
    pub shape: ClientShape,
    /// The arm.
    pub arm: ClientArm,
    /// One per round.
    pub samples: Vec<ClientSample>,
    /// Why the cell has no sample, if it failed.
    pub error: Option<String>,
}

impl ClientCell {
    /// Median client CPU per message, µs.
    pub fn median_us(&self) -> f64 {
        median(
            self.samples
                .iter()
                .map(ClientSample::us_per_message)
                .collect(),
        )
    }
}

/// A running load client.
struct LoadClient {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl LoadClient {
    fn start(arm: ClientArm, shape: &ClientShape, addr: &str) -> Result<LoadClient, String> {
        let (binary, mut flags) = arm.command(addr);
        flags.extend(shape.flags());
        let path = crate::bin_dir().join(binary);
        let mut command = if crate::measure::cpu_count() > 1 {
            let mut command = Command::new("taskset");
            command.arg("-c").arg("1").arg(&path);
            command
        } else {
            Command::new(&path)
        };
        let mut child = command
            .args(&flags)
            .env("TOKIO_WORKER_THREADS", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|err| format!("start {}: {err}", path.display()))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut client = LoadClient {
            child,
            stdin,
            stdout,
        };
        let line = client.read_line()?;
        if line.trim() != "ready" {
            return Err(format!("{binary}: expected ready, got {line:?}"));
        }
        Ok(client)
    }

    fn read_line(&mut self) -> Result<String, String> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => Err("the load client exited".into()),
            Ok(_) => Ok(line),
            Err(err) => Err(err.to_string()),
        }
    }

    /// (messages, errors) so far.
    fn count(&mut self) -> Result<(u64, u64), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        writeln!(stdin, "count").map_err(|err| err.to_string())?;
        stdin.flush().map_err(|err| err.to_string())?;
        let line = self.read_line()?;
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            ["messages", messages, "calls", _, "errors", errors] => Ok((
                messages.parse().map_err(|_| line.clone())?,
                errors.parse().map_err(|_| line.clone())?,
            )),
            _ => Err(format!("unexpected count line {line:?}")),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for LoadClient {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn measure(
    arm: ClientArm,
    shape: &ClientShape,
    server: &Server,
    settings: &ClientSettings,
) -> Result<ClientSample, String> {
    let mut client = LoadClient::start(arm, shape, &server.addr)?;
    std::thread::sleep(settings.warmup);
    let (start, errors_before) = client.count()?;
    let client_window = CpuWindow::start(client.pid());
    let server_window = CpuWindow::start(server.pid());
    std::thread::sleep(settings.window);
    let client_cpu = client_window.finish();
    let server_cpu = server_window.finish();
    let (end, errors_after) = client.count()?;
    let errors = errors_after - errors_before;
    if end == start {
        return Err("no message in the window".into());
    }
    Ok(ClientSample {
        messages: end - start,
        client_us: client_cpu.server_us,
        client_share: client_cpu.server_share,
        server_share: server_cpu.server_share,
        errors,
    })
}

/// Runs every shape for every arm and round against one bare server.
pub fn run(settings: &ClientSettings) -> Vec<ClientCell> {
    let mut cells: Vec<ClientCell> = settings
        .shapes
        .iter()
        .flat_map(|&shape| {
            settings.arms.iter().map(move |&arm| ClientCell {
                shape,
                arm,
                samples: Vec::new(),
                error: None,
            })
        })
        .collect();
    let server = Server::spawn::<&str>("bare-echo-server", &[]);
    for round in 0..settings.rounds {
        for (index, shape) in settings.shapes.iter().enumerate() {
            let mut arms = settings.arms.clone();
            if (round + index) % 2 == 1 {
                arms.reverse();
            }
            for arm in arms {
                eprintln!(
                    "clients round {}/{}: {} {}",
                    round + 1,
                    settings.rounds,
                    arm.key(),
                    shape.label()
                );
                let Some(cell) = cells
                    .iter_mut()
                    .find(|cell| cell.arm == arm && cell.shape == *shape)
                else {
                    continue;
                };
                if cell.error.is_some() {
                    continue;
                }
                match measure(arm, shape, &server, settings) {
                    Ok(sample) => {
                        if sample.errors > 0 {
                            eprintln!("  {}: {} failed calls", arm.key(), sample.errors);
                            cell.error = Some(format!("{} failed calls", sample.errors));
                        } else {
                            cell.samples.push(sample);
                        }
                    }
                    Err(err) => {
                        eprintln!("  {}: {err}", arm.key());
                        cell.error = Some(err);
                    }
                }
            }
        }
    }
    cells
}

/// Prints the client table: client CPU per message per arm, and each arm of
/// this crate against its stock client.
pub fn print_table(cells: &[ClientCell], arms: &[ClientArm]) {
    let mut shapes: Vec<ClientShape> = Vec::new();
    for cell in cells {
        if !shapes.contains(&cell.shape) {
            shapes.push(cell.shape);
        }
    }
    let find = |shape: &ClientShape, arm: ClientArm| {
        cells
            .iter()
            .find(|cell| cell.shape == *shape && cell.arm == arm)
    };
    println!();
    println!(
        "Client CPU per message, µs (median of rounds; client pinned to one CPU, one runtime worker; bare hyper server)"
    );
    println!();
    let mut header = String::from("| shape |");
    let mut rule = String::from("|---|");
    for arm in arms {
        header.push_str(&format!(" {} |", arm.key()));
        rule.push_str("---:|");
    }
    for arm in arms {
        if arm.baseline() != *arm {
            header.push_str(&format!(" {} / stock |", arm.key()));
            rule.push_str("---:|");
        }
    }
    header.push_str(" client CPU share | server CPU share |");
    rule.push_str("---|---|");
    println!("{header}");
    println!("{rule}");
    for shape in &shapes {
        let mut row = format!("| {} |", shape.label());
        let mut shares = Vec::new();
        let mut server_shares = Vec::new();
        for &arm in arms {
            match find(shape, arm) {
                Some(cell) if !cell.samples.is_empty() => {
                    row.push_str(&format!(" {:.2} |", cell.median_us()));
                    shares.push(format!(
                        "{:.2}",
                        median(cell.samples.iter().map(|s| s.client_share).collect())
                    ));
                    server_shares.push(format!(
                        "{:.2}",
                        median(cell.samples.iter().map(|s| s.server_share).collect())
                    ));
                }
                Some(cell) => {
                    row.push_str(&format!(
                        " failed ({}) |",
                        cell.error.as_deref().unwrap_or("?")
                    ));
                    shares.push("-".into());
                    server_shares.push("-".into());
                }
                None => {
                    row.push_str(" - |");
                    shares.push("-".into());
                    server_shares.push("-".into());
                }
            }
        }
        for &arm in arms {
            if arm.baseline() == arm {
                continue;
            }
            let ratio = match (find(shape, arm), find(shape, arm.baseline())) {
                (Some(ours), Some(stock))
                    if !ours.samples.is_empty() && !stock.samples.is_empty() =>
                {
                    format!("{:.2}x", ours.median_us() / stock.median_us())
                }
                _ => "-".into(),
            };
            row.push_str(&format!(" {ratio} |"));
        }
        row.push_str(&format!(
            " {} | {} |",
            shares.join(" / "),
            server_shares.join(" / ")
        ));
        println!("{row}");
    }
    println!();
    println!(
        "(CPU shares per arm in column order; a client share near 1.00 means the client was the bottleneck.)"
    );
}

/// Writes every sample as JSON.
pub fn write(cells: &[ClientCell], path: &std::path::Path) {
    let cells: Vec<serde_json::Value> = cells
        .iter()
        .map(|cell| {
            serde_json::json!({
                "arm": cell.arm.key(),
                "shape": cell.shape.label(),
                "rpc": cell.shape.rpc.flag(),
                "size": cell.shape.size,
                "count": cell.shape.count,
                "compression": cell.shape.compression.map(Encoding::name),
                "streams": cell.shape.streams,
                "error": cell.error,
                "median_client_us_per_message": if cell.samples.is_empty() { None } else { Some(cell.median_us()) },
                "samples": cell.samples.iter().map(|s| serde_json::json!({
                    "messages": s.messages,
                    "client_us": s.client_us,
                    "client_share": s.client_share,
                    "server_share": s.server_share,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let json = serde_json::json!({ "clients": cells });
    match std::fs::write(
        path,
        serde_json::to_string_pretty(&json).unwrap_or_default(),
    ) {
        Ok(()) => eprintln!("wrote {}", path.display()),
        Err(err) => eprintln!("cannot write {}: {err}", path.display()),
    }
}
