#!/usr/bin/env python3
"""Writes a few valid inputs into fuzz/corpus/<target>/ so the fuzzers start
from real gzip, zlib and zstd streams and real envelopes instead of finding
the formats byte by byte. Needs the `zstd` command for the zstd seeds."""

import gzip
import os
import shutil
import struct
import subprocess
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def zstd(data):
    if shutil.which("zstd") is None:
        return None
    return subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True, check=True).stdout


def envelope(flags, payload):
    return struct.pack(">BI", flags, len(payload)) + payload


def write(target, name, data):
    directory = os.path.join(HERE, "corpus", target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "seed-" + name), "wb") as f:
        f.write(data)


PAYLOADS = [b"", b"hello", b"abc" * 100, bytes(range(256)) * 20, b"\0" * 70000]

for i, payload in enumerate(PAYLOADS):
    compressed = {1: gzip.compress(payload), 2: zlib.compress(payload), 3: zstd(payload)}
    write("decompress", f"identity-{i}", b"\0" + payload[:1000])
    for selector, data in compressed.items():
        if data is not None:
            write("decompress", f"{selector}-{i}", bytes([selector]) + data)
            # Mode byte, no frame sizes, then one compressed message between
            # two plain ones and gRPC-Web trailers.
            body = (envelope(0, b"first") + envelope(1, data) + envelope(0, payload[:10])
                    + envelope(0x80, b"grpc-status: 0\r\ngrpc-message: ok\r\n"))
            write("assembler", f"{selector}-{i}", bytes([selector, 0]) + body)
            write("assembler", f"cut-{selector}-{i}", bytes([selector, 3, 7, 0x81, 200]) + body)

# gzip members with the optional header fields (name, comment, extra, CRC-16),
# which this crate parses itself.
def gzip_with_fields(payload, flags, extra=b"", name=b"", comment=b""):
    header = bytearray(b"\x1f\x8b\x08" + bytes([flags]) + b"\0\0\0\0\0\xff")
    if flags & 4:
        header += struct.pack("<H", len(extra)) + extra
    if flags & 8:
        header += name + b"\0"
    if flags & 16:
        header += comment + b"\0"
    if flags & 2:
        header += struct.pack("<H", zlib.crc32(bytes(header)) & 0xFFFF)
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = raw.compress(payload) + raw.flush()
    return bytes(header) + body + struct.pack("<II", zlib.crc32(payload), len(payload))


for i, flags in enumerate([2, 4, 8, 16, 30]):
    data = gzip_with_fields(b"fields" * 20, flags, b"\x01\x02xy", b"name.txt", b"note")
    write("decompress", f"gzip-fields-{i}", b"\x01" + data)
    write("assembler", f"gzip-fields-{i}", bytes([1, 0]) + envelope(1, data))

write("assembler", "plain", bytes([0, 2, 3, 11]) + envelope(0, b"hi") + envelope(0, b"there"))
write("status_headers", "full", b"\x00 3\x00\x01bad%20thing\x00\x02AAEC\x00\x03v\x00\x04YQ==")
write("status_headers", "ok", b"\x000")
