"""DecisionBridge (mlbridge.gym.bridge): a callback-served compiler stepped
from outside: requests in order, the end of serving (result or error),
deadlines on both sides, abandoning, misuse; then a real clang-19 served
through it."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from mlbridge.errors import MlbridgeError
from mlbridge.gym.bridge import BridgeClosed, BridgeTimeout, DecisionBridge, Finished, Request


def _features(i: int):
    return {"x": np.array([i], np.int64), "y": np.array([2 * i], np.int64)}


def _asking(n: int, seen: list):
    """serve(): asks ``n`` questions, records the answers, returns their sum."""

    def serve(policy):
        for i in range(n):
            seen.append(policy(_features(i)))
        return sum(seen)

    return serve


def test_requests_answers_and_the_result_in_order():
    seen: list = []
    bridge = DecisionBridge(_asking(3, seen), timeout=10)
    for i in range(3):
        event = bridge.next()
        assert isinstance(event, Request)
        assert int(event.features["x"][0]) == i and int(event.features["y"][0]) == 2 * i
        bridge.answer(i * 10)
    end = bridge.next()
    assert isinstance(end, Finished) and end.error is None and end.result == 30
    assert bridge.finished is end and bridge.next() is end  # again and again
    assert seen == [0, 10, 20]
    bridge.abandon()
    assert not bridge.alive


def test_request_features_are_copies():
    buffer = np.array([1], np.int64)

    def serve(policy):
        policy({"x": buffer})
        buffer[0] = 99  # the transport reuses its buffer
        return None

    bridge = DecisionBridge(serve, timeout=10)
    event = bridge.next()
    assert isinstance(event, Request)
    bridge.answer(0)
    assert isinstance(bridge.next(), Finished)
    assert int(event.features["x"][0]) == 1


def test_an_error_of_serve_is_the_end():
    def serve(policy):
        policy(_features(0))
        raise RuntimeError("compiler exploded")

    bridge = DecisionBridge(serve, timeout=10)
    assert isinstance(bridge.next(), Request)
    bridge.answer(1)
    end = bridge.next()
    assert isinstance(end, Finished) and isinstance(end.error, RuntimeError)
    assert "exploded" in str(end.error)


def test_context_reaches_the_request():
    def serve(policy):
        policy(_features(0), "main")
        return None

    bridge = DecisionBridge(serve, timeout=10)
    event = bridge.next()
    assert isinstance(event, Request) and event.context == "main"
    bridge.answer(0)
    assert isinstance(bridge.next(), Finished)


def test_a_silent_compiler_times_out_and_can_be_waited_for_again():
    release = threading.Event()

    def serve(policy):
        release.wait(30)
        return policy(_features(0))

    bridge = DecisionBridge(serve, timeout=0.2)
    with pytest.raises(BridgeTimeout, match="within 0.2 s"):
        bridge.next()
    release.set()
    assert isinstance(bridge.next(), Request)  # a timeout loses nothing
    bridge.answer(5)
    end = bridge.next()
    assert isinstance(end, Finished) and end.result == 5


def test_abandon_fails_the_waiting_policy_and_every_later_call():
    errors: list = []

    def serve(policy):
        for i in range(3):
            try:
                policy(_features(i))
            except BridgeClosed as err:
                errors.append(str(err))
        return "done"

    bridge = DecisionBridge(serve, timeout=10)
    assert isinstance(bridge.next(), Request)
    bridge.abandon()
    assert not bridge.alive
    assert errors == ["the episode was abandoned"] * 3


def test_an_idle_policy_gives_up():
    def serve(policy):
        return policy(_features(0))

    bridge = DecisionBridge(serve, timeout=10, idle_timeout=0.2)
    assert isinstance(bridge.next(), Request)
    deadline = time.monotonic() + 30
    while bridge.alive and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not bridge.alive  # serving ended without an answer
    bridge.answer(1)  # too late: nobody reads it
    end = bridge.next()
    assert isinstance(end, Finished) and isinstance(end.error, BridgeClosed)
    assert "no action within 0.2 s" in str(end.error)


def test_misuse_is_an_error():
    bridge = DecisionBridge(_asking(1, []), timeout=10)
    with pytest.raises(MlbridgeError, match="no request"):
        bridge.answer(1)
    assert isinstance(bridge.next(), Request)
    with pytest.raises(MlbridgeError, match="not answered"):
        bridge.next()
    bridge.answer(1)
    assert isinstance(bridge.next(), Finished)
    with pytest.raises(ValueError, match="positive"):
        DecisionBridge(_asking(1, []), timeout=0)


def test_serves_a_real_compiler(tmp_path):
    """clang-19 -Oz through run_compiler: one Request per call site, then
    the RunResult; the compiler's pid is known while it runs."""
    from mlbridge.llvm import size_cap
    from mlbridge.llvm.driver import run_compiler

    source = tmp_path / "p.c"
    source.write_text(
        "static int f(int x) { return x + 1; }\nint g(int x) { return f(x) * f(x); }\n"
    )
    started = []

    def serve(policy):
        return run_compiler(
            ["clang-19", "-Oz", "-c", str(source), "-o", str(tmp_path / "p.o")],
            {"inlining": policy},
            size_increase_threshold=size_cap.NO_CAP,
            timeout=60,
            on_start=started.append,
        )

    bridge = DecisionBridge(serve, timeout=60)
    asked = 0
    while True:
        event = bridge.next()
        if isinstance(event, Finished):
            break
        assert started and started[0].alive()
        os.kill(started[0].pid, 0)  # it runs
        assert "callee_users" in event.features
        asked += 1
        bridge.answer(0)
    assert event.error is None and event.result.ok
    assert asked == event.result.decisions >= 1
    bridge.abandon()
    assert not bridge.alive
