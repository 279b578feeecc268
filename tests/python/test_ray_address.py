"""A Ray pool that starts Ray itself (``address=None``) keeps it to this
machine: every socket its processes listen on is bound to the loopback
interface, and its files sit in a directory that other users cannot enter,
removed when the pool closes (docs/ray.md).

The pool runs in a fresh interpreter, which imports ray before the pool does
(the pool must not depend on the order) and sees only its own Ray processes.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("ray")
pytest.importorskip("psutil")

SCRIPT = r"""
import json, os
from pathlib import Path

import psutil
import ray  # before the pool, on purpose

from mlbridge.gym.pool import make_pool

def listening(process):
    try:
        return [(process.name(), c.laddr.ip, c.laddr.port)
                for c in process.connections(kind="tcp") if c.status == psutil.CONN_LISTEN]
    except psutil.Error:  # a process that ended meanwhile
        return []

with make_pool("CartPole-v1", 1, backend="ray") as pool:
    pool.rollout(None, 20)
    me = psutil.Process()
    sockets = [s for p in [me, *me.children(recursive=True)] for s in listening(p)]
    session = Path(ray._private.worker._global_node.get_session_dir_path())
    parents = [
        {"path": str(d), "mode": os.stat(d).st_mode & 0o777, "uid": os.stat(d).st_uid}
        for d in session.parents
    ]
print(json.dumps({"sockets": sockets, "session": str(session), "parents": parents}))
"""


def _is_loopback(host: str) -> bool:
    address = ipaddress.ip_address(host.split("%")[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


@pytest.fixture(scope="module")
def local_ray_pool():
    """What a 1-worker pool with a Ray of its own looked like while it ran."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_every_ray_socket_listens_on_loopback_only(local_ray_pool):
    sockets = local_ray_pool["sockets"]
    names = {name for name, _, _ in sockets}
    assert "gcs_server" in names and "raylet" in names  # the check saw Ray's servers
    wide = [s for s in sockets if not _is_loopback(s[1])]
    assert not wide, f"listening beyond the loopback interface: {wide}"


def test_ray_files_are_in_a_directory_only_the_user_enters(local_ray_pool):
    private = [
        p
        for p in local_ray_pool["parents"]
        if p["mode"] & 0o077 == 0 and p["uid"] == os.getuid() and p["path"] != "/"
    ]
    assert private, f"every parent of the session directory is open: {local_ray_pool['parents']}"
    assert not Path(private[0]["path"]).exists()  # removed when the pool closed
