//! The compressed-message baselines shared by the encode and decode benches:
//! tonic 0.14's per-message compression path, re-implemented, and the
//! deflate backends driven directly.
//!
//! tonic 0.14 (`codec/compression.rs`, `encode.rs`, `decode.rs`) builds a
//! fresh flate2/zstd *read* encoder or decoder over each message's bytes and
//! `io::copy`s it into a per-stream `BytesMut`, reserved in 8 KiB steps
//! (its default buffer size). The arms below do exactly that, with the same
//! crates, so the difference measured is the per-message context set-up and
//! the buffer handling, not the compression algorithm.
//!
//! flate2 in these benches is built with the zlib-rs backend (this crate
//! enables it, and cargo unifies features), which is much faster to set up
//! than miniz_oxide, flate2's default and what a stock tonic build uses. So
//! gzip has two tonic arms: `tonic_0_14`, stock tonic, whose flate2 read
//! encoder/decoder is re-implemented over miniz_oxide exactly as flate2's
//! default backend drives it (a `BufReader` of 32 KiB over the message, a
//! boxed miniz state, `io::copy` through an 8 KiB stack buffer, the gzip
//! header and CRC-32), and `tonic_0_14_zlib_rs`, tonic's code as written,
//! run on the zlib-rs flate2 of this binary: what tonic would cost if the
//! application also switched flate2 to zlib-rs. zstd is the same C library
//! either way. The `deflate_backend` rows compare the two backends alone.

use std::io;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use grpc_stream_codec::compression::CompressionEncoding;

/// tonic's `DEFAULT_CODEC_BUFFER_SIZE`, its growth step for compressed
/// output.
const BUFFER_SIZE: usize = 8 * 1024;

/// tonic's yield threshold: it sends a batch once its buffer holds this much.
const YIELD_THRESHOLD: usize = 32 * 1024;

/// tonic 0.14's `encode_item` for a compressed stream: the message is
/// encoded into `uncompression_buf`, then compressed by a fresh read encoder
/// into `buf` behind a backfilled 5-byte prefix.
pub struct TonicEncoder {
    encoding: CompressionEncoding,
    backend: Backend,
    buf: BytesMut,
    uncompression_buf: BytesMut,
}

/// Which flate2 backend a tonic arm runs on (zstd ignores it).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// flate2's default, as in a stock tonic build.
    Miniz,
    /// flate2 as built in this binary.
    ZlibRs,
}

/// The tonic arms for an encoding: gzip has both backends, zstd one.
pub fn tonic_arms(encoding: CompressionEncoding) -> &'static [(&'static str, Backend)] {
    match encoding {
        CompressionEncoding::Gzip | CompressionEncoding::Deflate => &[
            ("tonic_0_14", Backend::Miniz),
            ("tonic_0_14_zlib_rs", Backend::ZlibRs),
        ],
        _ => &[("tonic_0_14", Backend::ZlibRs)],
    }
}

impl TonicEncoder {
    pub fn new(encoding: CompressionEncoding, backend: Backend) -> Self {
        Self {
            encoding,
            backend,
            buf: BytesMut::with_capacity(BUFFER_SIZE),
            uncompression_buf: BytesMut::with_capacity(BUFFER_SIZE),
        }
    }

    /// Encodes one message; `write` puts its protobuf bytes in. Returns a
    /// batch when tonic would yield one.
    pub fn encode(&mut self, write: impl FnOnce(&mut BytesMut)) -> Option<Bytes> {
        let offset = self.buf.len();
        self.buf.reserve(5);
        self.buf.put_slice(&[0; 5]);
        self.uncompression_buf.clear();
        write(&mut self.uncompression_buf);
        let len = self.uncompression_buf.len();
        if self.encoding == CompressionEncoding::Gzip && self.backend == Backend::Miniz {
            miniz_gzip::compress(&mut self.uncompression_buf, &mut self.buf, len);
        } else {
            compress(
                self.encoding,
                &mut self.uncompression_buf,
                &mut self.buf,
                len,
            )
            .expect("bench messages compress");
        }
        let compressed = self.buf.len() - offset - 5;
        self.buf[offset] = 1;
        self.buf[offset + 1..offset + 5].copy_from_slice(&(compressed as u32).to_be_bytes());
        (self.buf.len() >= YIELD_THRESHOLD).then(|| self.buf.split().freeze())
    }

    /// What is left when the source ends.
    pub fn flush(&mut self) -> Option<Bytes> {
        (!self.buf.is_empty()).then(|| self.buf.split().freeze())
    }
}

/// tonic 0.14's `compression::compress`.
fn compress(
    encoding: CompressionEncoding,
    decompressed_buf: &mut BytesMut,
    out_buf: &mut BytesMut,
    len: usize,
) -> io::Result<()> {
    let capacity = ((len / BUFFER_SIZE) + 1) * BUFFER_SIZE;
    out_buf.reserve(capacity);
    let mut out_writer = out_buf.writer();
    match encoding {
        CompressionEncoding::Gzip => {
            let mut encoder = flate2::read::GzEncoder::new(
                &decompressed_buf[0..len],
                flate2::Compression::new(6),
            );
            io::copy(&mut encoder, &mut out_writer)?;
        }
        CompressionEncoding::Deflate => {
            let mut encoder = flate2::read::ZlibEncoder::new(
                &decompressed_buf[0..len],
                flate2::Compression::new(6),
            );
            io::copy(&mut encoder, &mut out_writer)?;
        }
        CompressionEncoding::Zstd => {
            let mut encoder = zstd::stream::read::Encoder::new(
                &decompressed_buf[0..len],
                zstd::DEFAULT_COMPRESSION_LEVEL,
            )?;
            io::copy(&mut encoder, &mut out_writer)?;
        }
        CompressionEncoding::Identity => unreachable!("compressed arms only"),
    }
    decompressed_buf.advance(len);
    Ok(())
}

/// tonic 0.14's `Streaming` read path for compressed messages: frames are
/// appended to one per-stream `BytesMut`; each complete message is
/// decompressed by a fresh read decoder into the per-stream
/// `decompress_buf` (cleared, reserved as twice the compressed length in
/// 8 KiB steps, limited to the receive limit), and the decoder takes the
/// message out of it (`copy_to_bytes`, which for a `BytesMut` is
/// `split_to(len).freeze()`).
pub struct TonicDecoder {
    encoding: CompressionEncoding,
    backend: Backend,
    buf: BytesMut,
    decompress_buf: BytesMut,
    body: Option<usize>,
}

/// tonic's default receive limit.
const MAX_RECV: usize = 4 * 1024 * 1024;

impl TonicDecoder {
    pub fn new(encoding: CompressionEncoding, backend: Backend) -> Self {
        Self {
            encoding,
            backend,
            buf: BytesMut::with_capacity(BUFFER_SIZE),
            decompress_buf: BytesMut::new(),
            body: None,
        }
    }

    pub fn push(&mut self, frame: &Bytes) {
        self.buf.put_slice(frame);
    }

    pub fn next(&mut self) -> Option<Bytes> {
        let len = match self.body {
            Some(len) => len,
            None => {
                if self.buf.len() < 5 {
                    return None;
                }
                assert_eq!(self.buf.get_u8(), 1, "compressed bench messages");
                let len = self.buf.get_u32() as usize;
                self.buf.reserve(len);
                self.body = Some(len);
                len
            }
        };
        if self.buf.len() < len {
            return None;
        }
        self.body = None;
        self.decompress_buf.clear();
        let estimate = len * 2;
        let capacity = MAX_RECV.min(((estimate / BUFFER_SIZE) + 1) * BUFFER_SIZE);
        self.decompress_buf.reserve(capacity);
        let mut out = (&mut self.decompress_buf).limit(MAX_RECV).writer();
        let input = &self.buf[..len];
        match self.encoding {
            CompressionEncoding::Gzip if self.backend == Backend::Miniz => {
                miniz_gzip::decompress(input, &mut out)
            }
            CompressionEncoding::Gzip => {
                io::copy(&mut flate2::read::GzDecoder::new(input), &mut out)
            }
            CompressionEncoding::Deflate => {
                io::copy(&mut flate2::read::ZlibDecoder::new(input), &mut out)
            }
            CompressionEncoding::Zstd => {
                let mut decoder = zstd::stream::read::Decoder::new(input).expect("zstd decoder");
                io::copy(&mut decoder, &mut out)
            }
            CompressionEncoding::Identity => unreachable!("compressed arms only"),
        }
        .expect("bench messages decompress");
        self.buf.advance(len);
        let decompressed = self.decompress_buf.len();
        Some(self.decompress_buf.split_to(decompressed).freeze())
    }
}

/// flate2's `read::GzEncoder` / `read::GzDecoder` on its default miniz_oxide
/// backend, step for step: what a stock tonic build runs per gzip message.
mod miniz_gzip {
    use std::io::{self, BufRead, BufReader, Read, Write};

    use bytes::{Buf, BufMut, BytesMut};
    use miniz_oxide::deflate::core::{CompressorOxide, create_comp_flags_from_zip_params};
    use miniz_oxide::inflate::stream::InflateState;
    use miniz_oxide::{DataFormat, MZFlush, MZStatus};

    /// flate2's `DEFAULT_BUF_SIZE` for its internal `BufReader`.
    const READER_BUF: usize = 32 * 1024;

    /// `read::GzEncoder::new(&buf[..len], Compression::new(6))`, copied
    /// into `out` by `io::copy`.
    pub fn compress(decompressed_buf: &mut BytesMut, out_buf: &mut BytesMut, len: usize) {
        let capacity = ((len / super::BUFFER_SIZE) + 1) * super::BUFFER_SIZE;
        out_buf.reserve(capacity);
        let mut reader = BufReader::with_capacity(READER_BUF, &decompressed_buf[..len]);
        // `GzBuilder::into_header` builds the header in a Vec.
        let header = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
        // flate2's miniz backend: a boxed default state, then the format
        // and level are set.
        let mut state = Box::new(CompressorOxide::new(create_comp_flags_from_zip_params(
            6, -15, 0,
        )));
        let mut crc = crc32fast::Hasher::new();
        let mut chunk = [0u8; 8 * 1024]; // `io::copy`'s stack buffer
        let mut writer = out_buf.writer();
        writer.write_all(&header).expect("write");
        loop {
            let input = reader.fill_buf().expect("read");
            let eof = input.is_empty();
            let flush = if eof { MZFlush::Finish } else { MZFlush::None };
            let result =
                miniz_oxide::deflate::stream::deflate(&mut state, input, &mut chunk, flush);
            crc.update(&input[..result.bytes_consumed]);
            let consumed = result.bytes_consumed;
            reader.consume(consumed);
            writer
                .write_all(&chunk[..result.bytes_written])
                .expect("write");
            if result.status == Ok(MZStatus::StreamEnd) {
                break;
            }
        }
        writer
            .write_all(&crc.finalize().to_le_bytes())
            .expect("write");
        writer
            .write_all(&(len as u32).to_le_bytes())
            .expect("write");
        decompressed_buf.advance(len);
    }

    /// `read::GzDecoder::new(input)`, copied into `out` by `io::copy`.
    pub fn decompress(input: &[u8], out: &mut impl Write) -> io::Result<u64> {
        let mut reader = BufReader::with_capacity(READER_BUF, input);
        // The bench's gzip members have the plain 10-byte header.
        let mut header = [0u8; 10];
        reader.read_exact(&mut header)?;
        assert_eq!(header[..4], [0x1f, 0x8b, 8, 0]);
        let mut state = InflateState::new_boxed(DataFormat::Raw);
        let mut crc = crc32fast::Hasher::new();
        let mut chunk = [0u8; 8 * 1024];
        let mut total = 0;
        loop {
            let input = reader.fill_buf()?;
            let result =
                miniz_oxide::inflate::stream::inflate(&mut state, input, &mut chunk, MZFlush::None);
            let consumed = result.bytes_consumed;
            reader.consume(consumed);
            crc.update(&chunk[..result.bytes_written]);
            out.write_all(&chunk[..result.bytes_written])?;
            total += result.bytes_written as u64;
            match result.status {
                Ok(MZStatus::StreamEnd) => break,
                Ok(_) => {}
                Err(error) => return Err(io::Error::other(format!("{error:?}"))),
            }
        }
        let mut trailer = [0u8; 8];
        reader.read_exact(&mut trailer)?;
        assert_eq!(trailer[..4], crc.finalize().to_le_bytes());
        Ok(total)
    }
}

/// Raw deflate at level 6 with miniz_oxide, the way flate2's default
/// backend drives it, and with zlib-rs through flate2: fresh per message or
/// one context reset between messages.
pub mod backend {
    use miniz_oxide::deflate::core::{CompressorOxide, create_comp_flags_from_zip_params};
    use miniz_oxide::inflate::stream::InflateState;
    use miniz_oxide::{DataFormat, MZFlush, MZStatus};

    /// One backend, reused or not.
    pub enum Deflater {
        Miniz(Option<Box<CompressorOxide>>),
        ZlibRs(Option<flate2::Compress>),
        /// libdeflate at a level: whole-buffer, no stream state.
        Libdeflate(Option<libdeflater::Compressor>, i32),
    }

    fn libdeflate(level: i32) -> libdeflater::Compressor {
        libdeflater::Compressor::new(libdeflater::CompressionLvl::new(level).expect("level"))
    }

    fn miniz_compressor() -> Box<CompressorOxide> {
        // Level 6, raw deflate (negative window bits), default strategy.
        Box::new(CompressorOxide::new(create_comp_flags_from_zip_params(
            6, -15, 0,
        )))
    }

    impl Deflater {
        /// Compresses `input` as one raw deflate stream into `out` (cleared
        /// first, capacity kept), returning its length.
        pub fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) -> usize {
            out.clear();
            out.resize(input.len() + input.len() / 8 + 64, 0);
            let written = match self {
                Deflater::Miniz(kept) => {
                    let mut fresh;
                    let state = match kept {
                        Some(state) => {
                            state.reset();
                            state
                        }
                        None => {
                            fresh = miniz_compressor();
                            &mut fresh
                        }
                    };
                    let result =
                        miniz_oxide::deflate::stream::deflate(state, input, out, MZFlush::Finish);
                    assert_eq!(result.status, Ok(MZStatus::StreamEnd));
                    result.bytes_written
                }
                Deflater::ZlibRs(kept) => {
                    let mut fresh;
                    let state = match kept {
                        Some(state) => {
                            state.reset();
                            state
                        }
                        None => {
                            fresh = flate2::Compress::new(flate2::Compression::new(6), false);
                            &mut fresh
                        }
                    };
                    let status = state
                        .compress(input, out, flate2::FlushCompress::Finish)
                        .expect("deflate");
                    assert_eq!(status, flate2::Status::StreamEnd);
                    state.total_out() as usize
                }
                Deflater::Libdeflate(kept, level) => {
                    let mut fresh;
                    let compressor = match kept {
                        Some(compressor) => compressor,
                        None => {
                            fresh = libdeflate(*level);
                            &mut fresh
                        }
                    };
                    compressor.deflate_compress(input, out).expect("deflate")
                }
            };
            out.truncate(written);
            written
        }

        pub fn miniz(reused: bool) -> Self {
            Deflater::Miniz(reused.then(miniz_compressor))
        }

        pub fn libdeflate(reused: bool, level: i32) -> Self {
            Deflater::Libdeflate(reused.then(|| libdeflate(level)), level)
        }

        pub fn zlib_rs(reused: bool) -> Self {
            Deflater::ZlibRs(
                reused.then(|| flate2::Compress::new(flate2::Compression::new(6), false)),
            )
        }
    }

    /// Inflation with one backend, reused or not.
    pub enum Inflater {
        Miniz(Option<Box<InflateState>>),
        ZlibRs(Option<flate2::Decompress>),
        /// libdeflate: whole-buffer, the output size known.
        Libdeflate(libdeflater::Decompressor),
    }

    impl Inflater {
        /// Inflates one raw deflate stream into `out` (of the right size).
        pub fn decompress(&mut self, input: &[u8], out: &mut [u8]) -> usize {
            match self {
                Inflater::Miniz(kept) => {
                    let mut fresh;
                    let state = match kept {
                        Some(state) => {
                            state.reset(DataFormat::Raw);
                            state
                        }
                        None => {
                            fresh = InflateState::new_boxed(DataFormat::Raw);
                            &mut fresh
                        }
                    };
                    let result =
                        miniz_oxide::inflate::stream::inflate(state, input, out, MZFlush::Finish);
                    assert_eq!(result.status, Ok(MZStatus::StreamEnd));
                    result.bytes_written
                }
                Inflater::ZlibRs(kept) => {
                    let mut fresh;
                    let state = match kept {
                        Some(state) => {
                            state.reset(false);
                            state
                        }
                        None => {
                            fresh = flate2::Decompress::new(false);
                            &mut fresh
                        }
                    };
                    let status = state
                        .decompress(input, out, flate2::FlushDecompress::Finish)
                        .expect("inflate");
                    assert_eq!(status, flate2::Status::StreamEnd);
                    state.total_out() as usize
                }
                Inflater::Libdeflate(state) => {
                    state.deflate_decompress(input, out).expect("inflate")
                }
            }
        }

        pub fn libdeflate(_reused: bool) -> Self {
            Inflater::Libdeflate(libdeflater::Decompressor::new())
        }

        pub fn miniz(reused: bool) -> Self {
            Inflater::Miniz(reused.then(|| InflateState::new_boxed(DataFormat::Raw)))
        }

        pub fn zlib_rs(reused: bool) -> Self {
            Inflater::ZlibRs(reused.then(|| flate2::Decompress::new(false)))
        }
    }
}
