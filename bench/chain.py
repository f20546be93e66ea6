"""Chain figures from simulation: update latency and interval for n = 1 .. 8 and both policies.

Run as ``python -m linkdyn.bench.chain``. For every node count and policy it simulates
a :class:`~linkdyn.gateware.chain.LinkDynChain` (Q15.16, one MAC per node) in the Amaranth
simulator, driven through its register bus as the host link does
(:mod:`linkdyn.sim.chain_testbench`), with a random robot of ``n`` joints
(:func:`linkdyn.sim.chain_cases.random_robot`; the cycle counts do not depend on the data), and
checks every ``tau`` word against the golden model. It reports:

latency
    Of one update on an idle chain: cycles from the CONTROL.start write to the last node's
    ``tau`` write, and LATENCY_CYCLES (start to the end of the update: every node's wrench
    written).
interval
    Cycles between the starts of consecutive updates when the host feeds states as fast as the
    chain takes them (the host writes the 3n joint words of the next state over the bus, 3
    cycles a word, then CONTROL.start): sequential, the next update starts once STATUS reads
    done; pipelined, as soon as the chain takes the start (up to ``window`` updates in flight).
    The median of the steady state.
latency under load
    Pipelined: the median LATENCY_CYCLES of the streamed updates (they wait for each other).

With ``--write-docs PATH`` the table replaces the ``## Chain`` section of a Markdown file
(``docs/performance.md``), leaving the other sections alone.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
import time

from linkdyn.model.microprogram import microprogram

from linkdyn.gateware.chain import POLICIES, LinkDynChain
from linkdyn.sim.chain_testbench import simulate

from .report import replace_section

__all__ = ["measure", "node_busy_cycles", "report", "main"]

#: Updates streamed to measure the interval.
STREAMED = 14


def measure(n, policy, *, streamed=STREAMED, window=None, seed=1):
    """Simulate one chain and return its figures.

    Parameters
    ----------
    window : int, optional
        Pipelined: updates kept in flight; default the fewest that keep every node busy,
        ``ceil(latency / node busy cycles) + 1`` (more only add waiting to the latency).

    Returns
    -------
    dict
        ``latency_last_tau``, ``latency_cycles`` (one update on an idle chain), ``window``,
        ``interval`` (steady state: the mean start-to-start distance over the second half of
        the streamed updates), ``latency_loaded`` (median LATENCY_CYCLES while streaming), ``matches_golden`` (every update's ``tau`` words), ``seconds`` (wall time).
    """
    from linkdyn.sim.chain_cases import build_case

    wall = time.monotonic()
    case = build_case({"robot": f"random:{n}:{seed}", "states": streamed + 1, "seed": seed})
    # Only the joint words change from state to state (no external wrench).
    single = simulate(LinkDynChain(n, policy=policy), case.constants, case.base_motion,
                      case.inputs[:1])[0]
    if window is None:
        window = -(-single.latency // node_busy_cycles()) + 1
    records = simulate(LinkDynChain(n, policy=policy), case.constants, case.base_motion,
                       case.inputs[1:], pipelined=policy == "pipelined", window=window)
    words = [single.tau] + [record.tau for record in records]
    matches = words == [[int(w) for w in row] for row in case.tau_words]
    steady = records[len(records) // 2:]
    # The mean start-to-start distance of the steady state (single intervals vary: starts
    # bunch up behind a bank that frees late).
    interval = (steady[-1].start_cycle - steady[0].start_cycle) / (len(steady) - 1)
    return {
        "n": n,
        "policy": policy,
        "latency_last_tau": single.last_tau_latency,
        "latency_cycles": single.latency,
        "window": window if policy == "pipelined" else 1,
        "interval": round(interval),
        "latency_loaded": int(statistics.median(record.latency for record in steady
                                                if record.latency is not None)),
        "matches_golden": matches,
        "seconds": time.monotonic() - wall,
    }


def node_busy_cycles():
    """Return the cycles one node of the chain is occupied per update: the slots its four
    requests issue (no drains but after ``distal``) plus two handshake cycles per request."""
    segments = microprogram().segments
    busy = (sum(len(segments[name].slots) for name in ("joint", "forward", "local"))
            + segments["distal"].cycles)
    return busy + 2 * len(segments)


def _table(results):
    lines = ["| n | policy | latency to last tau | LATENCY_CYCLES | interval | in flight | "
             "latency while streaming | words = golden |",
             "|---:|---|---:|---:|---:|---:|---:|---|"]
    for r in results:
        lines.append(f"| {r['n']} | {r['policy']} | {r['latency_last_tau']} | "
                     f"{r['latency_cycles']} | {r['interval']} | {r['window']} | "
                     f"{r['latency_loaded']} | {'yes' if r['matches_golden'] else 'NO'} |")
    return "\n".join(lines)


def report(results):
    """Return the ``## Chain`` section (Markdown) for the results of :func:`measure`."""
    program = microprogram()
    terms = sum(segment.mac_terms for segment in program.segments.values())
    cycles = sum(segment.cycles for segment in program.segments.values())
    # The chain's nodes: one request per segment, no drain but after distal (LinkDynNode with
    # split_joint, split_local, interlock).
    requests = len(program.segments)
    handshake = 2 * requests
    breakdown = "; ".join(
        f"`{name}`: {sum(len(op.terms) for op in segment.ops if hasattr(op, 'terms'))} terms "
        f"in {len(segment.slots)} issue slots, {segment.cycles - len(segment.slots)} drain"
        for name, segment in program.segments.items())
    busy = node_busy_cycles() - handshake
    by = {(r["n"], r["policy"]): r for r in results}
    six = by.get((6, "sequential"))
    six_pipelined = by.get((6, "pipelined"))
    pipelined = [r["interval"] for r in results if r["policy"] == "pipelined"]
    sequential = sorted((r["n"], r["latency_last_tau"]) for r in results
                        if r["policy"] == "sequential")
    lines = [
        "## Chain",
        "",
        "`linkdyn.gateware.chain.LinkDynChain` (Q15.16, one MAC per node), figures from "
        "`python -m linkdyn.bench.chain --write-docs docs/performance.md` (Amaranth "
        "simulator, the chain driven through its register bus as the host link drives it; a "
        "random robot per node count, every `tau` word checked against the golden model). "
        "Cycles of the chain's clock.",
        "",
        _table(results),
        "",
        "- latency to last tau: one update on an idle chain, from the cycle CONTROL.start is "
        "written to the cycle the last `tau` is written (node 1's: the backward pass ends "
        "there); LATENCY_CYCLES: to the end of the update (node 1's base wrench written, "
        "STATUS.done), the chain's own counter.",
        "- interval: start to start in the steady state (the mean over the second half of "
        f"{STREAMED} streamed updates), the host feeding states as fast as the chain takes them "
        "(3n joint words over the register bus, 3 cycles each, then CONTROL.start). "
        "Sequential: the next state's words can only be written once the update has ended, so "
        "interval = latency + the bus writes. Pipelined: the host keeps up to 'in flight' "
        "updates started and not yet collected, the fewest that keep every node busy "
        "(latency / node busy time + 1; more only add waiting).",
        "- latency while streaming: the median LATENCY_CYCLES of the streamed updates; an "
        "update also waits for its predecessors' work on every node, so it is about 'in "
        "flight' intervals (Little's law), not the idle-chain latency.",
        "",
        "Goals (6 nodes, one MAC per node):",
        "",
    ]
    if six is not None:
        met = six["latency_last_tau"] <= 500
        lines.append(f"- latency <= 500 cycles: {six['latency_last_tau']} cycles to the last "
                     f"torque ({six['latency_cycles']} to the end of the update), "
                     f"**{'met' if met else 'not met'}**.")
    if six_pipelined is not None and pipelined:
        lines.append(
            f"- pipelined, a new update every <= 150 cycles whatever n: {min(pipelined)} .. "
            f"{max(pipelined)} cycles for n = 1 .. 8 ({six_pipelined['interval']} at n = 6), "
            f"independent of n, but **not met**; it cannot be met with one MAC per node: every "
            f"node executes {terms} MAC terms per update, one per cycle, so no node can take "
            f"updates faster than one per {terms} cycles.")
    lines += [
        "",
        f"Where the interval goes (pipelined): it is the busy time of one node per update, "
        f"whatever n. The microprogram's segments take {cycles} cycles for {terms} MAC terms "
        f"({breakdown}). The chain's nodes drop the drain after `joint`, `forward` and `local` "
        f"(an operand interlock stalls an issue that would read a result still in the MAC "
        f"pipeline instead) and keep the one of `distal` (an update ends when its wrench is "
        f"written): {busy} cycles per update. Each of the node's {requests} requests costs 2 "
        f"more cycles (the node goes idle, the chain's controller sees it and issues the next "
        f"request, the node takes it): {busy + handshake} cycles, plus the cycles a node stalls "
        f"on a neighbour's word. Reaching {terms} would need the MAC busy in every cycle: the "
        f"NOPs filled with another sample's work and each request taken in the cycle its "
        f"predecessor issues its last slot.",
    ]
    if len(sequential) > 1:
        (n0, l0), (n1, l1) = sequential[0], sequential[-1]
        slope = (l1 - l0) / (n1 - n0)
        lines += [
            "",
            f"Where the latency goes (sequential): {slope:.0f} cycles per node plus "
            f"{l0 - slope * n0:.0f}. All nodes run `joint` at once. Each further node adds a "
            f"forward hop (node i+1 starts `forward` when the first word it reads from node i "
            f"arrives and stalls on the later ones, so the hop is set by when node i writes its "
            f"last message word) and a backward hop (node i waits in `distal` for node i+1's "
            f"wrench words; `distal` issues in program order, so they are written in the order "
            f"the proximal node reads them). Both hop costs come from the microprogram's "
            f"schedule: a `forward` schedule that wrote the message words earlier would "
            f"shorten the forward hop.",
        ]
    lines += [
        "",
        f"Machine: {platform.machine()}, shared with other jobs (the figures are cycle counts "
        f"and do not depend on it); {datetime.date.today().isoformat()}.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    """Command line: simulate the chains and print the table."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.bench.chain",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=list(range(1, 9)),
                        help="node counts (default 1 .. 8)")
    parser.add_argument("--policy", choices=POLICIES, action="append",
                        help="policy (repeatable; default both)")
    parser.add_argument("--write-docs", metavar="PATH",
                        help="replace the '## Chain' section of this Markdown file")
    args = parser.parse_args(argv)
    results = []
    for n in args.nodes:
        for policy in args.policy or POLICIES:
            result = measure(n, policy)
            results.append(result)
            print(f"n={n} {policy}: latency {result['latency_last_tau']} to the last tau, "
                  f"LATENCY_CYCLES {result['latency_cycles']}, interval {result['interval']}, "
                  f"latency while streaming {result['latency_loaded']}, words = golden: "
                  f"{result['matches_golden']} ({result['seconds']:.1f} s)", flush=True)
    print()
    print(_table(results))
    if args.write_docs:
        replace_section(args.write_docs, report(results))
        print(f"\nwrote the '## Chain' section of {args.write_docs}")
    return 0 if all(r["matches_golden"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
