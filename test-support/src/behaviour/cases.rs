//! The cases, as data: what a peer sends and the status it must get.

use std::time::Duration;

use bytes::Bytes;

use super::wire::{LIMIT, MAX_RESPONSE_SIZE, compress, echo_request, request_envelope, zstd_frame};
use super::{
    Answer, Case, ClientCall, ClientRequest, Control, Expect, Messages, Method, Request,
    ServerRequest, code,
};
use crate::raw_h2::{Script, envelope, header};

/// The compressions both adapters accept, by `grpc-encoding` name.
pub const ENCODINGS: [&str; 3] = ["gzip", "deflate", "zstd"];

/// Not base64 in any alphabet.
pub const NOT_BASE64: &str = "%%not*base64%%";

/// The deadline of the deadline cases, as `grpc-timeout` writes it.
pub const DEADLINE: &str = "200m";

/// Every case, server cases first.
pub fn cases() -> Vec<Case> {
    let mut cases = server_cases();
    cases.extend(client_cases());
    cases
}

/// A server case.
fn case(name: impl Into<String>, request: ServerRequest, expect: Expect) -> Case {
    Case {
        name: name.into(),
        request: Request::Server(request),
        expect,
    }
}

/// The status of a message declaring `declared` bytes, over the limit.
fn too_large(declared: u64) -> Expect {
    Expect::new(
        code::RESOURCE_EXHAUSTED,
        format!("message size {declared} exceeds limit {LIMIT}"),
    )
}

/// A well-formed body: one `EchoRequest`.
fn well_formed() -> Bytes {
    Bytes::from(request_envelope(b"control"))
}

/// The same headers with a well-formed body.
fn control_body(headers: &[(&'static str, String)]) -> Option<Control> {
    Some(Control {
        headers: headers.to_vec(),
        body: well_formed(),
    })
}

/// Headers as a [`ServerRequest`] holds them.
fn owned(headers: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    headers
        .iter()
        .map(|(name, value)| (*name, (*value).to_owned()))
        .collect()
}

/// The compressor of a `grpc-encoding` name: `zlib` is read as `deflate`
/// (the zlib format), the name volo-grpc sends it under.
fn compressor(encoding: &str) -> &str {
    if encoding == "zlib" {
        "deflate"
    } else {
        encoding
    }
}

/// Nothing the size a peer declares may be allocated: a call over the
/// limit costs the server no more than this.
const DECLARED_HEAP_BOUND: usize = 1 << 20;

/// Decompressed output stops at the limit: a bomb costs at most the limit
/// and half as much again for everything else.
const BOMB_HEAP_BOUND: usize = LIMIT + LIMIT / 2;

/// The cases sent to the stack's server by a raw HTTP/2 client.
pub fn server_cases() -> Vec<Case> {
    let mut cases = Vec::new();

    // Message over the receive limit: refused on its header, nothing of
    // the declared size allocated.
    for declared in [LIMIT as u32 + 1, u32::MAX] {
        let mut body = header(0, declared);
        body.extend_from_slice(&[0; 64]);
        cases.push(case(
            format!("over the limit: declares {declared}"),
            ServerRequest {
                control: control_body(&[]),
                heap_bound: Some(DECLARED_HEAP_BOUND),
                ..ServerRequest::new(&Method::ALL, body)
            },
            too_large(declared.into()),
        ));
    }
    // After a valid message, with a valid one behind it that must not be
    // read as the next header; Bidi has echoed the first.
    let mut body = request_envelope(b"fine");
    body.extend(header(0, u32::MAX));
    body.extend(request_envelope(b"never read"));
    for (method, echoed) in [
        (Method::ClientStream, Messages::None),
        (Method::Bidi, Messages::Exactly(1)),
    ] {
        cases.push(case(
            "over the limit after a valid message",
            ServerRequest {
                control: control_body(&[]),
                heap_bound: Some(DECLARED_HEAP_BOUND),
                messages: echoed,
                ..ServerRequest::new(&[method], body.clone())
            },
            too_large(u32::MAX.into()),
        ));
    }
    // Compressed bodies that inflate to twice the limit.
    let plain = echo_request(&vec![0; 2 * LIMIT], 0, 0);
    let mut bombs: Vec<(String, &str, Vec<u8>)> = ENCODINGS
        .into_iter()
        .map(|name| (name.to_owned(), name, compress(name, &plain)))
        .collect();
    bombs.push((
        "zlib (deflate's other name)".to_owned(),
        "zlib",
        compress("deflate", &plain),
    ));
    bombs.push((
        "zstd without its content size".to_owned(),
        "zstd",
        zstd_frame(&plain, false),
    ));
    for (name, encoding, bomb) in bombs {
        assert!(
            bomb.len() < 64 * 1024,
            "{name} bomb of {} bytes",
            bomb.len()
        );
        let headers = owned(&[("grpc-encoding", encoding)]);
        cases.push(case(
            format!("over the limit decompressed: {name} bomb"),
            ServerRequest {
                headers: headers.clone(),
                control: Some(Control {
                    headers,
                    body: Bytes::from(envelope(
                        1,
                        &compress(compressor(encoding), &echo_request(b"x", 0, 0)),
                    )),
                }),
                heap_bound: Some(BOMB_HEAP_BOUND),
                ..ServerRequest::new(&Method::ALL, envelope(1, &bomb))
            },
            // The output stops one byte past the limit.
            too_large(LIMIT as u64 + 1),
        ));
    }

    // Reserved flag bits: anything but bit 0 (compressed) and bit 7
    // (gRPC-Web trailers) on a request.
    let message = echo_request(b"x", 0, 0);
    for flag in [0x02u8, 0x04, 0x40] {
        cases.push(case(
            format!("reserved flag bits {flag:#04x}"),
            ServerRequest {
                control: control_body(&[]),
                ..ServerRequest::new(&Method::ALL, envelope(flag, &message))
            },
            Expect::new(
                code::INTERNAL,
                format!("protocol error: invalid envelope flags {flag:#04x}"),
            ),
        ));
    }
    // The gRPC-Web trailers bit on a gRPC request: read as trailers, which
    // an `EchoRequest` is not; with the compressed bit too, refused for
    // that first.
    cases.push(case(
        "flag 0x80 (gRPC-Web trailers)",
        ServerRequest {
            control: control_body(&[]),
            ..ServerRequest::new(&Method::ALL, envelope(0x80, &message))
        },
        Expect::new(
            code::INTERNAL,
            "protocol error: malformed gRPC-Web trailer line \"\\u{1}x\"",
        ),
    ));
    cases.push(case(
        "flag 0x81 (gRPC-Web trailers, compressed)",
        ServerRequest {
            control: control_body(&[]),
            ..ServerRequest::new(&Method::ALL, envelope(0x81, &message))
        },
        Expect::new(
            code::INTERNAL,
            "protocol error: compressed message on a stream without a grpc-encoding",
        ),
    ));

    // The compressed flag with no compression named.
    let compressed = Bytes::from(envelope(1, &compress("gzip", &message)));
    for (name, headers) in [
        ("no grpc-encoding", vec![]),
        (
            "grpc-encoding identity",
            owned(&[("grpc-encoding", "identity")]),
        ),
    ] {
        cases.push(case(
            format!("compressed flag, {name}"),
            ServerRequest {
                headers: headers.clone(),
                control: control_body(&headers),
                ..ServerRequest::new(&Method::ALL, compressed.clone())
            },
            Expect::new(
                code::INTERNAL,
                "protocol error: compressed message on a stream without a grpc-encoding",
            ),
        ));
    }

    // An encoding neither adapter knows: refused from the headers, with
    // the encodings the server does accept.
    cases.push(case(
        "grpc-encoding snappy",
        ServerRequest {
            headers: owned(&[("grpc-encoding", "snappy")]),
            judged_on_body: false,
            control: control_body(&[]),
            trailers_only: true,
            response_headers: vec![("grpc-accept-encoding", "identity,gzip,deflate,zstd")],
            ..ServerRequest::new(&Method::ALL, compressed.clone())
        },
        Expect::new(
            code::UNIMPLEMENTED,
            "unsupported grpc-encoding \"snappy\"; supported: identity,gzip,deflate,zstd",
        ),
    ));

    // Corrupt compressed data: the decompressor's own words after the
    // encoding's name.
    let plain = echo_request(&[5; 4096], 0, 0);
    for (encoding, garbage, overwritten_text) in [
        (
            "gzip",
            "invalid gzip header",
            "deflate decompression error: invalid code lengths set",
        ),
        (
            "deflate",
            "deflate decompression error: incorrect header check",
            "deflate decompression error: invalid bit length repeat",
        ),
        (
            "zlib",
            "deflate decompression error: incorrect header check",
            "deflate decompression error: invalid bit length repeat",
        ),
        (
            "zstd",
            "Unknown frame descriptor",
            "Data corruption detected",
        ),
    ] {
        let valid = compress(compressor(encoding), &plain);
        let mut overwritten = valid.clone();
        let middle = overwritten.len() / 2;
        for byte in &mut overwritten[middle - 4..middle + 4] {
            *byte ^= 0xa5;
        }
        let mut trailing = valid.clone();
        trailing.extend_from_slice(b"extra");
        let headers = owned(&[("grpc-encoding", encoding)]);
        for (name, payload, text) in [
            (
                "garbage",
                b"this is not compressed data, honestly".to_vec(),
                garbage,
            ),
            (
                "truncated",
                valid[..valid.len() / 2].to_vec(),
                "compressed data ends early",
            ),
            ("overwritten", overwritten, overwritten_text),
            (
                "trailing bytes",
                trailing,
                "5 bytes after the end of the compressed data",
            ),
        ] {
            cases.push(case(
                format!("corrupt {encoding}: {name}"),
                ServerRequest {
                    headers: headers.clone(),
                    control: Some(Control {
                        headers: headers.clone(),
                        body: Bytes::from(envelope(1, &valid)),
                    }),
                    ..ServerRequest::new(&Method::ALL, envelope(1, &payload))
                },
                Expect::new(
                    code::INTERNAL,
                    format!("{} decompression failed: {text}", compressor(encoding)),
                ),
            ));
        }
    }

    // The body ends inside an envelope.
    let whole = request_envelope(&[7; 10]);
    for cut in 1..5 {
        cases.push(case(
            format!("body ends after {cut} header bytes"),
            ServerRequest {
                control: control_body(&[]),
                ..ServerRequest::new(&Method::ALL, whole[..cut].to_vec())
            },
            Expect::new(
                code::INTERNAL,
                format!("protocol error: body ended inside a message header ({cut} of 5 bytes)"),
            ),
        ));
    }
    for (name, cut) in [("header only", 5), ("partial payload", 8)] {
        cases.push(case(
            format!("body ends inside the payload: {name}"),
            ServerRequest {
                control: control_body(&[]),
                ..ServerRequest::new(&Method::ALL, whole[..cut].to_vec())
            },
            Expect::new(
                code::INTERNAL,
                format!(
                    "protocol error: body ended inside a message ({} of {} bytes)",
                    cut - 5,
                    whole.len() - 5
                ),
            ),
        ));
    }
    let mut message_then_two = request_envelope(b"x");
    message_then_two.extend_from_slice(&[0, 0]);
    for (method, echoed) in [
        (Method::Unary, Messages::None),
        (Method::ServerStream, Messages::None),
        (Method::ClientStream, Messages::None),
        (Method::Bidi, Messages::Exactly(1)),
    ] {
        cases.push(case(
            "body ends 2 bytes into a second header",
            ServerRequest {
                control: control_body(&[]),
                messages: echoed,
                ..ServerRequest::new(&[method], message_then_two.clone())
            },
            Expect::new(
                code::INTERNAL,
                "protocol error: body ended inside a message header (2 of 5 bytes)",
            ),
        ));
    }

    // A single-message request with a second message, or none. The second
    // message is refused for being there, not read: one that is not an
    // EchoRequest gets the same answer.
    for (name, second) in [
        ("second message on a unary call", request_envelope(b"two")),
        (
            "malformed second message on a unary call",
            envelope(0, b"\x0f\x00"),
        ),
    ] {
        let mut two = request_envelope(b"one");
        two.extend(second);
        cases.push(case(
            name,
            ServerRequest {
                control: control_body(&[]),
                ..ServerRequest::new(&Method::SINGLE_REQUEST, two)
            },
            Expect::new(
                code::INTERNAL,
                "a unary request carried more than one message",
            ),
        ));
    }
    cases.push(case(
        "no message on a unary call",
        ServerRequest {
            control: control_body(&[]),
            ..ServerRequest::new(&Method::SINGLE_REQUEST, Bytes::new())
        },
        // What stock tonic and volo-grpc's generated code both say.
        Expect::new(code::INTERNAL, "Missing request message."),
    ));

    // A payload that is not an EchoRequest: prost's text, as stock tonic
    // gives it (both frameworks' generated code decodes with prost).
    for (name, payload, text) in [
        (
            "truncated bytes field",
            &b"\x0a\x64abc"[..],
            "EchoRequest.payload: buffer underflow",
        ),
        (
            "unterminated varint",
            b"\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
            "EchoRequest.response_count: invalid varint",
        ),
        (
            "invalid wire type",
            b"\x0f\x00",
            "invalid wire type value: 7",
        ),
        (
            "payload sent as a varint",
            b"\x08\x01",
            "EchoRequest.payload: invalid wire type: Varint (expected LengthDelimited)",
        ),
        (
            "payload declaring 16 bytes with 2",
            b"\x0a\x10\x01\x02",
            "EchoRequest.payload: buffer underflow",
        ),
    ] {
        cases.push(case(
            format!("invalid protobuf: {name}"),
            ServerRequest {
                control: control_body(&[]),
                ..ServerRequest::new(&Method::ALL, envelope(0, payload))
            },
            Expect::new(
                code::INTERNAL,
                format!("failed to decode Protobuf message: {text}"),
            ),
        ));
    }

    // Binary metadata: valid is served (and the Unary handler echoes
    // `x-echo-bin`), malformed is refused from the headers, trailers-only,
    // as grpc-go answers it.
    let hi = Bytes::from(request_envelope(b"hi"));
    cases.push(case(
        "valid -bin metadata is served",
        ServerRequest {
            headers: owned(&[("x-trace-bin", "AAEC"), ("x-other-bin", "AQ==")]),
            messages: Messages::Exactly(1),
            ..ServerRequest::new(&Method::ALL, hi.clone())
        },
        Expect::ok(),
    ));
    cases.push(case(
        "valid -bin metadata is echoed",
        ServerRequest {
            headers: owned(&[("x-echo-bin", "AAEC")]),
            messages: Messages::Exactly(1),
            response_headers: vec![("x-echo-bin", "AAEC")],
            response_body: Some(hi.clone()),
            ..ServerRequest::new(&[Method::Unary], hi.clone())
        },
        Expect::ok(),
    ));
    for (name, headers) in [
        ("alone", vec![("x-hostile-bin", NOT_BASE64)]),
        (
            "after a valid one",
            vec![("x-trace-bin", "AAEC"), ("x-hostile-bin", "A")],
        ),
        (
            "grpc-status-details-bin",
            vec![("grpc-status-details-bin", NOT_BASE64)],
        ),
    ] {
        let bad = headers.last().expect("a malformed header").0;
        cases.push(case(
            format!("malformed -bin metadata: {name}"),
            ServerRequest {
                headers: owned(&headers),
                judged_on_body: false,
                control: control_body(&[]),
                trailers_only: true,
                ..ServerRequest::new(&Method::ALL, hi.clone())
            },
            Expect::new(
                code::INTERNAL,
                format!("malformed binary metadata in header {bad:?}: not base64"),
            ),
        ));
    }

    // grpc-timeout: at most 8 digits and a unit.
    for value in ["999999999H", "18446744073709551615H", "1", "S", "1x", "-1S"] {
        cases.push(case(
            format!("malformed grpc-timeout {value:?}"),
            ServerRequest {
                headers: owned(&[("grpc-timeout", value)]),
                judged_on_body: false,
                control: control_body(&[]),
                trailers_only: true,
                ..ServerRequest::new(&Method::ALL, hi.clone())
            },
            Expect::new(code::INTERNAL, "malformed grpc-timeout"),
        ));
    }

    // Streaming calls past their deadline: ended by the server with
    // DEADLINE_EXCEEDED in the trailers.
    const ENDLESS: u32 = 20_000_000;
    cases.push(case(
        "server stream past its grpc-timeout",
        ServerRequest {
            headers: owned(&[("grpc-timeout", DEADLINE)]),
            messages: Messages::Between1And(ENDLESS as usize),
            ..ServerRequest::new(
                &[Method::ServerStream],
                envelope(0, &echo_request(b"", ENDLESS, 100)),
            )
        },
        Expect::new(code::DEADLINE_EXCEEDED, "Deadline Exceeded"),
    ));
    cases.push(case(
        "bidi stream past its grpc-timeout, request stream open",
        ServerRequest {
            headers: owned(&[("grpc-timeout", DEADLINE)]),
            open: true,
            messages: Messages::Exactly(1),
            ..ServerRequest::new(&[Method::Bidi], request_envelope(b"ping"))
        },
        Expect::new(code::DEADLINE_EXCEEDED, "Deadline Exceeded"),
    ));

    // A handler's error before any response: trailers-only.
    cases.push(case(
        "handler error before any response is trailers-only",
        ServerRequest {
            trailers_only: true,
            control: Some(Control {
                headers: Vec::new(),
                body: Bytes::from(envelope(0, &echo_request(b"", 1, MAX_RESPONSE_SIZE))),
            }),
            ..ServerRequest::new(
                &[Method::ServerStream],
                envelope(0, &echo_request(b"", 1, MAX_RESPONSE_SIZE + 1)),
            )
        },
        Expect::new(
            code::RESOURCE_EXHAUSTED,
            format!(
                "response_size {} exceeds {MAX_RESPONSE_SIZE}",
                MAX_RESPONSE_SIZE + 1
            ),
        ),
    ));

    cases
}

/// A client case.
fn client_case(
    name: impl Into<String>,
    call: ClientCall,
    answer: Answer,
    messages: Messages,
    expect: Expect,
) -> Case {
    Case {
        name: name.into(),
        request: Request::Client(ClientRequest {
            call,
            answer,
            messages,
            echo_bin: None,
        }),
        expect,
    }
}

/// `case` whose caller must also see `x-echo-bin` metadata decoding to
/// `value`.
fn seeing_echo_bin(mut case: Case, value: Vec<u8>) -> Case {
    if let Request::Client(request) = &mut case.request {
        request.echo_bin = Some(value);
    }
    case
}

/// `rpc` with no deadline and no metadata.
fn plain(rpc: Method) -> ClientCall {
    ClientCall {
        rpc,
        timeout: None,
        echo_bin: None,
    }
}

/// The cases answered to the stack's client by a raw HTTP/2 server.
pub fn client_cases() -> Vec<Case> {
    let one_message = envelope(0, &[]);
    let ok = [("grpc-status", "0")];
    let mut cases = Vec::new();
    let rpcs = [Method::Unary, Method::ServerStream];

    // Trailers-only answers.
    for rpc in rpcs {
        cases.push(client_case(
            "trailers-only error",
            plain(rpc),
            Answer::Script(Script::trailers_only(&[
                ("grpc-status", "9"),
                ("grpc-message", "not now: 100%25"),
            ])),
            Messages::None,
            Expect::new(code::FAILED_PRECONDITION, "not now: 100%"),
        ));
    }
    cases.push(client_case(
        "trailers-only OK is an empty stream",
        plain(Method::ServerStream),
        Answer::Script(Script::trailers_only(&ok)),
        Messages::None,
        Expect::ok(),
    ));
    // What stock tonic and volo-grpc both say.
    cases.push(client_case(
        "trailers-only OK has no unary response",
        plain(Method::Unary),
        Answer::Script(Script::trailers_only(&ok)),
        Messages::None,
        Expect::new(code::INTERNAL, "Missing response message."),
    ));
    // An invalid grpc-status-details-bin, trailers-only (with an error and
    // with OK) or in trailers: the status cannot be read whole.
    let bad_details = Expect::new(
        code::INTERNAL,
        "invalid grpc-status-details-bin: Invalid symbol 37, offset 0.",
    );
    for rpc in rpcs {
        for (name, script) in [
            (
                "trailers-only error",
                Script::trailers_only(&[
                    ("grpc-status", "3"),
                    ("grpc-message", "bad"),
                    ("grpc-status-details-bin", NOT_BASE64),
                ]),
            ),
            (
                "trailers-only OK",
                Script::trailers_only(&[
                    ("grpc-status", "0"),
                    ("grpc-status-details-bin", NOT_BASE64),
                ]),
            ),
            (
                "in trailers",
                Script::full(
                    &[],
                    &one_message,
                    &[
                        ("grpc-status", "3"),
                        ("grpc-status-details-bin", NOT_BASE64),
                    ],
                ),
            ),
        ] {
            let in_trailers = script.trailers.is_some();
            cases.push(client_case(
                format!("invalid grpc-status-details-bin, {name}"),
                plain(rpc),
                Answer::Script(script),
                // A stream's caller has the message before the trailers.
                if in_trailers && rpc == Method::ServerStream {
                    Messages::Exactly(1)
                } else {
                    Messages::None
                },
                bad_details.clone(),
            ));
        }
    }
    for rpc in rpcs {
        cases.push(client_case(
            "no grpc-status after a message",
            plain(rpc),
            Answer::Script(Script::full(&[], &one_message, &[])),
            // The message before the missing status reaches a stream's
            // caller; a unary call fails without its response.
            if rpc == Method::ServerStream {
                Messages::Exactly(1)
            } else {
                Messages::None
            },
            Expect::new(
                code::INTERNAL,
                "protocol error: response ended without a grpc-status",
            ),
        ));
    }

    // Binary response metadata.
    for rpc in rpcs {
        cases.push(seeing_echo_bin(
            client_case(
                "valid -bin response header",
                plain(rpc),
                Answer::Script(Script::full(&[("x-echo-bin", "AAEC")], &one_message, &ok)),
                Messages::Exactly(1),
                Expect::ok(),
            ),
            vec![0, 1, 2],
        ));
        for (name, headers) in [
            ("alone", &[("x-hostile-bin", NOT_BASE64)][..]),
            (
                "after a valid one",
                &[("x-echo-bin", "AAEC"), ("x-hostile-bin", "A")][..],
            ),
        ] {
            cases.push(client_case(
                format!("malformed -bin response header, {name}"),
                plain(rpc),
                Answer::Script(Script::full(headers, &one_message, &ok)),
                Messages::None,
                Expect::new(
                    code::INTERNAL,
                    "malformed binary metadata in header \"x-hostile-bin\": not base64",
                ),
            ));
        }
        // Binary trailers are metadata the status carries: valid or not,
        // they do not change how the call ends.
        for (name, status, value, expect) in [
            ("valid, OK", "0", "AAEC", Expect::ok()),
            ("malformed, OK", "0", NOT_BASE64, Expect::ok()),
            (
                "malformed, an error",
                "9",
                NOT_BASE64,
                Expect::new(code::FAILED_PRECONDITION, ""),
            ),
        ] {
            let ok = expect.code == code::OK;
            cases.push(client_case(
                format!("binary trailers: {name}"),
                plain(rpc),
                Answer::Script(Script::full(
                    &[],
                    &one_message,
                    &[("grpc-status", status), ("x-t-bin", value)],
                )),
                if ok || rpc == Method::ServerStream {
                    Messages::Exactly(1)
                } else {
                    Messages::None
                },
                expect,
            ));
        }
    }
    // Sent by the client, echoed as it came by the raw server, decoded by
    // the client: both ways through the client's own encoding.
    let value = b"\xff\x00\x07\x80binary".to_vec();
    cases.push(seeing_echo_bin(
        client_case(
            "valid -bin metadata echoed",
            ClientCall {
                echo_bin: Some(value.clone()),
                ..plain(Method::Unary)
            },
            Answer::EchoBin,
            Messages::Exactly(1),
            Expect::ok(),
        ),
        value,
    ));

    // Bad response bodies.
    let mut cut = header(0, 10);
    cut.extend_from_slice(&[1, 2, 3]);
    for (name, body, expect) in [
        (
            "response ends inside a header",
            vec![0, 0, 0],
            Expect::new(
                code::INTERNAL,
                "protocol error: body ended inside a message header (3 of 5 bytes)",
            ),
        ),
        (
            "response is a header only",
            header(0, 10),
            Expect::new(
                code::INTERNAL,
                "protocol error: body ended inside a message (0 of 10 bytes)",
            ),
        ),
        (
            "response over the limit",
            header(0, u32::MAX),
            too_large(u32::MAX.into()),
        ),
        (
            "response ends inside a message",
            cut,
            Expect::new(
                code::INTERNAL,
                "protocol error: body ended inside a message (3 of 10 bytes)",
            ),
        ),
        (
            "reserved flag bits on a response",
            envelope(0x02, &[]),
            Expect::new(
                code::INTERNAL,
                "protocol error: invalid envelope flags 0x02",
            ),
        ),
    ] {
        cases.push(client_case(
            name,
            plain(Method::ServerStream),
            Answer::Script(Script::full(&[], &body, &ok)),
            Messages::None,
            expect,
        ));
    }

    // An error after a message: the message, then the error.
    cases.push(client_case(
        "an error after a message",
        plain(Method::ServerStream),
        Answer::Script(Script::full(
            &[],
            &one_message,
            &[("grpc-status", "10"), ("grpc-message", "gave up")],
        )),
        Messages::Exactly(1),
        Expect::new(code::ABORTED, "gave up"),
    ));

    // A streaming response past the deadline the client sent.
    cases.push(client_case(
        "server stream past the client's deadline",
        ClientCall {
            timeout: Some(Duration::from_millis(200)),
            ..plain(Method::ServerStream)
        },
        Answer::Endless,
        // One every 10 ms until the deadline.
        Messages::Between1And(1_000),
        Expect::new(code::DEADLINE_EXCEEDED, "Deadline Exceeded"),
    ));

    cases
}
