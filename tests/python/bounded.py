"""Calling a reader on hostile input (a FIFO, ``/dev/zero``, a crafted
file) in a fresh Python with a deadline and a memory limit: a reader that
blocks or allocates without bound makes the test fail, not hang or exhaust
the machine. The child reports what the call raised and how much its
resident memory grew."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from typing import Optional

_CHILD = """\
import json, resource, sys

{setup}

def _status(key):
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) * 1024 for l in status if l.startswith(key + ":"))

resource.setrlimit(resource.RLIMIT_AS, (_status("VmSize") + {memory}, resource.RLIM_INFINITY))
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # VmHWM restarts from here
start = _status("VmRSS")
out = {{"raised": None, "message": ""}}
try:
{call}
except BaseException as err:
    out = {{"raised": type(err).__name__, "message": str(err)}}
out["grew"] = _status("VmHWM") - start
print("BOUNDED " + json.dumps(out))
"""


@dataclass
class Outcome:
    """What the call did: the exception it raised (None: it returned), its
    message, and the growth of the child's peak resident memory in bytes."""

    raised: Optional[str]
    message: str
    grew: int


def run_bounded(setup: str, call: str, seconds: float = 120.0, memory: int = 1 << 30) -> Outcome:
    """Runs ``setup`` (imports, say), then ``call`` with at most ``memory``
    more bytes of address space, all within ``seconds``
    (``subprocess.TimeoutExpired`` when the call blocks)."""
    script = _CHILD.format(
        setup=textwrap.dedent(setup),
        call=textwrap.indent(textwrap.dedent(call), "    "),
        memory=memory,
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=seconds
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("BOUNDED ")]
    assert lines, f"the child failed (exit {done.returncode}): {done.stderr[-2000:]}"
    return Outcome(**json.loads(lines[-1][len("BOUNDED ") :]))
