"""Drive a tree of LinkDyn nodes (:class:`~linkdyn.gateware.chain.LinkDynChain` built with
``parents``) through its register bus in the Amaranth simulator, against the golden tree.

:func:`simulate_tree` loads every node's constants and every root's base motion, runs the
states one update at a time or as a pipelined stream (:func:`linkdyn.sim.chain_testbench.
run_updates`, the chain's host side) and returns every update's words and cycles; with
:func:`golden_updates` a test compares them with :class:`~linkdyn.model.golden_tree.GoldenTree`
word for word.
"""

from __future__ import annotations

from amaranth.sim import Simulator

from linkdyn.model.microprogram import microprogram

from .chain_testbench import BusHost, run_updates

__all__ = ["simulate_tree", "golden_updates", "tree_inputs"]

_REGISTERS = microprogram().registers


def tree_inputs(golden, q, qd, qdd, f_ext=None):
    """Return the node input words of every state (:meth:`GoldenTree.node_inputs`), a list of
    ``count`` lists of per-node dicts."""
    return [golden.node_inputs(q[k], qd[k], qdd[k], None if f_ext is None else f_ext[k])
            for k in range(len(q))]


def golden_updates(golden, states):
    """Return ``[(node tau words, overflow bit mask)]`` of the golden tree for every state."""
    out = []
    for inputs in states:
        result = golden.run(inputs)
        mask = sum(1 << j for j, flag in enumerate(result.node_overflow.tolist()) if flag)
        out.append((result.node_tau_words.tolist(), mask))
    return out


def simulate_tree(chain, constants, base_motion, states, *, pipelined=False, window=3,
                  vcd_file=None, trace=None):
    """Run ``states`` on a tree of nodes in the Amaranth simulator.

    Parameters
    ----------
    chain : LinkDynChain
        The tree (``chain.parents``).
    constants : list of dict
        Every node's constant words (:func:`linkdyn.model.golden_tree.encode_tree`).
    base_motion : dict
        The 9 ``forward_in`` words, written to node 0 (the chain writes them into every root).
    states : list of list of dict
        Per state and node, the input words (:func:`tree_inputs`).
    pipelined, window
        As :func:`linkdyn.sim.chain_testbench.run_updates`.
    trace : list, optional
        Filled with ``(cycle, node, request)`` for every request the chain issues to a node
        (``"joint"``, ``"forward"``, ``"local"``, ``"backward"``), cycles counted as the
        records' ``start_cycle``.

    Returns
    -------
    list of UpdateRecord
        One per state, with the cycle each node wrote its ``tau``.
    """
    host = BusHost(chain)
    records = []
    taus = []
    tau_address = _REGISTERS["tau"].address

    async def bench(ctx):
        # run_updates writes the base motion into node 0; the chain copies it into every root.
        await run_updates(ctx, host, constants, base_motion, states, pipelined=pipelined,
                          window=window, records=records, taus=taus)

    kinds = ("joint", "forward", "local", "backward")

    async def monitor(ctx):
        flat = [s for node in chain.nodes for s in (node.result.valid, node.result.addr)]
        starts = [getattr(node, kind).start for node in chain.nodes for kind in kinds]
        count = len(chain.nodes)
        edge = 0
        # Counts the same clock edges as `host.cycle` (the host waits on every one of them).
        async for _, _, *values in ctx.tick().sample(*flat, *starts):
            edge += 1
            for i in range(count):
                if values[2 * i] and values[2 * i + 1] == tau_address:
                    taus.append((edge, i))
            if trace is not None:
                for k, started in enumerate(values[2 * count:]):
                    if started:
                        trace.append((edge, k // len(kinds), kinds[k % len(kinds)]))

    sim = Simulator(chain)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.add_testbench(monitor, background=True)
    if vcd_file is None:
        sim.run()
    else:
        with sim.write_vcd(vcd_file):
            sim.run()
    return records
