"""grpc.testing.TestService on Python's grpcio (gRPC C-core), as grpc's
"Interop Test Case Descriptions" require it; UnimplementedService is left
out, so calls to it get UNIMPLEMENTED.

Usage: python3 server.py --stubs DIR --port N [--host 127.0.0.1]
Prints "listening on HOST:PORT" once serving (port 0 picks one).

grpcio lets a handler turn compression off for the next message, so this
server honours response_compressed and ResponseParameters.compressed per
message. It sees no per-message flag of a request, so expect_compressed is
checked against the call's grpc-encoding, as the Rust servers do.
"""

import argparse
import sys
import time
from concurrent import futures

import grpc

import stubs

ECHO_INITIAL = "x-grpc-test-echo-initial"
ECHO_TRAILING_BIN = "x-grpc-test-echo-trailing-bin"
CODES = {code.value[0]: code for code in grpc.StatusCode}


def make_servicer(empty_pb2, messages_pb2, test_pb2_grpc):
    def echo_metadata(context):
        metadata = dict(context.invocation_metadata())
        if ECHO_INITIAL in metadata:
            context.send_initial_metadata([(ECHO_INITIAL, metadata[ECHO_INITIAL])])
        if ECHO_TRAILING_BIN in metadata:
            context.set_trailing_metadata([(ECHO_TRAILING_BIN, metadata[ECHO_TRAILING_BIN])])

    def request_compressed(context):
        encoding = dict(context.invocation_metadata()).get("grpc-encoding")
        return encoding is not None and encoding != "identity"

    def check_compressed(expect, context):
        if expect.value and not request_compressed(context):
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "expected a compressed request")

    def echo_status(status, context):
        if status.code != 0:
            context.abort(CODES.get(status.code, grpc.StatusCode.UNKNOWN), status.message)

    def payload(size, context):
        if size < 0 or size > 4 * 1024 * 1024 - 64:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"response size {size} refused")
        return messages_pb2.Payload(body=b"\0" * size)

    def answer(request, context):
        """Yields a StreamingOutputCallRequest's responses, compressed or not
        one by one as its parameters ask, then its status."""
        for parameters in request.response_parameters:
            if parameters.interval_us > 0:
                time.sleep(parameters.interval_us / 1e6)
            if not parameters.compressed.value:
                context.disable_next_message_compression()
            yield messages_pb2.StreamingOutputCallResponse(payload=payload(parameters.size, context))
        echo_status(request.response_status, context)

    def compress_if_asked(parameters, context):
        if any(p.compressed.value for p in parameters):
            context.set_compression(grpc.Compression.Gzip)

    class TestService(test_pb2_grpc.TestServiceServicer):
        def EmptyCall(self, request, context):
            echo_metadata(context)
            return empty_pb2.Empty()

        def UnaryCall(self, request, context):
            echo_metadata(context)
            check_compressed(request.expect_compressed, context)
            echo_status(request.response_status, context)
            context.set_compression(
                grpc.Compression.Gzip
                if request.response_compressed.value
                else grpc.Compression.NoCompression
            )
            return messages_pb2.SimpleResponse(payload=payload(request.response_size, context))

        def CacheableUnaryCall(self, request, context):
            return self.UnaryCall(request, context)

        def StreamingOutputCall(self, request, context):
            echo_metadata(context)
            compress_if_asked(request.response_parameters, context)
            yield from answer(request, context)

        def StreamingInputCall(self, request_iterator, context):
            echo_metadata(context)
            total = 0
            for request in request_iterator:
                check_compressed(request.expect_compressed, context)
                total += len(request.payload.body)
            return messages_pb2.StreamingInputCallResponse(aggregated_payload_size=total)

        def FullDuplexCall(self, request_iterator, context):
            echo_metadata(context)
            first = True
            for request in request_iterator:
                # Compression is chosen once per call, before its first message.
                if first:
                    compress_if_asked(request.response_parameters, context)
                    first = False
                yield from answer(request, context)

        def HalfDuplexCall(self, request_iterator, context):
            echo_metadata(context)
            buffered = list(request_iterator)
            if buffered:
                compress_if_asked(buffered[0].response_parameters, context)
            for request in buffered:
                yield from answer(request, context)

        def UnimplementedCall(self, request, context):
            context.abort(
                grpc.StatusCode.UNIMPLEMENTED,
                "grpc.testing.TestService/UnimplementedCall is not implemented",
            )

    return TestService()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stubs", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    empty_pb2, messages_pb2, test_pb2_grpc = stubs.load(args.stubs)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=32),
        options=[("grpc.so_reuseport", 0)],
    )
    test_pb2_grpc.add_TestServiceServicer_to_server(
        make_servicer(empty_pb2, messages_pb2, test_pb2_grpc), server
    )
    port = server.add_insecure_port(f"{args.host}:{args.port}")
    if port == 0:
        sys.exit(f"cannot listen on {args.host}:{args.port}")
    server.start()
    print(f"listening on {args.host}:{port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
