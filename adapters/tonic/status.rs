//! Conversions between this crate's [`Status`] and [`tonic::Status`].
//!
//! Metadata is moved in both directions. The message and details are moved
//! into a `tonic::Status` but copied out of one, because tonic only lends
//! them; a source error is not carried either way, for the same reason.

use tonic::metadata::MetadataMap;

use crate::status::{Code, Status};

impl From<Status> for tonic::Status {
    fn from(status: Status) -> tonic::Status {
        let (code, message, details, metadata) = status.into_parts();
        tonic::Status::with_details_and_metadata(
            tonic::Code::from_i32(code.as_i32()),
            message.into_owned(),
            details,
            MetadataMap::from_headers(metadata),
        )
    }
}

impl From<tonic::Status> for Status {
    fn from(mut status: tonic::Status) -> Status {
        let metadata = std::mem::take(status.metadata_mut()).into_headers();
        let mut converted = Status::new(
            Code::from_i32(status.code() as i32),
            status.message().to_owned(),
        )
        .with_metadata(metadata);
        if !status.details().is_empty() {
            converted = converted.with_details(bytes::Bytes::copy_from_slice(status.details()));
        }
        converted
    }
}
