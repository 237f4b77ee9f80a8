//! The per-call guard of volo-grpc servers, applied by
//! [`BinaryMetadataLayer`](super::BinaryMetadataLayer): the request body is
//! read ahead of the handler (so h2's small-DATA-frame budget comes back as
//! the peer sends) and a response is ended at the call's `grpc-timeout`
//! with `DEADLINE_EXCEEDED` (see [`crate::call`]).
//!
//! The read-ahead is set up only when a request could need it. Generated
//! code makes the request's stream while the guard polls the call; the
//! stream leaves its transport body with the guard ([`RequestScope`]) and
//! takes it back on its first read. From then on the body is split for
//! reading ahead (armed with the stream's receive budget, its pump handed to
//! the guard) the first time the stream hands control back with the body
//! neither ended nor at its end: only then can frames arrive that nobody
//! reads. A unary or server-streaming request, read through at once, is
//! never split. A body the stream has not taken back when the guard's poll
//! returns (a handler that waits before reading, or reads in a task of its
//! own) is split by the guard, and the stream finds its half in a
//! process-wide rendezvous ([`RENDEZVOUS`]): the one path that locks
//! anything shared, taken only by such calls.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, SizeHint};
use pin_project_lite::pin_project;
use volo_grpc::body::BoxBody;

use super::recv::VoloBody;
use super::scoped::Installed;
use super::server::rename_response_headers;
use crate::PolledFrame;
use crate::budget::Budget;
use crate::call::{BoxError, Pump, ReadAheadBody, ServerResponse, Timer, read_ahead, timer_for};
use crate::observe::{self, Method, ServerCall};

thread_local! {
    /// The scope of the call a [`Guarded`] polls.
    static REQUEST_SCOPE: RefCell<Option<RequestScope>> = const { RefCell::new(None) };
}

/// Numbers the calls whose request stream was made inside a guard, so a
/// stream knows its own call's scope (a handler may poll another call).
static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

/// What a guarded call shares with the request stream generated code makes
/// for it.
pub(super) struct RequestScope {
    method: Method,
    /// The call's number once its request stream is made (0 before).
    call: u64,
    /// The stream's transport body until the stream reads it, with the
    /// budget it is to be read ahead against.
    escrow: Option<(VoloBody, Option<Budget>)>,
    /// The read-ahead's pump, once the body is split.
    pump: Option<Pump>,
}

/// Where a stream's body is when the guard's poll has ended before the
/// stream took it back, keyed by call number.
enum Rendezvous {
    /// Split by the guard: the stream's half, and the pump to arm again.
    Ready(ReadAheadBody<VoloBody>, Pump),
    /// The stream asked before the guard split the body.
    Waiting(Waker),
    /// The stream was dropped without taking its body.
    Abandoned,
    /// The call was dropped with the body never split: there is nothing to
    /// read (the transport resets the stream).
    Gone,
}

/// The rendezvous of bodies split by a guard for streams read elsewhere.
static RENDEZVOUS: Mutex<Option<HashMap<u64, Rendezvous>>> = Mutex::new(None);

fn rendezvous() -> MutexGuard<'static, Option<HashMap<u64, Rendezvous>>> {
    RENDEZVOUS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `f` on the scope of call `call` if this thread is polling it.
fn with_own_scope<R>(call: u64, f: impl FnOnce(&mut RequestScope) -> R) -> Option<R> {
    REQUEST_SCOPE.with(|cell| {
        let mut scope = cell.borrow_mut();
        scope.as_mut().filter(|scope| scope.call == call).map(f)
    })
}

/// A server request's body as its stream reads it: left with the call's
/// guard until the first read, then read as it comes until it may need
/// reading ahead (see the module docs).
pub(super) struct RequestBody {
    state: BodyState,
    /// The call whose guard holds the body or its pump; 0 outside a guard.
    call: u64,
    /// The budget the read-ahead is armed with when this body splits.
    budget: Option<Budget>,
}

enum BodyState {
    /// With the guard (in its scope, or in the rendezvous).
    Escrow,
    /// Read as it comes.
    Direct(VoloBody),
    /// Split; the guard drives the pump.
    ReadAhead(ReadAheadBody<VoloBody>),
    /// Nothing more to read.
    Done,
}

/// The body of a request stream made for the call being served, and its
/// method. Inside a guard whose call has no stream yet, the body is left
/// with the guard; otherwise (no guard: the server lacks
/// `BinaryMetadataLayer`, whose absence the caller warns of when
/// `guarded` is false; or a second stream) it is read as it comes.
pub(super) fn request_body(body: VoloBody, budget: Option<Budget>) -> (RequestBody, Method, bool) {
    REQUEST_SCOPE.with(|cell| {
        let mut scope = cell.borrow_mut();
        let Some(scope) = scope.as_mut() else {
            return (RequestBody::direct(body), Method::default(), false);
        };
        if scope.call != 0 {
            // A second request stream inside one call (a service calling
            // another in-process): the guard minds the call's own.
            let method = scope.method.for_another_stream();
            return (RequestBody::direct(body), method, true);
        }
        let method = scope.method.clone();
        scope.call = NEXT_CALL.fetch_add(1, Ordering::Relaxed);
        scope.escrow = Some((body, budget));
        let body = RequestBody {
            state: BodyState::Escrow,
            call: scope.call,
            budget: None,
        };
        (body, method, true)
    })
}

/// Counts what the read-ahead of call `call` holds against `budget` from
/// now on: the body still with the guard is armed with it when split, a
/// split one moves what it holds.
pub(super) fn rearm_request(call: u64, budget: &Budget) {
    let in_scope = with_own_scope(call, |scope| {
        if let Some((_, armed)) = scope.escrow.as_mut() {
            *armed = Some(budget.clone());
        }
        if let Some(pump) = &scope.pump {
            pump.arm(Some(budget.clone()));
        }
    });
    if in_scope.is_none()
        && let Some(Rendezvous::Ready(_, pump)) =
            rendezvous().as_mut().and_then(|map| map.get(&call))
    {
        pump.arm(Some(budget.clone()));
    }
}

impl RequestBody {
    fn direct(body: VoloBody) -> Self {
        RequestBody {
            state: BodyState::Direct(body),
            call: 0,
            budget: None,
        }
    }

    /// The call this body belongs to (0: none), for [`rearm_request`].
    pub(super) fn call(&self) -> u64 {
        self.call
    }

    /// Takes the body back from the guard: from its scope while it polls
    /// the call, else from the rendezvous once it split the body there.
    fn claim(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let call = self.call;
        if let Some(Some((body, budget))) = with_own_scope(call, |scope| scope.escrow.take()) {
            self.state = BodyState::Direct(body);
            self.budget = budget;
            return Poll::Ready(());
        }
        let mut map = rendezvous();
        let map = map.get_or_insert_with(HashMap::new);
        match map.remove(&call) {
            Some(Rendezvous::Ready(reader, _pump)) => {
                self.state = BodyState::ReadAhead(reader);
                Poll::Ready(())
            }
            Some(Rendezvous::Gone) => {
                self.state = BodyState::Done;
                Poll::Ready(())
            }
            Some(Rendezvous::Waiting(_)) | None => {
                map.insert(call, Rendezvous::Waiting(cx.waker().clone()));
                Poll::Pending
            }
            Some(Rendezvous::Abandoned) => {
                // Not this stream's (it is alive): keep the mark.
                map.insert(call, Rendezvous::Abandoned);
                self.state = BodyState::Done;
                Poll::Ready(())
            }
        }
    }

    /// Splits a body read as it comes, inside its call's guard, so the
    /// guard takes frames while nobody reads them.
    fn split(&mut self) {
        let (state, budget) = (&mut self.state, &mut self.budget);
        with_own_scope(self.call, |scope| {
            if let BodyState::Direct(body) = std::mem::replace(state, BodyState::Done) {
                let (reader, pump) = read_ahead(body);
                pump.arm(budget.take());
                scope.pump = Some(pump);
                *state = BodyState::ReadAhead(reader);
            }
        });
    }
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame<BoxError> {
        let this = &mut *self;
        if let BodyState::Escrow = this.state {
            std::task::ready!(this.claim(cx));
        }
        let polled = match &mut this.state {
            BodyState::Direct(body) => Pin::new(body).poll_frame(cx).map_err(Into::into),
            BodyState::ReadAhead(reader) => return Pin::new(reader).poll_frame(cx),
            BodyState::Escrow | BodyState::Done => return Poll::Ready(None),
        };
        match &polled {
            Poll::Ready(Some(Ok(_))) | Poll::Pending if this.call != 0 => {
                let open = match &this.state {
                    BodyState::Direct(body) => !body.is_end_stream(),
                    _ => false,
                };
                if open {
                    // Control may leave the stream with frames still to
                    // come: from here on they are taken ahead of it.
                    this.split();
                    if polled.is_pending()
                        && let BodyState::ReadAhead(reader) = &mut this.state
                    {
                        // The transport holds this task's waker from the
                        // poll that was pending: poll again through the
                        // split, so the pump hands the wake-up over.
                        return Pin::new(reader).poll_frame(cx);
                    }
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

impl Drop for RequestBody {
    fn drop(&mut self) {
        if !matches!(self.state, BodyState::Escrow) {
            return;
        }
        // Never read: give the body back to its call, or leave word that
        // nobody will take it.
        let call = self.call;
        if with_own_scope(call, |scope| scope.escrow.take())
            .flatten()
            .is_some()
        {
            return;
        }
        let mut map = rendezvous();
        let map = map.get_or_insert_with(HashMap::new);
        match map.remove(&call) {
            Some(Rendezvous::Ready(..) | Rendezvous::Gone) => {}
            Some(Rendezvous::Waiting(_) | Rendezvous::Abandoned) | None => {
                map.insert(call, Rendezvous::Abandoned);
            }
        }
    }
}

/// What the guard keeps of a request for its response.
pub(super) struct Guard {
    timer: Option<Timer>,
    call: ServerCall,
    method: Method,
    /// Whether the response's `grpc-encoding: zlib` is called `deflate`.
    answer_deflate: bool,
}

/// Starts recording the call (when a meter is installed) and the timer of
/// its `timeout`; the request itself is left as it is.
/// `answer_deflate`: the client asked for `deflate` by that name only.
pub(super) fn guard_request(
    req: &http::Request<BoxBody>,
    timeout: Option<Duration>,
    answer_deflate: bool,
) -> Guard {
    let call = observe::server_call(req, |_| timeout);
    // The record's name when recorded (the method is interned once), and
    // where its request stream counts the bytes it receives.
    let method = call.method(req.uri().path());
    let timer = timeout.map(timer_for);
    Guard {
        timer,
        call,
        method,
        answer_deflate,
    }
}

/// A body error as volo-grpc carries it: this crate's status (a deadline)
/// converted, anything else as volo-grpc converts errors.
pub(super) fn volo_status(error: BoxError) -> volo_grpc::Status {
    match error.downcast::<crate::status::Status>() {
        Ok(status) => (*status).into(),
        Err(error) => volo_grpc::Status::from_error(error),
    }
}

pin_project! {
    /// The service's future, pumping the request while it waits; its
    /// response body ends at the deadline and keeps pumping.
    pub struct Guarded<F> {
        #[pin]
        inner: F,
        timer: Option<Timer>,
        call: ServerCall,
        answer_deflate: bool,
        // Installed while `inner` is polled: the request stream's body
        // until it reads it, the pump once the body is split.
        scope: Option<RequestScope>,
    }

    impl<F> PinnedDrop for Guarded<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(scope) = this.scope.as_mut() {
                scope.release();
            }
        }
    }
}

impl<F> Guarded<F> {
    pub(super) fn new(inner: F, guard: Guard) -> Self {
        Guarded {
            inner,
            timer: guard.timer,
            call: guard.call,
            answer_deflate: guard.answer_deflate,
            scope: Some(RequestScope {
                method: guard.method,
                call: 0,
                escrow: None,
                pump: None,
            }),
        }
    }
}

impl RequestScope {
    /// After a poll of the call: a body its stream has not taken back is
    /// split now, the stream's half left in the rendezvous, since the
    /// stream may next be read anywhere (or not for a while).
    fn split_unclaimed(&mut self) {
        let Some((body, budget)) = self.escrow.take() else {
            return;
        };
        let (reader, pump) = read_ahead(body);
        pump.arm(budget);
        let mut map = rendezvous();
        let map = map.get_or_insert_with(HashMap::new);
        match map.remove(&self.call) {
            // Dropped unread: nothing to read ahead for.
            Some(Rendezvous::Abandoned) => return,
            Some(Rendezvous::Waiting(waker)) => waker.wake(),
            _ => {}
        }
        map.insert(self.call, Rendezvous::Ready(reader, pump.clone()));
        self.pump = Some(pump);
    }

    /// The call is dropped: a stream that never took its body back finds
    /// nothing to read.
    fn release(&mut self) {
        if self.escrow.take().is_none() {
            return;
        }
        let mut map = rendezvous();
        let map = map.get_or_insert_with(HashMap::new);
        match map.remove(&self.call) {
            Some(Rendezvous::Abandoned) => {}
            Some(Rendezvous::Waiting(waker)) => {
                map.insert(self.call, Rendezvous::Gone);
                waker.wake();
            }
            _ => {
                map.insert(self.call, Rendezvous::Gone);
            }
        }
    }
}

impl<F, E> Future for Guarded<F>
where
    F: Future<Output = Result<http::Response<BoxBody>, E>>,
{
    type Output = Result<http::Response<BoxBody>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let polled = {
            // Swapped back when the poll returns (or unwinds), with what
            // the request stream left in it.
            let _installed = Installed::swap(&REQUEST_SCOPE, this.scope);
            this.inner.poll(cx)
        };
        if let Some(scope) = this.scope.as_mut()
            && scope.escrow.is_some()
        {
            scope.split_unclaimed();
        }
        let pump = this.scope.as_ref().and_then(|scope| scope.pump.as_ref());
        let response = match polled {
            Poll::Pending => {
                // Waiting: take what is ready now, and be woken for what
                // comes.
                if let Some(pump) = pump {
                    pump.pump(cx);
                }
                return Poll::Pending;
            }
            Poll::Ready(response) => response?,
        };
        let mut response = response;
        if *this.answer_deflate {
            rename_response_headers(response.headers_mut());
        }
        let pump = this.scope.take().and_then(|scope| scope.pump);
        let timer = this.timer.take();
        let mut call = std::mem::take(this.call);
        call.response_headers(response.headers());
        let response =
            response.map(
                |body| match ServerResponse::watching(body, timer, pump, call) {
                    Ok(watched) => volo_grpc::body::boxed(watched),
                    Err(body) => body,
                },
            );
        Poll::Ready(Ok(response))
    }
}
