//! Conversions between this crate's [`Status`] and `volo_grpc::Status`.
//!
//! Metadata is moved both ways (volo-grpc's `MetadataMap` is a wrapper
//! around the same `http::HeaderMap`). Into volo-grpc the message and details
//! are moved too; out of volo-grpc they are copied, since volo-grpc's
//! `Status` has no way to give them up.

use bytes::Bytes;
use volo_grpc::metadata::MetadataMap;

use crate::status::{Code, Status};

impl From<volo_grpc::Status> for Status {
    fn from(mut status: volo_grpc::Status) -> Self {
        let metadata = std::mem::take(status.metadata_mut()).into_headers();
        let converted = Status::new(code_from_volo(status.code()), status.message().to_owned());
        let converted = if status.details().is_empty() {
            converted
        } else {
            converted.with_details(Bytes::copy_from_slice(status.details()))
        };
        converted.with_metadata(metadata)
    }
}

impl From<Status> for volo_grpc::Status {
    fn from(status: Status) -> Self {
        let (code, message, details, metadata) = status.into_parts();
        volo_grpc::Status::with_details_and_metadata(
            code_to_volo(code),
            message.into_owned(),
            details,
            MetadataMap::from_headers(metadata),
        )
    }
}

/// volo-grpc's code for this crate's (the numeric values are the same).
pub fn code_to_volo(code: Code) -> volo_grpc::Code {
    volo_grpc::Code::from_i32(code.as_i32())
}

/// This crate's code for volo-grpc's.
pub fn code_from_volo(code: volo_grpc::Code) -> Code {
    Code::from_i32(code as i32)
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    #[test]
    fn codes_round_trip() {
        for value in 0..=16 {
            let code = Code::from_i32(value);
            assert_eq!(code_to_volo(code) as i32, value);
            assert_eq!(code_from_volo(code_to_volo(code)), code);
        }
    }

    #[test]
    fn into_volo_moves_everything() {
        let mut metadata = http::HeaderMap::new();
        metadata.insert("x-key", HeaderValue::from_static("v"));
        let status = Status::new(Code::ResourceExhausted, "too big")
            .with_details(Bytes::from_static(b"\x01\x02"))
            .with_metadata(metadata);
        let volo: volo_grpc::Status = status.into();
        assert_eq!(volo.code(), volo_grpc::Code::ResourceExhausted);
        assert_eq!(volo.message(), "too big");
        assert_eq!(volo.details(), b"\x01\x02");
        assert_eq!(volo.metadata().get("x-key").unwrap(), "v");
    }

    #[test]
    fn from_volo_moves_metadata_out() {
        let mut volo = volo_grpc::Status::with_details(
            volo_grpc::Code::NotFound,
            "gone",
            Bytes::from_static(b"d"),
        );
        volo.metadata_mut().insert("x-key", "v".parse().unwrap());
        let status = Status::from(volo);
        assert_eq!(status.code(), Code::NotFound);
        assert_eq!(status.message(), "gone");
        assert_eq!(status.details(), b"d");
        assert_eq!(status.metadata().unwrap().get("x-key").unwrap(), "v");
    }

    #[test]
    fn a_plain_status_from_volo_has_no_boxed_part() {
        let status = Status::from(volo_grpc::Status::internal("x"));
        assert!(status.metadata().is_none());
        assert!(status.details().is_empty());
    }
}
