"""grpc.testing stubs for grpcio, generated at run time with grpcio-tools
from the protos vendored in examples/grpc-interop/proto (grpc's own).

Usage: python3 stubs.py OUT_DIR   (generates; the server and client take
--stubs OUT_DIR and import from it)."""

import os
import sys

PROTO_ROOT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "grpc-interop", "proto"
)
PROTOS = [
    "src/proto/grpc/testing/empty.proto",
    "src/proto/grpc/testing/messages.proto",
    "src/proto/grpc/testing/test.proto",
]


def generate(out_dir):
    from grpc_tools import protoc

    os.makedirs(out_dir, exist_ok=True)
    args = ["protoc", f"-I{PROTO_ROOT}", f"--python_out={out_dir}", f"--grpc_python_out={out_dir}"]
    if protoc.main(args + PROTOS) != 0:
        raise SystemExit("grpcio-tools could not compile the grpc.testing protos")


def load(out_dir):
    """Returns (empty_pb2, messages_pb2, test_pb2_grpc)."""
    sys.path.insert(0, out_dir)
    from src.proto.grpc.testing import empty_pb2, messages_pb2, test_pb2_grpc  # noqa: E402

    return empty_pb2, messages_pb2, test_pb2_grpc


if __name__ == "__main__":
    generate(sys.argv[1])
