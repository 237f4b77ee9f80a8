//! The gzip member header (RFC 1952 2.3), which this crate parses itself:
//! the deflate data between it and the trailer goes to a raw inflate state.

use super::error::Failure;

/// Length of the gzip member header at the start of `input` (RFC 1952 2.3),
/// with its optional fields and, if present, its CRC-16 checked.
#[cfg(feature = "gzip")]
pub(super) fn gzip_header_len(input: &[u8]) -> Result<usize, Failure> {
    const FHCRC: u8 = 0x02;
    const FEXTRA: u8 = 0x04;
    const FNAME: u8 = 0x08;
    const FCOMMENT: u8 = 0x10;
    const RESERVED: u8 = 0xe0;
    let truncated = || Failure::corrupt("truncated gzip header");
    let fixed = input.get(..10).ok_or_else(truncated)?;
    if fixed[..3] != [0x1f, 0x8b, 8] {
        return Err(Failure::corrupt("invalid gzip header"));
    }
    let flags = fixed[3];
    if flags & RESERVED != 0 {
        return Err(Failure::corrupt("reserved gzip header flags set"));
    }
    let mut len = 10;
    if flags & FEXTRA != 0 {
        let xlen = input.get(len..len + 2).ok_or_else(truncated)?;
        len += 2 + u16::from_le_bytes([xlen[0], xlen[1]]) as usize;
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let rest = input.get(len..).ok_or_else(truncated)?;
            let end = rest.iter().position(|&b| b == 0).ok_or_else(truncated)?;
            len += end + 1;
        }
    }
    if flags & FHCRC != 0 {
        let stored = input.get(len..len + 2).ok_or_else(truncated)?;
        let mut crc = flate2::Crc::new();
        crc.update(&input[..len]);
        if stored != &(crc.sum() as u16).to_le_bytes()[..] {
            return Err(Failure::corrupt("gzip header CRC mismatch"));
        }
        len += 2;
    }
    if len > input.len() {
        return Err(truncated());
    }
    Ok(len)
}
