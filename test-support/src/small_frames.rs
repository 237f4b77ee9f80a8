//! A client-streaming call of many small messages, each in its own DATA
//! frame (as grpc-go and grpc-js send them), to an example server's
//! ClientStream: what h2's small-DATA-frame budget is measured with.

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
pub use h2::Reason;
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use crate::process::ListeningProcess;
use crate::raw_h2::{envelope, grpc_request, read_response, send};

/// Messages a call sends.
pub const MESSAGES: usize = 10_000;

/// Each message: an `EchoRequest` with an 8-byte payload (10 bytes).
const MESSAGE: [u8; 10] = [0x0a, 8, 7, 7, 7, 7, 7, 7, 7, 7];

/// The bytes of one message's frame (5-byte prefix and the message).
pub const FRAME_LEN: usize = 5 + MESSAGE.len();

/// How the client writes its frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sending {
    /// In bursts of 250, 10 ms apart: a fast peer (25,000 messages a
    /// second, 25 times what the slow handler reads) whose frames reach the
    /// server no faster than its connection task reads them.
    Paced,
    /// All at once, as fast as the socket takes them (as grpc-js writes a
    /// stream): h2 may read thousands before the server's stream task runs,
    /// which only a large enough connection window covers
    /// (docs/connections.md).
    AtOnce,
}

const BURST: usize = 250;
const BURST_GAP: Duration = Duration::from_millis(10);

/// The server arms' flag for hyper's and volo-grpc's default connection
/// window (1 MiB), under which h2's budget for small frames is 512 KiB.
pub const DEFAULT_WINDOWS: &str = "--connection-window 1048576";

/// Handler metadata: wait 2 s before the first read.
pub const READ_LATE: [(&str, &str); 1] = [("x-read-delay-millis", "2000")];

/// Handler metadata: wait 1 ms after each read.
pub const READ_SLOWLY: [(&str, &str); 1] = [("x-read-pace-micros", "1000")];

/// What the call came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The handler's answer: how many requests it read.
    Served {
        /// `EchoResponse.count`.
        count: u64,
    },
    /// The connection went away with this reason.
    Closed(Reason),
    /// The connection broke under the client (an I/O error, no reason): a
    /// server that closes its socket with the client's frames still unread
    /// sends a TCP reset, which can overtake the GOAWAY it wrote first.
    Broken(std::io::ErrorKind),
}

impl Outcome {
    /// Whether the server took the connection away: its GOAWAY with
    /// `reason` reached the client, or the reset that followed it did.
    pub fn lost_with(&self, reason: Reason) -> bool {
        match self {
            Outcome::Closed(got) => *got == reason,
            Outcome::Broken(_) => true,
            Outcome::Served { .. } => false,
        }
    }
}

/// The server's live heap, as its `--report-memory` answers.
pub fn live_bytes(server: &mut ListeningProcess) -> usize {
    figure(server, "memory", "live_bytes")
}

/// What the server's receive budget has granted, as its `budget` report
/// answers (`--receive-budget`): the bytes its read-ahead holds unread.
pub fn budget_in_use(server: &mut ListeningProcess) -> usize {
    figure(server, "budget", "budget_in_use")
}

/// The figure after `name` in the server's answer to `question` on its
/// standard input (`name N` pairs on one line).
fn figure(server: &mut ListeningProcess, question: &str, name: &str) -> usize {
    let stdin = server.child.stdin.as_mut().expect("piped stdin");
    writeln!(stdin, "{question}").expect("ask the server");
    stdin.flush().expect("flush");
    let mut line = String::new();
    server
        .stdout
        .read_line(&mut line)
        .expect("the server's answer");
    line.split_whitespace()
        .skip_while(|word| *word != name)
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {line:?}"))
}

/// Runs one warm-up call and then the measured call against `server` (an
/// example server started with piped stdin), with `metadata` telling the
/// handler how to read. Returns the outcome and what `measure` reads of the
/// server, above its level before the call, one second into the call
/// (every frame sent, the handler not done).
pub fn run(
    server: &mut ListeningProcess,
    metadata: &[(&str, &str)],
    sending: Sending,
    measure: fn(&mut ListeningProcess) -> usize,
) -> (Outcome, usize) {
    let addr = server.addr;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // A first call warms the server up (its runtime's and allocator's
    // lazily made parts), so what is measured next is the call's.
    runtime.block_on(call(addr, &[], Sending::Paced, || {}));
    let before = measure(server);
    let mut held = 0;
    let outcome = runtime.block_on(call(addr, metadata, sending, || {
        held = measure(server).saturating_sub(before);
    }));
    (outcome, held)
}

/// One call of [`MESSAGES`] small messages, each in its own DATA frame;
/// `sample` is called one second after the last is sent.
pub async fn call(
    addr: SocketAddr,
    metadata: &[(&str, &str)],
    sending: Sending,
    mut sample: impl FnMut(),
) -> Outcome {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (client, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    let (closed_tx, closed) = oneshot::channel();
    tokio::spawn(async move {
        let ending =
            connection
                .await
                .err()
                .and_then(|error| match (error.reason(), error.get_io()) {
                    (Some(reason), _) => Some(Outcome::Closed(reason)),
                    (None, Some(io)) => Some(Outcome::Broken(io.kind())),
                    (None, None) => None,
                });
        let _ = closed_tx.send(ending);
    });
    match stream(client, metadata, sending, &mut sample).await {
        Some(outcome) => outcome,
        // The stream failed: the connection's own error says why.
        None => match closed.await {
            Ok(Some(ending)) => ending,
            other => panic!("the call failed, the connection ended with {other:?}"),
        },
    }
}

/// The call itself; `None` when the stream failed.
async fn stream(
    client: h2::client::SendRequest<Bytes>,
    metadata: &[(&str, &str)],
    sending: Sending,
    sample: &mut impl FnMut(),
) -> Option<Outcome> {
    let mut client = client.ready().await.ok()?;
    let request = grpc_request("/streamcodec.echo.v1.Echo/ClientStream", metadata);
    let (response, mut stream) = client.send_request(request, false).ok()?;
    let frame = Bytes::from(envelope(0, &MESSAGE));
    for i in 0..MESSAGES {
        if sending == Sending::Paced && i % BURST == 0 {
            tokio::time::sleep(BURST_GAP).await;
        }
        stream.send_data(frame.clone(), false).ok()?;
    }
    // A second in, every frame has long crossed loopback, and the handler
    // (waiting 2 s, or reading one message a millisecond) is not done.
    tokio::time::sleep(Duration::from_secs(1)).await;
    sample();
    let _ = stream.send_data(Bytes::new(), true);
    let response = read_response(response.await.ok()?).await;
    assert_eq!(response.grpc_status(), Some(0), "{response:?}");
    let count = varint_field(&response.body()[5..], 4).unwrap_or(0);
    // The connection is still up: a second call on it is served.
    let unary = send(
        &client,
        "/streamcodec.echo.v1.Echo/Unary",
        &[],
        envelope(0, &MESSAGE),
    )
    .await;
    assert_eq!(unary.grpc_status(), Some(0), "{unary:?}");
    Some(Outcome::Served { count })
}

/// The value of varint field `number` in a protobuf message of varint and
/// length-delimited fields.
fn varint_field(mut message: &[u8], number: u64) -> Option<u64> {
    fn varint(bytes: &mut &[u8]) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = bytes.split_first()?;
            *bytes = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
    while !message.is_empty() {
        let key = varint(&mut message)?;
        match key & 7 {
            0 => {
                let value = varint(&mut message)?;
                if key >> 3 == number {
                    return Some(value);
                }
            }
            2 => {
                let len = usize::try_from(varint(&mut message)?).ok()?;
                message = message.get(len..)?;
            }
            _ => return None,
        }
    }
    None
}

/// The four tests of a server binary (started with `--listen`,
/// `--report-memory` and the arm's flags): the stock arm loses the
/// connection to a handler that reads late and to one that reads slowly,
/// the adapter's arm serves every message to both, holding little more than
/// the frames' bytes unread.
#[macro_export]
macro_rules! small_frames_tests {
    (
        server: $binary:expr,
        stock: $stock:expr,
        adapter: $adapter:expr $(,)?
    ) => {
        use $crate::small_frames::{
            DEFAULT_WINDOWS, FRAME_LEN, MESSAGES, Outcome, READ_LATE, READ_SLOWLY, Sending,
            live_bytes, run,
        };

        fn server(arm: &str) -> $crate::process::ListeningProcess {
            let mut command = std::process::Command::new($binary);
            command
                .args(["--listen", "127.0.0.1:0", "--report-memory"])
                .args(arm.split_whitespace())
                .stdin(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null());
            $crate::process::ListeningProcess::start(command)
        }

        /// An arm on the frameworks' default windows.
        fn on_default_windows(arm: &str) -> $crate::process::ListeningProcess {
            server(&format!("{arm} {DEFAULT_WINDOWS}"))
        }

        const SERVED: Outcome = Outcome::Served {
            count: MESSAGES as u64,
        };

        /// One call at a time: a server whose cores are busy with another
        /// test's runs its stream tasks late, and h2 then queues frames the
        /// pump could have taken (its queue keeps the capacity it grew to).
        fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
            static CALLS: std::sync::Mutex<()> = std::sync::Mutex::new(());
            CALLS
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }

        #[test]
        fn stock_loses_the_connection_to_a_handler_that_reads_late() {
            let _one = one_at_a_time();
            let (outcome, _) = run(
                &mut on_default_windows($stock),
                &READ_LATE,
                Sending::Paced,
                live_bytes,
            );
            assert!(
                outcome.lost_with($crate::small_frames::Reason::ENHANCE_YOUR_CALM),
                "{outcome:?}"
            );
        }

        #[test]
        fn stock_loses_the_connection_to_a_handler_that_reads_slowly() {
            let _one = one_at_a_time();
            let (outcome, _) = run(
                &mut on_default_windows($stock),
                &READ_SLOWLY,
                Sending::Paced,
                live_bytes,
            );
            assert!(
                outcome.lost_with($crate::small_frames::Reason::ENHANCE_YOUR_CALM),
                "{outcome:?}"
            );
        }

        $crate::small_frames_tests!(@read_late $adapter);

        #[test]
        fn the_adapter_serves_every_message_to_a_handler_that_reads_slowly() {
            let _one = one_at_a_time();
            let (outcome, _) = run(
                &mut on_default_windows($adapter),
                &READ_SLOWLY,
                Sending::Paced,
                live_bytes,
            );
            assert_eq!(outcome, SERVED);
        }

        /// The burst no read-ahead can cover (h2 reads it before any stream
        /// task runs) is covered by the example server's connection window,
        /// the setting docs/connections.md gives.
        #[test]
        fn a_burst_at_once_is_served_on_the_example_windows() {
            let _one = one_at_a_time();
            for arm in [$adapter, $stock] {
                let (outcome, _) = run(&mut server(arm), &READ_LATE, Sending::AtOnce, live_bytes);
                assert_eq!(outcome, SERVED, "{arm}");
            }
        }
    };
    // What the read-ahead holds unread, from the receive budget it counts
    // against on both adapters (a budget large enough never to hold the
    // stream back): every frame taken out of h2, and only its bytes (grants
    // come 16 KiB at a time).
    (@read_late $adapter:expr) => {
        #[test]
        fn the_adapter_serves_every_message_to_a_handler_that_reads_late() {
            let _one = one_at_a_time();
            let (outcome, held) = run(
                &mut on_default_windows(concat!($adapter, " --receive-budget 67108864")),
                &READ_LATE,
                Sending::Paced,
                $crate::small_frames::budget_in_use,
            );
            assert_eq!(outcome, SERVED);
            let wire = MESSAGES * FRAME_LEN;
            println!("held unread: {held} bytes for {wire} bytes of frames");
            assert!(
                (wire..=wire + 16 * 1024).contains(&held),
                "held {held} bytes for {wire}"
            );
        }
    };
}
