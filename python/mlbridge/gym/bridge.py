"""Step-wise control of a compiler whose decisions are served by callbacks.

Every transport of mlbridge calls a *policy* when the compiler asks
(:mod:`mlbridge.policy`). An environment works the other way round: its
caller pulls an observation, thinks, and pushes an action. A
:class:`DecisionBridge` joins the two: ``serve(policy)`` (for example
:func:`mlbridge.llvm.driver.run_compiler` or a :class:`mlbridge.pipe_host.PipeHost`
loop) runs in a thread of its own, and each time the compiler asks, the
bridge's policy hands the features over and waits for :meth:`DecisionBridge.answer`.

Every wait has a limit: :meth:`DecisionBridge.next` raises
:class:`BridgeTimeout` when the compiler neither asks nor ends within
``timeout``; a policy left waiting longer than ``idle_timeout`` (an abandoned
episode) raises :class:`BridgeClosed` in the serving thread, which makes the
transport stop the compiler. :meth:`DecisionBridge.abandon` does the same at
once.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Union

import numpy as np

from mlbridge.errors import MlbridgeError


class BridgeTimeout(MlbridgeError):
    """The compiler neither asked nor ended within the deadline."""


class BridgeClosed(MlbridgeError):
    """The episode was abandoned while the compiler waited for an answer."""


@dataclass
class Request:
    """The compiler asks: its features (copies, owned by the caller) and context."""

    features: Dict[str, np.ndarray]
    context: str = ""


@dataclass
class Finished:
    """Serving ended: what ``serve`` returned, or what it raised."""

    result: Any = None
    error: Optional[BaseException] = None


#: What :meth:`DecisionBridge.next` returns.
Event = Union[Request, Finished]

_ABANDON = object()


class DecisionBridge:
    """Runs ``serve(policy)`` in a thread and exposes its decisions one by one.

    ``serve`` receives the bridge's policy (a callable following the policy
    contract) and should return when the compiler is done. Use
    :meth:`next` to get the next :class:`Request` (or the final
    :class:`Finished`), and :meth:`answer` to reply to a request.
    """

    def __init__(
        self,
        serve: Callable[[Callable[..., Any]], Any],
        *,
        timeout: float,
        idle_timeout: float = 600.0,
        name: str = "mlbridge-decision-bridge",
    ) -> None:
        if timeout <= 0 or idle_timeout <= 0:
            raise ValueError("timeouts must be positive")
        self.timeout, self.idle_timeout = timeout, idle_timeout
        self._events: "queue.Queue[Event]" = queue.Queue()
        self._answers: "queue.Queue[Any]" = queue.Queue()
        self._waiting = False  # a Request is out and not answered yet
        self._finished: Optional[Finished] = None
        self._thread = threading.Thread(target=self._serve, args=(serve,), name=name, daemon=True)
        self._thread.start()

    @property
    def finished(self) -> Optional[Finished]:
        """The end of serving, once :meth:`next` returned it."""
        return self._finished

    def next(self) -> Event:
        """The next request of the compiler, or how serving ended (then again
        on every later call). Raises :class:`BridgeTimeout` after ``timeout``."""
        if self._finished is not None:
            return self._finished
        if self._waiting:
            raise MlbridgeError("the last request was not answered")
        try:
            event = self._events.get(timeout=self.timeout)
        except queue.Empty:
            raise BridgeTimeout(
                f"the compiler neither asked nor finished within {self.timeout:g} s"
            ) from None
        if isinstance(event, Finished):
            self._finished = event
        else:
            self._waiting = True
        return event

    def answer(self, value: Any) -> None:
        """Reply to the request :meth:`next` returned last."""
        if not self._waiting:
            raise MlbridgeError("no request is waiting for an answer")
        self._waiting = False
        self._answers.put(value)

    def abandon(self, join_timeout: float = 10.0) -> None:
        """End the episode now: a waiting (or the next) policy call raises
        :class:`BridgeClosed`, so the transport stops the compiler; waits up to
        ``join_timeout`` for the serving thread."""
        self._waiting = False
        self._answers.put(_ABANDON)
        self._thread.join(join_timeout)

    @property
    def alive(self) -> bool:
        """Whether the serving thread still runs."""
        return self._thread.is_alive()

    def _policy(self, features: Dict[str, np.ndarray], context: str = "") -> Any:
        self._events.put(Request({k: np.array(v) for k, v in features.items()}, context))
        try:
            value = self._answers.get(timeout=self.idle_timeout)
        except queue.Empty:
            raise BridgeClosed(f"no action within {self.idle_timeout:g} s") from None
        if value is _ABANDON:
            self._answers.put(_ABANDON)  # every later call fails as well
            raise BridgeClosed("the episode was abandoned")
        return value

    def _serve(self, serve: Callable[[Callable[..., Any]], Any]) -> None:
        try:
            self._events.put(Finished(result=serve(self._policy)))
        except BaseException as err:  # handed to the caller
            self._events.put(Finished(error=err))
