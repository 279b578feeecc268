"""Raw gRPC peer for bench/GrpcBench: the baseline with no mlbridge logic.

Usage: raw_grpc_server.py ADDRESS REPLY_BYTES
Serves /mlbridge.bench.Raw/Echo as a generic unary method on raw bytes
(no protobuf parsing): every request is answered with REPLY_BYTES zero bytes.
"""

import sys
from concurrent import futures

import grpc


def main() -> int:
    address, reply = sys.argv[1], bytes(int(sys.argv[2]))
    handler = grpc.method_handlers_generic_handler(
        "mlbridge.bench.Raw",
        {
            "Echo": grpc.unary_unary_rpc_method_handler(
                lambda request, context: reply, request_deserializer=None, response_serializer=None
            )
        },
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    if server.add_insecure_port(address) == 0:
        print(f"cannot bind {address}", file=sys.stderr)
        return 1
    server.start()
    server.wait_for_termination()
    return 0


if __name__ == "__main__":
    sys.exit(main())
