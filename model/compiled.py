"""The node microprogram compiled into Python functions over plain integers, for one state.

:func:`linkdyn.model.golden.run_segment` interprets a segment op by op with numpy, which pays
off for big batches of states; for one state (a closed control loop calls the golden model once
per control cycle) numpy's per-call cost dominates. This module derives, once per word format, a
Python function from every run of consecutive :class:`~linkdyn.model.microprogram.Dot` ops of a
segment: its source is generated from the Dot's terms and the compiler's alignments, final
shift and wrap flag (:meth:`~linkdyn.model.microprogram.Microprogram.compile_dot`), in program
order, and it works on Python integers, which are exact, so the accumulator needs no split.
Nothing of the arithmetic is written a second time:

- the rounding is :func:`linkdyn.model.fixedpoint.round_shift` (called with the whole exact
  accumulator as ``acc_low`` and ``acc_high = 0``);
- a result outside the word range goes through :func:`~linkdyn.model.fixedpoint.saturate` (or
  :func:`~linkdyn.model.fixedpoint.wrap` for phase words); inside the range both are the
  identity, so only the range test is inlined;
- :class:`~linkdyn.model.microprogram.Lookup` and :class:`~linkdyn.model.microprogram.Atan`
  are not compiled: they call :meth:`SINE_TABLE.lookup <linkdyn.model.tables.SineTable.lookup>`
  and :meth:`CORDIC.atan <linkdyn.model.tables.Cordic.atan>`, for all nodes of a chain at once
  where the segment allows it (:attr:`CompiledSegment.lockstep`).

The result equals the interpreter word for word, overflow flags included
(tests/model/test_golden_fast.py); :class:`linkdyn.model.golden.GoldenChain` uses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .fixedpoint import WORD_WIDTH, round_shift, saturate, wrap
from .microprogram import SEGMENTS, Atan, Dot, Lookup, microprogram
from .tables import CORDIC, SINE_TABLE
from .microprogram import node_formats

__all__ = ["CompiledSegment", "compile_segment", "compiled_microprogram", "dot_source"]

# The word range of saturate() and wrap(): inside it both return their input unchanged.
_LOW, _HIGH = -(1 << (WORD_WIDTH - 1)), (1 << (WORD_WIDTH - 1)) - 1

#: Kinds of registers a node has before any segment runs (loaded or received).
_GIVEN_KINDS = ("constant", "input")


def _local(name):
    if not name.isidentifier():
        raise ValueError(f"register name {name!r} is not a Python identifier")
    return f"r_{name}"


def dot_source(program, op, indent="    "):
    """Return the Python source lines that compute one Dot into a local variable.

    Parameters
    ----------
    program : Microprogram
        The microprogram (its :meth:`~linkdyn.model.microprogram.Microprogram.compile_dot`
        gives the alignments, shift and wrap flag).
    op : Dot
        The instruction.
    indent : str
        Indentation of every line.

    Returns
    -------
    list of str
        Lines that read the operands from the locals ``r_<register>``, set ``r_<dst>`` to the
        rounded and saturated (or wrapped) word, and set ``overflow`` when ``saturate`` flags it.
        They call ``round_shift``, ``saturate`` and ``wrap`` of
        :mod:`linkdyn.model.fixedpoint`, bound under those names.
    """
    aligns, shift, wraps = program.compile_dot(op)
    parts = []
    for term, align in zip(op.terms, aligns):
        operator = "*" if term.kind == "mul" else "+"
        value = f"({_local(term.a)} {operator} {_local(term.b)})"
        if align:
            value = f"({value} << {align})"
        parts.append(("- " if term.negate else "+ ") + value)
    accumulator = " ".join(parts)
    if accumulator.startswith("+ "):
        accumulator = accumulator[2:]
    dst = _local(op.dst)
    lines = [f"{dst} = round_shift(0, {accumulator}, {shift})",
             f"if not {_LOW} <= {dst} <= {_HIGH}:"]
    if wraps:
        lines.append(f"    {dst} = int(wrap({dst}))")
    else:
        lines.append(f"    {dst}, flag = saturate({dst})")
        lines.append(f"    {dst}, overflow = int({dst}), overflow or bool(flag)")
    return [indent + line for line in lines]


def _compile_dots(program, ops, name):
    """Compile consecutive Dots into ``f(registers) -> overflow`` (registers: dict, in place)."""
    produced = set()
    loads = []
    for op in ops:
        for src in op.sources:
            if src not in produced and src not in loads:
                loads.append(src)
        produced.add(op.dst)
    lines = [f"def {name}(registers):", "    overflow = False"]
    lines += [f"    {_local(src)} = registers[{src!r}]" for src in loads]
    for op in ops:
        lines += dot_source(program, op)
    lines += [f"    registers[{op.dst!r}] = {_local(op.dst)}" for op in ops]
    lines.append("    return overflow")
    source = "\n".join(lines) + "\n"
    namespace = {"round_shift": round_shift, "saturate": saturate, "wrap": wrap}
    exec(compile(source, f"<linkdyn microprogram {name}>", "exec"), namespace)
    return namespace[name], source


@dataclass(frozen=True)
class CompiledSegment:
    """One segment of the microprogram as a sequence of steps over Python-int registers.

    Attributes
    ----------
    name : str
        The segment, one of :data:`~linkdyn.model.microprogram.SEGMENTS`.
    steps : tuple
        In program order: compiled functions ``f(registers) -> bool`` (a run of Dots; true if
        one saturated) and the :class:`Lookup` / :class:`Atan` ops between them.
    sources : tuple of str
        The generated source of every compiled function (for reading and debugging).
    lockstep : bool
        Whether the segment reads only constants, inputs and its own results, so that all nodes
        of a chain can run it together (``joint``): its table and CORDIC ops then take one call
        for the whole chain.
    """

    name: str
    steps: tuple
    sources: tuple
    lockstep: bool

    def run(self, nodes):
        """Run the segment on the registers of one or more nodes, in place.

        Parameters
        ----------
        nodes : list of dict of str to int
            Every node's registers (Python ints, the words of :mod:`linkdyn.model.golden`).
            With several nodes the segment must be :attr:`lockstep` (each node's ops still run
            in program order; only the nodes are interleaved).

        Returns
        -------
        list of bool
            Per node, whether a result of this segment saturated.

        Raises
        ------
        ValueError
            If several nodes are given and the segment is not :attr:`lockstep`.
        """
        if len(nodes) > 1 and not self.lockstep:
            raise ValueError(f"segment {self.name!r} reads other nodes' words; run it one "
                             f"node at a time, not on {len(nodes)} nodes together")
        overflow = [False] * len(nodes)
        for step in self.steps:
            if isinstance(step, Lookup):
                operands = SINE_TABLE.lookup(np.array([regs[step.src] for regs in nodes],
                                                      dtype=np.int64))
                for name, values in zip(step.dst, operands):
                    for regs, value in zip(nodes, values.tolist()):
                        regs[name] = value
            elif isinstance(step, Atan):
                values = CORDIC.atan(np.array([regs[step.src] for regs in nodes],
                                              dtype=np.int64))
                for regs, value in zip(nodes, values.tolist()):
                    regs[step.dst[0]] = value
            else:
                for i, regs in enumerate(nodes):
                    if step(regs):
                        overflow[i] = True
        return overflow


def compile_segment(segment, fmt=None):
    """Compile one segment of the microprogram of a word format (cached).

    Parameters
    ----------
    segment : str
        One of :data:`~linkdyn.model.microprogram.SEGMENTS`.
    fmt : QFormat
        Word format (default Q15.16).

    Returns
    -------
    CompiledSegment

    Raises
    ------
    ValueError
        If ``segment`` is not a segment name.
    """
    if segment not in SEGMENTS:
        raise ValueError(f"segment must be one of {SEGMENTS}, not {segment!r}")
    fmt = node_formats(fmt)
    return _compile(segment, fmt)


@lru_cache(maxsize=None)
def _compile(segment, fmt):
    program = microprogram(fmt)
    rmap = program.registers
    ops = program.segments[segment].ops
    steps, sources, run = [], [], []
    known = {reg.name for reg in rmap if reg.kind in _GIVEN_KINDS}
    lockstep = True

    def flush():
        if run:
            function, source = _compile_dots(program, run, f"{segment}_{len(steps)}")
            steps.append(function)
            sources.append(source)
            run.clear()

    for op in ops:
        if any(src not in known for src in op.sources):
            lockstep = False
        known.update((op.dst,) if isinstance(op, Dot) else op.dst)
        if isinstance(op, Dot):
            run.append(op)
        elif isinstance(op, (Lookup, Atan)):
            flush()
            steps.append(op)
        else:
            raise TypeError(f"segment {segment!r}: cannot compile op {op!r}")
    flush()
    return CompiledSegment(segment, tuple(steps), tuple(sources), lockstep)


def compiled_microprogram(fmt=None):
    """Return ``{segment name: CompiledSegment}`` for every segment of a word format (cached)."""
    return {name: compile_segment(name, fmt) for name in SEGMENTS}
