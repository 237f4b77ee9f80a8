//! One behaviour suite for both adapters: the same cases, with the same
//! expected `grpc-status` and `grpc-message`, defined once here and run by
//! one runner against any [`Stack`] (a server start function and a client,
//! supplied by a test that knows the frameworks; this crate knows none).
//!
//! - [`cases()`]: what a peer sends (a raw HTTP/2 request to the stack's
//!   server, or a scripted raw server's answer to the stack's client) and
//!   the status it must get; [`run`] runs them and reports every mismatch.
//! - [`budget`]: the receive budget against raw clients: streams that stall
//!   mid-message are held within the bound `docs/budget.md` states, and
//!   streams a client resets give their budget back.
//!
//! A difference between two stacks fails the suite: each stack must meet
//! every case's [`Expect`], exactly.

pub mod budget;
pub mod cases;
pub mod wire;

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;

use crate::alloc;
use crate::raw_h2::{self, RawResponse, Script};
use crate::running::Running;

pub use cases::cases;

/// The futures a [`Stack`] returns: boxed, so the trait stays usable as
/// `&dyn Stack` and its futures can run on any runtime thread.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The gRPC status codes the cases name.
pub mod code {
    /// `OK`.
    pub const OK: i32 = 0;
    /// `DEADLINE_EXCEEDED`.
    pub const DEADLINE_EXCEEDED: i32 = 4;
    /// `RESOURCE_EXHAUSTED`.
    pub const RESOURCE_EXHAUSTED: i32 = 8;
    /// `FAILED_PRECONDITION`.
    pub const FAILED_PRECONDITION: i32 = 9;
    /// `ABORTED`.
    pub const ABORTED: i32 = 10;
    /// `UNIMPLEMENTED`.
    pub const UNIMPLEMENTED: i32 = 12;
    /// `INTERNAL`.
    pub const INTERNAL: i32 = 13;
}

/// A method of the Echo service (`proto/echo.proto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// `Unary`.
    Unary,
    /// `ServerStream`: one request, a stream of responses.
    ServerStream,
    /// `ClientStream`: a stream of requests, one response.
    ClientStream,
    /// `Bidi`.
    Bidi,
}

impl Method {
    /// All four.
    pub const ALL: [Method; 4] = [
        Method::Unary,
        Method::ServerStream,
        Method::ClientStream,
        Method::Bidi,
    ];

    /// The methods whose request is exactly one message.
    pub const SINGLE_REQUEST: [Method; 2] = [Method::Unary, Method::ServerStream];

    /// The methods whose request is a stream of messages.
    pub const STREAMED_REQUEST: [Method; 2] = [Method::ClientStream, Method::Bidi];

    /// The HTTP/2 `:path`.
    pub fn path(self) -> &'static str {
        match self {
            Method::Unary => "/streamcodec.echo.v1.Echo/Unary",
            Method::ServerStream => "/streamcodec.echo.v1.Echo/ServerStream",
            Method::ClientStream => "/streamcodec.echo.v1.Echo/ClientStream",
            Method::Bidi => "/streamcodec.echo.v1.Echo/Bidi",
        }
    }
}

/// A status as a peer reads it: code and (percent-decoded) message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// `grpc-status`.
    pub code: i32,
    /// `grpc-message`, empty when absent.
    pub message: String,
}

impl Status {
    /// A status of `code` with `message`.
    pub fn new(code: i32, message: impl Into<String>) -> Status {
        Status {
            code,
            message: message.into(),
        }
    }

    /// `OK` with no message.
    pub fn ok() -> Status {
        Status::new(code::OK, "")
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:?}", self.code, self.message)
    }
}

/// What a case must get: exactly this code and this message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expect {
    /// The `grpc-status` code.
    pub code: i32,
    /// The whole `grpc-message`.
    pub message: String,
}

impl Expect {
    /// Expects `code` with `message`.
    pub fn new(code: i32, message: impl Into<String>) -> Expect {
        Expect {
            code,
            message: message.into(),
        }
    }

    /// Expects `OK` with no message.
    pub fn ok() -> Expect {
        Expect::new(code::OK, "")
    }

    /// The mismatch with `got`, if any.
    fn mismatch(&self, got: &Status) -> Option<String> {
        (got.code != self.code || got.message != self.message)
            .then(|| format!("expected {} {:?}, got {got}", self.code, self.message))
    }
}

/// One case: a request, and what it must get.
#[derive(Clone, Debug)]
pub struct Case {
    /// A name that says what is sent.
    pub name: String,
    /// What is sent, and to whom.
    pub request: Request,
    /// The status every call of the case must end with.
    pub expect: Expect,
}

/// What a case sends.
#[derive(Clone, Debug)]
pub enum Request {
    /// A raw HTTP/2 request to the stack's server.
    Server(ServerRequest),
    /// A call by the stack's client to a raw HTTP/2 server.
    Client(ClientRequest),
}

/// A raw HTTP/2 request to each of `methods` on the stack's Echo server.
#[derive(Clone, Debug)]
pub struct ServerRequest {
    /// The methods it goes to, one call each.
    pub methods: Vec<Method>,
    /// Headers besides `content-type: application/grpc` and `te: trailers`.
    pub headers: Vec<(&'static str, String)>,
    /// The request body, sent whole in one go.
    pub body: Bytes,
    /// Whether the request stream stays open after the body, so only the
    /// server (its deadline) can end the call.
    pub open: bool,
    /// Whether the status must come from reading the body: then the body
    /// must have gone out whole before the answer.
    pub judged_on_body: bool,
    /// A call that differs from this one only in what the case is about,
    /// and must be answered `OK`: the status came from that, not from a
    /// server that fails everything.
    pub control: Option<Control>,
    /// Whether the answer must be trailers-only (status in the headers,
    /// no body, no trailers).
    pub trailers_only: bool,
    /// How many response messages may come before the status.
    pub messages: Messages,
    /// Response headers the answer must carry, with these values.
    pub response_headers: Vec<(&'static str, &'static str)>,
    /// The whole response body the answer must carry.
    pub response_body: Option<Bytes>,
    /// The most the process's live heap may grow during one call: the
    /// server must not allocate what the peer only declares.
    pub heap_bound: Option<usize>,
}

impl ServerRequest {
    /// `body` to `methods`, judged on the body, no control, any shape.
    pub fn new(methods: &[Method], body: impl Into<Bytes>) -> ServerRequest {
        ServerRequest {
            methods: methods.to_vec(),
            headers: Vec::new(),
            body: body.into(),
            open: false,
            judged_on_body: true,
            control: None,
            trailers_only: false,
            messages: Messages::None,
            response_headers: Vec::new(),
            response_body: None,
            heap_bound: None,
        }
    }
}

/// The control call of a [`ServerRequest`].
#[derive(Clone, Debug)]
pub struct Control {
    /// Its headers.
    pub headers: Vec<(&'static str, String)>,
    /// Its body.
    pub body: Bytes,
}

/// How many response messages a call may get before its status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Messages {
    /// None.
    None,
    /// Exactly this many.
    Exactly(usize),
    /// At least one, and fewer than this many (a stream cut short).
    Between1And(usize),
}

impl Messages {
    /// Whether `n` messages are what this allows.
    fn admits(self, n: usize) -> bool {
        match self {
            Messages::None => n == 0,
            Messages::Exactly(m) => n == m,
            Messages::Between1And(m) => (1..m).contains(&n),
        }
    }
}

/// A call by the stack's client to a raw server answering with `answer`.
#[derive(Clone, Debug)]
pub struct ClientRequest {
    /// What the client calls and sends.
    pub call: ClientCall,
    /// How the raw server answers.
    pub answer: Answer,
    /// How many response messages the caller must have got.
    pub messages: Messages,
    /// The decoded `x-echo-bin` response metadata the caller must see.
    pub echo_bin: Option<Vec<u8>>,
}

/// What a stack's client is asked to do: call `rpc` with a default
/// `EchoRequest`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCall {
    /// `Unary` or `ServerStream`.
    pub rpc: Method,
    /// The deadline the client sets (and sends as `grpc-timeout`).
    pub timeout: Option<Duration>,
    /// Binary request metadata `x-echo-bin` with these bytes.
    pub echo_bin: Option<Vec<u8>>,
}

/// How a raw server answers a client case.
#[derive(Clone, Debug)]
pub enum Answer {
    /// Exactly this, to every request.
    Script(Script),
    /// Headers and one empty message every 10 ms, never an end: only the
    /// client's deadline ends the call.
    Endless,
    /// `OK` with one empty message, and the request's `x-echo-bin` header
    /// sent back as it came.
    EchoBin,
}

/// What a stack's client made of a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientOutcome {
    /// How the call ended: `OK`, or the error the caller got.
    pub status: Status,
    /// The response messages the caller got before the end.
    pub messages: usize,
    /// The decoded `x-echo-bin` response metadata, if the caller got any.
    pub echo_bin: Option<Vec<u8>>,
}

/// A receive budget a [`Stack`] serves with.
#[derive(Clone, Copy, Debug)]
pub struct BudgetConfig {
    /// Its capacity in bytes.
    pub capacity: usize,
    /// How long a stream may wait for it before failing.
    pub max_wait: Duration,
}

/// The budget's figures (`grpc_stream_codec::budget::BudgetStats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BudgetFigures {
    /// Bytes counted as allocated now.
    pub in_use: usize,
    /// The highest `in_use` so far.
    pub peak: usize,
    /// Streams waiting for memory now.
    pub waiting: usize,
    /// Waits that ended by timeout.
    pub timed_out: u64,
}

/// The HTTP/2 windows a budget server advertises
/// (`grpc_stream_codec::budget::Http2Windows`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Windows {
    /// The initial stream window.
    pub stream: u32,
    /// The connection window.
    pub connection: u32,
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`.
    pub max_concurrent_streams: u32,
}

/// A server's budget, as the suite reads it.
pub struct BudgetProbe {
    /// Its figures now.
    pub stats: Box<dyn Fn() -> BudgetFigures + Send + Sync>,
    /// The windows the server was configured with.
    pub windows: Windows,
}

/// A stack's Echo server, running until dropped.
pub struct Server {
    /// The server task and its address.
    pub running: Running,
    /// Its receive budget, if it was started with one.
    pub budget: Option<BudgetProbe>,
}

/// One adapter's server and client, as the suite drives them.
pub trait Stack: Sync {
    /// The name reports use (`tonic full framing`, `volo adapter`).
    fn name(&self) -> &'static str;

    /// Starts the stack's Echo server on 127.0.0.1:0, every request stream
    /// counted against a receive budget when `budget` is given (with the
    /// HTTP/2 windows the example servers derive from it).
    fn serve(&self, budget: Option<BudgetConfig>) -> BoxFuture<'_, Server>;

    /// Makes `call` with the stack's client against the server at `addr`.
    fn call<'a>(&'a self, addr: SocketAddr, call: &'a ClientCall) -> BoxFuture<'a, ClientOutcome>;
}

/// Runs every case that the process's heap and budget figures could
/// disturb one at a time, whichever test and runtime calls it.
static EXCLUSIVE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What [`run`] found.
#[derive(Debug, Default)]
pub struct Report {
    /// The stack's name.
    pub stack: &'static str,
    /// One line per call: case, method, what came back.
    pub seen: Vec<String>,
    /// Every mismatch, one line each.
    pub failures: Vec<String>,
}

impl Report {
    /// Panics listing every mismatch, if there was one.
    pub fn assert_passed(&self) {
        assert!(
            self.failures.is_empty(),
            "{}: {} mismatch(es):\n{}",
            self.stack,
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}

/// Runs every case ([`cases`]) against `stack`: server cases against one
/// server the stack starts (each call then a control call, then an
/// ordinary call that shows the server still serves), client cases against
/// a raw server each. The cases are built here, one run at a time: their
/// bombs are megabytes, which another run's heap bounds would count.
pub async fn run(stack: &dyn Stack) -> Report {
    let _exclusive = EXCLUSIVE.lock().await;
    let cases = cases();
    let mut report = Report {
        stack: stack.name(),
        ..Report::default()
    };
    let server = stack.serve(None).await;
    let client = raw_h2::connect(server.running.addr).await;
    // The connection's and the server's first allocations, before any
    // heap is measured.
    if let Err(failure) = still_serving(&client).await {
        report.failures.push(format!("before any case: {failure}"));
        return report;
    }
    for case in &cases {
        match &case.request {
            Request::Server(request) => run_server_case(&client, case, request, &mut report).await,
            Request::Client(request) => run_client_case(stack, case, request, &mut report).await,
        }
    }
    for line in &report.seen {
        eprintln!("{}: {line}", report.stack);
    }
    report
}

/// Runs one server case on every method it names, recording what came
/// back and every mismatch.
async fn run_server_case(
    client: &SendRequest<Bytes>,
    case: &Case,
    request: &ServerRequest,
    report: &mut Report,
) {
    if request.heap_bound.is_some() && alloc::global_allocations() == 0 {
        report.failures.push(format!(
            "{}: a heap bound needs test_support::alloc::CountingAlloc as the global allocator",
            case.name
        ));
        return;
    }
    for &method in &request.methods {
        let at = format!("{} [{method:?}]", case.name);
        let headers = header_refs(&request.headers);
        let before = alloc::reset_global_peak();
        let response = call_raw(
            client,
            method.path(),
            &headers,
            request.body.clone(),
            request.open,
        )
        .await;
        let heap = alloc::global_peak().saturating_sub(before);
        let response = match response {
            Ok(response) => response,
            Err(error) => {
                report.failures.push(format!("{at}: {error}"));
                continue;
            }
        };
        let status = Status::new(
            response.grpc_status().unwrap_or(-1),
            response.grpc_message(),
        );
        let messages = wire::count_envelopes(&response.body());
        report.seen.push(format!(
            "{at}: {status}, message(s) {messages:?}, {}, heap +{heap}",
            if response.trailers.is_none() {
                "trailers-only"
            } else {
                "with trailers"
            }
        ));
        let mut fail = |what: String| report.failures.push(format!("{at}: {what}"));
        if response.http_status != http::StatusCode::OK {
            fail(format!("HTTP status {}", response.http_status));
        }
        if let Some(mismatch) = case.expect.mismatch(&status) {
            fail(mismatch);
        }
        if request.judged_on_body && !response.body_sent {
            fail("answered before the body went out".to_owned());
        }
        if request.trailers_only
            && (response.trailers.is_some() || !response.data_frames.is_empty())
        {
            fail(format!("not trailers-only: {response:?}"));
        }
        match messages {
            Ok(n) if request.messages.admits(n) => {}
            other => fail(format!(
                "response message(s) {other:?}, expected {:?}",
                request.messages
            )),
        }
        for (name, value) in &request.response_headers {
            let got = response.headers.get(*name);
            if got.is_none_or(|got| got != value) {
                fail(format!(
                    "response header {name}: {got:?}, expected {value:?}"
                ));
            }
        }
        if let Some(body) = &request.response_body
            && response.body() != body.as_ref()
        {
            fail(format!(
                "response body {:?}, expected {body:?}",
                Bytes::from(response.body())
            ));
        }
        if let Some(bound) = request.heap_bound
            && heap > bound
        {
            fail(format!(
                "heap grew {heap} bytes during the call, bound {bound}"
            ));
        }
        if let Some(control) = &request.control {
            let headers = header_refs(&control.headers);
            let answer =
                call_raw(client, method.path(), &headers, control.body.clone(), false).await;
            match answer {
                Ok(answer) if answer.grpc_status() == Some(code::OK) => {}
                Ok(answer) => fail(format!(
                    "the control call was not answered OK: {:?} {:?}",
                    answer.grpc_status(),
                    answer.grpc_message()
                )),
                Err(error) => fail(format!("the control call: {error}")),
            }
        }
        if let Err(failure) = still_serving(client).await {
            fail(format!("afterwards: {failure}"));
        }
    }
}

/// Runs one client case against a raw server of its own.
async fn run_client_case(
    stack: &dyn Stack,
    case: &Case,
    request: &ClientRequest,
    report: &mut Report,
) {
    let at = format!("{} [{:?} by the client]", case.name, request.call.rpc);
    let (addr, server) = serve_answer(request.answer.clone()).await;
    let outcome = stack.call(addr, &request.call).await;
    server.abort();
    report.seen.push(format!(
        "{at}: {}, {} message(s), echo-bin {:?}",
        outcome.status, outcome.messages, outcome.echo_bin
    ));
    let mut fail = |what: String| report.failures.push(format!("{at}: {what}"));
    if let Some(mismatch) = case.expect.mismatch(&outcome.status) {
        fail(mismatch);
    }
    if !request.messages.admits(outcome.messages) {
        fail(format!(
            "{} response message(s), expected {:?}",
            outcome.messages, request.messages
        ));
    }
    if outcome.echo_bin != request.echo_bin {
        fail(format!(
            "x-echo-bin {:?}, expected {:?}",
            outcome.echo_bin, request.echo_bin
        ));
    }
}

/// Headers as `raw_h2` takes them.
fn header_refs<'a>(headers: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    headers
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect()
}

/// A ClientStream call of two messages: `OK`, count 2, 6 payload bytes.
async fn still_serving(client: &SendRequest<Bytes>) -> Result<(), String> {
    let mut body = wire::request_envelope(b"one");
    body.extend(wire::request_envelope(b"two"));
    let response = call_raw(client, Method::ClientStream.path(), &[], body.into(), false).await?;
    let reply = wire::envelopes(&response.body())
        .and_then(|payloads| payloads.first().and_then(|p| wire::decode_echo_response(p)));
    match (response.grpc_status(), reply) {
        (Some(code::OK), Some(reply)) if (reply.count, reply.total_bytes) == (2, 6) => Ok(()),
        _ => Err(format!(
            "an ordinary ClientStream call failed: {response:?}"
        )),
    }
}

/// Sends `body` to `path` and reads the whole response; with `open`, the
/// request stream stays open until the response has been read, so only
/// the server can end the call. A stream the server resets instead of
/// answering, or a connection it drops, is an error, not a panic: one
/// case's failure must not hide the others'.
async fn call_raw(
    client: &SendRequest<Bytes>,
    path: &str,
    headers: &[(&str, &str)],
    body: Bytes,
    open: bool,
) -> Result<RawResponse, String> {
    let mut client = client
        .clone()
        .ready()
        .await
        .map_err(|error| format!("connection not ready: {error}"))?;
    let (response, mut stream) = client
        .send_request(raw_h2::grpc_request(path, headers), false)
        .map_err(|error| format!("send request: {error}"))?;
    // A server may answer from the headers and end the stream before the
    // body goes out: recorded, so a status that did not see the body does
    // not pass for one that did.
    let body_sent = stream.send_data(body, !open).is_ok();
    let response = response
        .await
        .map_err(|error| format!("no response headers: {error}"))?;
    let (parts, mut body) = response.into_parts();
    let mut data_frames = Vec::new();
    while let Some(frame) = body.data().await {
        let frame = frame.map_err(|error| format!("response body: {error}"))?;
        let _ = body.flow_control().release_capacity(frame.len());
        data_frames.push(frame);
    }
    let trailers = body
        .trailers()
        .await
        .map_err(|error| format!("response trailers: {error}"))?;
    drop(stream);
    Ok(RawResponse {
        http_status: parts.status,
        headers: parts.headers,
        data_frames,
        trailers,
        body_sent,
    })
}

/// A raw HTTP/2 server on 127.0.0.1 that reads each request to its end (or
/// not at all, for [`Answer::Endless`]) and answers as `answer` says.
pub async fn serve_answer(answer: Answer) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    if let Answer::Script(script) = answer {
        return raw_h2::serve_script(script).await;
    }
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address");
    let server = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let Ok(mut connection) = h2::server::handshake(tcp).await else {
                    return;
                };
                while let Some(Ok((request, respond))) = connection.accept().await {
                    tokio::spawn(answer_request(answer.clone(), request, respond));
                }
            });
        }
    });
    (addr, server)
}

/// Answers one request as `answer` says ([`serve_answer`]).
async fn answer_request(
    answer: Answer,
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
) {
    let (parts, mut body) = request.into_parts();
    let mut response = http::Response::new(());
    response.headers_mut().insert(
        "content-type",
        http::HeaderValue::from_static("application/grpc"),
    );
    let one_message = Bytes::from_static(&[0, 0, 0, 0, 0]);
    match answer {
        Answer::Script(_) => unreachable!("scripts are served by raw_h2::serve_script"),
        Answer::Endless => {
            let Ok(mut stream) = respond.send_response(response, false) else {
                return;
            };
            // Until the client resets the stream or goes away.
            while stream.send_data(one_message.clone(), false).is_ok() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        Answer::EchoBin => {
            while let Some(Ok(chunk)) = body.data().await {
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            if let Some(value) = parts.headers.get("x-echo-bin") {
                response.headers_mut().insert("x-echo-bin", value.clone());
            }
            let Ok(mut stream) = respond.send_response(response, false) else {
                return;
            };
            let _ = stream.send_data(one_message, false);
            let mut trailers = http::HeaderMap::new();
            trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
            let _ = stream.send_trailers(trailers);
        }
    }
}
