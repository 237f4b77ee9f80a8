//! The receive budget on tonic's full framing, end to end over loopback:
//! a full-framing client counts its response streams; compressed uploads
//! whose handlers keep messages stay within the budget's bound; a budget
//! layer on stock framing reports the calls it cannot count. Stalled
//! streams held by the budget, and streams a client resets, are in the
//! behaviour suite (`examples/interop-tests/tests/behaviour.rs`), which
//! runs them against the volo adapter too.

use std::net::SocketAddr;
use std::time::Duration;
use test_support::settle::settle;

use bytes::Bytes;
use grpc_stream_codec::budget::{BudgetStats, SharedBudget};
use tokio_stream::StreamExt;
use tonic::transport::Endpoint;
use tonic_echo::adapter::{EchoRequest, EchoResponse};
use tonic_echo::{ClientStack, EchoClient, Framing, ServeOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_counts_held_response_messages_until_dropped() {
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let options = ServeOptions {
        framing: Framing::Full,
        ..ServeOptions::default()
    };
    let server = tokio::spawn(tonic_echo::serve_with(listener, options));
    let budget = SharedBudget::new(16 << 20);
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let channel = tower::ServiceBuilder::new()
        .layer(grpc_stream_codec::budget::ReceiveBudgetLayer::new(
            budget.clone(),
        ))
        .service(channel);
    let mut client = tonic_echo::full::echo_client::EchoClient::new(channel);
    let mut responses = client
        .server_stream(EchoRequest {
            response_count: 4,
            response_size: 1 << 20,
            ..EchoRequest::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut held = Vec::new();
    while let Some(response) = responses.next().await {
        held.push(response.unwrap().payload);
    }
    assert_eq!(held.len(), 4);
    // The payloads are shares of their messages' counted memory.
    let in_use = budget.stats().in_use;
    assert!(in_use >= 4 << 20, "in use {in_use}");
    drop(held);
    drop(responses);
    assert_eq!(budget.stats().in_use, 0);
    server.abort();
}

/// A full-framing Echo service whose ClientStream handler keeps what it
/// receives: each payload (a share of its message's counted memory) goes
/// to a worker through a queue of 3, and the worker keeps it 100 ms, so a
/// stream can hold 5 messages at once. Only ClientStream is served.
struct Keeper;

#[tonic::async_trait]
impl tonic_echo::full::echo_server::Echo for Keeper {
    async fn unary(
        &self,
        _: tonic::Request<EchoRequest>,
    ) -> Result<tonic::Response<EchoResponse>, tonic::Status> {
        Err(tonic::Status::unimplemented("ClientStream only"))
    }

    type ServerStreamStream = tonic_echo::ResponseStream;

    async fn server_stream(
        &self,
        _: tonic::Request<EchoRequest>,
    ) -> Result<tonic::Response<Self::ServerStreamStream>, tonic::Status> {
        Err(tonic::Status::unimplemented("ClientStream only"))
    }

    async fn client_stream(
        &self,
        request: tonic::Request<grpc_stream_codec::tonic::Streaming<EchoRequest>>,
    ) -> Result<tonic::Response<EchoResponse>, tonic::Status> {
        let mut requests = request.into_inner();
        let (kept, mut worker_rx) = tokio::sync::mpsc::channel::<Bytes>(3);
        let worker = tokio::spawn(async move {
            let (mut count, mut total_bytes) = (0u32, 0u64);
            while let Some(payload) = worker_rx.recv().await {
                count += 1;
                total_bytes += payload.len() as u64;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (count, total_bytes)
        });
        while let Some(request) = requests.next().await {
            if kept.send(request?.payload).await.is_err() {
                break;
            }
        }
        drop(kept);
        let (count, total_bytes) = worker
            .await
            .map_err(|error| tonic::Status::internal(error.to_string()))?;
        Ok(tonic::Response::new(EchoResponse {
            count,
            total_bytes,
            ..EchoResponse::default()
        }))
    }

    type BidiStream = tonic_echo::ResponseStream;

    async fn bidi(
        &self,
        _: tonic::Request<grpc_stream_codec::tonic::Streaming<EchoRequest>>,
    ) -> Result<tonic::Response<Self::BidiStream>, tonic::Status> {
        Err(tonic::Status::unimplemented("ClientStream only"))
    }
}

/// `len` bytes that differ per `seed`: `random` pseudo-random bytes, then a
/// 1 KiB pseudo-random block repeated (compresses to about `random` bytes).
fn compressible(len: usize, random: usize, seed: u64) -> Bytes {
    let mut state = 0x2545_F491_4F6C_DD1D ^ seed.wrapping_mul(0x9E37_79B9);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as u8
    };
    let mut payload: Vec<u8> = (0..random.min(len)).map(|_| next()).collect();
    let block: Vec<u8> = (0..1024).map(|_| next()).collect();
    while payload.len() < len {
        let take = (len - payload.len()).min(block.len());
        payload.extend_from_slice(&block[..take]);
    }
    Bytes::from(payload)
}

const UPLOADS: usize = 24;
const UPLOAD_MESSAGES: usize = 6;
const UPLOAD_MESSAGE: usize = 256 * 1024;
const UPLOAD_LIMIT: usize = 320 * 1024;
const UPLOAD_BUDGET: usize = 4 << 20;

/// 24 uploads of 6 compressed 256 KiB messages over loopback to a
/// full-framing server whose handlers keep them (up to 30 MiB at once if
/// nothing held them back) against a 4 MiB budget, the server's windows
/// from `http2_windows`. Half the uploads compress to a few KiB a message,
/// half to about 32 KiB.
async fn keeping_uploads(encoding: tonic::codec::CompressionEncoding) -> BudgetStats {
    let budget = SharedBudget::new(UPLOAD_BUDGET)
        .with_max_wait(Duration::from_secs(120))
        .with_overdraft_after(Duration::from_millis(5));
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let windows = budget.http2_windows(UPLOADS as u32);
    let service = tonic_echo::full::echo_server::EchoServer::new(Keeper)
        .accept_compressed(encoding)
        .max_decoding_message_size(UPLOAD_LIMIT);
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .initial_stream_window_size(windows.stream)
            .initial_connection_window_size(windows.connection)
            .max_concurrent_streams(windows.max_concurrent_streams)
            .layer(grpc_stream_codec::budget::ReceiveBudgetLayer::new(
                budget.clone(),
            ))
            .add_service(service)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut calls = Vec::new();
    for upload in 0..UPLOADS {
        let random = if upload % 2 == 0 { 0 } else { 32 * 1024 };
        let requests: Vec<EchoRequest> = (0..UPLOAD_MESSAGES)
            .map(|message| EchoRequest {
                payload: compressible(
                    UPLOAD_MESSAGE,
                    random,
                    (upload * UPLOAD_MESSAGES + message) as u64,
                ),
                ..EchoRequest::default()
            })
            .collect();
        let mut client = tonic_echo::full::echo_client::EchoClient::new(channel.clone())
            .send_compressed(encoding);
        calls.push(tokio::spawn(async move {
            client
                .client_stream(tokio_stream::iter(requests))
                .await
                .map(tonic::Response::into_inner)
        }));
    }
    for call in calls {
        let response = call.await.unwrap().unwrap();
        assert_eq!(
            (response.count, response.total_bytes),
            (
                UPLOAD_MESSAGES as u32,
                (UPLOAD_MESSAGES * UPLOAD_MESSAGE) as u64
            )
        );
    }
    server.abort();
    let _ = server.await;
    budget.stats()
}

/// The budget holds with compressed uploads that keep their messages:
/// peak from `BudgetStats` ≤ capacity + one message (compressed bytes and
/// output room, each at most the receive limit) + ungated slabs. With the
/// decompressed output charged but not gated (the grant in
/// `GatedDecompression::poll` skipped) the peaks are 9.5 MiB
/// (gzip) and 16.25 MiB (zstd) against this 5 MiB bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_uploads_that_keep_messages_stay_within_the_bound() {
    use grpc_stream_codec::decode::SLAB_SIZE;
    let bound = UPLOAD_BUDGET + 2 * UPLOAD_LIMIT + UPLOADS * 2 * SLAB_SIZE;
    let mut runs = Vec::new();
    for encoding in [
        tonic::codec::CompressionEncoding::Gzip,
        tonic::codec::CompressionEncoding::Zstd,
    ] {
        let stats = keeping_uploads(encoding).await;
        eprintln!("{encoding:?}: {stats:?}, bound {bound}");
        runs.push((encoding, stats));
    }
    for (encoding, stats) in runs {
        assert!(
            stats.peak <= bound,
            "{encoding:?}: peak {} over the bound {bound}: {stats:?}",
            stats.peak
        );
        assert!(stats.waits > 0, "{encoding:?}: nothing waited: {stats:?}");
        assert_eq!(
            (stats.waiting, stats.timed_out),
            (0, 0),
            "{encoding:?}: {stats:?}"
        );
    }
}

/// A budget layer in front of a service with tonic's stock framing cannot
/// count anything: it says so (a counter, and a warning logged once)
/// instead of doing nothing in silence. In front of the full framing it
/// counts every call and reports none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_layer_on_stock_framing_is_not_silent() {
    use grpc_stream_codec::budget::ReceiveBudgetLayer;

    for stock in [true, false] {
        let budget = SharedBudget::new(16 << 20);
        let layer = ReceiveBudgetLayer::new(budget.clone());
        let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        let mut router = tonic::transport::Server::builder().layer(layer.clone());
        let router = if stock {
            router.add_service(tonic_echo::stock::echo_server::EchoServer::new(
                tonic_echo::EchoService,
            ))
        } else {
            router.add_service(tonic_echo::full::echo_server::EchoServer::new(
                tonic_echo::EchoService,
            ))
        };
        let server = tokio::spawn(
            router.serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
        );
        let stack = if stock {
            ClientStack::Stock
        } else {
            ClientStack::Full
        };
        let mut client = EchoClient::connect_with(format!("http://{addr}"), stack, None)
            .await
            .unwrap();
        for _ in 0..3 {
            tonic_echo::check_unary(&mut client, 100).await.unwrap();
            tonic_echo::check_client_stream(&mut client, 1000, 3)
                .await
                .unwrap();
        }
        // A call is judged once its request and response are dropped.
        let uncounted = settle(Duration::from_millis(200), Duration::from_secs(10), || {
            layer.uncounted_calls()
        })
        .await;
        if stock {
            assert_eq!(uncounted, 6, "every stock call is reported");
            assert_eq!(budget.stats().peak, 0, "stock tonic counted nothing");
        } else {
            assert_eq!(uncounted, 0, "full-framing calls are counted");
            assert!(budget.stats().peak > 0);
        }

        // The same on a client: the layer on a channel under a stock client.
        let client_budget = SharedBudget::new(16 << 20);
        let client_layer = ReceiveBudgetLayer::new(client_budget.clone());
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let channel = tower::ServiceBuilder::new()
            .layer(client_layer.clone())
            .service(channel);
        let request = || EchoRequest {
            payload: Bytes::from(vec![7; 64 * 1024]),
            ..EchoRequest::default()
        };
        let reply = if stock {
            tonic_echo::stock::echo_client::EchoClient::new(channel)
                .unary(request())
                .await
        } else {
            tonic_echo::full::echo_client::EchoClient::new(channel)
                .unary(request())
                .await
        };
        assert_eq!(reply.unwrap().into_inner().payload.len(), 64 * 1024);
        let uncounted = settle(Duration::from_millis(200), Duration::from_secs(10), || {
            client_layer.uncounted_calls()
        })
        .await;
        assert_eq!(uncounted, u64::from(stock), "stock client: {stock}");
        assert_eq!(
            client_budget.stats().peak > 0,
            !stock,
            "stock client: {stock}"
        );
        server.abort();
    }
}

/// A ClientStream handler that gives its request stream a budget of its
/// own (`Streaming::with_budget`) and waits for `go` before reading.
struct OwnBudget {
    budget: SharedBudget,
    go: std::sync::Arc<tokio::sync::Notify>,
}

#[tonic::async_trait]
impl tonic_echo::full::echo_server::Echo for OwnBudget {
    async fn unary(
        &self,
        _: tonic::Request<EchoRequest>,
    ) -> Result<tonic::Response<EchoResponse>, tonic::Status> {
        Err(tonic::Status::unimplemented("ClientStream only"))
    }

    type ServerStreamStream = tonic_echo::ResponseStream;

    async fn server_stream(
        &self,
        _: tonic::Request<EchoRequest>,
    ) -> Result<tonic::Response<Self::ServerStreamStream>, tonic::Status> {
        Err(tonic::Status::unimplemented("ClientStream only"))
    }

    async fn client_stream(
        &self,
        request: tonic::Request<grpc_stream_codec::tonic::Streaming<EchoRequest>>,
    ) -> Result<tonic::Response<EchoResponse>, tonic::Status> {
        let mut requests = request.into_inner().with_budget(self.budget.clone());
        self.go.notified().await;
        let mut count = 0;
        while let Some(request) = requests.next().await {
            request?;
            count += 1;
        }
        Ok(tonic::Response::new(EchoResponse {
            count,
            ..EchoResponse::default()
        }))
    }

    type BidiStream = tonic_echo::ResponseStream;

    async fn bidi(
        &self,
        _: tonic::Request<grpc_stream_codec::tonic::Streaming<EchoRequest>>,
    ) -> Result<tonic::Response<Self::BidiStream>, tonic::Status> {
        Err(tonic::Status::unimplemented("ClientStream only"))
    }
}

/// A budget a handler sets on its request stream counts what is read
/// ahead of it too: small frames taken out of h2 while the handler has not
/// read are in the budget's figures, and leave them once read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_budget_counts_what_is_read_ahead() {
    let budget = SharedBudget::new(16 << 20);
    let go = std::sync::Arc::new(tokio::sync::Notify::new());
    let (listener, addr) = tonic_echo::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let service = tonic_echo::full::echo_server::EchoServer::new(OwnBudget {
        budget: budget.clone(),
        go: go.clone(),
    });
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );

    // 200 small messages, each in a DATA frame of its own.
    let mut client = test_support::raw_h2::connect(addr)
        .await
        .ready()
        .await
        .unwrap();
    let request = test_support::raw_h2::grpc_request("/streamcodec.echo.v1.Echo/ClientStream", &[]);
    let (response, mut send) = client.send_request(request, false).unwrap();
    let message = test_support::raw_h2::envelope(0, &[0x0a, 3, 1, 2, 3]);
    for _ in 0..200 {
        send.send_data(Bytes::from(message.clone()), false).unwrap();
    }
    let held = settle(Duration::from_millis(200), Duration::from_secs(10), || {
        budget.stats().in_use
    })
    .await;
    assert!(
        held >= 200 * message.len(),
        "what is read ahead counts against the stream's budget: {:?}",
        budget.stats()
    );

    go.notify_one();
    send.send_data(Bytes::new(), true).unwrap();
    let reply = test_support::raw_h2::read_response(response.await.unwrap()).await;
    assert_eq!(reply.grpc_status(), Some(0), "{}", reply.grpc_message());
    let after = settle(Duration::from_millis(100), Duration::from_secs(10), || {
        budget.stats().in_use
    })
    .await;
    assert_eq!(after, 0, "{:?}", budget.stats());
    server.abort();
}
