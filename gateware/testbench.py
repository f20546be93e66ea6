"""Drive a :class:`~linkdyn.gateware.node.LinkDynNode` in the Amaranth simulator.

Used by the gateware tests and by :mod:`linkdyn.gateware.bench`: load a node's constants
through its external port, then for each state write the joint inputs and the forward mailbox,
run the forward request, write the backward mailbox, run the backward request and read back
every word the node sends (``forward_out``, ``backward_out``, ``output``), its overflow flag and
its cycle counters. The cycles are also counted by the testbench itself, from the acknowledge
to the done pulse, independently of the node's counters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from amaranth.sim import Simulator

from linkdyn.model.microprogram import SEGMENTS

__all__ = ["NodeState", "NodeRun", "simulate_node", "output_names"]


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
    """

    inputs: dict
    forward_in: dict
    backward_in: dict


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


async def _write(ctx, node, registers, words):
    for name, word in words.items():
        ctx.set(node.ext_addr, registers[name].address)
        ctx.set(node.ext_write_data, int(word))
        ctx.set(node.ext_write_enable, 1)
        await ctx.tick()
    ctx.set(node.ext_write_enable, 0)


async def _read(ctx, node, registers, names):
    words = {}
    for name in names:
        ctx.set(node.ext_addr, registers[name].address)
        await ctx.tick()  # the address is sampled at this edge; the word follows it
        words[name] = ctx.get(node.ext_read_data)
    return words


async def _run(ctx, node, start, ack, done, measure, measure_segments):
    """Request a run and wait for it to end.

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
    await _write(ctx, node, registers, constants)
    for index, state in enumerate(states):
        measure = index % measure_every == 0
        await _write(ctx, node, registers, {**state.inputs, **state.forward_in})
        forward, forward_done, segments = await _run(
            ctx, node, node.start_forward, node.forward_ack, node.forward_done,
            measure, measure_segments)
        await _write(ctx, node, registers, state.backward_in)
        backward, _, distal = await _run(
            ctx, node, node.start_backward, node.backward_ack, node.backward_done,
            measure, measure_segments)
        segments.update(distal)
        words = await _read(ctx, node, registers, names)
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
    constants : dict of str to int
        The node's constant words (:func:`linkdyn.model.golden.encode_robot` of one link).
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
