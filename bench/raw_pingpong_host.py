"""Raw FIFO ping-pong peer for bench/PipeBench: the baseline with no protocol.

Usage: raw_pingpong_host.py BASE REQUEST_BYTES REPLY_BYTES
Opens BASE.in for writing, then BASE.out for reading (LLVM's order), then for
every REQUEST_BYTES read answers REPLY_BYTES zero bytes, until EOF.
"""

import os
import sys


def main() -> int:
    base, request, reply = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    out_fd = os.open(base + ".in", os.O_WRONLY)
    in_fd = os.open(base + ".out", os.O_RDONLY)
    answer = bytes(reply)
    while True:
        got = 0
        while got < request:
            chunk = os.read(in_fd, request - got)
            if not chunk:
                return 0
            got += len(chunk)
        os.write(out_fd, answer)


if __name__ == "__main__":
    sys.exit(main())
