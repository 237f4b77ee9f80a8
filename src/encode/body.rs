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
    }
}

impl<S, E: MessageEncoder> EncodeBody<S, E> {
    /// A body for `stream` in the given mode.
    pub fn new(stream: EncodeStream<S, E>, mode: BodyMode) -> Self {
        Self {
            stream,
            mode,
            frames: DataFrames::default(),
            end: None,
            finished: false,
        }
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
        loop {
            // The next batch, when a ready one would make the next payload
            // longer (each payload costs the HTTP/2 stack a send): a partial
            // frame leaves only once the source has nothing ready.
            let wants_batch = this.frames.wants_more();
            if wants_batch && this.end.is_none() && !*this.finished {
                match this.stream.as_mut().poll_next(cx) {
                    Poll::Ready(Some(Ok(batch))) => {
                        this.frames.push(batch);
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
fn trailers(status: Status) -> Frame<Bytes> {
    let mut headers = HeaderMap::new();
    status.into_headers(&mut headers);
    Frame::trailers(headers)
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use bytes::BufMut;
    use futures_util::stream;
    use http_body_util::BodyExt;
    use linkedbytes::LinkedBytes;

    use super::*;
    use crate::encode::EncodeConfig;
    use crate::status::Code;

    struct Raw;

    impl MessageEncoder for Raw {
        type Item = Bytes;

        fn encode(&mut self, item: Bytes, dst: &mut LinkedBytes) -> Result<(), Status> {
            dst.put_slice(&item);
            Ok(())
        }
    }

    /// A source whose size hint says it is done after every item it yields,
    /// whatever is left: a wrong hint, which must cost nothing but speed.
    struct SaysDone(VecDeque<Result<Bytes, Status>>);

    impl Stream for SaysDone {
        type Item = Result<Bytes, Status>;

        fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            Poll::Ready(self.0.pop_front())
        }

        fn size_hint(&self) -> (usize, Option<usize>) {
            (0, Some(0))
        }
    }

    fn enveloped(payload: &[u8]) -> Vec<u8> {
        let mut wire = vec![0];
        wire.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        wire.extend_from_slice(payload);
        wire
    }

    /// Every frame of `body`, data as bytes and trailers as their status.
    async fn frames<B: Body<Data = Bytes, Error = Status> + Unpin>(
        mut body: B,
    ) -> (Vec<Bytes>, Option<Result<Code, Code>>) {
        let mut data = Vec::new();
        let mut end = None;
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(frame) => match frame.into_data() {
                    Ok(bytes) => data.push(bytes),
                    Err(frame) => {
                        let trailers = frame.into_trailers().ok();
                        let status = trailers.map(|t| Status::from_header_map(&t));
                        end = status.flatten().map(|status| Ok(status.code()));
                    }
                },
                Err(status) => end = Some(Err(status.code())),
            }
        }
        (data, end)
    }

    #[tokio::test]
    async fn a_one_message_request_is_one_payload_that_ends_the_body() {
        let message = Bytes::from_static(&[7; 100]);
        let source = stream::iter([Ok(message)]);
        let mut body = EncodeBody::client(EncodeStream::new(source, Raw, EncodeConfig::new()));
        let frame = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(frame, enveloped(&[7; 100]));
        // END_STREAM goes on that frame, not on an empty one after it.
        assert!(body.is_end_stream());
        assert!(body.frame().await.is_none());
    }

    #[tokio::test]
    async fn a_size_hint_that_says_done_too_early_loses_no_message() {
        for mode in [BodyMode::Client, BodyMode::Server] {
            let items = [&b"one"[..], b"two", b"three"].map(|m| Ok(Bytes::from_static(m)));
            let source = SaysDone(items.into_iter().collect());
            let body = EncodeBody::new(EncodeStream::new(source, Raw, EncodeConfig::new()), mode);
            let (data, end) = frames(body).await;
            let wire: Vec<u8> = data.concat();
            let expected = [enveloped(b"one"), enveloped(b"two"), enveloped(b"three")].concat();
            assert_eq!(wire, expected, "{mode:?}");
            let expected_end = (mode == BodyMode::Server).then_some(Ok(Code::Ok));
            assert_eq!(end, expected_end, "{mode:?}");
        }
    }

    #[tokio::test]
    async fn an_error_after_the_one_message_ends_the_answer_with_it() {
        let items = [
            Ok(Bytes::from_static(b"answer")),
            Err(Status::new(Code::DataLoss, "lost")),
        ];
        let source = SaysDone(items.into_iter().collect());
        let body = EncodeBody::server(EncodeStream::new(source, Raw, EncodeConfig::new()));
        let (data, end) = frames(body).await;
        assert_eq!(data.concat(), enveloped(b"answer"));
        assert_eq!(end, Some(Ok(Code::DataLoss)));
    }

    #[tokio::test]
    async fn a_one_message_answer_over_the_send_limit_sends_no_byte() {
        let source = stream::iter([Ok(Bytes::from(vec![1; 2048]))]);
        let config = EncodeConfig::new().with_max_send(1024);
        let body = EncodeBody::server(EncodeStream::new(source, Raw, config));
        let (data, end) = frames(body).await;
        assert!(data.is_empty(), "{} data frames", data.len());
        assert_eq!(end, Some(Ok(Code::ResourceExhausted)));
    }
}
