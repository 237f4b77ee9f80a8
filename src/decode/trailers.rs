//! The body of a gRPC-Web trailers frame: HTTP/1-style `name: value\r\n` lines.

use http::header::{HeaderMap, HeaderName, HeaderValue};

use crate::status::Status;

/// Parses a gRPC-Web trailers block.
///
/// Lines end in `\r\n` (a bare `\n` is tolerated); empty lines are skipped.
/// Names are lower-cased, surrounding spaces are trimmed from names and
/// values. A line without a colon, or with an invalid name or value, is an
/// `internal` error.
pub(crate) fn parse_trailers(block: &[u8]) -> Result<HeaderMap, Status> {
    let mut trailers = HeaderMap::new();
    for line in block.split(|&byte| byte == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let Some(colon) = line.iter().position(|&byte| byte == b':') else {
            return Err(malformed(line));
        };
        let name = HeaderName::from_bytes(line[..colon].trim_ascii());
        let value = HeaderValue::from_bytes(line[colon + 1..].trim_ascii());
        match (name, value) {
            (Ok(name), Ok(value)) => {
                trailers.append(name, value);
            }
            _ => return Err(malformed(line)),
        }
    }
    Ok(trailers)
}

fn malformed(line: &[u8]) -> Status {
    // Quote a bounded prefix: the line is peer data and may be huge.
    let shown = &line[..line.len().min(64)];
    Status::internal(format!(
        "protocol error: malformed gRPC-Web trailer line {:?}",
        String::from_utf8_lossy(shown)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines() {
        let trailers =
            parse_trailers(b"grpc-status: 0\r\nGrpc-Message:  ok \r\nx-a: 1\nx-a: 2\r\n\r\n")
                .unwrap();
        assert_eq!(trailers["grpc-status"], "0");
        assert_eq!(trailers["grpc-message"], "ok");
        assert_eq!(trailers.get_all("x-a").iter().count(), 2);
    }

    #[test]
    fn rejects_bad_lines() {
        for block in [
            &b"no colon\r\n"[..],
            b": empty name\r\n",
            b"bad name: x\r\n",
            b"x: \x01\r\n",
        ] {
            let err = parse_trailers(block).unwrap_err();
            assert_eq!(err.code(), crate::status::Code::Internal);
            assert!(
                err.message()
                    .starts_with("protocol error: malformed gRPC-Web trailer line")
            );
        }
    }
}
