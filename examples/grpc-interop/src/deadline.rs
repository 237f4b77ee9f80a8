//! Server-side deadlines over the whole call. A gRPC server ends a call
//! whose `grpc-timeout` has passed with `DEADLINE_EXCEEDED`, response
//! stream included (C-core and grpc-go do); tonic and volo-grpc bound only
//! the handler's future, so a streaming handler that has returned its
//! stream is never stopped. The servers here wrap their FullDuplexCall
//! response stream with [`until_deadline`], so timeout_on_sleeping_server
//! ends on a deadline the call carries, whichever side enforces it first.

use std::time::Duration;

use futures::stream::{self, BoxStream, StreamExt};

/// The `grpc-timeout` header's value as a duration: at most 8 ASCII digits
/// and a unit (`H`, `M`, `S`, `m`, `u`, `n`); `None` if malformed.
pub fn parse_grpc_timeout(value: &str) -> Option<Duration> {
    let unit = value.chars().last()?;
    let digits = &value[..value.len() - unit.len_utf8()];
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let amount: u64 = digits.parse().ok()?;
    Some(match unit {
        'H' => Duration::from_secs(amount * 3600),
        'M' => Duration::from_secs(amount * 60),
        'S' => Duration::from_secs(amount),
        'm' => Duration::from_millis(amount),
        'u' => Duration::from_micros(amount),
        'n' => Duration::from_nanos(amount),
        _ => return None,
    })
}

/// `responses` until `timeout` (from the call's start) passes; then
/// `expired()` as the last item. Without a timeout, `responses` as it is.
pub fn until_deadline<T: Send + 'static, E: Send + 'static>(
    responses: BoxStream<'static, Result<T, E>>,
    timeout: Option<Duration>,
    expired: fn() -> E,
) -> BoxStream<'static, Result<T, E>> {
    let Some(timeout) = timeout else {
        return responses;
    };
    let sleep = Box::pin(tokio::time::sleep(timeout));
    stream::unfold(Some((responses, sleep)), move |state| async move {
        let (mut responses, mut sleep) = state?;
        tokio::select! {
            biased;
            item = responses.next() => item.map(|item| (item, Some((responses, sleep)))),
            () = &mut sleep => Some((Err(expired()), None)),
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeout_values() {
        assert_eq!(parse_grpc_timeout("1m"), Some(Duration::from_millis(1)));
        assert_eq!(parse_grpc_timeout("2S"), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_grpc_timeout("3H"),
            Some(Duration::from_secs(3 * 3600))
        );
        assert_eq!(
            parse_grpc_timeout("99999999n"),
            Some(Duration::from_nanos(99_999_999))
        );
        for bad in ["", "m", "1", "1x", "123456789m", "-1m", "1.5S"] {
            assert_eq!(parse_grpc_timeout(bad), None, "{bad:?}");
        }
    }

    #[tokio::test]
    async fn a_stream_that_never_ends_ends_with_the_deadline_error() {
        let never = stream::pending::<Result<u8, &str>>().boxed();
        let items: Vec<_> = until_deadline(never, Some(Duration::from_millis(5)), || "expired")
            .collect()
            .await;
        assert_eq!(items, [Err("expired")]);
        let done = stream::iter([Ok(1), Ok(2)]).boxed();
        let items: Vec<_> = until_deadline(done, Some(Duration::from_secs(5)), || "expired")
            .collect()
            .await;
        assert_eq!(items, [Ok(1), Ok(2)]);
    }
}
