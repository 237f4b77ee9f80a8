//! [`EncodeBody`]: an [`EncodeStream`] as an HTTP body.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use http::HeaderMap;
use http_body::{Body, Frame};
use pin_project_lite::pin_project;

use super::encoder::MessageEncoder;
use super::frames::DataFrames;
use super::stream::EncodeStream;
use crate::PolledFrame;
use crate::status::{Code, Status};

/// Which side of a call an [`EncodeBody`] is the body of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BodyMode {
    /// A request body. The first error is returned as the body's error
    /// (the HTTP client then resets the stream); a clean end is a plain end
    /// of body, without trailers.
    Client,
    /// A response body. It always ends with a trailers frame carrying the
    /// final status: `grpc-status: 0` when the messages ended, or the first
    /// error's code, message, details and metadata. Nothing is sent after
    /// the first error, since a response carries one status.
    Server,
}

pin_project! {
    /// An HTTP body sending the batches of an [`EncodeStream`] in order, as
    /// [`EncodedBatch::into_frames`](super::EncodedBatch::into_frames) cuts
    /// them into data frames.
    ///
    /// What happens at the end and on an error depends on the [`BodyMode`].
    ///
    /// ```
    /// use bytes::BufMut;
    /// use futures_util::stream;
    /// use grpc_stream_codec::status::Status;
    /// use grpc_stream_codec::encode::{EncodeBody, EncodeConfig, EncodeStream, MessageEncoder};
    /// use http_body_util::BodyExt;
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
    /// let source = stream::iter([Ok(&b"reply"[..])]);
    /// let body = EncodeBody::server(EncodeStream::new(source, Raw, EncodeConfig::default()));
    /// let collected = body.collect().await?;
    /// assert_eq!(collected.trailers().unwrap()["grpc-status"], "0");
    /// assert_eq!(collected.to_bytes(), &b"\0\0\0\0\x05reply"[..]);
    /// # Ok::<(), Status>(())
    /// # }).unwrap();
    /// ```
    #[derive(Debug)]
    pub struct EncodeBody<S, E: MessageEncoder> {
        #[pin]
        stream: EncodeStream<S, E>,
        mode: BodyMode,
        // What of the batches is not yet sent.
        frames: DataFrames,
        // How the source ended, once the stream said so and before it is sent.
        end: Option<Result<(), Status>>,
        // The final status (server) or error (client) was produced.
        finished: bool,
        // The call's record, when this response body tells it what it
        // sends and the status it ends with (a call no deadline can cut,
        // on tonic's full framing or volo-grpc's generated responses):
        // then no watcher reads them back off the frames.
        record: CallRecord,
    }
}

/// What a response body keeps of its call's record: nothing without an
/// adapter to hand one in.
#[cfg(any(feature = "tonic", feature = "volo"))]
type CallRecord = crate::observe::ServerCall;
#[cfg(not(any(feature = "tonic", feature = "volo")))]
type CallRecord = ();

impl<S, E: MessageEncoder> EncodeBody<S, E> {
    /// A body for `stream` in the given mode.
    pub fn new(stream: EncodeStream<S, E>, mode: BodyMode) -> Self {
        Self {
            stream,
            mode,
            frames: DataFrames::default(),
            end: None,
            finished: false,
            record: CallRecord::default(),
        }
    }

    /// This response body records its call in `record`: the message bytes
    /// of each batch as it takes it, and the status it ends with (in its
    /// trailers, or for a [`BodyMode::Client`] body the end or error that
    /// the framework turns into them).
    // In place: a body is large, and moved it is copied.
    #[cfg(any(feature = "tonic", all(feature = "volo", feature = "opentelemetry")))]
    pub(crate) fn record_in(&mut self, record: crate::observe::ServerCall) {
        self.record = record;
    }

    /// A request body: see [`BodyMode::Client`].
    pub fn client(stream: EncodeStream<S, E>) -> Self {
        Self::new(stream, BodyMode::Client)
    }

    /// A response body, ending with trailers: see [`BodyMode::Server`].
    pub fn server(stream: EncodeStream<S, E>) -> Self {
        Self::new(stream, BodyMode::Server)
    }
}

impl<S, E> Body for EncodeBody<S, E>
where
    S: Stream<Item = Result<E::Item, Status>>,
    E: MessageEncoder,
{
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> PolledFrame<Status> {
        let mut this = self.project();
        if this.frames.is_empty() && this.end.is_none() && !*this.finished {
            match this.stream.as_mut().poll_sole(cx) {
                Poll::Ready(Some(Ok(batch))) => {
                    match record_sent(this.record, batch).into_sole_node() {
                        Ok(payload) => return Poll::Ready(Some(Ok(Frame::data(payload)))),
                        Err(batch) => this.frames.push(batch),
                    }
                }
                Poll::Ready(Some(Err(error))) => *this.end = Some(Err(error)),
                Poll::Ready(None) => {}
                Poll::Pending => return Poll::Pending,
            }
        }
        loop {
            // The next batch, when a ready one would make the next payload
            // longer (each payload costs the HTTP/2 stack a send): a partial
            // frame leaves only once the source has nothing ready.
            let wants_batch = this.frames.wants_more();
            if wants_batch && this.end.is_none() && !*this.finished {
                match this.stream.as_mut().poll_next(cx) {
                    Poll::Ready(Some(Ok(batch))) => {
                        this.frames.push(record_sent(this.record, batch));
                        continue;
                    }
                    Poll::Ready(Some(Err(error))) => *this.end = Some(Err(error)),
                    Poll::Ready(None) => *this.end = Some(Ok(())),
                    Poll::Pending if this.frames.is_empty() => return Poll::Pending,
                    Poll::Pending => {}
                }
            }
            if let Some(payload) = this.frames.next() {
                return Poll::Ready(Some(Ok(Frame::data(payload))));
            }
            let Some(end) = this.end.take() else {
                // Finished: the end was sent.
                return Poll::Ready(None);
            };
            *this.finished = true;
            #[cfg(any(feature = "tonic", feature = "volo"))]
            this.record
                .finish(end.as_ref().err().map_or(Code::Ok, Status::code));
            return Poll::Ready(match (*this.mode, end) {
                (BodyMode::Client, Ok(())) => None,
                (BodyMode::Client, Err(error)) => Some(Err(error)),
                (BodyMode::Server, Ok(())) => Some(Ok(trailers(Status::new(Code::Ok, "")))),
                (BodyMode::Server, Err(error)) => Some(Ok(trailers(error))),
            });
        }
    }

    fn is_end_stream(&self) -> bool {
        if !self.frames.is_empty() {
            return false;
        }
        if self.finished {
            return true;
        }
        // A request body has no trailers: once the encoder has seen its
        // source end, its last batch is the body's end, and HTTP/2 sends
        // END_STREAM on that frame instead of an empty frame after it.
        self.mode == BodyMode::Client
            && match &self.end {
                Some(end) => end.is_ok(),
                None => self.stream.is_terminated(),
            }
    }
}

/// `batch`, its message bytes added to what `record`'s call has sent.
#[inline]
#[cfg_attr(not(any(feature = "tonic", feature = "volo")), allow(unused_variables))]
fn record_sent(record: &mut CallRecord, batch: super::EncodedBatch) -> super::EncodedBatch {
    #[cfg(any(feature = "tonic", feature = "volo"))]
    if record.is_recorded() {
        let prefixes = batch.message_count() * crate::envelope::HEADER_LEN;
        record.add_sent(batch.len().saturating_sub(prefixes) as u64);
    }
    batch
}

fn trailers(status: Status) -> Frame<Bytes> {
    let mut headers = HeaderMap::new();
    status.into_headers(&mut headers);
    Frame::trailers(headers)
}
