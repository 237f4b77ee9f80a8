//! [`EncodeStream`]: batches ready messages into framed byte nodes.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{BufMut, BytesMut};
use futures_core::Stream;
use linkedbytes::{LinkedBytes, Node};
use pin_project_lite::pin_project;

use super::batch::EncodedBatch;
use super::buffer::{BatchBuffer, Mark, NodesBuf, node_bytes};
use super::config::{EncodeConfig, FRAME_SIZE};
use super::encoder::MessageEncoder;
use crate::compression::Compressor;
use crate::envelope::{EnvelopeHeader, HEADER_LEN, check_size};
use crate::status::Status;

/// The envelope's length field is a `u32`: no payload may exceed it,
/// whatever the configured send limit.
const MAX_PAYLOAD: usize = u32::MAX as usize;

pin_project! {
    /// Encodes a stream of messages into batches of framed gRPC messages.
    ///
    /// While the source has messages ready, they are encoded one after the
    /// other into the same buffer until it holds at least the batch threshold
    /// ([`EncodeConfig::with_batch_threshold`]); the batch is yielded then, or
    /// as soon as the source returns `Pending`, ends or fails, so a message is
    /// never held back waiting for more. A full batch's copied-in bytes are
    /// cut on a 16 KiB frame boundary and the rest opens the next batch
    /// ([`EncodeConfig::with_batch_threshold`]), so HTTP/2 frames leave full.
    /// Each message gets its 5-byte prefix; compression is per message, with
    /// a context taken from a process-wide pool for the message and given
    /// back after it, so an idle stream holds none.
    ///
    /// Errors:
    /// - a **source** error is yielded after the messages completed before it,
    ///   and the stream goes on with the source's next item;
    /// - an **encode** error (from the [`MessageEncoder`], compression, or the
    ///   send limit) is yielded after the completed messages, the message
    ///   being encoded is discarded, and the stream ends.
    ///
    /// ```
    /// use bytes::{BufMut, Bytes};
    /// use futures_util::{StreamExt, stream};
    /// use grpc_stream_codec::status::Status;
    /// use grpc_stream_codec::encode::{EncodeConfig, EncodeStream, MessageEncoder};
    /// use linkedbytes::LinkedBytes;
    ///
    /// struct Raw;
    ///
    /// impl MessageEncoder for Raw {
    ///     type Item = &'static [u8];
    ///
    ///     fn encode(&mut self, item: &'static [u8], dst: &mut LinkedBytes) -> Result<(), Status> {
    ///         dst.put_slice(item);
    ///         Ok(())
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let source = stream::iter([Ok(&b"hi"[..]), Ok(&b"there"[..])]);
    /// let mut batches = EncodeStream::new(source, Raw, EncodeConfig::default());
    ///
    /// // Both messages were ready, so they share one batch.
    /// let batch = batches.next().await.unwrap()?;
    /// assert_eq!(batch.message_count(), 2);
    /// assert_eq!(batch.to_bytes(), &b"\0\0\0\0\x02hi\0\0\0\0\x05there"[..]);
    /// assert!(batches.next().await.is_none());
    /// # Ok::<(), Status>(())
    /// # }).unwrap();
    /// ```
    pub struct EncodeStream<S, E: MessageEncoder> {
        #[pin]
        source: S,
        encoder: E,
        config: EncodeConfig,
        buffer: BatchBuffer,
        // Compressed messages are encoded here first, then compressed into
        // `buffer` with a pooled context; created on the first compressed
        // message.
        scratch: Option<(BatchBuffer, Compressor)>,
        // An error to yield after the batch just returned.
        error: Option<Status>,
        // A message taken from the source and not yet encoded.
        held: Option<E::Item>,
        // The source ended or an encode error ended the stream.
        done: bool,
    }
}

impl<S, E: MessageEncoder> EncodeStream<S, E> {
    /// Encodes `source` with `encoder`, framed as `config` says.
    pub fn new(source: S, encoder: E, config: EncodeConfig) -> Self {
        Self {
            source,
            encoder,
            config,
            buffer: BatchBuffer::new(config.batch_threshold()),
            scratch: None,
            error: None,
            held: None,
            done: false,
        }
    }

    /// Whether the stream has ended: it will yield nothing more.
    pub fn is_terminated(&self) -> bool {
        self.done && self.error.is_none()
    }
}

impl<S, E> EncodeStream<S, E>
where
    S: Stream<Item = Result<E::Item, Status>>,
    E: MessageEncoder,
{
    /// The source's first message alone, when the source says with it that
    /// it has no more and nothing is compressed: a unary answer. It is cut
    /// as one payload without the batching loop, and the source is asked
    /// once more, so that a request body can end on the message's frame.
    ///
    /// `Ready(None)` when this is not such a message: anything taken from
    /// the source is kept for [`poll_next`](Stream::poll_next), which goes on
    /// as usual. `Pending` only when the source is.
    pub(crate) fn poll_sole(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<EncodedBatch, Status>>> {
        let mut this = self.project();
        if *this.done
            || this.error.is_some()
            || this.held.is_some()
            || !this.buffer.awaits_first_message()
            || this.config.effective_compression().is_some()
        {
            return Poll::Ready(None);
        }
        let item = match std::task::ready!(this.source.as_mut().poll_next(cx)) {
            Some(Ok(item)) => item,
            Some(Err(error)) => {
                *this.error = Some(error);
                return Poll::Ready(None);
            }
            None => {
                *this.done = true;
                return Poll::Ready(None);
            }
        };
        if this.source.size_hint().1 != Some(0) {
            *this.held = Some(item);
            return Poll::Ready(None);
        }
        let limit = this.config.max_send().min(MAX_PAYLOAD);
        let batch = match encode_alone(this.encoder, item, limit) {
            Ok(batch) => batch,
            Err(error) => {
                *this.done = true;
                return Poll::Ready(Some(Err(error)));
            }
        };
        match this.source.as_mut().poll_next(cx) {
            Poll::Ready(None) => *this.done = true,
            // A size hint that said otherwise: the rest goes as usual.
            Poll::Ready(Some(Ok(next))) => *this.held = Some(next),
            Poll::Ready(Some(Err(error))) => *this.error = Some(error),
            Poll::Pending => {}
        }
        Poll::Ready(Some(Ok(batch)))
    }
}

impl<S, E> Stream for EncodeStream<S, E>
where
    S: Stream<Item = Result<E::Item, Status>>,
    E: MessageEncoder,
{
    type Item = Result<EncodedBatch, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut this = self.project();
        if let Some(error) = this.error.take() {
            return Poll::Ready(Some(Err(error)));
        }
        if *this.done {
            return Poll::Ready(None);
        }
        let threshold = this.config.batch_threshold();
        loop {
            let buffer = &mut *this.buffer;
            if buffer.messages() > 0 && buffer.len() >= threshold {
                let batch = if threshold >= FRAME_SIZE {
                    buffer.take_filling()
                } else {
                    buffer.take(None)
                };
                return Poll::Ready(Some(Ok(batch)));
            }
            let polled = match this.held.take() {
                Some(item) => Poll::Ready(Some(Ok(item))),
                None => this.source.as_mut().poll_next(cx),
            };
            let item = match polled {
                Poll::Ready(Some(Ok(item))) => item,
                Poll::Ready(Some(Err(error))) => {
                    if buffer.messages() == 0 {
                        return Poll::Ready(Some(Err(error)));
                    }
                    *this.error = Some(error);
                    return Poll::Ready(Some(Ok(buffer.take(None))));
                }
                Poll::Ready(None) => {
                    *this.done = true;
                    return Poll::Ready(flush(buffer).map(Ok));
                }
                Poll::Pending => {
                    return match flush(buffer) {
                        Some(batch) => Poll::Ready(Some(Ok(batch))),
                        None => Poll::Pending,
                    };
                }
            };
            let source = &this.source;
            let source_done = || source.size_hint().1 == Some(0);
            let encoded = encode_message(
                this.encoder,
                this.config,
                this.scratch,
                buffer,
                item,
                source_done,
            );
            if let Err((error, partial)) = encoded {
                *this.done = true;
                // Cut even with no completed message: the partial bytes go.
                let batch = buffer.take(Some(partial));
                if batch.message_count() == 0 {
                    return Poll::Ready(Some(Err(error)));
                }
                *this.error = Some(error);
                return Poll::Ready(Some(Ok(batch)));
            }
            buffer.finish_message();
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.is_terminated() {
            (0, Some(0))
        } else {
            (0, None)
        }
    }
}

impl<S, E: MessageEncoder> fmt::Debug for EncodeStream<S, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EncodeStream")
            .field("config", &self.config)
            .field("buffered_messages", &self.buffer.messages())
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// Encodes a stream's one uncompressed message into a buffer of its own,
/// prefix first: none of the batch buffer's bookkeeping, which a reply of
/// one message does not use. A message with fields inserted by reference
/// keeps them as nodes of the batch.
fn encode_alone<E: MessageEncoder>(
    encoder: &mut E,
    item: E::Item,
    limit: usize,
) -> Result<EncodedBatch, Status> {
    let (copied, declared) = match encoder.exact_len(&item) {
        Some(len) => (len, len),
        None => encoder.copied_len_hint(&item).unwrap_or((0, 0)),
    };
    // Refuse before encoding anything of an oversized message.
    check_size(declared, limit)?;
    let mut dst = LinkedBytes::with_capacity(HEADER_LEN + copied);
    dst.put_slice(&EnvelopeHeader::message(false, declared as u32).to_bytes());
    encoder.encode(item, &mut dst)?;
    let len = dst.len() - HEADER_LEN;
    check_size(len, limit)?;
    let prefix = EnvelopeHeader::message(false, len as u32).to_bytes();
    match dst.try_into_bytes_mut() {
        Ok(mut whole) => {
            if len != declared
                && let Some(head) = whole.get_mut(..HEADER_LEN)
            {
                head.copy_from_slice(&prefix);
            }
            Ok(EncodedBatch::single(whole.freeze(), 1))
        }
        Err(mut dst) => {
            // Fields inserted by reference: the buffer's nodes, as they are.
            let mut batch = EncodedBatch::with_node_hint(dst.iter_list().count() + 1);
            let mut index = 0;
            while let Some(slot) = dst.get_list_mut(index) {
                // The prefix leads the first node, split off the trailing
                // buffer it was written to before any insert.
                if index == 0
                    && len != declared
                    && let Node::BytesMut(head) = &mut *slot
                    && let Some(head) = head.get_mut(..HEADER_LEN)
                {
                    head.copy_from_slice(&prefix);
                }
                batch.push(node_bytes(std::mem::replace(
                    slot,
                    Node::BytesMut(BytesMut::new()),
                )));
                index += 1;
            }
            batch.push(dst.bytes_mut().split().freeze());
            Ok(batch.finish(1))
        }
    }
}

/// Encodes one message into the batch buffer, compressed as `config` says.
/// `source_done` tells whether the source has said it yields nothing after
/// this message, asked only of a stream's first uncompressed message. On
/// error, returns where the message started so the caller can cut it off.
fn encode_message<E: MessageEncoder>(
    encoder: &mut E,
    config: &EncodeConfig,
    scratch: &mut Option<(BatchBuffer, Compressor)>,
    buffer: &mut BatchBuffer,
    item: E::Item,
    source_done: impl FnOnce() -> bool,
) -> Result<(), (Status, Mark)> {
    let compression = config.effective_compression();
    if compression.is_none() && buffer.awaits_first_message() {
        let hint = encoder.copied_len_hint(&item);
        // A source that knows it is done (a unary answer's `stream::once`)
        // says so in its size hint.
        if let Some((copied, _)) = hint
            && source_done()
        {
            buffer.sole_message_hint(copied);
        }
        buffer.first_message_hint(hint);
    }
    buffer.prepare_batch();
    let limit = config.max_send().min(MAX_PAYLOAD);
    match compression {
        None => encode_plain(encoder, item, buffer, limit),
        Some(compression) => {
            let (scratch, compressor) =
                scratch.get_or_insert_with(|| (BatchBuffer::new(0), Compressor::new(compression)));
            encode_compressed(encoder, item, buffer, scratch, compressor, limit)
        }
    }
}

fn flush(buffer: &mut BatchBuffer) -> Option<EncodedBatch> {
    (buffer.messages() > 0).then(|| buffer.take(None))
}

/// Encodes one uncompressed message straight into the batch buffer. On
/// error, returns where the message started so the caller can cut it off.
fn encode_plain<E: MessageEncoder>(
    encoder: &mut E,
    item: E::Item,
    buffer: &mut BatchBuffer,
    limit: usize,
) -> Result<(), (Status, Mark)> {
    let start = buffer.mark();
    let at_start = |error| (error, start);
    let exact = encoder.exact_len(&item);
    if let Some(len) = exact {
        // Refuse before encoding anything of an oversized message.
        check_size(len, limit).map_err(at_start)?;
        buffer.reserve(HEADER_LEN + len);
    }
    // With an exact length the prefix is final now; otherwise a placeholder.
    let declared = exact.unwrap_or(0);
    buffer
        .tail()
        .put_slice(&EnvelopeHeader::message(false, declared as u32).to_bytes());
    encoder.encode(item, buffer.dst()).map_err(at_start)?;
    let len = buffer.written_since(start) - HEADER_LEN;
    check_size(len, limit).map_err(at_start)?;
    if exact != Some(len) {
        let prefix = EnvelopeHeader::message(false, len as u32).to_bytes();
        buffer.write_at(start, &prefix).map_err(at_start)?;
    }
    Ok(())
}

/// Encodes one message into `scratch`, then compresses all its nodes into
/// the batch buffer behind a backfilled prefix.
fn encode_compressed<E: MessageEncoder>(
    encoder: &mut E,
    item: E::Item,
    buffer: &mut BatchBuffer,
    scratch: &mut BatchBuffer,
    compressor: &mut Compressor,
    limit: usize,
) -> Result<(), (Status, Mark)> {
    let start = buffer.mark();
    let at_start = |error| (error, start);
    let encoded = encoder.encode(item, scratch.dst());
    let payload = scratch.take(None);
    encoded.map_err(at_start)?;
    buffer.tail().put_slice(&[0; HEADER_LEN]);
    let mut input = NodesBuf::new(payload.nodes());
    compressor
        .compress(&mut input, buffer.tail())
        .map_err(at_start)?;
    drop(payload);
    let len = buffer.written_since(start) - HEADER_LEN;
    check_size(len, limit).map_err(at_start)?;
    let prefix = EnvelopeHeader::message(true, len as u32).to_bytes();
    buffer.write_at(start, &prefix).map_err(at_start)
}
