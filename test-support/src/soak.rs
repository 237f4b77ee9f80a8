//! A fault soak against an example server with a receive budget: for a
//! bounded time, normal client-streaming calls mixed with cancelled and
//! reset streams, connections dropped mid-message and stalled uploads.
//! Afterwards the budget must hold nothing and the heap be back where it
//! started; the server, stopped with SIGTERM, reports its figures.

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::Reason;
use tokio::net::TcpStream;

use crate::process::ListeningProcess;
use crate::raw_h2::{connect, envelope, grpc_request, header, send};
use crate::reports::parse_exit;

const CLIENT_STREAM: &str = "/streamcodec.echo.v1.Echo/ClientStream";

/// Concurrent clients, each cycling through [`Fault::ALL`].
const CLIENTS: usize = 6;

/// What one round of a client does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// No fault: 32 messages of 1 KiB, answered `OK`.
    None,
    /// Half the messages, then the stream dropped (RST_STREAM CANCEL).
    Cancelled,
    /// Half a message, then RST_STREAM INTERNAL_ERROR.
    Reset,
    /// Half a 64 KiB message, then the connection closed.
    ConnectionDropped,
    /// 192 KiB of a 1 MiB message, 300 ms of nothing, then the connection
    /// closed.
    Stalled,
}

impl Fault {
    const ALL: [Fault; 5] = [
        Fault::None,
        Fault::Cancelled,
        Fault::Reset,
        Fault::ConnectionDropped,
        Fault::Stalled,
    ];
}

/// What a soak came to.
#[derive(Debug, Default)]
pub struct SoakReport {
    /// How long the load ran.
    pub duration: Duration,
    /// Calls answered `OK`.
    pub calls: u64,
    /// Calls that were cancelled, reset, cut or stalled on purpose.
    pub faults: u64,
    /// The server's live heap after warm-up, settled.
    pub live_before: i64,
    /// The server's live heap after the soak, settled.
    pub live_after: i64,
    /// The budget's bytes in use after the soak, settled.
    pub budget_after: i64,
    /// What the server printed on SIGTERM, `(name, value)`.
    pub exit_figures: Vec<(String, i64)>,
}

impl SoakReport {
    /// A figure of the server's exit line.
    pub fn exit_figure(&self, name: &str) -> Option<i64> {
        self.exit_figures
            .iter()
            .find(|(figure, _)| figure == name)
            .map(|&(_, value)| value)
    }
}

/// Asks the server one question on its stdin (`memory` or `budget`) and
/// returns the value of `figure` in its answer.
fn ask(server: &mut ListeningProcess, question: &str, figure: &str) -> i64 {
    let stdin = server.child.stdin.as_mut().expect("piped stdin");
    writeln!(stdin, "{question}").expect("ask the server");
    stdin.flush().expect("flush");
    let mut line = String::new();
    server.stdout.read_line(&mut line).expect("an answer");
    let mut words = line.split_whitespace();
    while let Some(word) = words.next() {
        if word == figure
            && let Some(value) = words.next().and_then(|value| value.parse().ok())
        {
            return value;
        }
    }
    panic!("no {figure} in {line:?}");
}

/// Waits until `sample` has not changed for half a second (at most 20 s).
fn settled(mut sample: impl FnMut() -> i64) -> i64 {
    let start = Instant::now();
    let mut last = sample();
    let mut since = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
        let now = sample();
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= Duration::from_millis(500) {
            break;
        }
    }
    last
}

/// Runs the soak for `duration` against `server` (an example server
/// started with `--receive-budget`, `--report-memory` and piped stdin),
/// then stops it with SIGTERM.
pub fn run(mut server: ListeningProcess, duration: Duration) -> SoakReport {
    let addr = server.addr;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let counts = Arc::new(Counts::default());
    // A warm-up of every kind, as many at once as the soak runs, so what is
    // compared afterwards is not the server's lazily made parts.
    runtime.block_on(load(addr, Duration::ZERO, counts.clone()));
    let budget_before = settled(|| ask(&mut server, "budget", "budget_in_use"));
    assert_eq!(budget_before, 0, "the budget holds bytes after the warm-up");
    let live_before = settled(|| ask(&mut server, "memory", "live_bytes"));

    let counts = Arc::new(Counts::default());
    let start = Instant::now();
    runtime.block_on(load(addr, duration, counts.clone()));
    let elapsed = start.elapsed();
    drop(runtime);

    let budget_after = settled(|| ask(&mut server, "budget", "budget_in_use"));
    let live_after = settled(|| ask(&mut server, "memory", "live_bytes"));
    let exit_figures = stop(&mut server);
    SoakReport {
        duration: elapsed,
        calls: counts.calls.load(Ordering::Relaxed),
        faults: counts.faults.load(Ordering::Relaxed),
        live_before,
        live_after,
        budget_after,
        exit_figures,
    }
}

/// How much more the heap may hold after the soak than before: what the
/// server's allocator-independent caches (the runtime's task and timer
/// slabs, grown by the soak's peak of concurrent calls) keep.
pub const HEAP_SLACK: i64 = 64 * 1024;

/// Starts `binary` with `args` (which must include a `--receive-budget`),
/// soaks it for `duration`, prints the figures and checks them: calls and
/// faults both happened, the budget holds nothing, the heap is back within
/// [`HEAP_SLACK`] of its start, and the SIGTERM line says the same.
pub fn soak_test(binary: &str, args: &[&str], duration: Duration) {
    let mut command = std::process::Command::new(binary);
    command
        .args(["--listen", "127.0.0.1:0", "--report-memory"])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let report = run(ListeningProcess::start(command), duration);
    println!("{report:#?}");
    assert!(report.calls > 0 && report.faults > 0, "{report:?}");
    assert_eq!(report.budget_after, 0, "the budget still holds bytes");
    assert_eq!(report.exit_figure("budget_in_use"), Some(0), "{report:?}");
    assert!(report.exit_figure("budget_peak") > Some(0), "{report:?}");
    assert!(
        report.live_after <= report.live_before + HEAP_SLACK,
        "the heap grew from {} to {} bytes",
        report.live_before,
        report.live_after
    );
}

/// Sends SIGTERM and reads the server's `exit` line.
fn stop(server: &mut ListeningProcess) -> Vec<(String, i64)> {
    let pid = server.child.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("run kill");
    assert!(killed.success(), "kill -TERM {pid}");
    let mut line = String::new();
    loop {
        line.clear();
        let read = server.stdout.read_line(&mut line).expect("read stdout");
        assert!(read > 0, "the server ended without an exit line");
        if let Some(figures) = parse_exit(&line) {
            let status = server.child.wait().expect("wait");
            assert!(status.success(), "the server exited with {status}");
            return figures;
        }
    }
}

#[derive(Default)]
struct Counts {
    calls: AtomicU64,
    faults: AtomicU64,
}

/// [`CLIENTS`] clients, each running rounds of every fault until
/// `duration` has passed (one round each for a zero duration).
async fn load(addr: SocketAddr, duration: Duration, counts: Arc<Counts>) {
    let deadline = Instant::now() + duration;
    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let counts = counts.clone();
        clients.push(tokio::spawn(async move {
            // Each client starts at another fault, so all kinds overlap.
            let mut next = client;
            loop {
                for _ in 0..Fault::ALL.len() {
                    let fault = Fault::ALL[next % Fault::ALL.len()];
                    next += 1;
                    round(addr, fault).await;
                    let counter = if fault == Fault::None {
                        &counts.calls
                    } else {
                        &counts.faults
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
                if Instant::now() >= deadline {
                    break;
                }
            }
        }));
    }
    for client in clients {
        client.await.expect("a soak client panicked");
    }
}

fn message(len: usize) -> Vec<u8> {
    // EchoRequest { payload (field 1): `len - 3` bytes } for len < 16 Ki.
    let payload = len - 3;
    let mut message = vec![0x0a, (payload as u8) | 0x80, (payload >> 7) as u8];
    message.resize(len, 7);
    message
}

async fn round(addr: SocketAddr, fault: Fault) {
    let kib = Bytes::from(envelope(0, &message(1024)));
    match fault {
        Fault::None => {
            let client = connect(addr).await;
            let body: Vec<u8> = kib.iter().copied().cycle().take(32 * kib.len()).collect();
            let response = send(&client, CLIENT_STREAM, &[], body).await;
            assert_eq!(response.grpc_status(), Some(0), "{response:?}");
        }
        Fault::Cancelled => {
            let client = connect(addr).await;
            let mut client = client.ready().await.expect("h2 ready");
            let (response, mut stream) = client
                .send_request(grpc_request(CLIENT_STREAM, &[]), false)
                .expect("send request");
            for _ in 0..16 {
                let _ = stream.send_data(kib.clone(), false);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            drop((response, stream));
        }
        Fault::Reset => {
            let client = connect(addr).await;
            let mut client = client.ready().await.expect("h2 ready");
            let (_response, mut stream) = client
                .send_request(grpc_request(CLIENT_STREAM, &[]), false)
                .expect("send request");
            let _ = stream.send_data(kib.clone(), false);
            let _ = stream.send_data(kib.slice(..kib.len() / 2), false);
            tokio::time::sleep(Duration::from_millis(5)).await;
            stream.send_reset(Reason::INTERNAL_ERROR);
        }
        Fault::ConnectionDropped => {
            cut_off(addr, 64 * 1024, 32 * 1024, Duration::from_millis(5)).await;
        }
        Fault::Stalled => {
            cut_off(addr, 1024 * 1024, 192 * 1024, Duration::from_millis(300)).await;
        }
    }
}

/// Opens a connection of its own, sends `sent` bytes of a message that
/// declares `declared`, waits `hold`, and closes the connection.
async fn cut_off(addr: SocketAddr, declared: u32, sent: usize, hold: Duration) {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (client, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    let connection = tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut client = client.ready().await.expect("h2 ready");
    let (_response, mut stream) = client
        .send_request(grpc_request(CLIENT_STREAM, &[]), false)
        .expect("send request");
    let mut body = header(0, declared);
    body.resize(5 + sent, 7);
    // What the stream window lets through goes out; the rest waits for
    // capacity that, past the budget, never comes.
    stream.reserve_capacity(body.len());
    let _ = stream.send_data(Bytes::from(body), false);
    tokio::time::sleep(hold).await;
    // Aborting the task drops the connection and closes its socket: the
    // server sees the transport end mid-message.
    connection.abort();
    let _ = connection.await;
}
