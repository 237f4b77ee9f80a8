"""The standard interop client cases on Python's grpcio (gRPC C-core),
against any grpc.testing.TestService server.

Usage: python3 client.py --stubs DIR --server_port N [--server_host 127.0.0.1]
       [--test_case all|CASE,...] [--use_tls false]
Prints "PASS <case>" or "FAIL <case>: <why>" per case, then
"N passed, M failed"; exits 1 if any case failed.

grpcio chooses a client's compression per call, not per message, so in
client_compressed_streaming both messages go compressed (the second one's
expect_compressed is false, which a server does not check)."""

import argparse
import queue
import sys
import threading

import grpc

import stubs

CASES = [
    "empty_unary",
    "large_unary",
    "client_compressed_unary",
    "server_compressed_unary",
    "client_streaming",
    "client_compressed_streaming",
    "server_streaming",
    "server_compressed_streaming",
    "ping_pong",
    "empty_stream",
    "cancel_after_begin",
    "cancel_after_first_response",
    "timeout_on_sleeping_server",
    "custom_metadata",
    "status_code_and_message",
    "special_status_message",
    "unimplemented_method",
    "unimplemented_service",
]

ECHO_INITIAL = ("x-grpc-test-echo-initial", "test_initial_metadata_value")
ECHO_TRAILING = ("x-grpc-test-echo-trailing-bin", b"\xab\xab\xab")
STATUS_MESSAGE = "test status message"
SPECIAL_MESSAGE = "\t\ntest with whitespace\r\nand Unicode BMP \u263a and non-BMP \U0001f608\t\n"
TIMEOUT = 20


class Failed(Exception):
    pass


def ensure(ok, why):
    if not ok:
        raise Failed(why)


def expect_error(call, code, message=None):
    """Runs call(); it must fail with code (and message)."""
    try:
        call()
    except grpc.RpcError as err:
        ensure(err.code() == code, f"status {err.code()} ({err.details()!r}), expected {code}")
        if message is not None:
            ensure(err.details() == message, f"message {err.details()!r}, expected {message!r}")
        return err
    raise Failed(f"the call succeeded, expected {code}")


class Requests:
    """A request iterator fed one message at a time (ping_pong, cancels)."""

    def __init__(self):
        self.queue = queue.Queue()

    def send(self, message):
        self.queue.put(message)

    def close(self):
        self.queue.put(None)

    def __iter__(self):
        return self

    def __next__(self):
        message = self.queue.get()
        if message is None:
            raise StopIteration
        return message


class Cases:
    def __init__(self, channel, empty_pb2, messages_pb2, test_pb2_grpc):
        self.stub = test_pb2_grpc.TestServiceStub(channel)
        self.unimplemented = test_pb2_grpc.UnimplementedServiceStub(channel)
        self.empty = empty_pb2
        self.m = messages_pb2

    def payload(self, size):
        return self.m.Payload(body=b"\0" * size)

    def check_payload(self, payload, size, what):
        ensure(len(payload.body) == size, f"{what}: {len(payload.body)} bytes, expected {size}")
        ensure(payload.body == b"\0" * size, f"{what}: payload is not zeros")

    def simple(self, **fields):
        return self.m.SimpleRequest(
            response_size=314159, payload=self.payload(271828), **fields
        )

    def params(self, size, compressed=None):
        fields = {"size": size}
        if compressed is not None:
            fields["compressed"] = self.m.BoolValue(value=compressed)
        return self.m.ResponseParameters(**fields)

    def empty_unary(self):
        reply = self.stub.EmptyCall(self.empty.Empty(), timeout=TIMEOUT)
        ensure(reply == self.empty.Empty(), "reply is not Empty")

    def large_unary(self):
        reply = self.stub.UnaryCall(self.simple(), timeout=TIMEOUT)
        self.check_payload(reply.payload, 314159, "response")

    def client_compressed_unary(self):
        yes, no = self.m.BoolValue(value=True), self.m.BoolValue(value=False)
        expect_error(
            lambda: self.stub.UnaryCall(self.simple(expect_compressed=yes), timeout=TIMEOUT),
            grpc.StatusCode.INVALID_ARGUMENT,
        )
        reply = self.stub.UnaryCall(
            self.simple(expect_compressed=yes), compression=grpc.Compression.Gzip, timeout=TIMEOUT
        )
        self.check_payload(reply.payload, 314159, "compressed request's response")
        reply = self.stub.UnaryCall(self.simple(expect_compressed=no), timeout=TIMEOUT)
        self.check_payload(reply.payload, 314159, "uncompressed request's response")

    def server_compressed_unary(self):
        for compressed in (True, False):
            request = self.simple(response_compressed=self.m.BoolValue(value=compressed))
            reply = self.stub.UnaryCall(request, timeout=TIMEOUT)
            self.check_payload(reply.payload, 314159, f"response_compressed={compressed}")

    def client_streaming(self):
        sizes = [27182, 8, 1828, 45904]
        requests = (self.m.StreamingInputCallRequest(payload=self.payload(s)) for s in sizes)
        reply = self.stub.StreamingInputCall(requests, timeout=TIMEOUT)
        ensure(reply.aggregated_payload_size == 74922, f"aggregated {reply.aggregated_payload_size}")

    def client_compressed_streaming(self):
        yes, no = self.m.BoolValue(value=True), self.m.BoolValue(value=False)
        probe = [self.m.StreamingInputCallRequest(payload=self.payload(27182), expect_compressed=yes)]
        expect_error(
            lambda: self.stub.StreamingInputCall(iter(probe), timeout=TIMEOUT),
            grpc.StatusCode.INVALID_ARGUMENT,
        )
        requests = [
            self.m.StreamingInputCallRequest(payload=self.payload(27182), expect_compressed=yes),
            self.m.StreamingInputCallRequest(payload=self.payload(45904), expect_compressed=no),
        ]
        reply = self.stub.StreamingInputCall(
            iter(requests), compression=grpc.Compression.Gzip, timeout=TIMEOUT
        )
        ensure(reply.aggregated_payload_size == 73086, f"aggregated {reply.aggregated_payload_size}")

    def server_streaming(self):
        sizes = [31415, 9, 2653, 58979]
        request = self.m.StreamingOutputCallRequest(response_parameters=[self.params(s) for s in sizes])
        replies = list(self.stub.StreamingOutputCall(request, timeout=TIMEOUT))
        ensure(len(replies) == 4, f"{len(replies)} responses, expected 4")
        for i, (reply, size) in enumerate(zip(replies, sizes)):
            self.check_payload(reply.payload, size, f"response {i}")

    def server_compressed_streaming(self):
        request = self.m.StreamingOutputCallRequest(
            response_parameters=[self.params(31415, True), self.params(92653, False)]
        )
        replies = list(self.stub.StreamingOutputCall(request, timeout=TIMEOUT))
        ensure(len(replies) == 2, f"{len(replies)} responses, expected 2")
        self.check_payload(replies[0].payload, 31415, "compressed response")
        self.check_payload(replies[1].payload, 92653, "uncompressed response")

    def ping_pong(self):
        requests = Requests()
        call = self.stub.FullDuplexCall(requests, timeout=TIMEOUT)
        try:
            for i, (size, body) in enumerate(zip([31415, 9, 2653, 58979], [27182, 8, 1828, 45904])):
                requests.send(
                    self.m.StreamingOutputCallRequest(
                        response_parameters=[self.params(size)], payload=self.payload(body)
                    )
                )
                reply = next(call)
                self.check_payload(reply.payload, size, f"response {i}")
            requests.close()
            ensure(next(call, None) is None, "a response after the last one")
            ensure(call.code() == grpc.StatusCode.OK, f"ended with {call.code()}")
        finally:
            requests.close()

    def empty_stream(self):
        replies = list(self.stub.FullDuplexCall(iter([]), timeout=TIMEOUT))
        ensure(replies == [], f"{len(replies)} responses to no requests")

    def cancel_after_begin(self):
        requests = Requests()
        future = self.stub.StreamingInputCall.future(requests, timeout=TIMEOUT)
        try:
            future.cancel()
            ensure(future.cancelled(), "the call did not end cancelled")
            ensure(future.code() == grpc.StatusCode.CANCELLED, f"status {future.code()}")
        finally:
            requests.close()

    def cancel_after_first_response(self):
        requests = Requests()
        call = self.stub.FullDuplexCall(requests, timeout=TIMEOUT)
        try:
            requests.send(
                self.m.StreamingOutputCallRequest(
                    response_parameters=[self.params(31415)], payload=self.payload(27182)
                )
            )
            self.check_payload(next(call).payload, 31415, "first response")
            call.cancel()
            expect_error(lambda: next(call), grpc.StatusCode.CANCELLED)
        finally:
            requests.close()

    def timeout_on_sleeping_server(self):
        requests = Requests()
        requests.send(
            self.m.StreamingOutputCallRequest(
                response_parameters=[self.params(31415)], payload=self.payload(27182)
            )
        )
        call = self.stub.FullDuplexCall(requests, timeout=0.001)
        try:
            expect_error(lambda: list(call), grpc.StatusCode.DEADLINE_EXCEEDED)
        finally:
            requests.close()

    def custom_metadata(self):
        metadata = [ECHO_INITIAL, ECHO_TRAILING]

        def check(initial, trailing, what):
            initial, trailing = dict(initial), dict(trailing)
            ensure(
                initial.get(ECHO_INITIAL[0]) == ECHO_INITIAL[1],
                f"{what}: initial metadata {initial.get(ECHO_INITIAL[0])!r}",
            )
            ensure(
                trailing.get(ECHO_TRAILING[0]) == ECHO_TRAILING[1],
                f"{what}: trailing metadata {trailing.get(ECHO_TRAILING[0])!r}",
            )

        reply, call = self.stub.UnaryCall.with_call(self.simple(), metadata=metadata, timeout=TIMEOUT)
        self.check_payload(reply.payload, 314159, "unary response")
        check(call.initial_metadata(), call.trailing_metadata(), "UnaryCall")
        request = self.m.StreamingOutputCallRequest(
            response_parameters=[self.params(314159)], payload=self.payload(271828)
        )
        call = self.stub.FullDuplexCall(iter([request]), metadata=metadata, timeout=TIMEOUT)
        replies = list(call)
        ensure(len(replies) == 1, f"{len(replies)} FullDuplexCall responses")
        self.check_payload(replies[0].payload, 314159, "FullDuplexCall response")
        check(call.initial_metadata(), call.trailing_metadata(), "FullDuplexCall")

    def status_code_and_message(self):
        status = self.m.EchoStatus(code=2, message=STATUS_MESSAGE)
        expect_error(
            lambda: self.stub.UnaryCall(self.m.SimpleRequest(response_status=status), timeout=TIMEOUT),
            grpc.StatusCode.UNKNOWN,
            STATUS_MESSAGE,
        )
        request = self.m.StreamingOutputCallRequest(response_status=status)
        expect_error(
            lambda: list(self.stub.FullDuplexCall(iter([request]), timeout=TIMEOUT)),
            grpc.StatusCode.UNKNOWN,
            STATUS_MESSAGE,
        )

    def special_status_message(self):
        status = self.m.EchoStatus(code=2, message=SPECIAL_MESSAGE)
        expect_error(
            lambda: self.stub.UnaryCall(self.m.SimpleRequest(response_status=status), timeout=TIMEOUT),
            grpc.StatusCode.UNKNOWN,
            SPECIAL_MESSAGE,
        )

    def unimplemented_method(self):
        expect_error(
            lambda: self.stub.UnimplementedCall(self.empty.Empty(), timeout=TIMEOUT),
            grpc.StatusCode.UNIMPLEMENTED,
        )

    def unimplemented_service(self):
        expect_error(
            lambda: self.unimplemented.UnimplementedCall(self.empty.Empty(), timeout=TIMEOUT),
            grpc.StatusCode.UNIMPLEMENTED,
        )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stubs", required=True)
    parser.add_argument("--server_host", default="127.0.0.1")
    parser.add_argument("--server_port", type=int, required=True)
    parser.add_argument("--test_case", default="all")
    parser.add_argument("--use_tls", default="false", choices=["false"])
    args = parser.parse_args()
    cases = CASES if args.test_case == "all" else args.test_case.split(",")
    unknown = [case for case in cases if case not in CASES]
    if unknown:
        sys.exit(f"unknown test case(s): {', '.join(unknown)}")
    empty_pb2, messages_pb2, test_pb2_grpc = stubs.load(args.stubs)
    channel = grpc.insecure_channel(f"{args.server_host}:{args.server_port}")
    runner = Cases(channel, empty_pb2, messages_pb2, test_pb2_grpc)
    passed = failed = 0
    for case in cases:
        try:
            getattr(runner, case)()
            print(f"PASS {case}", flush=True)
            passed += 1
        except (Failed, grpc.RpcError, StopIteration) as err:
            if isinstance(err, grpc.RpcError):
                why = f"status {err.code()} ({err.details()!r})"
            else:
                why = str(err) or type(err).__name__
            print(f"FAIL {case}: {why}".replace("\n", "\\n"), flush=True)
            failed += 1
    print(f"{passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
