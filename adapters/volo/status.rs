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
