"""Run a stock LLVM compiler whose ML advisors are served by Python policies.

On LLVM 17 and later (19 is built and tested) the advisors are LLVM's own,
in its interactive mode. LLVM 16 has no interactive mode: its inliner is
served through mlbridge's plugin for LLVM 16 instead
(:mod:`mlbridge.llvm.plugin_channel`), on the same kind of channel.

:func:`run_compiler` adds the channel flags to a command (behind ``-mllvm``
for clang), makes one private channel per advisor, starts the compiler
(stdin closed, own process group) and serves every advisor from its own thread
at the same time (pitfall #8: ``llc`` may use the eviction and priority
advisors together). It handles the other LLVM 19 pitfalls:

- #3: on any host-side error (policy failure, bad answer, protocol error,
  timeout) the compiler's process group is stopped *before* the pipes are
  closed: LLVM 19 busy-loops forever on a closed input. It gets SIGTERM, on
  which LLVM removes its temporary outputs (``X-1a2b3c4d.o.tmp``), then
  SIGKILL if it still runs after :data:`KILL_GRACE_SECONDS`. And when this
  process dies, however (SIGKILL too), the compiler is killed with it
  (:mod:`mlbridge.child_process`) instead of spinning on the closed input.
- #6: a compiler that never opens a channel (``llc -O0``, nothing to
  allocate) is not waited for: opening gives up as soon as it exits.
- #1/#4/#5/#7: see :mod:`mlbridge.llvm.advisors`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable, Dict, List, Mapping, Optional, Sequence, TextIO

from mlbridge import child_process
from mlbridge.channel import Channel, PeerGone, create_channel, open_host_ends
from mlbridge.errors import CodecError
from mlbridge.llvm import size_cap
from mlbridge.llvm.advisors import get_advisor, restore_inlining_default
from mlbridge.llvm.command import with_llvm_options
from mlbridge.llvm.plugin_channel import PluginChannel
from mlbridge.llvm.plugin_settings import check_defers_when
from mlbridge.llvm.versions import LlvmTools, check_plugin_major, major_of_command
from mlbridge.pipe_host import HostStats, PipeHost
from mlbridge.policies import INLINING
from mlbridge.policy import Policy
from mlbridge.session import KILL_GRACE_SECONDS, CompilerSession, SessionResult, run_session


@dataclass
class AdvisorRun:
    """What happened on the channel of one problem's advisor."""

    problem: str  #: the decision served (:data:`mlbridge.llvm.ADVISORS`)
    stats: HostStats = field(default_factory=HostStats)
    opened: bool = False  #: False: the compiler never opened the channel
    error: Optional[str] = None  #: host-side error (the compiler was then killed)
    #: inlining only: LLVM's size threshold in force (None: no cap) and the
    #: call sites it kept from the policy (None: not measured).
    size_increase_threshold: Optional[float] = None
    after_size_stop: Optional[int] = None
    #: the exception behind ``error`` (e.g. :class:`mlbridge.pipe_host.PolicyFailed`)
    exception: Optional[BaseException] = field(default=None, repr=False, compare=False)

    def to_dict(self) -> Dict[str, Any]:
        out = {"opened": self.opened, "error": self.error, **self.stats.to_dict()}
        if self.problem == INLINING:
            out.update(
                size_increase_threshold=self.size_increase_threshold,
                size_stopped=(None if self.after_size_stop is None else self.after_size_stop > 0),
                after_size_stop=self.after_size_stop,
            )
        return out


@dataclass
class RunResult:
    """Outcome of one served compilation."""

    command: List[str]
    returncode: int
    stderr: str
    problems: Dict[str, AdvisorRun]  #: problem name -> what its advisor did
    timed_out: bool = False
    wall_seconds: float = 0.0

    @classmethod
    def of(cls, done: SessionResult, problems: Dict[str, AdvisorRun]) -> "RunResult":
        """The result of the compiler session ``done``, whose ``problems`` were served."""
        return cls(
            done.command, done.returncode, done.stderr, problems, done.timed_out, done.wall_seconds
        )

    @property
    def error(self) -> Optional[str]:
        """A timeout or the first host-side error; None when serving went well."""
        if self.timed_out:
            return "the compilation timed out and was killed"
        for run in self.problems.values():
            if run.error:
                return f"{run.problem}: {run.error}"
        return None

    @property
    def ok(self) -> bool:
        """No host-side error and the compiler succeeded."""
        return self.error is None and self.returncode == 0

    @property
    def decisions(self) -> int:
        return sum(run.stats.decisions for run in self.problems.values())

    @property
    def host_seconds_per_decision(self) -> float:
        total = sum(run.stats.host_seconds for run in self.problems.values())
        return total / self.decisions if self.decisions else 0.0

    def to_dict(self) -> Dict[str, Any]:
        """The summary written by ``mlbridge llvm --stats-json``."""
        return {
            "decisions": self.decisions,
            "host_seconds_per_decision": self.host_seconds_per_decision,
            "compiler_returncode": self.returncode,
            "error": self.error,
            "timed_out": self.timed_out,
            "wall_seconds": self.wall_seconds,
            "problems": {name: run.to_dict() for name, run in self.problems.items()},
            "command": self.command,
        }


def _serve_one(
    compiler: CompilerSession,
    *,
    channel: Channel,
    host: PipeHost,
    run: AdvisorRun,
    open_timeout: Optional[float],
) -> None:
    try:
        ends = open_host_ends(channel.base, open_timeout, host.io_timeout, compiler.alive)
    except PeerGone:
        return  # pitfall #6: the compiler finished without asking anything
    except Exception as err:  # noqa: BLE001 - any failure must stop the compiler
        run.error = f"{type(err).__name__}: {err}"
        run.exception = err
        compiler.kill()
        return
    run.opened = True
    try:
        host.serve_ends(ends, run.stats)
    except Exception as err:  # noqa: BLE001
        run.error = f"{type(err).__name__}: {err}"
        run.exception = err
        compiler.kill()  # before closing: LLVM 19 spins on a closed pipe
    finally:
        ends.close()


def run_compiler(
    command: Sequence[str],
    policies: Mapping[str, Policy],
    *,
    timeout: Optional[float] = None,
    open_timeout: Optional[float] = None,
    io_timeout: Optional[float] = None,
    logs: Optional[Mapping[str, BinaryIO]] = None,
    include_default: Optional[bool] = None,
    size_increase_threshold: Optional[float] = None,
    stdout: Any = None,
    echo_stderr: Optional[TextIO] = None,
    channel_dir: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    on_start: Optional[Callable[[CompilerSession], None]] = None,
    llvm: Optional[int] = None,
    plugin: Optional[Path] = None,
    defers_when: Optional[str] = None,
    through_plugin: bool = False,
) -> RunResult:
    """Compile with ``command`` while ``policies`` (problem name -> policy,
    :data:`mlbridge.llvm.ADVISORS`) decide.

    - ``timeout``: wall-clock limit of the whole compilation (then it is killed);
      ``open_timeout`` / ``io_timeout``: limits on the compiler opening a
      channel / sending its next message (None: as long as it runs).
    - ``logs``: problem name -> binary stream for an LLVM training log.
    - ``include_default``: send LLVM's own inlining decision as the feature
      ``inlining_default``; by default when the inlining policy has
      ``wants_default = True``. LLVM 19 then loses ``callee_basic_block_count``
      (reported as -1, see :func:`restore_inlining_default`).
    - ``size_increase_threshold``: LLVM's ``-ml-advisor-size-increase-threshold``
      (default 2.0): the inliner stops asking once the module grew that much.
      Lifted by default for a policy marked ``echoes_default`` (so that it
      reproduces LLVM's default inliner, which has no such cap); while a cap
      is in force, the call sites it kept from the policy are counted
      (:mod:`mlbridge.llvm.size_cap`) in the inline advisor's run.
    - ``stdout``: the compiler's stdout (inherited by default); its stderr is
      captured in the result and also copied to ``echo_stderr`` if given.
    - ``env``: the compiler's environment (default: this process's without
      the variables of mlbridge's plugins,
      :func:`mlbridge.child_process.child_environment`). When the inliner is
      served through ``plugin``, the plugins' variables are dropped from
      ``env`` too before the plugin's settings are added.
    - ``on_start``: called with the :class:`~mlbridge.session.CompilerSession` as soon as it
      runs, before anything is served (its ``pid``; its ``kill()`` stops it
      from any thread, e.g. a compiler that stopped answering).
    - ``llvm``: the compiler's LLVM major (default: what its name says,
      ``clang-16``; an unversioned name is taken for an LLVM with interactive
      advisors). Below 17 the inliner is served through ``plugin`` (default:
      ``mlbridge config --plugin --llvm N``), and the register allocator's
      advisors are refused (:class:`mlbridge.llvm.versions.LlvmVersionError`).
      Before the plugin is loaded the compiler is asked its major, and one
      other than the plugin's is refused (``LlvmVersionError``) rather than
      crash.
    - ``defers_when``: call sites where the compiler gives LLVM's own
      decision without asking the inlining policy (the plugin's
      ``-mlbridge-defers-when``, one of
      :data:`mlbridge.llvm.plugin_settings.DEFERS_WHEN`), as it does for a
      deployed model that says so; the inliner is then served through
      ``plugin`` whatever the major.
    - ``through_plugin``: the inliner is served through ``plugin`` whatever
      the major, as a deployed model is: with every feature as LLVM computes
      it (LLVM 19's interactive mode loses ``callee_basic_block_count``).
    """
    if not policies:
        raise ValueError("no advisor to serve")
    check_defers_when(defers_when)
    major = llvm if llvm is not None else major_of_command(command[0])
    through_plugin = (
        through_plugin
        or defers_when is not None
        or (major is not None and not LlvmTools(major).interactive)
    )
    if through_plugin:
        for name in policies:
            if name != INLINING:
                if defers_when is not None:
                    raise ValueError(f"only the inliner defers; not the advisor of {name}")
                assert major is not None
                LlvmTools(major).require_interactive(f"the advisor of {name}")
        built_for = major
        if plugin is None:
            from mlbridge.native import find_native

            native = find_native(llvm=major)
            plugin, built_for = native.require("plugin"), native.llvm_major
        if built_for is not None:
            check_plugin_major(command[0], plugin, built_for)
        return _run_through_plugin(
            command,
            policies[INLINING],
            plugin,
            timeout=timeout,
            open_timeout=open_timeout,
            io_timeout=io_timeout,
            log=(logs or {}).get(INLINING),
            size_increase_threshold=size_increase_threshold,
            stdout=stdout,
            echo_stderr=echo_stderr,
            channel_dir=channel_dir,
            env=env,
            on_start=on_start,
            defers_when=defers_when,
        )
    logs = logs or {}
    channels: Dict[str, Channel] = {}
    options: List[str] = []
    guarded: Dict[str, Policy] = {}
    patches: Dict[str, Any] = {}
    remarks: Optional[str] = None
    threshold: Optional[float] = None
    try:
        for name, policy in policies.items():
            advisor = get_advisor(name)
            wants = (
                bool(getattr(policy, "wants_default", False))
                if include_default is None
                else include_default
            )
            wants = wants and name == INLINING
            channels[name] = create_channel(channel_dir, name)
            if name == INLINING:
                threshold = size_cap.effective_threshold(
                    size_increase_threshold, bool(getattr(policy, "echoes_default", False))
                )
            options += advisor.flags(
                channels[name].base, wants, threshold if name == INLINING else None
            )
            guarded[name] = advisor.guard(policy)
            patches[name] = restore_inlining_default if wants else None
        full = with_llvm_options(command, options)
        in_force = size_cap.threshold_in_force(threshold)
        if INLINING in policies and in_force is not None:
            remarks = channels[INLINING].base + ".remarks.yaml"
            flags = size_cap.remark_flags(full, remarks)
            full = full[:1] + (flags or []) + full[1:]
        result = _run(
            full,
            guarded,
            patches,
            channels,
            timeout,
            open_timeout,
            io_timeout,
            logs,
            stdout,
            echo_stderr,
            env,
            on_start,
        )
        if INLINING in result.problems:
            run = result.problems[INLINING]
            run.size_increase_threshold = in_force
            run.after_size_stop = 0 if remarks is None else size_cap.count_size_stops(remarks)
        return result
    finally:
        for channel in channels.values():
            channel.close()


def _run_through_plugin(
    command: Sequence[str],
    policy: Policy,
    plugin: Path,
    *,
    timeout: Optional[float],
    open_timeout: Optional[float],
    io_timeout: Optional[float],
    log: Optional[BinaryIO],
    size_increase_threshold: Optional[float],
    stdout: Any,
    echo_stderr: Optional[TextIO],
    channel_dir: Optional[str],
    env: Optional[Mapping[str, str]],
    on_start: Optional[Callable[[CompilerSession], None]],
    defers_when: Optional[str],
) -> RunResult:
    """:func:`run_compiler` for the inliner served by mlbridge's plugin and
    its pipe runner on a private channel (an LLVM without interactive mode,
    or call sites the plugin decides without the policy)."""
    channel = create_channel(channel_dir, INLINING)
    try:
        # The plugin's runner waits as long as this side may: the whole
        # compilation, else the host's own limits (never forever).
        wait = timeout or max(open_timeout or 0.0, io_timeout or 0.0) or 3600.0
        served = PluginChannel(plugin, channel.base, int(min(wait, 86400.0) * 1000))
        threshold = size_cap.effective_threshold(
            size_increase_threshold, bool(getattr(policy, "echoes_default", False))
        )
        # The plugin's variables are this call's alone, whatever ``env`` holds.
        full_env = child_process.child_environment(
            served.environment(threshold, defers_when), base=env
        )
        result = _run(
            served.command(command),
            {INLINING: policy},
            {INLINING: None},
            {INLINING: channel},
            timeout,
            open_timeout,
            io_timeout,
            {} if log is None else {INLINING: log},
            stdout,
            echo_stderr,
            full_env,
            on_start,
        )
        run = result.problems[INLINING]
        run.size_increase_threshold = size_cap.threshold_in_force(threshold)
        try:
            stats = served.stats()
        except CodecError as err:
            stats = None
            run.error = run.error or f"the plugin's statistics are unreadable: {err}"
        if stats is not None:
            run.after_size_stop = stats.after_size_stop if stats.modules else None
            if stats.fallbacks and run.error is None:
                # The plugin gave LLVM's advice where the policy was not heard.
                run.error = (
                    f"the plugin fell back to LLVM's advice at {stats.fallbacks} call "
                    f"sites: {stats.first_error}"
                )
        return result
    finally:
        channel.close()


def run_served(
    command: Callable[[str], List[str]],
    policy: Policy,
    *,
    name: str = "plugin",
    timeout: Optional[float] = None,
    open_timeout: Optional[float] = None,
    io_timeout: Optional[float] = None,
    stdout: Any = None,
    channel_dir: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    on_start: Optional[Callable[[CompilerSession], None]] = None,
) -> RunResult:
    """Compile with ``command(base)`` while ``policy`` answers on a private
    channel at ``base``, for a compiler that reaches its model through a
    runner configuration (``pipe:BASE``: mlbridge's GCC and MLIR plugins)
    instead of LLVM's own flags; the rest is as :func:`run_compiler`, the
    channel's run named ``name`` in the result."""
    channel = create_channel(channel_dir, name)
    try:
        return _run(
            command(channel.base),
            {name: policy},
            {name: None},
            {name: channel},
            timeout,
            open_timeout,
            io_timeout,
            {},
            stdout,
            None,
            env,
            on_start,
        )
    finally:
        channel.close()


def _run(
    command: List[str],
    policies: Mapping[str, Policy],
    patches: Mapping[str, Any],
    channels: Mapping[str, Channel],
    timeout: Optional[float],
    open_timeout: Optional[float],
    io_timeout: Optional[float],
    logs: Mapping[str, BinaryIO],
    stdout: Any,
    echo_stderr: Optional[TextIO],
    env: Optional[Mapping[str, str]],
    on_start: Optional[Callable[[CompilerSession], None]] = None,
) -> RunResult:
    """Runs ``command`` as a compiler session while each of ``policies``
    is served on its channel from a thread of its own."""
    runs = {name: AdvisorRun(name) for name in policies}
    servers = [
        functools.partial(
            _serve_one,
            channel=channels[name],
            host=PipeHost(policy, io_timeout=io_timeout, log=logs.get(name), patch=patches[name]),
            run=runs[name],
            open_timeout=open_timeout,
        )
        for name, policy in policies.items()
    ]
    done = run_session(
        command,
        timeout=timeout,
        env=env,
        stdout=stdout,
        echo=echo_stderr,
        on_start=on_start,
        servers=servers,
        grace=KILL_GRACE_SECONDS,
    )
    return RunResult.of(done, runs)
