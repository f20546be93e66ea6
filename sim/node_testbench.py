"""Drive a :class:`~linkdyn.gateware.node.LinkDynNode` in the Amaranth simulator.

Used by the gateware tests and by :mod:`linkdyn.bench.node`: load a node's constants
through its external port, then for each state write the joint inputs and the forward mailbox,
run the forward request, write the backward mailbox, run the backward request and read back
every word the node sends (``forward_out``, ``backward_out``, ``output``), its overflow flag and
its cycle counters. The cycles are also counted by the testbench itself, from the acknowledge
to the done pulse, independently of the node's counters.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace

from amaranth.sim import Simulator

from linkdyn.model.microprogram import SEGMENTS

__all__ = ["NodeState", "NodeRun", "simulate_node", "simulate_node_parallel", "output_names",
           "write_registers", "read_registers", "run_request", "run_states"]


@dataclass
class NodeState:
    """The words written into a node for one update.

    Attributes
    ----------
    inputs : dict of str to int
        ``q``, ``qd``, ``qdd`` and the external wrench words (``input`` registers).
    forward_in : dict of str to int
        The forward mailbox (``omega_in_x`` ...).
    backward_in : dict of str to int
        The backward mailbox (``f_in_x`` ...).
    constants : dict of str to int, optional
        Constant words written before this state (another link's constants).
    """

    inputs: dict
    forward_in: dict
    backward_in: dict
    constants: dict | None = None


@dataclass
class NodeRun:
    """What the node produced for one :class:`NodeState`.

    Attributes
    ----------
    words : dict of str to int
        Every ``forward_out``, ``backward_out`` and ``output`` register read back.
    overflow : bool
        The node's sticky overflow flag after the backward request.
    forward_cycles, backward_cycles : int
        The node's cycle counters.
    forward_measured, backward_measured : int or None
        Cycles counted by the testbench: from the cycle after the acknowledge to the cycle
        before ``busy`` falls (``None`` when not measured).
    forward_done_after : int or None
        Cycles from the cycle after ``forward_ack`` to the ``forward_done`` pulse.
    segment_cycles : dict of str to int
        Busy cycles per segment as reported by the node's ``segment`` output (only when
        ``measure_segments`` was set).
    """

    words: dict
    overflow: bool
    forward_cycles: int
    backward_cycles: int
    forward_measured: int
    backward_measured: int
    forward_done_after: int
    segment_cycles: dict = field(default_factory=dict)


def output_names(registers):
    """Return the names of the words a node sends: ``forward_out``, ``backward_out``, ``tau``."""
    return [reg.name for reg in registers
            if reg.kind in ("forward_out", "backward_out", "output")]


async def write_registers(ctx, node, words):
    """Write ``{register name: word}`` through the external port, one word per cycle."""
    registers = node.program.registers
    for name, word in words.items():
        ctx.set(node.ext.addr, registers[name].address)
        ctx.set(node.ext.write_data, int(word))
        ctx.set(node.ext.write_enable, 1)
        await ctx.tick()
    ctx.set(node.ext.write_enable, 0)


async def read_registers(ctx, node, names):
    """Read registers through the external port; return ``{name: word}``."""
    registers = node.program.registers
    words = {}
    for name in names:
        ctx.set(node.ext.addr, registers[name].address)
        # The address is sampled at the first edge; the word follows ext_read_latency edges on.
        await ctx.tick().repeat(node.ext_read_latency)
        words[name] = ctx.get(node.ext.read_data)
    return words


async def run_request(ctx, node, start, ack, done, measure=True, measure_segments=False):
    """Request a run of an idle node (``start``/``ack`` of one request port, e.g.
    ``node.forward.start``, ``node.forward.ack``, and its ``done``) and wait for it to end.

    Returns
    -------
    (cycles, done_after, segments)
        Busy cycles and the cycle of the done pulse counted by the testbench (``None`` unless
        ``measure``), busy cycles per segment (empty unless ``measure_segments``).
    """
    if not ctx.get(node.ready):
        await ctx.tick().until(node.ready)
    ctx.set(start, 1)
    await ctx.tick()
    ctx.set(start, 0)
    # The request is pending now; an idle node takes it in this cycle.
    assert ctx.get(ack), "an idle node must take a pending request at once"
    await ctx.tick()
    if not (measure or measure_segments):
        await ctx.tick().until(~node.busy)
        return None, None, {}
    cycles = 0
    done_after = None
    segments = {}
    while ctx.get(node.busy):
        if ctx.get(done) and done_after is None:
            done_after = cycles
        if measure_segments:
            name = SEGMENTS[ctx.get(node.segment)]
            segments[name] = segments.get(name, 0) + 1
        cycles += 1
        await ctx.tick()
    if ctx.get(done) and done_after is None:
        done_after = cycles
    return cycles, done_after, segments


async def run_states(ctx, node, constants, states, results, *, measure_every=1,
                     measure_segments=False):
    """Testbench body: load ``constants``, then run every state, appending to ``results``.

    The testbench counts the cycles itself for every ``measure_every``-th state (the first
    included); the others only wait for the node to become idle (faster).
    """
    registers = node.program.registers
    names = output_names(registers)
    if constants:
        await write_registers(ctx, node, constants)
    for index, state in enumerate(states):
        measure = index % measure_every == 0
        if state.constants:
            await write_registers(ctx, node, state.constants)
        await write_registers(ctx, node, {**state.inputs, **state.forward_in})
        forward, forward_done, segments = await run_request(
            ctx, node, node.forward.start, node.forward.ack, node.forward_done,
            measure, measure_segments)
        await write_registers(ctx, node, state.backward_in)
        backward, _, distal = await run_request(
            ctx, node, node.backward.start, node.backward.ack, node.backward_done,
            measure, measure_segments)
        segments.update(distal)
        words = await read_registers(ctx, node, names)
        results.append(NodeRun(
            words=words, overflow=bool(ctx.get(node.overflow)),
            forward_cycles=ctx.get(node.forward_cycles),
            backward_cycles=ctx.get(node.backward_cycles),
            forward_measured=forward, backward_measured=backward,
            forward_done_after=forward_done, segment_cycles=segments))


def simulate_node(node, constants, states, *, measure_every=1, measure_segments=False,
                  vcd_file=None):
    """Simulate a node through a list of updates.

    Parameters
    ----------
    node : LinkDynNode
        The node (elaborated by the simulator).
    constants : dict of str to int or None
        The node's constant words (:func:`linkdyn.model.golden.encode_robot` of one link);
        states may also carry their own.
    states : list of NodeState
        The updates, run back to back.
    measure_every : int
        Count the cycles in the testbench for every this many states (1: all; slower).
    measure_segments : bool
        Count the busy cycles per segment (slower).
    vcd_file : str, optional
        Write a waveform.

    Returns
    -------
    list of NodeRun
        One per state.
    """
    results = []

    async def bench(ctx):
        await run_states(ctx, node, constants, states, results, measure_every=measure_every,
                         measure_segments=measure_segments)

    sim = Simulator(node)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    if vcd_file is None:
        sim.run()
    else:
        with sim.write_vcd(vcd_file):
            sim.run()
    return results


def _simulate_chunk(args):
    fmt, states, measure_every = args
    from linkdyn.gateware.node import LinkDynNode
    return simulate_node(LinkDynNode(fmt), None, states, measure_every=measure_every)


def simulate_node_parallel(fmt, states, *, processes=None, measure_every=1):
    """Simulate states like :func:`simulate_node`, split over several processes.

    Each process simulates its own :class:`~linkdyn.gateware.node.LinkDynNode` through a
    contiguous share of ``states``; a share starts with the constants of the node its first
    state belongs to (the last ``constants`` given before it).

    Parameters
    ----------
    fmt : QFormat
        The nodes' word format.
    states : list of NodeState
        The updates; the first must carry ``constants``.
    processes : int, optional
        Number of processes (default: the CPUs available, at most 4; 1 runs in this process).
    measure_every : int
        See :func:`simulate_node`.

    Returns
    -------
    list of NodeRun
        One per state, in order.

    Raises
    ------
    ValueError
        If the first state has no constants.
    """
    if states and not states[0].constants:
        raise ValueError("the first state must carry the node's constants")
    if processes is None:
        processes = min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                        else os.cpu_count() or 1)
    processes = max(1, min(processes, len(states)))
    size = -(-len(states) // processes) if states else 0
    chunks = []
    constants = None
    for start in range(0, len(states), size or 1):
        chunk = list(states[start:start + size])
        for state in states[:start + 1]:
            if state.constants:
                constants = state.constants
        if not chunk[0].constants:
            chunk[0] = replace(chunk[0], constants=constants)
        chunks.append((fmt, chunk, measure_every))
    if processes == 1:
        return [run for chunk in chunks for run in _simulate_chunk(chunk)]
    context = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    with ProcessPoolExecutor(max_workers=processes, mp_context=context) as pool:
        return [run for runs in pool.map(_simulate_chunk, chunks) for run in runs]
