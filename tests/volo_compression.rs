//! Tests of `grpc_stream_codec::volo` through its public API (moved out of `adapters/volo/compression.rs`).
#![cfg(feature = "volo")]

use grpc_stream_codec::compression::CompressionEncoding;
use volo_grpc::codec::compression::CompressionEncoding as VoloEncoding;

use grpc_stream_codec::volo::*;

#[test]
fn identity_and_none_send_uncompressed() {
    assert_eq!(compression_from_volo(None), None);
    assert_eq!(compression_from_volo(Some(VoloEncoding::Identity)), None);
    assert_eq!(
        encoding_from_volo(VoloEncoding::Identity),
        CompressionEncoding::Identity
    );
    assert!(matches!(
        encoding_to_volo(CompressionEncoding::Identity),
        Some(VoloEncoding::Identity)
    ));
}

#[test]
fn encodings_whose_feature_is_off_have_no_volo_name() {
    let off = [
        (cfg!(feature = "gzip"), CompressionEncoding::Gzip),
        (cfg!(feature = "deflate"), CompressionEncoding::Deflate),
        (cfg!(feature = "zstd"), CompressionEncoding::Zstd),
    ];
    for (on, encoding) in off {
        assert_eq!(encoding_to_volo(encoding).is_some(), on, "{encoding:?}");
    }
}
