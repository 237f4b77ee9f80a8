"""Drives an Echo server with Python's grpcio client (gRPC C-core) and checks
every reply. Exits non-zero if any case fails.

Usage: python interop_client.py --stubs DIR --addr 127.0.0.1:PORT --label NAME
       [--results FILE]  (appends one JSON line per case)
"""

import argparse
import json
import sys

import grpc

MIB = 1024 * 1024
# An EchoRequest with a payload of 4 MiB - 5 bytes encodes to exactly 4 MiB
# (1 tag byte + 4 length-varint bytes): the largest message the default
# limit accepts.
AT_LIMIT = 4 * MIB - 5
PAYLOADS = [0, 256, MIB, AT_LIMIT]
COMPRESSIONS = {
    "none": grpc.Compression.NoCompression,
    "gzip": grpc.Compression.Gzip,
    "deflate": grpc.Compression.Deflate,
}


def payload_of(size, salt=0):
    return bytes((i * 7 + salt) % 256 for i in range(min(size, 4096))) * (size // 4096) + bytes(
        (i * 7 + salt) % 256 for i in range(size % 4096)
    )


class Checker:
    def __init__(self, label, results):
        self.label = label
        self.results = results
        self.failures = 0

    def case(self, rpc, compression, size, fn):
        try:
            fn()
            ok, error = True, ""
        except Exception as exc:  # the case failed; record why and go on
            ok, error = False, f"{type(exc).__name__}: {exc}"[:300]
            self.failures += 1
        line = {
            "peer": self.label,
            "rpc": rpc,
            "compression": compression,
            "size": size,
            "ok": ok,
            "error": error,
        }
        print(("PASS" if ok else "FAIL"), json.dumps(line), flush=True)
        if self.results:
            with open(self.results, "a") as out:
                out.write(json.dumps(line) + "\n")


def expect(condition, what):
    if not condition:
        raise AssertionError(what)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stubs", required=True)
    parser.add_argument("--addr", required=True)
    parser.add_argument("--label", required=True)
    parser.add_argument("--results")
    args = parser.parse_args()
    sys.path.insert(0, args.stubs)
    import echo_pb2
    import echo_pb2_grpc

    Req = echo_pb2.EchoRequest
    channel = grpc.insecure_channel(args.addr)
    grpc.channel_ready_future(channel).result(timeout=30)
    stub = echo_pb2_grpc.EchoStub(channel)
    check = Checker(args.label, args.results)

    for cname, compression in COMPRESSIONS.items():
        for size in PAYLOADS:
            body = payload_of(size)

            def unary():
                reply = stub.Unary(Req(payload=body), compression=compression, timeout=60)
                expect(reply.payload == body, "unary payload differs")

            def server_stream():
                # A non-zero seq adds 2 bytes, so at the limit only seq 0 fits.
                count = 1 if size == AT_LIMIT else 2
                replies = list(
                    stub.ServerStream(
                        Req(response_count=count, response_size=size),
                        compression=compression,
                        timeout=60,
                    )
                )
                expect(len(replies) == count, f"{len(replies)} replies")
                for seq, reply in enumerate(replies):
                    expect(reply.seq == seq, "seq")
                    expect(reply.payload == bytes([seq % 251]) * size, "payload")

            def client_stream():
                reply = stub.ClientStream(
                    iter([Req(payload=body), Req(payload=body[: size // 2])]),
                    compression=compression,
                    timeout=60,
                )
                expect(reply.count == 2, f"count {reply.count}")
                expect(reply.total_bytes == size + size // 2, f"total {reply.total_bytes}")

            def bidi():
                sent = [body, body[: size // 3]]
                replies = list(
                    stub.Bidi(iter([Req(payload=p) for p in sent]), compression=compression, timeout=60)
                )
                expect([r.payload for r in replies] == sent, "bidi payloads differ")
                expect([r.seq for r in replies] == [0, 1], "bidi seq")

            for rpc, fn in [
                ("unary", unary),
                ("server_stream", server_stream),
                ("client_stream", client_stream),
                ("bidi", bidi),
            ]:
                check.case(rpc, cname, size, fn)

        # 1,000-message streams of 256 B in every streaming direction.
        def many_server():
            replies = list(
                stub.ServerStream(Req(response_count=1000, response_size=256), compression=compression)
            )
            expect([r.seq for r in replies] == list(range(1000)), "order")
            expect(all(r.payload == bytes([r.seq % 251]) * 256 for r in replies), "payload")

        def many_client():
            reply = stub.ClientStream(
                (Req(payload=payload_of(256, i)) for i in range(1000)), compression=compression
            )
            expect((reply.count, reply.total_bytes) == (1000, 256_000), "totals")

        def many_bidi():
            sent = [payload_of(256, i) for i in range(1000)]
            replies = list(stub.Bidi(iter([Req(payload=p) for p in sent]), compression=compression))
            expect([r.payload for r in replies] == sent, "payloads")
            expect([r.seq for r in replies] == list(range(1000)), "order")

        check.case("server_stream_1000", cname, 256, many_server)
        check.case("client_stream_1000", cname, 256, many_client)
        check.case("bidi_1000", cname, 256, many_bidi)

    # Above the limit: the server refuses with RESOURCE_EXHAUSTED.
    def over_limit():
        try:
            stub.Unary(Req(payload=b"x" * (AT_LIMIT + 1)), timeout=60)
        except grpc.RpcError as err:
            expect(err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, f"code {err.code()}")
            return
        raise AssertionError("over-limit message was accepted")

    check.case("unary_over_limit", "none", AT_LIMIT + 1, over_limit)

    # Above the limit the other way: our server sends a reply above 4 MiB and
    # grpcio's client (C-core's own 4 MiB receive limit) refuses it. This
    # checks that the server sends it rather than failing the call itself;
    # our clients' refusal of such a reply is the case of the same name in
    # run.sh (our clients -> grpcio server).
    def reply_over_limit():
        try:
            list(stub.ServerStream(Req(response_count=1, response_size=AT_LIMIT + 1), timeout=60))
        except grpc.RpcError as err:
            expect(err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, f"code {err.code()}")
            # C-core's client-side refusal, not a status sent by the server.
            expect(
                "Received message larger than max" in (err.details() or ""),
                f"refused by the server, not by grpcio's client: {err.details()!r}",
            )
            return
        raise AssertionError("over-limit reply was accepted")

    check.case("server_stream_reply_over_limit", "none", AT_LIMIT + 1, reply_over_limit)

    # A server error after k messages: k messages, then the status with its
    # message and trailing metadata intact.
    for rpc in ["server_stream", "bidi"]:

        def fails_after_k(rpc=rpc):
            k = 3
            metadata = (("x-fail-after", str(k)),)
            if rpc == "server_stream":
                call = stub.ServerStream(
                    Req(response_count=10, response_size=64), metadata=metadata, timeout=60
                )
            else:
                call = stub.Bidi(
                    iter([Req(payload=payload_of(64, i)) for i in range(10)]),
                    metadata=metadata,
                    timeout=60,
                )
            received = []
            try:
                for reply in call:
                    received.append(reply)
            except grpc.RpcError as err:
                expect(len(received) == k, f"{len(received)} messages before the error")
                expect(err.code() == grpc.StatusCode.ABORTED, f"code {err.code()}")
                expect(err.details() == f"failed after {k} messages", f"message {err.details()!r}")
                trailing = dict(err.trailing_metadata() or ())
                expect(trailing.get("x-fail-detail") == str(k), f"trailers {trailing}")
                return
            raise AssertionError("the call ended without the error")

        check.case(f"{rpc}_error_after_k", "none", 64, fails_after_k)

    print(f"{args.label}: {check.failures} failures", flush=True)
    sys.exit(1 if check.failures else 0)


if __name__ == "__main__":
    main()
