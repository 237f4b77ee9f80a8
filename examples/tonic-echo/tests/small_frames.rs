//! A client that streams 10,000 ten-byte messages, each in its own DATA
//! frame (as grpc-go and grpc-js send them), to a ClientStream handler that
//! reads late or slowly. h2 charges every buffered DATA frame under 256 bytes
//! against a connection-wide budget and closes the connection with
//! `GOAWAY(ENHANCE_YOUR_CALM)` once unread ones exceed it: stock tonic loses
//! the connection; full framing takes the frames out of h2 as they arrive
//! (up to its read-ahead bound) and serves every message.

test_support::small_frames_tests! {
    server: env!("CARGO_BIN_EXE_tonic-echo-server"),
    stock: "--stock",
    adapter: "--framing full",
}
