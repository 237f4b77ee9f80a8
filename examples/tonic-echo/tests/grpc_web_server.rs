//! `tonic-echo-server --grpc-web` as an outside check drives it: the binary
//! on an ephemeral port, called by a gRPC-Web client over HTTP/1.1
//! (`application/grpc-web+proto`, messages and a trailers frame in the
//! body), and still by gRPC clients over HTTP/2.

use std::net::SocketAddr;
use std::process::{Command, Stdio};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use prost::Message;
use test_support::process::ListeningProcess;
use tonic_echo::adapter::{EchoRequest, EchoResponse};

const UNARY: &str = "/streamcodec.echo.v1.Echo/Unary";
const SERVER_STREAM: &str = "/streamcodec.echo.v1.Echo/ServerStream";

fn start_server(flags: &[&str]) -> ListeningProcess {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tonic-echo-server"));
    command
        .args(["--listen", "127.0.0.1:0"])
        .args(flags)
        .stderr(Stdio::null());
    ListeningProcess::start(command)
}

/// What a gRPC-Web call got back.
#[derive(Debug)]
struct WebReply {
    content_type: String,
    messages: Vec<EchoResponse>,
    /// The trailers frame's lines, lower-cased names.
    trailers: Vec<(String, String)>,
}

impl WebReply {
    fn trailer(&self, name: &str) -> Option<&str> {
        self.trailers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One gRPC-Web call over a fresh HTTP/1.1 connection, read as a browser
/// client reads it; an error for anything that is not a gRPC-Web answer.
async fn grpc_web_call(
    addr: SocketAddr,
    path: &str,
    request: &EchoRequest,
) -> Result<WebReply, String> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(connection);
    let encoded = request.encode_to_vec();
    let mut body = BytesMut::with_capacity(5 + encoded.len());
    body.put_u8(0);
    body.put_u32(encoded.len() as u32);
    body.put_slice(&encoded);
    let request = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .body(Full::new(body.freeze()))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("send: {e}"))?;
    if response.status() != http::StatusCode::OK {
        return Err(format!("HTTP status {}", response.status()));
    }
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut data: Bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("body: {e}"))?
        .to_bytes();
    let mut messages = Vec::new();
    let mut trailers = Vec::new();
    while data.has_remaining() {
        if data.len() < 5 {
            return Err(format!("a cut frame header: {data:?}"));
        }
        let flags = data.get_u8();
        let len = data.get_u32() as usize;
        if data.len() < len {
            return Err(format!("a cut frame: {len} declared, {} left", data.len()));
        }
        let payload = data.split_to(len);
        if flags & 0x80 == 0 {
            messages.push(EchoResponse::decode(payload).map_err(|e| e.to_string())?);
            continue;
        }
        let text = std::str::from_utf8(&payload).map_err(|e| e.to_string())?;
        for line in text.split("\r\n").filter(|l| !l.is_empty()) {
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| format!("a trailer line without a colon: {line:?}"))?;
            trailers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    Ok(WebReply {
        content_type,
        messages,
        trailers,
    })
}

fn unary_request() -> EchoRequest {
    EchoRequest {
        payload: Bytes::from_static(b"echoed through tonic-web"),
        ..EchoRequest::default()
    }
}

fn stream_request() -> EchoRequest {
    EchoRequest {
        response_count: 20,
        response_size: 300,
        ..EchoRequest::default()
    }
}

/// Unary and server-streaming gRPC-Web calls get their messages and a
/// trailers frame with `grpc-status: 0`, unbatched as well as batched.
#[tokio::test]
async fn grpc_web_flag_answers_unary_and_server_streaming_calls() {
    for flags in [
        &["--grpc-web"][..],
        &["--grpc-web", "--batch-threshold", "0"],
    ] {
        let server = start_server(flags);

        let unary = grpc_web_call(server.addr, UNARY, &unary_request())
            .await
            .unwrap_or_else(|e| panic!("{flags:?}: {e}"));
        assert_eq!(
            unary.content_type, "application/grpc-web+proto",
            "{flags:?}"
        );
        assert_eq!(unary.trailer("grpc-status"), Some("0"), "{unary:?}");
        assert_eq!(unary.messages.len(), 1, "{unary:?}");
        assert_eq!(
            unary.messages[0].payload,
            &b"echoed through tonic-web"[..],
            "{flags:?}"
        );

        let streamed = grpc_web_call(server.addr, SERVER_STREAM, &stream_request())
            .await
            .unwrap_or_else(|e| panic!("{flags:?}: {e}"));
        assert_eq!(streamed.trailer("grpc-status"), Some("0"), "{flags:?}");
        assert_eq!(streamed.messages.len(), 20, "{flags:?}");
        for (seq, response) in streamed.messages.iter().enumerate() {
            assert_eq!(response.seq as usize, seq, "{flags:?}");
            assert_eq!(response.payload, vec![(seq % 251) as u8; 300], "{flags:?}");
        }
    }
}

/// Without `--grpc-web` the same call gets no gRPC-Web answer, on either
/// framing: the server speaks HTTP/2 only.
#[tokio::test]
async fn without_the_flag_a_grpc_web_call_fails() {
    for flags in [&[][..], &["--framing", "full"], &["--stock"]] {
        let server = start_server(flags);
        let reply = grpc_web_call(server.addr, UNARY, &unary_request()).await;
        assert!(reply.is_err(), "{flags:?}: {reply:?}");
    }
}

/// gRPC clients over HTTP/2 still get every RPC from a `--grpc-web` server.
#[test]
fn grpc_clients_still_work_with_the_flag() {
    let server = start_server(&["--grpc-web"]);
    let output = Command::new(env!("CARGO_BIN_EXE_tonic-echo-client"))
        .args(["--addr", &format!("http://{}", server.addr), "--rpc", "all"])
        .args(["--size", "3000", "--count", "50"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    for rpc in ["unary", "server", "client", "bidi"] {
        assert!(stdout.contains(&format!("{rpc}: ok")), "{stdout}");
    }
}

/// `--grpc-web` serves the full framing only: flags that ask for another
/// server are refused with the usage exit code.
#[test]
fn grpc_web_refuses_flags_of_other_servers() {
    for flags in [
        &["--grpc-web", "--stock"][..],
        &["--grpc-web", "--framing", "codec"],
        &["--grpc-web", "--receive-budget", "1048576"],
        &["--grpc-web", "--budget-windows", "1048576"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_tonic-echo-server"))
            .args(["--listen", "127.0.0.1:0"])
            .args(flags)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{flags:?}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("--grpc-web"), "{flags:?}: {stderr}");
    }
}
