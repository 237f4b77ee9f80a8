//! The receive budget against raw HTTP/2 clients that send only what flow
//! control grants: [`stall`] (streams that stop mid-message are held
//! within `docs/budget.md`'s bound, then all complete) and [`cancel`]
//! (streams a client resets mid-message give their budget back).

use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use h2::client::{ResponseFuture, SendRequest};
use h2::{Reason, SendStream};
use tokio::sync::watch;

use super::wire::{decode_echo_response, envelopes, sized_request};
use super::{
    BudgetConfig, BudgetFigures, BudgetProbe, ClientCall, EXCLUSIVE, Method, Stack, Status,
    Windows, code,
};
use crate::raw_h2::{self, RawResponse};
use crate::rss;
use crate::settle::settle;

/// What `docs/budget.md` ("What HTTP/2 lets in flight") counts for each
/// waiting stream: one 16 KiB frame it has taken from HTTP/2 and holds.
pub const FRAME_PER_WAITING_STREAM: usize = 16 * 1024;

/// One stall run: `streams` ClientStream calls over `connections`
/// connections, each of one `message`-byte `EchoRequest`, 90% of it sent
/// in DATA frames of `frame` bytes (as fast as flow control grants, and no
/// faster), then nothing until the count of bytes sent stops growing.
#[derive(Clone, Copy, Debug)]
pub struct Stall {
    /// The server's budget in bytes.
    pub capacity: usize,
    /// Each call's one message, in bytes.
    pub message: usize,
    /// Raw client connections.
    pub connections: usize,
    /// Calls, spread over the connections in turn.
    pub streams: usize,
    /// The DATA frame size of the first 90%.
    pub frame: usize,
    /// The DATA frame size of the rest, once the clients go on (only the
    /// stall is about frame sizes; a large total in small frames takes
    /// minutes in a debug build).
    pub rest_frame: usize,
}

/// What a stall run measured.
#[derive(Clone, Debug)]
pub struct StallFigures {
    /// The run.
    pub stall: Stall,
    /// The server's windows.
    pub windows: Windows,
    /// Bytes the clients had sent when the count stopped growing: what the
    /// server accepted before the clients were held.
    pub accepted: usize,
    /// `docs/budget.md`'s bound on `accepted`.
    pub bound: usize,
    /// The budget while the clients were held.
    pub stalled: BudgetFigures,
    /// The budget once every call had been answered and released.
    pub after: BudgetFigures,
    /// The process's resident memory growth while the clients were held,
    /// and its peak growth over the whole run (in-process server: an upper
    /// bound of the server's).
    pub rss_growth: Option<(u64, u64)>,
    /// Everything that was not as it must be.
    pub failures: Vec<String>,
}

impl StallFigures {
    /// Panics listing every failure, if there was one.
    pub fn assert_passed(&self) {
        assert!(
            self.failures.is_empty(),
            "{:?}:\n{}",
            self.stall,
            self.failures.join("\n")
        );
    }
}

impl Stall {
    /// The bytes of each call sent before the clients stop.
    pub fn stalled_at(&self) -> usize {
        (self.message + 5) * 9 / 10
    }

    /// `docs/budget.md`'s bound on what HTTP/2 lets in flight with the
    /// budget: capacity + one message (the overdraft) + min(connections x
    /// connection window, streams x stream window) + one 16 KiB frame per
    /// waiting stream (every stream counted, as the document's figure
    /// counts them).
    pub fn bound(&self, windows: Windows) -> usize {
        let in_windows = (self.connections * windows.connection as usize)
            .min(self.streams * windows.stream as usize);
        self.capacity + self.message + in_windows + self.streams * FRAME_PER_WAITING_STREAM
    }
}

/// A hang is a failure to report, not a test that never ends.
async fn within<F: std::future::Future>(what: &str, limit: Duration, future: F) -> F::Output {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: not done within {limit:?}"))
}

/// Runs `stall` against `stack`'s server with a budget of
/// `stall.capacity`, and checks: what the server accepted before holding
/// the clients is within [`Stall::bound`]; the budget held at most
/// capacity + one message and at least capacity - one message, with
/// streams waiting and none timed out; a small Unary from the stack's own
/// client is answered meanwhile; once the rest is sent every call is
/// answered `OK` with count 1 and the whole payload; the budget is back to
/// 0.
pub async fn stall(stack: &dyn Stack, stall: Stall) -> StallFigures {
    let _exclusive = EXCLUSIVE.lock().await;
    let server = stack
        .serve(Some(BudgetConfig {
            capacity: stall.capacity,
            max_wait: Duration::from_secs(600),
        }))
        .await;
    let probe = server.budget.expect("a server started with a budget");
    let windows = probe.windows;
    let bound = stall.bound(windows);
    let rss_before = rss::reset_peak();
    let (wire, payload_len) = sized_request(stall.message);
    let sent = Arc::new(AtomicUsize::new(0));
    let (go, going) = watch::channel(false);

    let clients = connect_all(server.running.addr, stall.connections).await;
    let mut calls = Vec::with_capacity(stall.streams);
    for i in 0..stall.streams {
        let (response, stream) = open_client_stream(&clients[i % stall.connections]).await;
        let (wire, sent, mut going) = (wire.clone(), sent.clone(), going.clone());
        calls.push(tokio::spawn(async move {
            let mut stream = stream;
            let at = stall.stalled_at();
            send_granted(&mut stream, wire.slice(..at), stall.frame, &sent).await?;
            let _ = going.wait_for(|go| *go).await;
            send_granted(&mut stream, wire.slice(at..), stall.rest_frame, &sent).await?;
            stream
                .send_data(Bytes::new(), true)
                .map_err(|error| format!("end of stream: {error}"))?;
            let response = response
                .await
                .map_err(|error| format!("response headers: {error}"))?;
            let raw = raw_h2::read_response(response).await;
            drop(stream);
            Ok::<RawResponse, String>(raw)
        }));
    }

    // Held: the bytes sent stop growing, and so do the budget's figures.
    let accepted = within(
        "the clients to be held",
        Duration::from_secs(300),
        settle(Duration::from_secs(1), Duration::from_secs(240), || {
            sent.load(Ordering::SeqCst)
        }),
    )
    .await;
    let stalled = settle(Duration::from_millis(500), Duration::from_secs(30), || {
        (probe.stats)()
    })
    .await;
    let rss_stalled = rss::current();

    let mut failures = Vec::new();
    let offered = stall.streams * stall.stalled_at();
    if accepted >= offered {
        failures.push(format!(
            "nothing was held: all {offered} bytes offered were accepted"
        ));
    }
    if accepted > bound {
        failures.push(format!(
            "accepted {accepted} bytes before the clients were held, over the bound {bound} \
             (capacity {} + message {} + min({} x {}, {} x {}) + {} x {FRAME_PER_WAITING_STREAM})",
            stall.capacity,
            stall.message,
            stall.connections,
            windows.connection,
            stall.streams,
            windows.stream,
            stall.streams
        ));
    }
    let held = stall.capacity + stall.message;
    if stalled.in_use > held || stalled.peak > held {
        failures.push(format!(
            "the budget held more than capacity + one message ({held}): {stalled:?}"
        ));
    }
    if stalled.in_use + stall.message < stall.capacity {
        failures.push(format!(
            "the budget is not in use while streams wait: {stalled:?}"
        ));
    }
    if stalled.waiting == 0 {
        failures.push(format!("no stream waits for the budget: {stalled:?}"));
    }
    // Small messages are never gated: a client of its own still gets an
    // answer while the budget is held.
    let unary = ClientCall {
        rpc: Method::Unary,
        timeout: None,
        echo_bin: None,
    };
    let answer = within(
        "a small Unary while the budget is held",
        Duration::from_secs(60),
        stack.call(server.running.addr, &unary),
    )
    .await;
    if (&answer.status, answer.messages) != (&Status::ok(), 1) {
        failures.push(format!(
            "a small Unary from another client failed while the budget was held: {answer:?}"
        ));
    }
    if stalled.timed_out != 0 {
        failures.push(format!("a wait timed out: {stalled:?}"));
    }

    go.send_replace(true);
    for call in calls {
        let outcome = within("a call's answer", Duration::from_secs(300), call)
            .await
            .map_err(|error| format!("call task: {error}"))
            .and_then(|outcome| outcome);
        if let Err(failure) = check_one_message(outcome, payload_len) {
            failures.push(failure);
        }
    }
    let after = at_rest(&probe).await;
    if (after.in_use, after.waiting, after.timed_out) != (0, 0, 0) {
        failures.push(format!("the budget is not back to 0: {after:?}"));
    }
    let rss_growth = match (rss_before, rss_stalled, rss::peak()) {
        (Some(before), Some(stalled), Some(peak)) => {
            Some((stalled.saturating_sub(before), peak.saturating_sub(before)))
        }
        _ => None,
    };
    StallFigures {
        stall,
        windows,
        accepted,
        bound,
        stalled,
        after,
        rss_growth,
        failures,
    }
}

/// A ClientStream call's answer must be `OK`, count 1, `payload_len` bytes.
fn check_one_message(
    outcome: Result<RawResponse, String>,
    payload_len: usize,
) -> Result<(), String> {
    let raw = outcome?;
    let reply = envelopes(&raw.body())
        .and_then(|payloads| payloads.first().and_then(|p| decode_echo_response(p)));
    match (raw.grpc_status(), reply) {
        (Some(code::OK), Some(reply))
            if (reply.count, reply.total_bytes) == (1, payload_len as u64) =>
        {
            Ok(())
        }
        (status, reply) => Err(format!(
            "a call was answered {status:?} {:?} with {reply:?}, expected OK, count 1, \
             {payload_len} bytes",
            raw.grpc_message()
        )),
    }
}

/// The budget once it has come to rest.
async fn at_rest(probe: &BudgetProbe) -> BudgetFigures {
    settle(Duration::from_millis(300), Duration::from_secs(30), || {
        (probe.stats)()
    })
    .await
}

/// `connections` raw HTTP/2 connections to `addr`.
async fn connect_all(addr: SocketAddr, connections: usize) -> Vec<SendRequest<Bytes>> {
    let mut clients = Vec::with_capacity(connections);
    for _ in 0..connections {
        clients.push(raw_h2::connect(addr).await);
    }
    clients
}

/// A ClientStream call with its request stream open and nothing sent.
async fn open_client_stream(client: &SendRequest<Bytes>) -> (ResponseFuture, SendStream<Bytes>) {
    let mut client = client.clone().ready().await.expect("h2 ready");
    client
        .send_request(
            raw_h2::grpc_request(Method::ClientStream.path(), &[]),
            false,
        )
        .expect("send request")
}

/// Sends `data` in DATA frames of at most `frame` bytes, each only once
/// flow control has granted its room, adding every byte sent to `sent`.
async fn send_granted(
    stream: &mut SendStream<Bytes>,
    mut data: Bytes,
    frame: usize,
    sent: &AtomicUsize,
) -> Result<(), String> {
    while !data.is_empty() {
        let want = frame.min(data.len());
        stream.reserve_capacity(want);
        let mut granted = stream.capacity();
        while granted == 0 {
            granted = match poll_fn(|cx| stream.poll_capacity(cx)).await {
                Some(Ok(granted)) => granted,
                Some(Err(error)) => return Err(format!("flow control: {error}")),
                None => return Err("the stream closed while sending".to_owned()),
            };
        }
        let chunk = data.split_to(want.min(granted));
        let len = chunk.len();
        stream
            .send_data(chunk, false)
            .map_err(|error| format!("send data: {error}"))?;
        sent.fetch_add(len, Ordering::SeqCst);
    }
    Ok(())
}

/// One cancellation run: `streams` ClientStream calls on one connection,
/// each of one `message`-byte `EchoRequest` with 60% of it sent (more in
/// all than `capacity`, so some hold the budget and some wait for it),
/// then every stream reset by the client.
#[derive(Clone, Copy, Debug)]
pub struct Cancel {
    /// The server's budget in bytes.
    pub capacity: usize,
    /// Each call's one message, in bytes.
    pub message: usize,
    /// Calls.
    pub streams: usize,
}

/// What a cancellation run saw.
#[derive(Clone, Debug)]
pub struct CancelFigures {
    /// The budget before the resets.
    pub held: BudgetFigures,
    /// The budget after the resets.
    pub released: BudgetFigures,
    /// The budget after one whole call made once everything was released.
    pub after_call: BudgetFigures,
    /// Everything that was not as it must be.
    pub failures: Vec<String>,
}

impl CancelFigures {
    /// Panics listing every failure, if there was one.
    pub fn assert_passed(&self) {
        assert!(self.failures.is_empty(), "{}", self.failures.join("\n"));
    }
}

/// Runs `cancel` against `stack`'s server with a budget of
/// `cancel.capacity`, and checks: the budget held memory and had streams
/// waiting; after the client reset every stream it is back to 0 with none
/// waiting; a whole call made then is answered `OK` and releases its share.
pub async fn cancel(stack: &dyn Stack, cancel: Cancel) -> CancelFigures {
    let _exclusive = EXCLUSIVE.lock().await;
    let server = stack
        .serve(Some(BudgetConfig {
            capacity: cancel.capacity,
            max_wait: Duration::from_secs(600),
        }))
        .await;
    let probe = server.budget.expect("a server started with a budget");
    let (wire, payload_len) = sized_request(cancel.message);
    let partial = wire.len() * 6 / 10;
    let client = raw_h2::connect(server.running.addr).await;
    let sent = Arc::new(AtomicUsize::new(0));
    let (reset, resetting) = watch::channel(false);
    let mut calls = Vec::new();
    for _ in 0..cancel.streams {
        let (response, mut stream) = open_client_stream(&client).await;
        let (wire, sent, mut resetting) = (wire.clone(), sent.clone(), resetting.clone());
        calls.push(tokio::spawn(async move {
            // Streams the budget holds back stay blocked on flow control
            // until the reset.
            let sent_all = tokio::select! {
                _ = send_granted(&mut stream, wire.slice(..partial), 16 * 1024, &sent) => true,
                _ = resetting.wait_for(|reset| *reset) => false,
            };
            if sent_all {
                let _ = resetting.wait_for(|reset| *reset).await;
            }
            stream.send_reset(Reason::CANCEL);
            // The stream is gone: whatever the response future yields now
            // is h2's word for our own reset.
            let _ = response.await;
        }));
    }
    let _ = within(
        "the clients to be held",
        Duration::from_secs(120),
        settle(Duration::from_millis(500), Duration::from_secs(60), || {
            sent.load(Ordering::SeqCst)
        }),
    )
    .await;
    let held = settle(Duration::from_millis(500), Duration::from_secs(30), || {
        (probe.stats)()
    })
    .await;
    let mut failures = Vec::new();
    if held.in_use == 0 || held.waiting == 0 {
        failures.push(format!(
            "the case needs streams holding the budget and streams waiting: {held:?}"
        ));
    }
    reset.send_replace(true);
    for call in calls {
        if let Err(error) = within("a reset", Duration::from_secs(60), call).await {
            failures.push(format!("call task: {error}"));
        }
    }
    let released = at_rest(&probe).await;
    if (released.in_use, released.waiting, released.timed_out) != (0, 0, 0) {
        failures.push(format!(
            "the budget was not given back after the resets: {released:?}"
        ));
    }

    // The budget is whole again: a call of the same size goes through.
    let (response, mut stream) = open_client_stream(&client).await;
    let whole = async {
        send_granted(&mut stream, wire.clone(), 16 * 1024, &AtomicUsize::new(0)).await?;
        stream
            .send_data(Bytes::new(), true)
            .map_err(|error| format!("end of stream: {error}"))?;
        let response = response
            .await
            .map_err(|error| format!("response headers: {error}"))?;
        Ok(raw_h2::read_response(response).await)
    };
    let outcome = within(
        "a whole call after the resets",
        Duration::from_secs(60),
        whole,
    )
    .await;
    if let Err(failure) = check_one_message(outcome, payload_len) {
        failures.push(format!("after the resets: {failure}"));
    }
    let after_call = at_rest(&probe).await;
    if (after_call.in_use, after_call.waiting) != (0, 0) {
        failures.push(format!(
            "the whole call's share stayed counted: {after_call:?}"
        ));
    }
    CancelFigures {
        held,
        released,
        after_call,
        failures,
    }
}
