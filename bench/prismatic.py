"""Accuracy of prismatic nodes in Q15.16 against the float model: ``python -m linkdyn.bench.prismatic``.

The golden model (:class:`linkdyn.model.golden_tree.GoldenTree`, equal word for word to the
gateware) against :func:`linkdyn.model.rnea` (float64, checked against Pinocchio) on robots with
prismatic joints (docs/trees.md, *Prismatic nodes*):

* TIAGo: ``tiago_description/robots/tiago.urdf`` of example-robot-data (48 joints, the prismatic
  torso lift carrying head, arm and hand);
* Baxter: ``baxter_description/urdf/baxter.urdf`` (19 joints, four prismatic gripper fingers);
* random chains of 6 links (:func:`linkdyn.sim.chain_cases.random_robot`), 2 of them prismatic;
* random trees of 12 links (:func:`linkdyn.sim.tree_cases.random_tree`, mounts and several roots),
  4 of them prismatic.

The prismatic joints travel within ``±0.5`` m (the random robots) or their URDF limits; the states
are :func:`linkdyn.sim.tree_cases.tree_states` from a fixed seed, speeds capped at
:data:`QD_CAP`. Errors are reported apart for
the prismatic rows (forces, N) and the revolute rows (torques, N·m). With ``--plot PATH`` a PNG
of the error against the magnitude of the force or torque.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import replace

import numpy as np

from linkdyn.model import load_robot, rnea
from linkdyn.model.golden_tree import GoldenTree
from linkdyn.model.reference import example_robot_data_dir
from linkdyn.model.robot import JointLimits
from linkdyn.sim.chain_cases import random_robot
from linkdyn.sim.tree_cases import random_tree, tree_states

__all__ = ["SEED", "STATES", "robots", "measure", "table", "plot", "main"]

#: Seed of the states (the report's date, 2026-12-01).
SEED = 20261201

#: States per robot.
STATES = 500

#: Travel of the random robots' prismatic joints, m.
TRAVEL = 0.5

#: Largest joint speed drawn, rad/s or m/s: Baxter's URDF gives its head 10,000 rad/s, which
#: saturates the head node's words (as it did before prismatic joints existed).
QD_CAP = 2 * np.pi


def _with_prismatic(robot, joints, name):
    links = list(robot.links)
    for k in joints:
        links[k] = replace(links[k], joint_type="prismatic",
                           limits=JointLimits(q_min=-TRAVEL, q_max=TRAVEL))
    return replace(robot, name=name, links=tuple(links))


def robots(count=10):
    """Return ``[(group, Robot)]``: TIAGo and Baxter (when example-robot-data is installed),
    ``count`` random chains and ``count`` random trees with prismatic joints."""
    out = []
    try:
        root = example_robot_data_dir()
    except FileNotFoundError:
        root = None
    if root is not None:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*has a <mimic> tag")
            for group, path in (("TIAGo", "tiago_description/robots/tiago.urdf"),
                                ("Baxter", "baxter_description/urdf/baxter.urdf")):
                out.append((group, load_robot(str(root / path))))
    for seed in range(count):
        rng = np.random.default_rng([seed, 31])
        chain = random_robot(6, seed)
        out.append(("random chains, 6 links (2 prismatic)", _with_prismatic(
            chain, sorted(rng.choice(6, 2, replace=False)), f"chain_{seed}")))
    for seed in range(count):
        rng = np.random.default_rng([seed, 32])
        tree = random_tree(12, seed)
        out.append(("random trees, 12 links (4 prismatic)", _with_prismatic(
            tree, sorted(rng.choice(12, 4, replace=False)), f"tree_{seed}")))
    return out


def measure(robot, states=STATES, seed=SEED):
    """Return the golden model's and the float model's ``tau`` on ``states`` random states,
    the prismatic mask, the overflow flags and the states: ``(fixed, float, prismatic,
    overflow, (q, qd, qdd))``, shapes (states, n), (states, n), (n,), (states, n), (states, n)
    each."""
    golden = GoldenTree(robot)
    q, qd, qdd = tree_states(robot, states, seed)
    qd = np.clip(qd, -QD_CAP, QD_CAP)
    results = [golden.step(q[k], qd[k], qdd[k]) for k in range(states)]
    fixed = np.array([result.tau for result in results])
    overflow = np.array([result.overflow for result in results])
    prismatic = np.array([link.joint_type == "prismatic" for link in robot.links])
    return fixed, rnea(robot, q, qd, qdd), prismatic, overflow, (q, qd, qdd)


def table(rows):
    """Return the Markdown table of the grouped results ``[(group, robot, measured)]``."""
    lines = ["| robots | count | joints (prismatic) | prismatic: max \\|error\\| (N) | "
             "prismatic: max \\|f\\| (N) | revolute: max \\|error\\| (N·m) | "
             "revolute: max \\|tau\\| (N·m) | states with overflow |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    groups = list(dict.fromkeys(group for group, _, _ in rows))
    for group in groups:
        picked = [(robot, m) for g, robot, m in rows if g == group]
        p_err = max(np.abs(f - x)[:, p].max() for _, (f, x, p, _, _) in picked)
        p_tau = max(np.abs(x)[:, p].max() for _, (f, x, p, _, _) in picked)
        r_err = max(np.abs(f - x)[:, ~p].max() for _, (f, x, p, _, _) in picked)
        r_tau = max(np.abs(x)[:, ~p].max() for _, (f, x, p, _, _) in picked)
        flagged = sum(int(m[3].any(axis=1).sum()) for _, m in picked)
        joints = sorted({(robot.n, int(m[2].sum())) for robot, m in picked})
        joints = ", ".join(f"{n} ({k})" for n, k in joints)
        lines.append(f"| {group} | {len(picked)} | {joints} | {p_err:.2e} | {p_tau:.1f} | "
                     f"{r_err:.2e} | {r_tau:.1f} | {flagged or 'none'} |")
    return "\n".join(lines)


def plot(rows, path):
    """Write a PNG: per joint and state, the error against ``|tau|``, prismatic and revolute."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)
    for axis, prismatic, unit in ((axes[0], True, "N"), (axes[1], False, "N·m")):
        groups = list(dict.fromkeys(group for group, _, _ in rows))
        # The many random robots first, the two real ones on top of them.
        for group in reversed(groups):
            err, tau = [], []
            for g, _, (fixed, exact, mask, _, _) in rows:
                if g != group:
                    continue
                cols = mask if prismatic else ~mask
                err.append(np.abs(fixed - exact)[:, cols].ravel())
                tau.append(np.abs(exact)[:, cols].ravel())
            err, tau = np.concatenate(err), np.concatenate(tau)
            real = group in ("TIAGo", "Baxter")
            axis.scatter(np.maximum(tau, 1e-3), np.maximum(err, 1e-9), s=6 if real else 2,
                         alpha=0.7 if real else 0.3, label=group,
                         color=f"C{groups.index(group)}")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel(f"|{'f' if prismatic else 'tau'}| float model [{unit}]")
        axis.set_ylabel(f"|Q15.16 - float| [{unit}]")
        axis.set_title("prismatic joints (force along the axis)" if prismatic
                       else "revolute joints of the same robots")
        axis.grid(True, which="major", alpha=0.3)
        axis.legend(fontsize=7, markerscale=4, loc="upper left")
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv=None):
    """Command line: measure, print the table, optionally plot."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.bench.prismatic",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=STATES, help="states per robot")
    parser.add_argument("--count", type=int, default=10, help="random chains and trees each")
    parser.add_argument("--plot", metavar="PATH", help="write the error plot (PNG)")
    args = parser.parse_args(argv)
    rows = []
    for group, robot in robots(args.count):
        measured = measure(robot, args.states)
        fixed, exact, prismatic, _, _ = measured
        print(f"{robot.name}: {robot.n} joints, {int(prismatic.sum())} prismatic, max |error| "
              f"{np.abs(fixed - exact)[:, prismatic].max():.2e} N (prismatic), "
              f"{np.abs(fixed - exact)[:, ~prismatic].max():.2e} N·m (revolute)", flush=True)
        rows.append((group, robot, measured))
    print()
    print(table(rows))
    if args.plot:
        plot(rows, args.plot)
        print(f"\nwrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
