"""The Echo service on Python's grpcio (gRPC C-core): the neutral interop peer.

Usage: python echo_server.py --stubs DIR [--port 0]
Prints "listening on 127.0.0.1:PORT" once serving.

Conventions shared with the Rust example servers:
- request metadata `x-fail-after: K` makes ServerStream and Bidi send K
  responses and then fail with ABORTED, message "failed after K messages"
  and trailing metadata `x-fail-detail: K`;
- request metadata `x-response-encoding: gzip|deflate` compresses responses.

Only here (for clients' trailers-only cases: C-core answers a call that
sends no message with the status in the response headers):
- `x-fail-after: 0` also fails Unary and ClientStream that way, before their
  one response;
- request metadata `x-response-count: N` makes ServerStream send exactly N
  responses, 0 included (the proto's `response_count` 0 means 1).
"""

import argparse
import sys
from concurrent import futures

import grpc


def load_stubs(stubs_dir):
    sys.path.insert(0, stubs_dir)
    import echo_pb2  # noqa: E402
    import echo_pb2_grpc  # noqa: E402

    return echo_pb2, echo_pb2_grpc


COMPRESSION = {
    "gzip": grpc.Compression.Gzip,
    "deflate": grpc.Compression.Deflate,
    "identity": grpc.Compression.NoCompression,
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stubs", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    echo_pb2, echo_pb2_grpc = load_stubs(args.stubs)

    def metadata(context):
        return dict(context.invocation_metadata())

    def apply_response_encoding(context):
        name = metadata(context).get("x-response-encoding")
        if name in COMPRESSION:
            context.set_compression(COMPRESSION[name])

    def fail_after(context):
        value = metadata(context).get("x-fail-after")
        return int(value) if value is not None else None

    def response_count(request, context):
        value = metadata(context).get("x-response-count")
        return int(value) if value is not None else request.response_count or 1

    def fail(context, k):
        context.set_trailing_metadata((("x-fail-detail", str(k)),))
        context.abort(grpc.StatusCode.ABORTED, f"failed after {k} messages")

    class Echo(echo_pb2_grpc.EchoServicer):
        def Unary(self, request, context):
            apply_response_encoding(context)
            if fail_after(context) == 0:
                fail(context, 0)
            return echo_pb2.EchoResponse(payload=request.payload)

        def ServerStream(self, request, context):
            apply_response_encoding(context)
            limit = fail_after(context)
            count = response_count(request, context)
            for seq in range(count):
                if limit is not None and seq == limit:
                    fail(context, limit)
                payload = bytes([seq % 251]) * request.response_size
                yield echo_pb2.EchoResponse(payload=payload, seq=seq)
            if limit is not None and limit >= count:
                fail(context, limit)

        def ClientStream(self, request_iterator, context):
            apply_response_encoding(context)
            total = 0
            count = 0
            for request in request_iterator:
                total += len(request.payload)
                count += 1
            if fail_after(context) == 0:
                fail(context, 0)
            return echo_pb2.EchoResponse(total_bytes=total, count=count)

        def Bidi(self, request_iterator, context):
            apply_response_encoding(context)
            limit = fail_after(context)
            for seq, request in enumerate(request_iterator):
                if limit is not None and seq == limit:
                    fail(context, limit)
                yield echo_pb2.EchoResponse(payload=request.payload, seq=seq)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    echo_pb2_grpc.add_EchoServicer_to_server(Echo(), server)
    port = server.add_insecure_port(f"127.0.0.1:{args.port}")
    server.start()
    print(f"listening on 127.0.0.1:{port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
