"""Chain figures from simulation: update latency and interval for n = 1 .. 8 and both policies.

Run as ``python -m linkdyn.gateware.chain_bench``. For every node count and policy it simulates
a :class:`~linkdyn.gateware.chain.LinkDynChain` (Q15.16, one MAC per node) in the Amaranth
simulator, driven through its register bus as the host link does
(:mod:`linkdyn.gateware.chain_testbench`), with a random robot of ``n`` joints
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
from pathlib import Path

from linkdyn.model.golden import microprogram

from .chain import POLICIES, LinkDynChain
from .chain_testbench import simulate

__all__ = ["measure", "report", "write_section", "main"]

#: Updates streamed to measure the interval.
STREAMED = 14
#: Pipelined: updates the bench keeps in flight.
WINDOW = 4


def measure(n, policy, *, streamed=STREAMED, window=WINDOW, seed=1):
    """Simulate one chain and return its figures.

    Returns
    -------
    dict
        ``latency_last_tau``, ``latency_cycles`` (one update on an idle chain),
        ``interval`` (steady state, median), ``latency_loaded`` (median LATENCY_CYCLES while
        streaming), ``matches_golden`` (every update's ``tau`` words), ``seconds`` (wall time).
    """
    from linkdyn.sim.chain_cases import build_case

    wall = time.monotonic()
    case = build_case({"robot": f"random:{n}:{seed}", "states": streamed + 1, "seed": seed})
    # Only the joint words change from state to state (no external wrench).
    single = simulate(LinkDynChain(n, policy=policy), case.constants, case.base_motion,
                      case.inputs[:1])[0]
    records = simulate(LinkDynChain(n, policy=policy), case.constants, case.base_motion,
                       case.inputs[1:], pipelined=policy == "pipelined", window=window)
    words = [single.tau] + [record.tau for record in records]
    matches = words == [[int(w) for w in row] for row in case.tau_words]
    steady = records[len(records) // 2:]
    return {
        "n": n,
        "policy": policy,
        "latency_last_tau": single.last_tau_latency,
        "latency_cycles": single.latency,
        "interval": int(statistics.median(record.interval for record in steady)),
        "latency_loaded": int(statistics.median(record.latency for record in steady)),
        "matches_golden": matches,
        "seconds": time.monotonic() - wall,
    }


def _table(results):
    lines = ["| n | policy | latency to last tau | LATENCY_CYCLES | interval | "
             "latency while streaming | words = golden |",
             "|---:|---|---:|---:|---:|---:|---|"]
    for r in results:
        lines.append(f"| {r['n']} | {r['policy']} | {r['latency_last_tau']} | "
                     f"{r['latency_cycles']} | {r['interval']} | {r['latency_loaded']} | "
                     f"{'yes' if r['matches_golden'] else 'NO'} |")
    return "\n".join(lines)


def report(results):
    """Return the ``## Chain`` section (Markdown) for the results of :func:`measure`."""
    program = microprogram()
    terms = sum(segment.mac_terms for segment in program.segments.values())
    cycles = sum(segment.cycles for segment in program.segments.values())
    by = {(r["n"], r["policy"]): r for r in results}
    six = by.get((6, "sequential"))
    six_pipelined = by.get((6, "pipelined"))
    pipelined = [r["interval"] for r in results if r["policy"] == "pipelined"]
    lines = [
        "## Chain",
        "",
        "`linkdyn.gateware.chain.LinkDynChain` (Q15.16, one MAC per node), figures from "
        "`python -m linkdyn.gateware.chain_bench` (Amaranth simulator, driven through the "
        "register bus as the host link does; a random robot per node count, every `tau` word "
        "checked against the golden model). Cycles of the chain's clock.",
        "",
        _table(results),
        "",
        "- latency to last tau: one update on an idle chain, from the cycle CONTROL.start is "
        "written to the cycle the last node's `tau` is written (node 1's: the backward pass "
        "ends there); LATENCY_CYCLES: to the end of the update (node 1's base wrench written, "
        "STATUS.done), the chain's own counter.",
        "- interval: start to start in the steady state with the host feeding states as fast as "
        "the chain takes them (3n joint words over the bus, 3 cycles each, then CONTROL.start); "
        f"pipelined with up to {WINDOW} updates in flight. Sequential: the next state's words can "
        "only be written once the update has ended, so interval = latency + bus writes.",
        "- latency while streaming: the median LATENCY_CYCLES of the streamed updates "
        "(pipelined: each update also waits for its predecessors' work on every node).",
        "",
        "Goals (6 nodes, one MAC per node):",
        "",
    ]
    if six is not None:
        met = six["latency_last_tau"] <= 500
        lines.append(f"- latency <= 500 cycles: {six['latency_last_tau']} to the last torque "
                     f"({six['latency_cycles']} to the end of the update): "
                     f"**{'met' if met else 'not met'}**.")
    if six_pipelined is not None and pipelined:
        lines.append(
            f"- pipelined, a new update every <= 150 cycles whatever n: "
            f"{min(pipelined)} .. {max(pipelined)} cycles for n = 1 .. 8 "
            f"({six_pipelined['interval']} at n = 6): **not met**, and it cannot be with one MAC "
            f"per node: every node executes {terms} MAC terms per update, one per cycle, so the "
            f"interval is at least {terms} cycles.")
    lines += [
        "",
        "Where the interval goes (pipelined): it does not grow with n, it is the busy time of "
        f"one node per update. The microprogram's four segments take {cycles} cycles for "
        f"{terms} terms; the chain's nodes drop the drain cycles after `joint`, `forward` and "
        "`local` (an operand interlock stalls the few issues that would read a result still in "
        f"the MAC pipeline instead), which leaves {cycles - 15} cycles: {terms} terms, 11 NOPs in "
        "`joint` (the sine table's latency), 5 NOPs in `local`, the 5-cycle drain of `distal` "
        "(an update ends only when its wrench is written); each of the node's four requests "
        "costs 2 more cycles (idle, acknowledge), and the stall cycles waiting for a neighbour's "
        "word come on top. The 156-cycle bound would need the MAC busy on every cycle: "
        "filling the `joint` NOPs with another sample's work and taking the next request in "
        "the cycle the previous one issues its last slot.",
        "",
        "Where the latency goes (sequential, n nodes): all nodes run `joint` at once; each "
        "forward hop costs about 25 cycles (node i+1 starts its `forward` segment when the first "
        "word it needs arrives and stalls on later ones: the hop is set by the last word the "
        "proximal node produces, `p_ddot_x`, 55 cycles into its segment, which the distal node "
        "reads 30 cycles into its own); the last node runs `local` (71) and `distal`; each "
        "backward hop costs about 31 cycles (node i needs `f_in` at once, node i+1 writes "
        "`f_out` last). Hence about 56 cycles per node plus a constant, the table's slope.",
        "",
        f"Machine: {platform.machine()}, shared with other jobs (the figures are cycle counts of "
        f"the simulation and do not depend on it); {datetime.date.today().isoformat()}.",
    ]
    return "\n".join(lines) + "\n"


def write_section(path, section):
    """Replace (or append) the ``## Chain`` section of a Markdown file."""
    path = Path(path)
    text = path.read_text() if path.exists() else "# Performance\n"
    heading = "## Chain"
    start = text.find("\n" + heading + "\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        start += 1
        end = text.find("\n## ", start + len(heading))
        text = text[:start] + section + ("\n" + text[end + 1:] if end >= 0 else "")
    path.write_text(text.rstrip("\n") + "\n")


def main(argv=None):
    """Command line: simulate the chains and print the table."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.gateware.chain_bench",
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
        write_section(args.write_docs, report(results))
        print(f"\nwrote the '## Chain' section of {args.write_docs}")
    return 0 if all(r["matches_golden"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
