//! What grpc's "Interop Test Case Descriptions" fix: the case names, the
//! sizes, the metadata keys and the status messages both sides use.

use std::time::Duration;

/// Every client case, in the order `--test_case=all` runs them.
pub const CASES: [&str; 18] = [
    "empty_unary",
    "large_unary",
    "client_compressed_unary",
    "server_compressed_unary",
    "client_streaming",
    "client_compressed_streaming",
    "server_streaming",
    "server_compressed_streaming",
    "ping_pong",
    "empty_stream",
    "cancel_after_begin",
    "cancel_after_first_response",
    "timeout_on_sleeping_server",
    "custom_metadata",
    "status_code_and_message",
    "special_status_message",
    "unimplemented_method",
    "unimplemented_service",
];

/// Request metadata the server echoes as initial (header) metadata.
pub const ECHO_INITIAL: &str = "x-grpc-test-echo-initial";
/// The value custom_metadata sends under [`ECHO_INITIAL`].
pub const ECHO_INITIAL_VALUE: &str = "test_initial_metadata_value";
/// Binary request metadata the server echoes as trailing metadata.
pub const ECHO_TRAILING_BIN: &str = "x-grpc-test-echo-trailing-bin";
/// The value custom_metadata sends under [`ECHO_TRAILING_BIN`].
pub const ECHO_TRAILING_VALUE: [u8; 3] = [0xab, 0xab, 0xab];

/// The status message of status_code_and_message.
pub const STATUS_MESSAGE: &str = "test status message";
/// The status message of special_status_message: whitespace, a BMP and a
/// non-BMP character, so percent-encoding is exercised both ways.
pub const SPECIAL_STATUS_MESSAGE: &str =
    "\t\ntest with whitespace\r\nand Unicode BMP \u{263A} and non-BMP \u{1F608}\t\n";
/// The code both status cases ask for (UNKNOWN).
pub const ECHO_STATUS_CODE: i32 = 2;

/// large_unary and the unary compression cases: request payload size.
pub const LARGE_REQUEST: usize = 271_828;
/// large_unary and the unary compression cases: response payload size.
pub const LARGE_RESPONSE: i32 = 314_159;
/// client_streaming: request payload sizes; their sum is
/// [`CLIENT_STREAMING_TOTAL`].
pub const CLIENT_STREAMING_SIZES: [usize; 4] = [27_182, 8, 1_828, 45_904];
/// client_streaming: the aggregated size the server must answer.
pub const CLIENT_STREAMING_TOTAL: i32 = 74_922;
/// server_streaming and ping_pong: response payload sizes.
pub const SERVER_STREAMING_SIZES: [i32; 4] = [31_415, 9, 2_653, 58_979];
/// client_compressed_streaming: the compressed, then the uncompressed
/// request's payload size.
pub const COMPRESSED_STREAMING_SIZES: [usize; 2] = [27_182, 45_904];
/// server_compressed_streaming: the compressed, then the uncompressed
/// response's payload size.
pub const SERVER_COMPRESSED_SIZES: [i32; 2] = [31_415, 92_653];
/// The deadline of timeout_on_sleeping_server.
pub const SLEEPING_SERVER_DEADLINE: Duration = Duration::from_millis(1);
/// How long timeout_on_sleeping_server waits for the call's deadline to
/// end it: nothing else can (the request stream stays open), so no status
/// by then means nobody enforced the deadline, a FAIL.
pub const DEADLINE_GUARD: Duration = Duration::from_secs(5);

/// How long one client case may take before it fails: the cases are
/// small, so this only turns a hang into a clear failure.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(20);

/// The largest payload a server builds for one response (what a peer's
/// default receive limit allows), so no request makes it allocate more.
pub const MAX_RESPONSE_PAYLOAD: i32 = 4 * 1024 * 1024 - 64;

/// The most requests HalfDuplexCall buffers before answering; more is
/// `RESOURCE_EXHAUSTED`, so a client cannot make the server hold an
/// unbounded number of messages.
pub const MAX_HALF_DUPLEX_REQUESTS: usize = 1024;

/// A payload of `size` zero bytes, as the COMPRESSABLE type is defined;
/// `None` for a negative or oversized size (the server answers
/// `INVALID_ARGUMENT`).
pub fn zeros(size: i32) -> Option<bytes::Bytes> {
    if !(0..=MAX_RESPONSE_PAYLOAD).contains(&size) {
        return None;
    }
    Some(bytes::Bytes::from(vec![0u8; size as usize]))
}

/// Whether a request arrived with a compressed body: a `grpc-encoding`
/// other than `identity`. Neither tonic nor volo-grpc shows a handler the
/// per-message flag, so, like tonic's and grpc-go's interop servers, the
/// servers check the call's encoding.
pub fn request_compressed(headers: &http::HeaderMap) -> bool {
    headers
        .get("grpc-encoding")
        .is_some_and(|value| value.as_bytes() != b"identity")
}

/// The text of `INVALID_ARGUMENT` for an `expect_compressed` request that
/// was not compressed.
pub const NOT_COMPRESSED: &str = "expected a compressed request";
