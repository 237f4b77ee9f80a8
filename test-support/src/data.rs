//! Message payloads for compression tests.

/// `len` bytes that compress well but not trivially (a few dozen distinct
/// values in a long cycle); `seed` shifts the cycle, so two samples differ.
pub fn sample(len: usize, seed: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 31 + seed) % 251 / 3) as u8)
        .collect()
}
