//! The connector [`client_transport`](super::client_transport)'s HTTP/2
//! client dials with: volo's transport maker (its connect, read and write
//! timeouts), and the connection as hyper reads and writes it.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use pin_project_lite::pin_project;
use volo::net::Address;
use volo::net::dial::DefaultMakeTransport;

/// Connects to the request's authority with volo's transport maker.
#[derive(Clone)]
pub(super) struct Connector {
    make: DefaultMakeTransport,
}

impl Connector {
    /// Dials with `make`.
    pub(super) fn new(make: DefaultMakeTransport) -> Self {
        Connector { make }
    }
}

impl tower_service::Service<http::Uri> for Connector {
    type Response = ConnectedIo;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<ConnectedIo>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let make = self.make.clone();
        Box::pin(async move {
            let addr = uri
                .authority()
                .and_then(|authority| authority.as_str().parse::<std::net::SocketAddr>().ok())
                .ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidInput, "authority must be an IP:port")
                })?;
            let conn = motore::service::UnaryService::call(&make, Address::Ip(addr)).await?;
            Ok(ConnectedIo {
                io: TokioIo::new(conn),
            })
        })
    }
}

pin_project! {
    /// A connection made by [`Connector`], as hyper reads and writes it.
    pub(super) struct ConnectedIo {
        #[pin]
        io: TokioIo<volo::net::conn::Conn>,
    }
}

impl Connection for ConnectedIo {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl hyper::rt::Read for ConnectedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        hyper::rt::Read::poll_read(self.project().io, cx, buf)
    }
}

impl hyper::rt::Write for ConnectedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        hyper::rt::Write::poll_write(self.project().io, cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        hyper::rt::Write::poll_flush(self.project().io, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        hyper::rt::Write::poll_shutdown(self.project().io, cx)
    }

    // Forwarded so h2 writes a frame and the body bytes it chains to it in
    // one `writev`: without, it writes each on its own (three or four
    // `sendto` per call where one `writev` does).
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        hyper::rt::Write::poll_write_vectored(self.project().io, cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        hyper::rt::Write::is_write_vectored(&self.io)
    }
}
