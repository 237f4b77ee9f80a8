//! Merging metadata the way tonic does.

use tonic::metadata::MetadataMap;

/// Adds `other` to `metadata`; a key in both takes `other`'s values, as
/// tonic's own (private) merge does when trailers join response headers.
pub(crate) fn merge_metadata(metadata: &mut MetadataMap, other: MetadataMap) {
    let mut headers = std::mem::take(metadata).into_headers();
    headers.extend(other.into_headers());
    *metadata = MetadataMap::from_headers(headers);
}
