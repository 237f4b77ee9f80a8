//! A server request's body, read ahead of its handler only once it may need
//! it, on every framework.
//!
//! Splitting a body for reading ahead ([`read_ahead`]) costs shared state and
//! a lock per frame; a request read through at once (a unary request, or a
//! client's whole stream already arrived) gains nothing from it. So the call
//! keeps the body in a [`RequestScope`]; the request stream borrows it for
//! each read and gives it back, and the body is split (armed with the
//! stream's receive budget, its [`Pump`] left in the scope for the call to
//! drive) only when a poll of the call ends with the body neither ended nor
//! at its end, or the stream waits on it: only then can frames arrive that
//! nobody reads. A request read through within one poll of its call is
//! never split, however many frames it came in.
//!
//! The scope is visible to the stream only while [`ScopedCall`] polls the
//! call. A body the stream has not taken back when that poll returns (a
//! handler that waits before reading, returns its response stream at once,
//! or reads in a task of its own) is split by the call, and the stream finds
//! its half in a process-wide rendezvous: the one path that locks anything
//! shared, taken only by such calls.
//!
//! Each adapter names its transport body and the two places a scope lives
//! with [`request_scope_slots!`]: volo-grpc's generated code makes a
//! request stream inside the call ([`request_body`]), tonic's server makes
//! it before the call ([`RequestScope::holding`]).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::thread::LocalKey;

use bytes::Bytes;
use http_body::{Body, SizeHint};

use super::read_ahead::{Pump, ReadAheadBody, RequestTransport, read_ahead};
use crate::PolledFrame;
use crate::budget::Budget;
#[cfg(feature = "volo")]
use crate::observe::{Method, ServerCall};
use crate::status::Status;

/// A thread-local slot a value is installed in while a future is polled.
pub(crate) type Slot<T> = LocalKey<RefCell<Option<T>>>;

/// Swaps a value into a thread-local slot and back out on drop, so an
/// unwinding poll leaves nothing behind and nested scopes restore the outer.
pub(crate) struct Installed<'a, T: 'static> {
    slot: &'static Slot<T>,
    value: &'a mut Option<T>,
}

impl<'a, T: 'static> Installed<'a, T> {
    /// Installs `value` in `slot` (and takes what was there) until dropped.
    pub(crate) fn swap(slot: &'static Slot<T>, value: &'a mut Option<T>) -> Self {
        slot.with(|cell| std::mem::swap(&mut *cell.borrow_mut(), value));
        Installed { slot, value }
    }
}

impl<T: 'static> Drop for Installed<'_, T> {
    fn drop(&mut self) {
        self.slot
            .with(|cell| std::mem::swap(&mut *cell.borrow_mut(), self.value));
    }
}

/// Where an adapter's calls keep their scopes: the thread-local of the call
/// being polled and the rendezvous of bodies split outside their stream.
/// Made with [`request_scope_slots!`].
pub(crate) trait ScopeSlots: 'static {
    /// The transport body a request stream reads.
    type Body: RequestTransport;

    /// The scope of the call being polled on this thread.
    fn scope() -> &'static Slot<RequestScope<Self::Body>>;

    /// Bodies split by their call for streams read elsewhere, by call number.
    fn rendezvous() -> &'static Rendezvous<Self::Body>;
}

/// Defines `$name`, the [`ScopeSlots`] of request streams over `$body`.
macro_rules! request_scope_slots {
    ($(#[$doc:meta])* $vis:vis $name:ident, $body:ty) => {
        $(#[$doc])*
        $vis struct $name;

        impl $crate::call::ScopeSlots for $name {
            type Body = $body;

            fn scope() -> &'static $crate::call::Slot<$crate::call::RequestScope<$body>> {
                ::std::thread_local! {
                    static SCOPE: ::std::cell::RefCell<
                        ::std::option::Option<$crate::call::RequestScope<$body>>,
                    > = const { ::std::cell::RefCell::new(None) };
                }
                &SCOPE
            }

            fn rendezvous() -> &'static $crate::call::Rendezvous<$body> {
                static RENDEZVOUS: $crate::call::Rendezvous<$body> =
                    $crate::call::Rendezvous::new();
                &RENDEZVOUS
            }
        }
    };
}
pub(crate) use request_scope_slots;

/// Numbers the calls whose request stream was made, so a stream knows its
/// own call's scope (a handler may poll another call).
static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

/// What a call shares with its request stream.
pub(crate) struct RequestScope<B> {
    /// The method a stream made in the call records (volo-grpc's streams
    /// learn it here; tonic's are told).
    #[cfg(feature = "volo")]
    method: Method,
    /// The call's number once its request stream is made (0 before).
    call: u64,
    /// The stream's transport body until the stream reads it, with the
    /// budget it is to be read ahead against.
    escrow: Option<(B, Option<Budget>)>,
    /// The read-ahead's pump, once the body is split.
    pump: Option<Pump>,
    /// The call's record until the response's encoder keeps it
    /// ([`take_response_record`]).
    #[cfg(feature = "volo")]
    record: ServerCall,
}

/// What a call's scope hands on once the call has answered.
#[derive(Default)]
pub(crate) struct ScopeRest {
    /// The read-ahead's pump, when the request body was split: the
    /// response drives it from then on.
    pub(crate) pump: Option<Pump>,
    /// The call's record, unless the response's encoder kept it.
    #[cfg(feature = "volo")]
    pub(crate) record: ServerCall,
}

/// Where a stream's body is when the call's poll has ended before the
/// stream took it back.
enum Handover<B> {
    /// Split by the call: the stream's half, and the pump to arm again.
    Ready(ReadAheadBody<B>, Pump),
    /// The stream asked before the call split the body.
    Waiting(Waker),
    /// The stream was dropped without taking its body.
    Abandoned,
    /// The call was dropped with the body never split: there is nothing to
    /// read (the transport resets the stream).
    Gone,
}

/// The handovers of bodies split by their call, keyed by call number. A
/// sorted map: the keys are the crate's own counters, few at a time, and it
/// needs no hashing.
pub(crate) struct Rendezvous<B> {
    handovers: Mutex<BTreeMap<u64, Handover<B>>>,
}

impl<B> Rendezvous<B> {
    /// An empty rendezvous (a `static`).
    pub(crate) const fn new() -> Self {
        Rendezvous {
            handovers: Mutex::new(BTreeMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Handover<B>>> {
        self.handovers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Runs `f` on the scope of call `call` if this thread is polling it.
fn with_own_scope<S: ScopeSlots, R>(
    call: u64,
    f: impl FnOnce(&mut RequestScope<S::Body>) -> R,
) -> Option<R> {
    S::scope().with(|cell| {
        let mut scope = cell.borrow_mut();
        scope.as_mut().filter(|scope| scope.call == call).map(f)
    })
}

impl<B> RequestScope<B> {
    /// The scope of a call whose request stream is yet to be made (inside
    /// the call, with [`request_body`]); `method` names it. `record` is
    /// the call's, for its response's encoder to keep if it can.
    #[cfg(feature = "volo")]
    pub(crate) fn awaiting_stream(method: Method, record: ServerCall) -> Self {
        RequestScope {
            method,
            call: 0,
            escrow: None,
            pump: None,
            record,
        }
    }

    fn rest(self) -> ScopeRest {
        ScopeRest {
            pump: self.pump,
            #[cfg(feature = "volo")]
            record: self.record,
        }
    }
}

/// The record of the call this thread is polling, for the response body
/// its handler's answer is encoded into now, to record the call itself;
/// nothing outside a call, or once taken.
#[cfg(all(feature = "volo", feature = "opentelemetry"))]
pub(crate) fn take_response_record<S: ScopeSlots>() -> ServerCall {
    S::scope().with(|cell| {
        cell.borrow_mut()
            .as_mut()
            .map(|scope| std::mem::take(&mut scope.record))
            .unwrap_or_default()
    })
}

impl<B: RequestTransport> RequestScope<B> {
    /// The scope of a call whose request stream is made now, over `body`,
    /// its read-ahead (if it comes to one) counted against `budget`; the
    /// stream's body is the second half.
    #[cfg(feature = "tonic")]
    pub(crate) fn holding<S: ScopeSlots<Body = B>>(
        body: B,
        budget: Option<Budget>,
    ) -> (Self, RequestBody<S>) {
        let call = NEXT_CALL.fetch_add(1, Ordering::Relaxed);
        let scope = RequestScope {
            #[cfg(feature = "volo")]
            method: Method::default(),
            call,
            escrow: Some((body, budget)),
            pump: None,
            #[cfg(feature = "volo")]
            record: ServerCall::default(),
        };
        (scope, RequestBody::escrowed(call))
    }

    /// After a poll of the call: a body its stream has not taken back is
    /// split now, the stream's half left in the rendezvous, since the
    /// stream may next be read anywhere (or not for a while).
    fn split_unclaimed<S: ScopeSlots<Body = B>>(&mut self) {
        let Some((body, budget)) = self.escrow.take() else {
            return;
        };
        let (reader, pump) = read_ahead(body);
        pump.arm(budget);
        let mut map = S::rendezvous().lock();
        match map.remove(&self.call) {
            // Dropped unread: nothing to read ahead for.
            Some(Handover::Abandoned) => return,
            Some(Handover::Waiting(waker)) => waker.wake(),
            _ => {}
        }
        map.insert(self.call, Handover::Ready(reader, pump.clone()));
        self.pump = Some(pump);
    }

    /// The call is dropped: a stream that never took its body back finds
    /// nothing to read.
    fn release<S: ScopeSlots<Body = B>>(&mut self) {
        if self.escrow.take().is_none() {
            return;
        }
        let mut map = S::rendezvous().lock();
        match map.remove(&self.call) {
            Some(Handover::Abandoned) => {}
            Some(Handover::Waiting(waker)) => {
                map.insert(self.call, Handover::Gone);
                waker.wake();
            }
            _ => {
                map.insert(self.call, Handover::Gone);
            }
        }
    }
}

/// The body of a request stream made while its call is polled, and the
/// call's method. Inside a call whose stream is yet to be made the body is
/// left with the call; otherwise (no scope, or a second stream in one call)
/// it is read as it comes. The `bool` says whether a scope was found.
#[cfg(feature = "volo")]
pub(crate) fn request_body<S: ScopeSlots>(
    body: S::Body,
    budget: Option<Budget>,
) -> (RequestBody<S>, Method, bool) {
    S::scope().with(|cell| {
        let mut scope = cell.borrow_mut();
        let Some(scope) = scope.as_mut() else {
            return (RequestBody::direct(body), Method::default(), false);
        };
        if scope.call != 0 {
            // A second request stream inside one call (a service calling
            // another in-process): the call minds its own.
            let method = scope.method.for_another_stream();
            return (RequestBody::direct(body), method, true);
        }
        let method = scope.method.clone();
        scope.call = NEXT_CALL.fetch_add(1, Ordering::Relaxed);
        scope.escrow = Some((body, budget));
        (RequestBody::escrowed(scope.call), method, true)
    })
}

/// Counts what the read-ahead of call `call` holds against `budget` from
/// now on: the body still with the call is armed with it when split, a
/// split one moves what it holds. Call 0 (a stream outside any call) has
/// nothing to rearm.
pub(crate) fn rearm_request<S: ScopeSlots>(call: u64, budget: &Budget) {
    if call == 0 {
        return;
    }
    let in_scope = with_own_scope::<S, _>(call, |scope| {
        if let Some((_, armed)) = scope.escrow.as_mut() {
            *armed = Some(budget.clone());
        }
        if let Some(pump) = &scope.pump {
            pump.arm(Some(budget.clone()));
        }
    });
    if in_scope.is_none()
        && let Some(Handover::Ready(_, pump)) = S::rendezvous().lock().get(&call)
    {
        pump.arm(Some(budget.clone()));
    }
}

/// A server request's body as its stream reads it: left with the call until
/// the first read, then read as it comes until it may need reading ahead.
pub(crate) struct RequestBody<S: ScopeSlots> {
    state: BodyState<S::Body>,
    /// The call whose scope holds the body or its pump; 0 outside a call.
    call: u64,
    /// The budget the read-ahead is armed with when this body splits.
    budget: Option<Budget>,
}

enum BodyState<B> {
    /// With the call (in its scope, or in the rendezvous).
    Escrow,
    /// Read as it comes.
    Direct(B),
    /// Split; the call drives the pump.
    ReadAhead(ReadAheadBody<B>),
    /// Nothing more to read.
    Done,
}

impl<S: ScopeSlots> RequestBody<S> {
    #[cfg(feature = "volo")]
    fn direct(body: S::Body) -> Self {
        RequestBody {
            state: BodyState::Direct(body),
            call: 0,
            budget: None,
        }
    }

    fn escrowed(call: u64) -> Self {
        RequestBody {
            state: BodyState::Escrow,
            call,
            budget: None,
        }
    }

    /// The call this body belongs to (0: none), for [`rearm_request`].
    pub(crate) fn call(&self) -> u64 {
        self.call
    }

    /// Takes the body back from the call: from its scope while it polls
    /// the call, else from the rendezvous once it split the body there.
    fn claim(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let call = self.call;
        if let Some(Some((body, budget))) =
            with_own_scope::<S, _>(call, |scope| scope.escrow.take())
        {
            self.state = BodyState::Direct(body);
            self.budget = budget;
            return Poll::Ready(());
        }
        let mut map = S::rendezvous().lock();
        match map.remove(&call) {
            Some(Handover::Ready(reader, _pump)) => {
                self.state = BodyState::ReadAhead(reader);
                Poll::Ready(())
            }
            Some(Handover::Gone) => {
                self.state = BodyState::Done;
                Poll::Ready(())
            }
            Some(Handover::Waiting(_)) | None => {
                map.insert(call, Handover::Waiting(cx.waker().clone()));
                Poll::Pending
            }
            Some(Handover::Abandoned) => {
                // Not this stream's (it is alive): keep the mark.
                map.insert(call, Handover::Abandoned);
                self.state = BodyState::Done;
                Poll::Ready(())
            }
        }
    }

    /// Gives a body read as it comes back to its call between reads, while
    /// the call is polled (outside it, the stream keeps the body).
    fn lend_back(&mut self) {
        let (state, budget) = (&mut self.state, &mut self.budget);
        with_own_scope::<S, _>(self.call, |scope| {
            if let BodyState::Direct(body) = std::mem::replace(state, BodyState::Escrow) {
                scope.escrow = Some((body, budget.take()));
            }
        });
    }

    /// Splits a body read as it comes, inside its call's poll, so the call
    /// takes frames while nobody reads them.
    fn split(&mut self) {
        let (state, budget) = (&mut self.state, &mut self.budget);
        with_own_scope::<S, _>(self.call, |scope| {
            if let BodyState::Direct(body) = std::mem::replace(state, BodyState::Done) {
                let (reader, pump) = read_ahead(body);
                pump.arm(budget.take());
                scope.pump = Some(pump);
                *state = BodyState::ReadAhead(reader);
            }
        });
    }
}

impl<S: ScopeSlots> Body for RequestBody<S> {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame<Status> {
        let this = &mut *self;
        if let BodyState::Escrow = this.state {
            std::task::ready!(this.claim(cx));
        }
        let polled = match &mut this.state {
            BodyState::Direct(body) => Pin::new(body).poll_frame(cx),
            BodyState::ReadAhead(reader) => return Pin::new(reader).poll_frame(cx),
            BodyState::Escrow | BodyState::Done => return Poll::Ready(None),
        };
        let open = match &this.state {
            BodyState::Direct(body) => this.call != 0 && !body.is_end_stream(),
            _ => false,
        };
        match &polled {
            // Between reads the body goes back to its call: if the call's
            // poll ends with it still open, the call splits it then. A
            // request read through within one poll is never split.
            Poll::Ready(Some(Ok(_))) if open => this.lend_back(),
            Poll::Pending if open => {
                // Control leaves the stream with frames still to come: from
                // here on they are taken ahead of it.
                this.split();
                if let BodyState::ReadAhead(reader) = &mut this.state {
                    // The transport holds this task's waker from the poll
                    // that was pending: poll again through the split, so
                    // the pump hands the wake-up over.
                    return Pin::new(reader).poll_frame(cx);
                }
            }
            Poll::Ready(None) => this.state = BodyState::Done,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        match &self.state {
            BodyState::Direct(body) => body.is_end_stream(),
            BodyState::ReadAhead(reader) => reader.is_end_stream(),
            BodyState::Escrow => false,
            BodyState::Done => true,
        }
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

impl<S: ScopeSlots> Drop for RequestBody<S> {
    fn drop(&mut self) {
        if !matches!(self.state, BodyState::Escrow) {
            return;
        }
        // Never read: give the body back to its call, or leave word that
        // nobody will take it.
        let call = self.call;
        if with_own_scope::<S, _>(call, |scope| scope.escrow.take())
            .flatten()
            .is_some()
        {
            return;
        }
        let mut map = S::rendezvous().lock();
        match map.remove(&call) {
            Some(Handover::Ready(..) | Handover::Gone) => {}
            Some(Handover::Waiting(_) | Handover::Abandoned) | None => {
                map.insert(call, Handover::Abandoned);
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// A call's future, polled with its [`RequestScope`] installed; while it
    /// waits it drives the request's read-ahead (once split). Its output
    /// comes with what the scope hands on ([`ScopeRest`]): the pump, for
    /// the response to drive from then on.
    pub(crate) struct ScopedCall<S: ScopeSlots, F> {
        #[pin]
        inner: F,
        scope: Option<RequestScope<S::Body>>,
    }

    impl<S: ScopeSlots, F> PinnedDrop for ScopedCall<S, F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(scope) = this.scope.as_mut() {
                scope.release::<S>();
            }
        }
    }
}

impl<S: ScopeSlots, F> ScopedCall<S, F> {
    /// `inner`, polled with `scope` installed.
    pub(crate) fn new(inner: F, scope: RequestScope<S::Body>) -> Self {
        ScopedCall {
            inner,
            scope: Some(scope),
        }
    }
}

impl<S: ScopeSlots, F: Future> Future for ScopedCall<S, F> {
    type Output = (F::Output, ScopeRest);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let polled = {
            // Swapped back when the poll returns (or unwinds), with what
            // the request stream left in it.
            let _installed = Installed::swap(S::scope(), this.scope);
            this.inner.poll(cx)
        };
        if let Some(scope) = this.scope.as_mut()
            && scope.escrow.is_some()
        {
            scope.split_unclaimed::<S>();
        }
        match polled {
            Poll::Pending => {
                // Waiting: take what is ready now, and be woken for what
                // comes.
                if let Some(pump) = this.scope.as_ref().and_then(|scope| scope.pump.as_ref()) {
                    pump.pump(cx);
                }
                Poll::Pending
            }
            Poll::Ready(output) => {
                let rest = this.scope.take().map(RequestScope::rest);
                Poll::Ready((output, rest.unwrap_or_default()))
            }
        }
    }
}

#[cfg(all(test, feature = "tonic"))]
mod tests {
    use std::collections::VecDeque;

    use http_body::Frame;
    use http_body_util::BodyExt;

    use super::*;
    use crate::budget::SharedBudget;

    type TestBody = Pin<Box<dyn Body<Data = Bytes, Error = Status> + Send>>;

    request_scope_slots!(TestSlots, TestBody);

    /// Frames of 100 bytes, then (when `open`) a body that never ends.
    struct Frames {
        frames: VecDeque<Bytes>,
        open: bool,
    }

    impl Body for Frames {
        type Data = Bytes;
        type Error = Status;

        fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> PolledFrame<Status> {
            match self.frames.pop_front() {
                Some(data) => Poll::Ready(Some(Ok(Frame::data(data)))),
                None if self.open => Poll::Pending,
                None => Poll::Ready(None),
            }
        }

        fn is_end_stream(&self) -> bool {
            self.frames.is_empty() && !self.open
        }
    }

    /// A call's scope over `count` frames, its stream's body, and the
    /// budget the read-ahead counts against (what it took shows there).
    fn scoped(
        count: u8,
        open: bool,
    ) -> (RequestScope<TestBody>, RequestBody<TestSlots>, SharedBudget) {
        let frames = (0..count).map(|i| Bytes::from(vec![i; 100])).collect();
        let body: TestBody = Box::pin(Frames { frames, open });
        let budget = SharedBudget::new(1 << 20);
        let (scope, body) = RequestScope::holding::<TestSlots>(body, Some(budget.clone().into()));
        (scope, body, budget)
    }

    fn poll<F: Future>(call: Pin<&mut F>) -> Poll<F::Output> {
        call.poll(&mut Context::from_waker(Waker::noop()))
    }

    /// A call whose handler never reads its request.
    fn never_reading(
        scope: RequestScope<TestBody>,
    ) -> ScopedCall<TestSlots, std::future::Pending<()>> {
        ScopedCall::new(std::future::pending(), scope)
    }

    fn handed_over(call: u64) -> bool {
        TestSlots::rendezvous().lock().contains_key(&call)
    }

    async fn read_through(mut body: RequestBody<TestSlots>) -> usize {
        let mut bytes = 0;
        while let Some(Ok(frame)) = body.frame().await {
            bytes += frame.data_ref().map_or(0, Bytes::len);
        }
        bytes
    }

    #[test]
    fn a_request_read_through_in_one_poll_is_never_split() {
        // One frame that ends the body (a unary request), or ten.
        for frames in [1, 10] {
            let (scope, body, budget) = scoped(frames, false);
            let call_number = body.call();
            let mut call =
                std::pin::pin!(ScopedCall::<TestSlots, _>::new(read_through(body), scope));
            let Poll::Ready((bytes, rest)) = poll(call.as_mut()) else {
                panic!("the whole request was there to read");
            };
            assert_eq!(bytes, 100 * usize::from(frames));
            assert!(rest.pump.is_none(), "read as it came: no read-ahead");
            assert_eq!(budget.stats().peak, 0, "nothing held ahead of the reader");
            assert!(!handed_over(call_number));
        }
    }

    #[test]
    fn a_stream_waiting_on_its_body_splits_it_in_its_call() {
        let (scope, body, _budget) = scoped(10, true);
        let call_number = body.call();
        let mut call = std::pin::pin!(ScopedCall::<TestSlots, _>::new(read_through(body), scope));
        assert!(poll(call.as_mut()).is_pending());
        let scope = call.scope.as_ref().expect("the call is not over");
        assert!(scope.pump.is_some(), "split when the stream waited");
        assert!(!handed_over(call_number), "split in the call, no handover");
    }

    #[test]
    fn a_stream_that_waits_mid_body_is_read_ahead_by_its_call() {
        let (scope, mut body, budget) = scoped(10, true);
        let reading = async move {
            let first = body.frame().await;
            std::future::pending::<()>().await;
            drop((first, body));
        };
        let mut call = std::pin::pin!(ScopedCall::<TestSlots, _>::new(reading, scope));
        assert!(poll(call.as_mut()).is_pending());
        assert!(
            budget.stats().in_use >= 900,
            "the nine frames after the one read, taken while the handler waits"
        );
    }

    #[test]
    fn a_body_not_taken_in_the_call_is_handed_over_split() {
        let (scope, mut body, budget) = scoped(10, false);
        let call_number = body.call();
        let mut call = std::pin::pin!(never_reading(scope));
        assert!(poll(call.as_mut()).is_pending());
        assert!(handed_over(call_number));
        assert!(
            budget.stats().in_use >= 1000,
            "taken ahead while nobody reads"
        );

        // Read elsewhere: from the rendezvous, every byte.
        let mut bytes = 0;
        while let Poll::Ready(Some(Ok(frame))) =
            Pin::new(&mut body).poll_frame(&mut Context::from_waker(Waker::noop()))
        {
            bytes += frame.data_ref().map_or(0, Bytes::len);
        }
        assert_eq!(bytes, 1000);
        assert!(!handed_over(call_number), "the handover was taken");
    }

    #[test]
    fn a_stream_dropped_unread_leaves_nothing_behind() {
        // Dropped inside the call: the body goes back to the scope.
        let (scope, body, budget) = scoped(10, true);
        let call_number = body.call();
        let mut call = std::pin::pin!(ScopedCall::<TestSlots, _>::new(
            async move {
                drop(body);
                std::future::pending::<()>().await
            },
            scope
        ));
        assert!(poll(call.as_mut()).is_pending());
        assert!(!handed_over(call_number));
        assert_eq!(budget.stats().peak, 0);

        // Dropped after its call split it: the handover goes with it.
        let (scope, body, _budget) = scoped(10, true);
        let call_number = body.call();
        let mut call = std::pin::pin!(never_reading(scope));
        assert!(poll(call.as_mut()).is_pending());
        assert!(handed_over(call_number));
        drop(body);
        assert!(!handed_over(call_number));
    }
}
