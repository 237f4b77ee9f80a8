//! Decoding: assembling messages from transport frames.
