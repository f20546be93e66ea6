"""Cycles (and, with ``--synth``, ECP5 utilisation) of trees of LinkDyn nodes.

Run as ``python -m linkdyn.bench.tree_gateware [--synth] [--plot F.png]``. For every tree it
simulates :class:`~linkdyn.gateware.chain.LinkDynChain` with the tree's ``parents`` in the
Amaranth simulator through its register bus (:mod:`linkdyn.sim.tree_testbench`), checks every
node's ``tau`` word against :class:`~linkdyn.model.golden_tree.GoldenTree`, and reports:

latency
    LATENCY_CYCLES of one update on an idle tree (start to the end of the update) and the
    same for the chain as long as the tree's longest root-to-leaf path (its *depth*);
branch points
    per node with several children: the cycle (from the start) each child starts ``forward``
    (they get the same message at once), the cycle the node starts ``backward`` (``distal``)
    and the last of its children's ``backward`` starts: the backward hop of a branch point,
    against the chain's hop.

With ``--synth``: Yosys ``synth_ecp5`` of the 14-node two-arm tree and of the 14-node chain
(``linkdyn.boards.toolchain.yosys_utilisation``), LUT4, FFs, MULT18X18D, DP16KD against the
ULX3S 85F's LFE5U-85F (83,640 LUT4, 156 MULT18X18D, 208 DP16KD).
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time

import numpy as np

from linkdyn.gateware.chain import LinkDynChain
from linkdyn.model import Link, Robot
from linkdyn.model.golden_tree import GoldenTree
from linkdyn.sim.chain_cases import random_robot
from linkdyn.sim.tree_cases import random_tree, tree_states, two_arm_tree
from linkdyn.sim.tree_testbench import golden_updates, simulate_tree, tree_inputs

__all__ = ["TREES", "measure", "depth", "synthesise", "main"]

#: LFE5U-85F capacity (data sheet FPGA-DS-02012): LUT4, MULT18X18D, DP16KD.
ECP5_85F = {"luts": 83_640, "dsps": 156, "brams": 208}


def _star(leaves):
    link = dict(a=0.2, mass=1.0, com=(0.1, 0.0, 0.0), inertia=np.eye(3) * 0.01)
    links = [Link("hub", **link)] + [Link(f"leaf{k}", **link) for k in range(leaves)]
    return Robot(f"star_{leaves}", tuple(links), parents=(-1,) + (0,) * leaves)


#: The trees of the benchmark: name -> Robot factory.
TREES = {
    "two-arm tree (UR5 arms)": lambda: two_arm_tree(),
    "two-arm tree + head": lambda: two_arm_tree(head=True),
    "star, 4 leaves": lambda: _star(4),
    "random tree (16 links)": lambda: random_tree(16, 0, max_nodes=16),
}


def depth(parents):
    """Return the number of nodes on the longest root-to-leaf path of a parent list."""
    levels = []
    for parent in parents:
        levels.append(1 if parent < 0 else levels[parent] + 1)
    return max(levels)


def _run(robot):
    golden = GoldenTree(robot)
    q, qd, qdd = tree_states(robot, 1, 1)
    inputs = tree_inputs(golden, q, qd, qdd)
    chain = LinkDynChain(golden.tree.n, parents=golden.tree.parents)
    trace = []
    record = simulate_tree(chain, golden.constants, golden.base_words, inputs, trace=trace)[0]
    matches = [record.tau] == [tau for tau, _ in golden_updates(golden, inputs)]
    start = record.start_cycle
    first = {}
    for cycle, node, kind in trace:
        first.setdefault((node, kind), cycle - start)
    return golden.tree, record, matches, first


def measure(name, robot):
    """Simulate one tree and the chain of its depth; return their figures (dict)."""
    wall = time.monotonic()
    tree, record, matches, first = _run(robot)
    chain_robot = random_robot(depth(tree.parents), 1)
    _, chain_record, chain_matches, chain_first = _run(chain_robot)
    branches = []
    for node, kids in enumerate(tree.children):
        if len(kids) > 1:
            branches.append({
                "node": node, "children": kids,
                "forward": [first[(c, "forward")] for c in kids],
                "own_forward": first[(node, "forward")],
                "backward": first[(node, "backward")],
                "last_child_backward": max(first[(c, "backward")] for c in kids),
            })
    hops = [chain_first[(i, "backward")] - chain_first[(i + 1, "backward")]
            for i in range(depth(tree.parents) - 1)]
    forward_hops = [chain_first[(i + 1, "forward")] - chain_first[(i, "forward")]
                    for i in range(depth(tree.parents) - 1)]
    return {
        "name": name, "nodes": tree.n, "depth": depth(tree.parents),
        "branch_points": len(branches), "roots": len(tree.roots),
        "latency": record.latency, "chain_latency": chain_record.latency,
        "branches": branches, "chain_backward_hop": hops[0] if hops else None,
        "chain_forward_hop": forward_hops[0] if forward_hops else None,
        "matches_golden": matches and chain_matches, "seconds": time.monotonic() - wall,
        "tau_cycles": [c - record.start_cycle for c in record.tau_cycles],
        "parents": tree.parents,
    }


def synthesise(parents, workdir):
    """Return Yosys ``synth_ecp5`` utilisation of a tree (or chain) of nodes."""
    from linkdyn.boards.toolchain import yosys_utilisation
    from linkdyn.gateware.verilog import export_verilog

    chain = LinkDynChain(len(parents), parents=parents)
    export_verilog(chain, "linkdyn_tree", f"{workdir}/tree.v")
    return yosys_utilisation("ecp5", "tree.v", workdir, top="linkdyn_tree")


def _plot(result, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parents, cycles = result["parents"], result["tau_cycles"]
    levels = []
    for parent in parents:
        levels.append(0 if parent < 0 else levels[parent] + 1)
    figure, axis = plt.subplots(figsize=(7, 4))
    for node, parent in enumerate(parents):
        if parent >= 0:
            axis.plot([levels[parent], levels[node]], [cycles[parent], cycles[node]], "-",
                      color="0.6", zorder=1)
    axis.scatter(levels, cycles, zorder=2)
    for node, (x, y) in enumerate(zip(levels, cycles)):
        axis.annotate(str(node), (x, y), textcoords="offset points", xytext=(5, 3), fontsize=8)
    axis.set_xlabel("depth (nodes from the base)")
    axis.set_ylabel("cycle of the node's tau write (from start)")
    axis.set_title(f"{result['name']}: {result['nodes']} nodes, LATENCY_CYCLES "
                   f"{result['latency']} (chain of depth {result['depth']}: "
                   f"{result['chain_latency']})", fontsize=9)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv=None):
    """Command line: simulate the trees, print the tables."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.bench.tree_gateware",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--synth", action="store_true",
                        help="also synthesise the 14-node two-arm tree and chain (ECP5)")
    parser.add_argument("--plot", metavar="PNG",
                        help="plot the tau cycles of the two-arm tree's nodes")
    args = parser.parse_args(argv)
    results = []
    for name, factory in TREES.items():
        result = measure(name, factory())
        results.append(result)
        print(f"{name}: {result['nodes']} nodes, depth {result['depth']}, LATENCY_CYCLES "
              f"{result['latency']} (chain of {result['depth']}: {result['chain_latency']}), "
              f"words = golden: {result['matches_golden']} ({result['seconds']:.1f} s)",
              flush=True)
    print()
    print("| tree | nodes | depth | roots | branch points | LATENCY_CYCLES | chain of the "
          "depth | words = golden |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        print(f"| {r['name']} | {r['nodes']} | {r['depth']} | {r['roots']} | "
              f"{r['branch_points']} | {r['latency']} | {r['chain_latency']} | "
              f"{'yes' if r['matches_golden'] else 'NO'} |")
    print()
    print("| tree | branch node | children | children start forward | node starts "
          "forward | last child starts backward | node starts backward | backward hop |")
    print("|---|---:|---|---|---:|---:|---:|---:|")
    for r in results:
        for b in r["branches"]:
            print(f"| {r['name']} | {b['node']} | {', '.join(map(str, b['children']))} | "
                  f"{', '.join(map(str, b['forward']))} | {b['own_forward']} | "
                  f"{b['last_child_backward']} | {b['backward']} | "
                  f"{b['backward'] - b['last_child_backward']} |")
    hops = {(r["chain_forward_hop"], r["chain_backward_hop"]) for r in results}
    print(f"\nchain hops (forward, backward start to start): {sorted(hops)}")
    if args.plot:
        _plot(results[0], args.plot)
        print(f"wrote {args.plot}")
    if args.synth:
        tree = next(r for r in results if r["nodes"] == 14)
        print("\n| design | LUT4 | FFs | MULT18X18D | DP16KD | Yosys [s] |")
        print("|---|---:|---:|---:|---:|---:|")
        for label, parents in ((f"{tree['name']} (14 nodes)", tree["parents"]),
                               ("chain (14 nodes)", tuple(range(-1, 13)))):
            wall = time.monotonic()
            with tempfile.TemporaryDirectory() as workdir:
                used = synthesise(parents, workdir)
            print(f"| {label} | {used['luts']:,} ({used['luts'] / ECP5_85F['luts']:.0%}) | "
                  f"{used['ffs']:,} | {used['dsps']} ({used['dsps'] / ECP5_85F['dsps']:.0%}) | "
                  f"{used['brams']} ({used['brams'] / ECP5_85F['brams']:.0%}) | "
                  f"{time.monotonic() - wall:.0f} |", flush=True)
    print(f"\nmachine: {platform.machine()}; cycle counts do not depend on it")
    return 0 if all(r["matches_golden"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
