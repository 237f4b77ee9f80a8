//! The decompressed-size check of a build with no compression feature: it
//! cannot decompress anything, and tonic (whose encodings follow the same
//! features) refuses every compressed stream itself, so there is nothing to
//! check.

use crate::compression::CompressionEncoding;
use crate::status::Status;

/// Never built: no stream of this build has an encoding to check.
#[derive(Clone, Copy, Debug)]
pub(super) enum InflatedLimit {}

impl InflatedLimit {
    pub(super) fn new(_encoding: Option<CompressionEncoding>, _limit: usize) -> Option<Self> {
        None
    }

    pub(super) fn check_envelope(&self, _envelope: &[u8]) -> Result<(), Status> {
        match *self {}
    }

    pub(super) fn follower(self) -> PayloadFollower {
        match self {}
    }
}

/// Never built, like [`InflatedLimit`].
pub(super) enum PayloadFollower {}

impl PayloadFollower {
    pub(super) fn observe(&mut self, _frame: &[u8]) -> Result<(), Status> {
        match *self {}
    }
}
