//! Taking a request body's frames out of the transport as they arrive, ahead
//! of the handler that reads them.
//!
//! h2 counts every buffered DATA frame of under 256 bytes against one
//! connection-wide budget (half the connection window) and closes the whole
//! connection with `ENHANCE_YOUR_CALM` when unread small frames exceed it;
//! the budget comes back only as the application reads the frames. A client
//! that sends each small message in its own frame (grpc-go and grpc-js do)
//! therefore brings the connection down when a handler reads slower than it
//! sends. [`ReadAhead`] splits a body in two: the [`ReadAheadBody`] the
//! handler reads, and a [`Pump`] that the call's own future and response
//! body poll, which moves ready frames out of the transport into a bounded
//! backlog. Small frames are copied into contiguous chunks (a few bytes
//! each instead of a frame's bookkeeping); a large one is kept as it is and
//! stops the read-ahead until the handler has read it.
//!
//! The backlog holds at most [`READ_AHEAD_MAX`] bytes (and, on a budgeted
//! stream, only what the receive budget grants); past that the pump stops
//! and HTTP/2 flow control holds the peer, as without it.
//!
//! A pump takes nothing until it is [armed](Pump::arm) with the stream's
//! budget, which happens where the call's request stream is made: only a
//! request this crate decodes is read ahead, and every byte read ahead is
//! counted against the budget the decoder counts against, on every
//! framework.

use std::collections::VecDeque;
use std::error::Error as StdError;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

use crate::PolledFrame;
use crate::budget::{Budget, Held};
use crate::status::Status;

/// The most of a request body taken ahead of its reader: 256 KiB, room for
/// about 17,000 unread 10-byte messages each in its own frame (h2 alone
/// holds about 2,000 of them before it closes the connection).
pub const READ_AHEAD_MAX: usize = 256 * 1024;

/// Frames shorter than this are the ones h2 charges for; they are copied
/// into the backlog's contiguous buffer instead of being kept whole.
const SMALL_FRAME: usize = 256;

/// The size of the first buffer small frames are copied into after the
/// backlog emptied: in step with a reader that keeps up, each chunk holds a
/// frame or two, and an allocation of this size is a cheap one.
const FIRST_CHUNK: usize = 1024;

/// The largest buffer small frames are copied into: chunks double up to it
/// while they fill (a peer sending faster than the handler reads).
const LAST_CHUNK: usize = 16 * 1024;

const _: () = assert!(SMALL_FRAME <= FIRST_CHUNK && FIRST_CHUNK <= LAST_CHUNK);

/// The error type of [`ReadAheadBody`]: the inner body's error, boxed, or
/// this crate's [`Status`] when the call was ended (its deadline passed).
pub type BoxError = Box<dyn StdError + Send + Sync>;

/// A transport's body as the client call bodies wrap it: bytes, and an
/// error that can be boxed into [`BoxError`].
pub trait TransportBody: Body<Data = Bytes, Error: Into<BoxError>> {}

impl<B> TransportBody for B
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
}

/// A server request's transport body as the call layer reads it: bytes, and
/// errors that are already this crate's [`Status`] (each adapter maps its
/// transport's errors once, where it takes the body), so a request's errors
/// stay statuses from the transport to the decoder.
pub trait RequestTransport: Body<Data = Bytes, Error = Status> + Unpin + Send + 'static {}

impl<B> RequestTransport for B where B: Body<Data = Bytes, Error = Status> + Unpin + Send + 'static {}

/// Splits `body` into the body a handler reads and the pump that reads
/// ahead of it (see the module docs). The pump takes nothing until
/// [`Pump::arm`] gives it the stream's budget.
pub fn read_ahead<B>(body: B) -> (ReadAheadBody<B>, Pump)
where
    B: RequestTransport,
{
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            body: Some(body),
            backlog: Backlog::new(),
            end: None,
            armed: false,
            waking: None,
            waiting_reader: None,
            budget: None,
        }),
    });
    let pump_shared: Arc<dyn Pumpable> = shared.clone();
    let pump = Pump {
        shared: pump_shared,
    };
    (ReadAheadBody { shared }, pump)
}

/// The half of a [`read_ahead`] split that the handler reads: the request
/// body, frames taken ahead first.
pub struct ReadAheadBody<B> {
    shared: Arc<Shared<B>>,
}

/// The half of a [`read_ahead`] split that moves ready frames into the
/// backlog. Cheap to clone; every clone drives the same body.
#[derive(Clone)]
pub struct Pump {
    shared: Arc<dyn Pumpable>,
}

impl std::fmt::Debug for Pump {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pump").finish_non_exhaustive()
    }
}

impl Pump {
    /// Takes every frame the body has ready, up to the bound, registering
    /// `cx` to be woken when more arrive; nothing before [`arm`](Self::arm).
    /// Returns whether the pump is armed.
    pub fn pump(&self, cx: &mut Context<'_>) -> bool {
        self.shared.pump(cx)
    }

    /// Lets the pump read ahead, counting what it holds against `budget`
    /// (the one the request's decoder counts against). Arming again moves
    /// what is held to the new budget.
    pub fn arm(&self, budget: Option<Budget>) {
        self.shared.arm(budget);
    }

    /// Ends the reader's body with `status` after what it already holds is
    /// discarded, and drops the transport body (the call is over).
    pub fn end_with(&self, status: Status) {
        self.shared.end_with(status);
    }

    /// Whether nothing is left to read from the transport: the body ended,
    /// failed, was ended, or its reader is gone. A finished pump needs no
    /// more polling, so a response need not carry it.
    pub fn finished(&self) -> bool {
        self.shared.finished()
    }
}

/// The pump's view of the shared state, without the body's type.
trait Pumpable: Send + Sync {
    fn pump(&self, cx: &mut Context<'_>) -> bool;
    fn arm(&self, budget: Option<Budget>);
    fn end_with(&self, status: Status);
    fn finished(&self) -> bool;
}

struct Shared<B> {
    state: Mutex<State<B>>,
}

struct State<B> {
    /// `None` once it ended, failed, or the call was ended.
    body: Option<B>,
    backlog: Backlog,
    /// What follows the backlog: the body's trailers, error or end.
    end: Option<End>,
    /// Whether the request's stream has been made: only then is it read
    /// ahead, against `budget`.
    armed: bool,
    /// Made when the pump first runs: from then on the transport is polled
    /// with a waker for both reader and pump. Until then the reader polls
    /// it with its own, and a call that reads its request through before
    /// it first waits (every unary one) never pays for the pump.
    waking: Option<Waking>,
    /// The reader's waker while it waits on the transport with its own
    /// (before `waking`): handed to `waking` when that is made, since the
    /// transport then wakes `waking`'s waker instead.
    waiting_reader: Option<Waker>,
    budget: Option<Held>,
}

/// The waker the transport is polled with once the pump runs.
struct Waking {
    wakers: Arc<Wakers>,
    waker: Waker,
}

impl Waking {
    fn new(reader: Option<Waker>) -> Self {
        let wakers = Arc::new(Wakers {
            reader: Mutex::new(reader),
            pump: Mutex::new(None),
        });
        Waking {
            waker: Waker::from(wakers.clone()),
            wakers,
        }
    }

    fn poll<B: RequestTransport>(&self, body: &mut B) -> PolledFrame<Status> {
        Pin::new(body).poll_frame(&mut Context::from_waker(&self.waker))
    }
}

enum End {
    Trailers(HeaderMap),
    Error(Status),
    Finished,
}

/// Frames taken ahead, in order: whole large frames and sealed chunks of
/// copied small ones, then the chunk small frames are being copied into.
///
/// The chunk small frames are copied into is handed over whole when it is
/// sealed or read: `small` holds an allocation only while it holds unread
/// bytes, so a stream that sits idle pins no chunk.
#[derive(Default)]
struct Backlog {
    /// Each with whether it is a large frame (kept whole).
    frames: VecDeque<(Bytes, bool)>,
    small: BytesMut,
    /// The capacity of the next chunk (0 for [`FIRST_CHUNK`]).
    next_chunk: usize,
    len: usize,
    /// Large frames held: while there is one, nothing more is taken ahead.
    large: usize,
    /// Whether `len` is added to the process's read-ahead instrument: fixed
    /// when the call starts, so what is added is also taken away.
    counted: bool,
}

impl Backlog {
    fn new() -> Self {
        Self::with_counted(crate::observe::read_ahead_counted())
    }

    fn with_counted(counted: bool) -> Self {
        Backlog {
            frames: VecDeque::new(),
            small: BytesMut::new(),
            next_chunk: 0,
            len: 0,
            large: 0,
            counted,
        }
    }

    fn push(&mut self, data: Bytes) {
        self.len += data.len();
        if self.counted {
            crate::observe::read_ahead_held(data.len() as i64);
        }
        if data.len() < SMALL_FRAME {
            if self.small.capacity() - self.small.len() < data.len() {
                // Chunks of a fixed size each: no buffer grows (and copies).
                if !self.small.is_empty() {
                    // A chunk filled before the reader took it.
                    self.next_chunk = (self.next_chunk.max(FIRST_CHUNK) * 2).min(LAST_CHUNK);
                }
                self.seal_small();
                self.small = BytesMut::with_capacity(self.next_chunk.max(FIRST_CHUNK));
            }
            self.small.extend_from_slice(&data);
        } else {
            self.seal_small();
            self.large += 1;
            self.frames.push_back((data, true));
        }
    }

    /// Whether more may be taken ahead: below the bound, and no large frame
    /// held (h2 does not charge for those, and flow control keeps the rest
    /// of a large message where it is, as without the read-ahead).
    fn has_room(&self) -> bool {
        self.len < READ_AHEAD_MAX && self.large == 0
    }

    fn seal_small(&mut self) {
        if !self.small.is_empty() {
            let chunk = std::mem::take(&mut self.small).freeze();
            self.frames.push_back((chunk, false));
        }
    }

    fn pop(&mut self) -> Option<Bytes> {
        let data = match self.frames.pop_front() {
            Some((data, large)) => {
                self.large -= usize::from(large);
                data
            }
            None if !self.small.is_empty() => {
                // The backlog is empty now: the next burst starts small.
                self.next_chunk = 0;
                std::mem::take(&mut self.small).freeze()
            }
            None => return None,
        };
        self.len -= data.len();
        if self.counted {
            crate::observe::read_ahead_held(-(data.len() as i64));
        }
        debug_assert!(self.len == 0 || !self.frames.is_empty() || !self.small.is_empty());
        Some(data)
    }

    fn clear(&mut self) {
        // The dropped backlog gives its bytes back.
        *self = Backlog::with_counted(self.counted);
    }
}

impl Drop for Backlog {
    fn drop(&mut self) {
        if self.counted && self.len > 0 {
            crate::observe::read_ahead_held(-(self.len as i64));
        }
    }
}

/// The two tasks a frame's arrival may concern: the reader's and the
/// pump's (they differ when a handler reads its stream in a task of its own).
#[derive(Default)]
struct Wakers {
    reader: Mutex<Option<Waker>>,
    pump: Mutex<Option<Waker>>,
}

impl Wakers {
    fn set(slot: &Mutex<Option<Waker>>, waker: &Waker) {
        let mut slot = lock(slot);
        if !slot.as_ref().is_some_and(|held| held.will_wake(waker)) {
            *slot = Some(waker.clone());
        }
    }

    fn wake(slot: &Mutex<Option<Waker>>) {
        if let Some(waker) = lock(slot).take() {
            waker.wake();
        }
    }
}

impl Wake for Wakers {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Whoever polled last, both learn that the body has something.
        Wakers::wake(&self.reader);
        Wakers::wake(&self.pump);
    }
}

/// Locks `mutex`, also after a panic elsewhere: every state it guards is
/// consistent between statements.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<B: RequestTransport> Pumpable for Shared<B> {
    fn pump(&self, cx: &mut Context<'_>) -> bool {
        let mut state = lock(&self.state);
        if !state.armed {
            return false;
        }
        if state.body.is_none() {
            return true;
        }
        let state = &mut *state;
        let waking = match &mut state.waking {
            Some(waking) => waking,
            waking @ None => waking.insert(Waking::new(state.waiting_reader.take())),
        };
        Wakers::set(&waking.wakers.pump, cx.waker());
        let mut took = false;
        while state.backlog.has_room() {
            let Some(body) = state.body.as_mut() else {
                break;
            };
            // A budget with no room for another frame: take nothing, so
            // flow control holds the peer, as for the decoder itself.
            if let Some(held) = state.budget.as_mut()
                && !held.make_room(state.backlog.len + 1)
            {
                break;
            }
            let frame = match waking.poll(body) {
                Poll::Pending => break,
                Poll::Ready(frame) => frame,
            };
            took = true;
            let end = match frame {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        state.backlog.push(data);
                        let covered = match state.budget.as_mut() {
                            Some(held) => held.cover(state.backlog.len),
                            None => true,
                        };
                        if !covered {
                            break;
                        }
                        continue;
                    }
                    Err(frame) => match frame.into_trailers() {
                        Ok(trailers) => End::Trailers(trailers),
                        // Neither data nor trailers: nothing to keep.
                        Err(_) => continue,
                    },
                },
                Some(Err(error)) => End::Error(error),
                None => End::Finished,
            };
            state.backlog.seal_small();
            state.end = Some(end);
            state.body = None;
        }
        if took {
            Wakers::wake(&waking.wakers.reader);
        }
        true
    }

    fn arm(&self, budget: Option<Budget>) {
        let mut state = lock(&self.state);
        state.armed = true;
        // The old account, if any, goes back as the new one covers the
        // backlog.
        state.budget = budget.map(Held::new);
        let backlog = state.backlog.len;
        if let Some(held) = state.budget.as_mut()
            && backlog > 0
        {
            held.cover(backlog);
        }
    }

    fn end_with(&self, status: Status) {
        let mut state = lock(&self.state);
        state.body = None;
        state.backlog.clear();
        if let Some(held) = state.budget.as_mut() {
            held.release_all();
        }
        state.end = Some(End::Error(status));
        // The call's body ends this after polling the pump, which made the
        // shared waker if the stream was armed; an unarmed stream has no
        // reader (the reader is what arms it).
        let wakers = state.waking.as_ref().map(|waking| waking.wakers.clone());
        let waiting = state.waiting_reader.take();
        drop(state);
        if let Some(wakers) = wakers {
            Wakers::wake(&wakers.reader);
        }
        if let Some(waker) = waiting {
            waker.wake();
        }
    }

    fn finished(&self) -> bool {
        lock(&self.state).body.is_none()
    }
}

impl<B: RequestTransport> Body for ReadAheadBody<B> {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame<Status> {
        let shared = &*self.shared;
        let mut state = lock(&shared.state);
        let state = &mut *state;
        if let Some(data) = state.backlog.pop() {
            if let Some(held) = state.budget.as_mut()
                && state.backlog.len == 0
            {
                held.release_all();
            }
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        if let Some(end) = state.end.take() {
            // `end` is reported once; afterwards the body has ended.
            state.end = Some(End::Finished);
            return Poll::Ready(match end {
                End::Trailers(trailers) => Some(Ok(Frame::trailers(trailers))),
                End::Error(error) => Some(Err(error)),
                End::Finished => None,
            });
        }
        let Some(body) = state.body.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = match &state.waking {
            Some(waking) => {
                Wakers::set(&waking.wakers.reader, cx.waker());
                waking.poll(body)
            }
            None => {
                let polled = Pin::new(body).poll_frame(cx);
                if polled.is_pending()
                    && !state
                        .waiting_reader
                        .as_ref()
                        .is_some_and(|waker| waker.will_wake(cx.waker()))
                {
                    state.waiting_reader = Some(cx.waker().clone());
                }
                polled
            }
        };
        match polled {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => {
                state.body = None;
                state.end = Some(End::Finished);
                Poll::Ready(None)
            }
            Poll::Ready(Some(frame)) => Poll::Ready(Some(frame)),
        }
    }

    fn is_end_stream(&self) -> bool {
        let state = lock(&self.shared.state);
        state.body.is_none() && state.backlog.len == 0 && matches!(state.end, Some(End::Finished))
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

impl<B> Drop for ReadAheadBody<B> {
    fn drop(&mut self) {
        // The handler is done with its requests: release the transport
        // stream and what was taken ahead at once, whoever still pumps.
        let mut state = lock(&self.shared.state);
        state.body = None;
        // A backlog never filled (a request read as it came) has nothing to
        // give back.
        if state.backlog.len > 0 || !state.backlog.frames.is_empty() {
            state.backlog.clear();
        }
        state.budget = None;
    }
}

impl<B> std::fmt::Debug for ReadAheadBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.shared.state);
        f.debug_struct("ReadAheadBody")
            .field("held", &state.backlog.len)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small_frame(byte: u8) -> Bytes {
        Bytes::from(vec![byte; 100])
    }

    fn drain(backlog: &mut Backlog) -> Vec<u8> {
        let mut read = Vec::new();
        while let Some(data) = backlog.pop() {
            read.extend_from_slice(&data);
        }
        read
    }

    #[test]
    fn nothing_is_read_ahead_until_armed_and_then_against_the_budget() {
        let frames = (0..10).map(|i| Ok::<_, Status>(Frame::data(small_frame(i))));
        let body = http_body_util::StreamBody::new(futures_util::stream::iter(frames));
        let (reader, pump) = read_ahead(body);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(!pump.pump(&mut cx), "not armed");
        assert_eq!(lock(&reader.shared.state).backlog.len, 0);

        let budget = crate::budget::SharedBudget::new(1 << 20);
        pump.arm(Some(budget.clone().into()));
        assert!(pump.pump(&mut cx));
        assert_eq!(lock(&reader.shared.state).backlog.len, 1000);
        let counted = budget.stats().in_use;
        assert!(counted >= 1000, "the backlog is counted: {counted}");

        // Armed again: what is held moves to the other budget.
        let other = crate::budget::SharedBudget::new(1 << 20);
        pump.arm(Some(other.clone().into()));
        assert_eq!(budget.stats().in_use, 0);
        assert!(other.stats().in_use >= 1000);

        drop(reader);
        assert_eq!(other.stats().in_use, 0, "released with the reader");
    }

    /// A transport body fed by the test, which keeps only the waker of its
    /// last poll (as h2's streams do).
    struct Fed(tokio::sync::mpsc::UnboundedReceiver<Bytes>);

    impl Body for Fed {
        type Data = Bytes;
        type Error = Status;

        fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame<Status> {
            self.0
                .poll_recv(cx)
                .map(|data| data.map(|data| Ok(Frame::data(data))))
        }
    }

    #[derive(Default)]
    struct CountingWaker(std::sync::atomic::AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    #[test]
    fn a_reader_waiting_before_the_pump_first_runs_is_woken_by_what_it_takes() {
        let (feed, fed) = tokio::sync::mpsc::unbounded_channel();
        let (mut reader, pump) = read_ahead(Fed(fed));
        pump.arm(None);
        let reader_woken = Arc::new(CountingWaker::default());
        let reader_waker = Waker::from(reader_woken.clone());
        let mut reader_cx = Context::from_waker(&reader_waker);
        assert!(
            Pin::new(&mut reader)
                .poll_frame(&mut reader_cx)
                .is_pending()
        );

        // The pump's first run polls the transport with its own waker,
        // which replaces the reader's there.
        let mut pump_cx = Context::from_waker(Waker::noop());
        assert!(pump.pump(&mut pump_cx));
        feed.send(small_frame(1)).unwrap();
        assert!(pump.pump(&mut pump_cx));
        assert!(
            reader_woken.0.load(std::sync::atomic::Ordering::Relaxed) > 0,
            "the reader learns of the frame the pump took"
        );
        match Pin::new(&mut reader).poll_frame(&mut reader_cx) {
            Poll::Ready(Some(Ok(frame))) => assert_eq!(frame.into_data().unwrap(), small_frame(1)),
            _ => panic!("the frame the pump took is read"),
        }
    }

    #[test]
    fn a_body_read_through_before_the_pump_runs_finishes_it_unstarted() {
        let (feed, fed) = tokio::sync::mpsc::unbounded_channel();
        let (mut reader, pump) = read_ahead(Fed(fed));
        pump.arm(None);
        feed.send(small_frame(2)).unwrap();
        drop(feed);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(matches!(
            Pin::new(&mut reader).poll_frame(&mut cx),
            Poll::Ready(Some(Ok(_)))
        ));
        assert!(matches!(
            Pin::new(&mut reader).poll_frame(&mut cx),
            Poll::Ready(None)
        ));
        assert!(pump.finished());
        assert!(
            lock(&reader.shared.state).waking.is_none(),
            "the pump's waker is never made"
        );
    }

    #[test]
    fn a_read_backlog_keeps_no_chunk() {
        let mut backlog = Backlog::default();
        for byte in 0..40 {
            backlog.push(small_frame(byte));
        }
        let read = drain(&mut backlog);
        assert_eq!(read.len(), 4000);
        assert!(
            read.chunks(100)
                .enumerate()
                .all(|(i, f)| f.iter().all(|&b| b == i as u8))
        );
        assert_eq!(backlog.small.capacity(), 0, "an idle stream pins no chunk");

        // Sealed at the end of the body (or before a large frame): the chunk
        // leaves with its bytes, not only its filled part.
        backlog.push(small_frame(1));
        backlog.seal_small();
        assert_eq!(backlog.small.capacity(), 0);
        assert_eq!(drain(&mut backlog), vec![1; 100]);
    }

    #[test]
    fn small_frames_are_held_in_few_full_chunks() {
        let mut backlog = Backlog::default();
        let frame = Bytes::from_static(&[7; 15]);
        for _ in 0..10_000 {
            backlog.push(frame.clone());
        }
        backlog.seal_small();
        assert_eq!(backlog.len, 150_000);
        // A chunk is sealed only when the next frame does not fit, so each
        // is full to within a frame: 1, 2, 4, 8 KiB, then 16 KiB ones.
        let chunks: Vec<usize> = backlog.frames.iter().map(|(data, _)| data.len()).collect();
        assert_eq!(
            chunks.len(),
            4 + 150_000usize.div_ceil(16 * 1024) - 1,
            "{chunks:?}"
        );
        let sealed = &chunks[..chunks.len() - 1];
        for (i, &len) in sealed.iter().enumerate() {
            let capacity = (FIRST_CHUNK << i).min(LAST_CHUNK);
            assert!(len > capacity - 15, "chunk {i}: {len} of {capacity}");
        }
    }

    #[test]
    fn chunks_grow_while_they_fill_and_start_small_after_a_read() {
        let mut backlog = Backlog::default();
        backlog.push(small_frame(0));
        assert_eq!(backlog.small.capacity(), FIRST_CHUNK);
        let mut capacities = vec![FIRST_CHUNK];
        for _ in 0..600 {
            backlog.push(small_frame(0));
            if capacities.last() != Some(&backlog.small.capacity()) {
                capacities.push(backlog.small.capacity());
            }
        }
        assert_eq!(capacities, [1024, 2048, 4096, 8192, 16384]);
        drain(&mut backlog);
        backlog.push(small_frame(0));
        assert_eq!(backlog.small.capacity(), FIRST_CHUNK);
    }
}
