//! `encode`: volo-grpc's `SendEntryMessage` body, batched by [`EncodeStream`].

use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures_core::Stream;
use http_body::{Body, Frame};
use linkedbytes::LinkedBytes;
use pilota::pb::{EncodeLengthContext, Message};
use pin_project_lite::pin_project;
use volo_grpc::codec::compression::CompressionEncoding as VoloEncoding;

use super::client_compression::scoped_send;
use super::compression::compression_from_volo;
use super::limits::limits_for_new_stream;
use crate::encode::default_batch_threshold;
use crate::encode::{EncodeBody, EncodeConfig, EncodeStream, MessageEncoder};
use crate::status::Status;

/// A body as volo-grpc's generated `into_body` returns it: data frames,
/// then volo-grpc adds the trailers.
type VoloFrames = volo_grpc::BoxStream<'static, Result<Frame<Bytes>, volo_grpc::Status>>;

/// Encodes pilota protobuf messages, keeping the fields pilota inserts by
/// reference (`Bytes` and `FastStr` of 4 KiB and more) as their own nodes.
#[doc(hidden)]
pub struct PilotaEncoder<T>(PhantomData<fn(T)>);

stateless_codec_impls!(PilotaEncoder);

impl<T: Message> MessageEncoder for PilotaEncoder<T> {
    type Item = T;

    fn encode(&mut self, item: T, dst: &mut LinkedBytes) -> Result<(), Status> {
        // Room is made for exactly the copied part; the by-reference fields
        // need none. pilota's `encode` would compute the length again only
        // to check that room, so `encode_raw` writes straight away: its one
        // requirement, the capacity, is met here.
        let mut ctx = EncodeLengthContext::default();
        let len = item.encoded_len(&mut ctx);
        dst.reserve(len.saturating_sub(ctx.zero_copy_len));
        item.encode_raw(dst);
        Ok(())
    }

    fn copied_len_hint(&self, item: &T) -> Option<(usize, usize)> {
        // Asked once per stream, so computing the length twice for that
        // message is cheap.
        let mut ctx = EncodeLengthContext::default();
        let len = item.encoded_len(&mut ctx);
        Some((len.saturating_sub(ctx.zero_copy_len), len))
    }
}

/// The body of a volo-grpc request or response: what the generated
/// `SendEntryMessage::into_body` returns.
///
/// Same shape as `volo_grpc::codec::encode::encode`, which the
/// [build hook](super::build) replaces with it. Every message the source has
/// ready goes into one batch (up to 32 KiB, never splitting a message) and a
/// batch leaves in whole 16 KiB data frames (small nodes copied together,
/// large fields by reference, several frames to a payload), where stock
/// volo-grpc sends each message, and each node of it, as separate frames. `None` and
/// `Some(Identity)` send uncompressed messages with flag 0. Messages larger
/// than the send limit ([`set_default_limits`](super::set_default_limits) or
/// a [`LimitsLayer`](super::LimitsLayer), unlimited by default) end the
/// stream with `resource_exhausted`. The
/// threshold is [`set_default_batch_threshold`](crate::encode::set_default_batch_threshold)'s.
///
/// A source error ends the body with that status in the trailers, after the
/// messages before it.
pub fn encode<T, S>(
    source: S,
    compression_encoding: Option<VoloEncoding>,
) -> VoloFrames
where
    S: Stream<Item = Result<T, volo_grpc::Status>> + Send + 'static,
    T: Message + 'static,
{
    encode_with_config(source, default_config(compression_encoding))
}

/// [`encode`] for a server's response, as the [build hook](super::build)
/// points generated `*ResponseSend` code at it: the body also records the
/// call (the message bytes it sends and the status it ends with) when the
/// call is recorded and no deadline can cut it, so no watcher around the
/// response reads them back. Outside a call it is [`encode`].
#[doc(hidden)]
pub fn encode_response<T, S>(
    source: S,
    compression_encoding: Option<VoloEncoding>,
) -> VoloFrames
where
    S: Stream<Item = Result<T, volo_grpc::Status>> + Send + 'static,
    T: Message + 'static,
{
    let config = default_config(compression_encoding);
    // Boxed first and told its record in place: a body made on the stack
    // and changed there is copied whole into its box, every call.
    #[cfg_attr(not(feature = "opentelemetry"), expect(unused_mut))]
    let mut frames = Box::new(Frames {
        body: EncodeBody::client(EncodeStream::new(
            StatusSource { inner: source },
            PilotaEncoder::new(),
            config,
        )),
    });
    // Without a meter no call has a record to take.
    #[cfg(feature = "opentelemetry")]
    if crate::observe::installed() {
        let record = crate::call::take_response_record::<super::call_guard::VoloSlots>();
        frames.body.record_in(record);
    }
    Box::into_pin(frames)
}

/// The configuration of a body volo-grpc asks for with
/// `compression_encoding`.
fn default_config(compression_encoding: Option<VoloEncoding>) -> EncodeConfig {
    // volo-grpc passes `None` when it has no compression configured, which
    // is how a `ClientCompressionLayer` around the call takes over.
    let compression = match compression_encoding {
        None => scoped_send(),
        configured => compression_from_volo(configured),
    };
    EncodeConfig::new()
        .with_compression(compression)
        .with_batch_threshold(default_batch_threshold())
        .with_limits(limits_for_new_stream())
}

/// [`encode`] with an explicit configuration (batch threshold, compression,
/// send limit), e.g. threshold 0 to send one message per batch.
pub fn encode_with_config<T, S>(
    source: S,
    config: EncodeConfig,
) -> VoloFrames
where
    S: Stream<Item = Result<T, volo_grpc::Status>> + Send + 'static,
    T: Message + 'static,
{
    let source = StatusSource { inner: source };
    Box::pin(Frames {
        body: EncodeBody::client(EncodeStream::new(source, PilotaEncoder::new(), config)),
    })
}

pin_project! {
    /// A source whose errors are this crate's `Status`.
    struct StatusSource<S> {
        #[pin]
        inner: S,
    }
}

impl<S, T> Stream for StatusSource<S>
where
    S: Stream<Item = Result<T, volo_grpc::Status>>,
{
    type Item = Result<T, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.project()
            .inner
            .poll_next(cx)
            .map(|item| item.map(|result| result.map_err(Status::from)))
    }

    /// The handler's: a one-message answer says it has no more.
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

pin_project! {
    /// An [`EncodeBody`] as the stream of frames volo-grpc sends: data
    /// frames only (volo-grpc adds a response's trailers), an error as the
    /// stream's error.
    struct Frames<S, E: MessageEncoder> {
        #[pin]
        body: EncodeBody<S, E>,
    }
}

impl<S, E> Stream for Frames<S, E>
where
    S: Stream<Item = Result<E::Item, Status>>,
    E: MessageEncoder,
{
    type Item = Result<Frame<Bytes>, volo_grpc::Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(match ready!(self.project().body.poll_frame(cx)) {
            Some(Ok(frame)) => Some(Ok(frame)),
            Some(Err(status)) => Some(Err(status.into())),
            None => None,
        })
    }

    /// `(0, Some(0))` once the last frame has been taken: the client's
    /// transport then sends that frame with END_STREAM.
    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.body.is_end_stream() {
            (0, Some(0))
        } else {
            (0, None)
        }
    }
}
