//! `grpc-timeout`: reading it, and ending a streaming call when it passes.
//!
//! tonic and volo-grpc bound a call by its deadline only until the response
//! headers; a streaming response then runs as long as its handler produces.
//! [`ServerResponse`] ends a server's response body at the deadline with
//! `DEADLINE_EXCEEDED` in its trailers (dropping the handler's response
//! source), and [`ClientDeadline`] fails a client's request and response
//! bodies at the deadline it sent, as grpc-go and C-core do.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName};
use http_body::{Body, Frame, SizeHint};

use super::message_bytes::MessageBytes;
use super::read_ahead::{BoxError, Pump, TransportBody};
use crate::PolledFrame;
use crate::observe::ServerCall;
use crate::status::{Code, Status};

/// The header a caller's deadline travels in (a name, not a `&str`: a
/// lookup by `&str` parses it on every call).
pub const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");

/// A future that completes when the deadline passes.
pub type Timer = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A [`Timer`] that completes `timeout` from now, on tokio's clock (which
/// both frameworks run on). The sleep is made on its first poll, so a call
/// that ends first never registers one.
pub fn timer_for(timeout: Duration) -> Timer {
    timer_at(tokio::time::Instant::now() + timeout)
}

/// A [`Timer`] that completes at `deadline`. Timers of one call share the
/// instant, so they fire in the same turn of tokio's timer: a body that
/// sees the reset another made at the deadline finds its own timer fired.
pub fn timer_at(deadline: tokio::time::Instant) -> Timer {
    Box::pin(async move { tokio::time::sleep_until(deadline).await })
}

/// The timeout `headers` carry in `grpc-timeout`: 1 to 8 digits and a unit
/// (`H`, `M`, `S`, `m`, `u`, `n`); `None` when absent or malformed.
pub fn timeout_from_headers(headers: &HeaderMap) -> Option<Duration> {
    parse_timeout(headers.get(GRPC_TIMEOUT)?.as_bytes())
}

/// Parses one `grpc-timeout` value (see [`timeout_from_headers`]).
pub fn parse_timeout(value: &[u8]) -> Option<Duration> {
    let (unit, digits) = value.split_last()?;
    if !(1..=8).contains(&digits.len()) || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // At most 8 digits: fits a u64 with room for any unit's factor.
    let count = digits
        .iter()
        .fold(0u64, |total, digit| total * 10 + u64::from(digit - b'0'));
    Some(match unit {
        b'H' => Duration::from_secs(count * 3600),
        b'M' => Duration::from_secs(count * 60),
        b'S' => Duration::from_secs(count),
        b'm' => Duration::from_millis(count),
        b'u' => Duration::from_micros(count),
        b'n' => Duration::from_nanos(count),
        _ => return None,
    })
}

/// The status of a call whose deadline passed.
pub fn deadline_exceeded() -> Status {
    Status::new(Code::DeadlineExceeded, "Deadline Exceeded")
}

pin_project_lite::pin_project! {
    /// A server's response body as the call layer watches it: it ends at the
    /// call's deadline, drives the request's [`Pump`] whenever hyper polls it,
    /// and tells the call's record ([`ServerCall`]) the message bytes sent and
    /// the status.
    ///
    /// At the deadline the request body the handler reads ends with
    /// `DEADLINE_EXCEEDED`; the message being sent, if one is under way, is
    /// sent to its end (it is already encoded: the peer must not see a message
    /// cut short before the status), then the inner body (and with it the
    /// handler's response source) is dropped and the trailers carry that status.
    pub struct ServerResponse<B> {
        #[pin]
        inner: Option<B>,
        timer: Option<Timer>,
        pump: Option<Pump>,
        call: ServerCall,
        // Where the body is in its envelopes, followed while a deadline may
        // cut it or the call is recorded.
        position: MessageBytes,
        // The deadline passed inside a message: the rest of it goes first.
        finishing: bool,
        // Whether the deadline's trailers have been sent.
        expired: bool,
    }
}

impl<B> ServerResponse<B> {
    /// `inner` watched as [`new`](Self::new) watches it, or `inner` itself
    /// (`Err`) when there is nothing to watch: no deadline, a request
    /// already read to its end (every unary one), so nothing left to pump,
    /// and a call not recorded.
    pub fn watching(
        inner: B,
        timer: Option<Timer>,
        pump: Option<Pump>,
        call: ServerCall,
    ) -> Result<Self, B> {
        let pump = pump.filter(|pump| !pump.finished());
        if timer.is_none() && pump.is_none() && !call.is_recorded() {
            return Err(inner);
        }
        Ok(ServerResponse::new(inner, timer, pump, call))
    }

    /// `inner`, ended when `timer` completes, pumping `pump`, recorded in
    /// `call`.
    pub fn new(inner: B, timer: Option<Timer>, pump: Option<Pump>, call: ServerCall) -> Self {
        ServerResponse {
            inner: Some(inner),
            timer,
            pump,
            call,
            position: MessageBytes::default(),
            finishing: false,
            expired: false,
        }
    }
}

impl<B> Body for ServerResponse<B>
where
    B: Body<Data = Bytes>,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame<B::Error> {
        let mut this = self.project();
        if let Some(pump) = this.pump.as_ref() {
            pump.pump(cx);
        }
        if let Some(timer) = this.timer.as_mut()
            && timer.as_mut().poll(cx).is_ready()
        {
            *this.timer = None;
            if let Some(pump) = this.pump.take() {
                pump.end_with(deadline_exceeded());
            }
            *this.finishing = true;
        }
        if *this.finishing {
            // After the deadline: the rest of the message under way, then
            // the trailers.
            if !this.position.at_boundary()
                && let Some(inner) = this.inner.as_mut().as_pin_mut()
            {
                let frame = std::task::ready!(inner.poll_frame(cx));
                // Trailers, an end or an error inside the message: nothing
                // more of it comes, and the deadline's status follows at
                // once.
                if let Some(Ok(frame)) = frame
                    && let Ok(mut data) = frame.into_data()
                {
                    let rest = this.position.feed_to_message_end(&data);
                    this.call.set_sent(this.position.total());
                    data.truncate(rest);
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
            }
            this.inner.set(None);
            *this.finishing = false;
            *this.expired = true;
            this.call.finish(Code::DeadlineExceeded);
            let mut trailers = HeaderMap::new();
            deadline_exceeded().write_headers(&mut trailers);
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        let Some(inner) = this.inner.as_mut().as_pin_mut() else {
            return Poll::Ready(None);
        };
        let frame = inner.poll_frame(cx);
        match &frame {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    if this.timer.is_some() || this.call.is_recorded() {
                        this.position.feed(data);
                        this.call.set_sent(this.position.total());
                    }
                } else if let Some(trailers) = frame.trailers_ref() {
                    this.call.trailers(trailers);
                }
            }
            // A body error resets the stream: the peer sees no status.
            Poll::Ready(Some(Err(_))) => this.call.finish(Code::Internal),
            Poll::Ready(None) => {
                // Ended in time: nothing more to watch. An end without
                // trailers carries no status.
                this.inner.set(None);
                *this.timer = None;
                *this.pump = None;
                this.call.finish(Code::Unknown);
            }
            Poll::Pending => {}
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Some(inner) => inner.is_end_stream(),
            None => true,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Some(inner) if self.timer.is_none() && !self.finishing => inner.size_hint(),
            _ => SizeHint::default(),
        }
    }
}

impl<B> std::fmt::Debug for ServerResponse<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerResponse")
            .field("armed", &self.timer.is_some())
            .field("expired", &self.expired)
            .finish_non_exhaustive()
    }
}

/// A client's body that fails with `DEADLINE_EXCEEDED` at the deadline the
/// client sent, dropping the body it wraps. Around the response body, the
/// call's reader sees the status; around the request body, the HTTP client
/// resets the stream, so a request stream still open (bidi, client
/// streaming) ends too, with the server's handler and the client's task
/// sending it. Without a deadline it is the body it wraps.
pub struct ClientDeadline<B> {
    inner: Option<Pin<Box<B>>>,
    timer: Option<Timer>,
    /// The instant `timer` completes at, when known: an error that arrives
    /// once it has passed is the deadline's even before tokio's timer has
    /// fired (it fires on its next tick, up to a millisecond later, and the
    /// peer's reset at the same deadline can arrive first).
    deadline: Option<tokio::time::Instant>,
    /// The body has yielded trailers (a response's status).
    trailers_seen: bool,
}

impl<B> ClientDeadline<B> {
    /// `inner`, failed when `timer` completes.
    pub fn new(inner: B, timer: Option<Timer>) -> Self {
        ClientDeadline {
            inner: Some(Box::pin(inner)),
            timer,
            deadline: None,
            trailers_seen: false,
        }
    }

    /// `inner`, failed at `deadline`.
    pub fn at(inner: B, deadline: Option<tokio::time::Instant>) -> Self {
        ClientDeadline::new(inner, deadline.map(timer_at)).completing_at(deadline)
    }

    /// Names the instant the timer completes at.
    pub(crate) fn completing_at(mut self, deadline: Option<tokio::time::Instant>) -> Self {
        self.deadline = deadline;
        self
    }
}

/// Whether `timer` has completed, or the instant it completes at has
/// passed (see [`ClientDeadline`]'s `deadline`).
fn has_passed(
    timer: &mut Timer,
    deadline: Option<tokio::time::Instant>,
    cx: &mut Context<'_>,
) -> bool {
    timer.as_mut().poll(cx).is_ready() || passed(deadline)
}

/// Whether `deadline` has passed on tokio's clock, which its timers follow
/// (`false` without one).
pub(crate) fn passed(deadline: Option<tokio::time::Instant>) -> bool {
    deadline.is_some_and(|deadline| tokio::time::Instant::now() >= deadline)
}

impl<B: TransportBody> Body for ClientDeadline<B> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame<BoxError> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = inner.as_mut().poll_frame(cx);
        let Some(timer) = this.timer.as_mut() else {
            return polled.map(|frame| frame.map(|frame| frame.map_err(Into::into)));
        };
        match polled {
            // An error at the deadline is the reset the call's other body
            // made when it reached the same deadline, and an end without
            // trailers then is such a reset as h2 reports some (a stream
            // reset with NO_ERROR ends cleanly): the deadline it is.
            Poll::Ready(Some(Err(_))) if has_passed(timer, this.deadline, cx) => {}
            Poll::Ready(None) if !this.trailers_seen && has_passed(timer, this.deadline, cx) => {}
            Poll::Ready(frame) => {
                match &frame {
                    None => this.inner = None,
                    Some(Ok(frame)) if frame.is_trailers() => this.trailers_seen = true,
                    Some(_) => {}
                }
                return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
            }
            Poll::Pending if timer.as_mut().poll(cx).is_ready() => {}
            Poll::Pending => return Poll::Pending,
        }
        this.inner = None;
        Poll::Ready(Some(Err(Box::new(deadline_exceeded()))))
    }

    fn is_end_stream(&self) -> bool {
        self.inner
            .as_ref()
            .is_none_or(|inner| inner.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        match (&self.inner, &self.timer) {
            (Some(inner), None) => inner.size_hint(),
            _ => SizeHint::default(),
        }
    }
}

impl<B> std::fmt::Debug for ClientDeadline<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientDeadline")
            .field("ended", &self.inner.is_none())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::task::Waker;

    use http_body_util::{Empty, StreamBody};

    use super::*;

    fn poll_once<B: TransportBody>(body: &mut ClientDeadline<B>) -> PolledFrame<BoxError> {
        Pin::new(body).poll_frame(&mut Context::from_waker(Waker::noop()))
    }

    fn is_deadline(polled: PolledFrame<BoxError>) -> bool {
        matches!(polled, Poll::Ready(Some(Err(error)))
            if error.downcast_ref::<Status>().is_some_and(|s| s.code() == Code::DeadlineExceeded))
    }

    #[test]
    fn an_end_without_trailers_at_the_deadline_is_the_deadline() {
        let passed: Timer = Box::pin(std::future::ready(()));
        let mut body = ClientDeadline::new(Empty::<Bytes>::new(), Some(passed));
        assert!(is_deadline(poll_once(&mut body)));

        // Before the deadline, the same end is the body's own.
        let pending: Timer = Box::pin(std::future::pending());
        let mut body = ClientDeadline::new(Empty::<Bytes>::new(), Some(pending));
        assert!(matches!(poll_once(&mut body), Poll::Ready(None)));
    }

    #[test]
    fn an_error_past_the_deadline_is_the_deadline_before_the_timer_fires() {
        // The peer's reset at the same deadline can arrive before tokio's
        // timer has fired (it fires on its next tick).
        let reset = || {
            let frames = futures_util::stream::iter([Err::<Frame<Bytes>, _>(
                std::io::Error::other("stream reset"),
            )]);
            StreamBody::new(frames)
        };
        let not_fired: Timer = Box::pin(std::future::pending());
        let passed = tokio::time::Instant::now() - Duration::from_millis(1);
        let mut body = ClientDeadline::new(reset(), Some(not_fired)).completing_at(Some(passed));
        assert!(is_deadline(poll_once(&mut body)));

        // Before the deadline, the same error is the body's own.
        let not_fired: Timer = Box::pin(std::future::pending());
        let ahead = tokio::time::Instant::now() + Duration::from_secs(60);
        let mut body = ClientDeadline::new(reset(), Some(not_fired)).completing_at(Some(ahead));
        assert!(
            matches!(poll_once(&mut body), Poll::Ready(Some(Err(error))) if !error.is::<Status>())
        );
    }

    #[test]
    fn an_end_after_trailers_stays_an_end_at_the_deadline() {
        let mut trailers = HeaderMap::new();
        Status::new(Code::Ok, "").write_headers(&mut trailers);
        let frames = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(
            Frame::<Bytes>::trailers(trailers),
        )]);
        let passed: Timer = Box::pin(std::future::ready(()));
        let mut body = ClientDeadline::new(StreamBody::new(frames), Some(passed));
        let first = poll_once(&mut body);
        assert!(matches!(&first, Poll::Ready(Some(Ok(frame))) if frame.is_trailers()));
        assert!(matches!(poll_once(&mut body), Poll::Ready(None)));
    }

    fn data(polled: PolledFrame<std::convert::Infallible>) -> Bytes {
        match polled {
            Poll::Ready(Some(Ok(frame))) => frame.into_data().expect("a data frame"),
            _ => panic!("no frame"),
        }
    }

    #[test]
    fn a_deadline_inside_a_message_sends_the_rest_of_it_first() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};

        // Two 6-byte messages, the first cut across two frames.
        let chunks: [&'static [u8]; 3] = [b"\0\0\0\0\x06ab", b"cdef\0\0\0\0", b"\x06ghijkl"];
        let frames = chunks
            .map(|chunk| Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from_static(chunk))));
        let inner = StreamBody::new(futures_util::stream::iter(frames));
        let passed = Arc::new(AtomicBool::new(false));
        let timer: Timer = Box::pin({
            let passed = passed.clone();
            std::future::poll_fn(move |_| {
                if passed.load(Ordering::Relaxed) {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
        });
        let mut body = ServerResponse::new(inner, Some(timer), None, ServerCall::default());
        let mut cx = Context::from_waker(Waker::noop());
        let mut sent = data(Pin::new(&mut body).poll_frame(&mut cx)).to_vec();
        passed.store(true, Ordering::Relaxed);
        sent.extend_from_slice(&data(Pin::new(&mut body).poll_frame(&mut cx)));
        assert_eq!(
            sent, b"\0\0\0\0\x06abcdef",
            "the first message whole, no more"
        );
        let end = Pin::new(&mut body).poll_frame(&mut cx);
        assert!(
            matches!(&end, Poll::Ready(Some(Ok(frame)))
                if frame.trailers_ref().is_some_and(|t| t["grpc-status"] == "4")),
            "{end:?}"
        );
        assert!(matches!(
            Pin::new(&mut body).poll_frame(&mut cx),
            Poll::Ready(None)
        ));
    }

    #[test]
    fn timeouts_parse_as_the_spec_writes_them() {
        assert_eq!(parse_timeout(b"200m"), Some(Duration::from_millis(200)));
        assert_eq!(parse_timeout(b"1H"), Some(Duration::from_secs(3600)));
        assert_eq!(
            parse_timeout(b"99999999n"),
            Some(Duration::from_nanos(99_999_999))
        );
        assert_eq!(
            parse_timeout(b"99999999H"),
            Some(Duration::from_secs(99_999_999 * 3600))
        );
        for bad in [&b""[..], b"m", b"123456789m", b"12x", b"-1S", b"1.5S"] {
            assert_eq!(parse_timeout(bad), None, "{bad:?}");
        }
    }
}
