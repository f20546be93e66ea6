"""The faster local loop's torque error (paper Sect. 3.1, third update policy).

Run as ``python -m linkdyn.bench.local_loop [--write-docs docs/controller.md] [--plot PNG]``.

The chain updates at 1 kHz; between two updates every node re-runs its own segments at
``k`` times that rate on its joint's fresh state, with the neighbours' messages of the last
chain update (:class:`linkdyn.model.local_loop.LocalLoopChain`). At every local tick this
compares the node's torque with a full chain update on the same state (the exact answer of the
fixed-point chain), and with holding the last chain update's torque (what a node without the
local loop outputs), on:

- the UR5 (example-robot-data URDF) on the demo's Fourier trajectory (paper eq. 23, 3 s, up to
  about 42 rad/s^2, :func:`linkdyn.host.demo.demo_trajectory`);
- the Panda (URDF) on the measured excitation run of the ``panda-gaz2019`` data set
  (interpolated to the local rate), if the data set is there, else on the Fourier trajectory.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from linkdyn.model.fixedpoint import Q15_16
from linkdyn.model.local_loop import LocalLoopChain
from linkdyn.model.reference import load_reference_robot

from .report import replace_section

__all__ = ["CHAIN_RATE_HZ", "MULTIPLES", "trajectories", "measure", "section", "plot", "main"]

#: Chain update rate, Hz.
CHAIN_RATE_HZ = 1000
#: Local-loop rates measured, as multiples of the chain rate.
MULTIPLES = (2, 5, 10)


def trajectories(seconds=3.0):
    """Return the cases: ``[(robot name, trajectory name, robot, t, q, qd, qdd)]``, sampled at
    ``max(MULTIPLES) * CHAIN_RATE_HZ``."""
    from linkdyn.host.demo import demo_trajectory
    from linkdyn.host.identification.data import (DataError, dataset_path, load_measurements,
                                                  with_accelerations)

    rate = max(MULTIPLES) * CHAIN_RATE_HZ
    cases = []
    ur5 = load_reference_robot("ur5")
    cases.append(("UR5", "Fourier (eq. 23)", ur5, *demo_trajectory(ur5.n, seconds, rate)))
    panda = load_reference_robot("panda")
    try:
        path = dataset_path("panda-gaz2019")
        measured = with_accelerations(load_measurements(path, panda.n))
    except (DataError, FileNotFoundError, OSError):
        measured = None
    if measured is None:
        cases.append(("Panda", "Fourier (eq. 23)", panda,
                      *demo_trajectory(panda.n, seconds, rate)))
    else:
        t = np.arange(int(min(seconds, measured.t[-1] - measured.t[0]) * rate)) / rate
        t0 = measured.t[0]
        columns = [np.stack([np.interp(t + t0, measured.t, x[:, j]) for j in range(panda.n)],
                            axis=1) for x in (measured.q, measured.qd, measured.qdd)]
        cases.append(("Panda", "measured excitation (panda-gaz2019)", panda, t, *columns))
    return cases


def measure(robot, q, qd, qdd, multiples=MULTIPLES):
    """Measure the local loop's and the hold's errors against full chain updates.

    Parameters
    ----------
    robot : Robot
    q, qd, qdd : numpy.ndarray, shape (K, n)
        The trajectory at ``max(multiples) * CHAIN_RATE_HZ``.
    multiples : tuple of int
        Local rates (multiples of the chain rate); each must divide ``max(multiples)``.

    Returns
    -------
    dict
        ``full`` (K, n) torques of full chain updates at every sample (N·m), and per multiple
        ``k``: ``{"ticks": sample indices of the local updates (between chain updates),
        "local": (T, n), "hold": (T, n)}`` torques, N·m; ``seconds_per_local_update``.
    """
    top = max(multiples)
    if any(top % k for k in multiples):
        raise ValueError(f"every multiple must divide {top}, not {multiples}")
    full_chain = LocalLoopChain(robot)
    full = np.array([full_chain.step(q[s], qd[s], qdd[s]).tau_words for s in range(len(q))])
    chain = LocalLoopChain(robot)
    out = {"full": Q15_16.decode(full)}
    spent, count = 0.0, 0
    for k in multiples:
        stride = top // k
        ticks, local, hold = [], [], []
        last = None
        for s in range(len(q)):
            if s % top == 0:
                last = chain.step(q[s], qd[s], qdd[s]).tau_words
            elif s % stride == 0:
                started = time.perf_counter()
                local.append(chain.local_step(q[s], qd[s], qdd[s]))
                spent += time.perf_counter() - started
                count += 1
                hold.append(last)
                ticks.append(s)
        out[k] = {"ticks": np.array(ticks), "local": Q15_16.decode(np.array(local)),
                  "hold": Q15_16.decode(np.array(hold))}
    out["seconds_per_local_update"] = spent / max(count, 1)
    return out


def _errors(result, k):
    ticks = result[k]["ticks"]
    full = result["full"][ticks]
    return (np.abs(result[k]["local"] - full).max(axis=0),
            np.abs(result[k]["hold"] - full).max(axis=0),
            np.sqrt(np.mean((result[k]["local"] - full) ** 2, axis=0)),
            np.sqrt(np.mean((result[k]["hold"] - full) ** 2, axis=0)))


def section(cases, results):
    """Return the ``## Local loop`` section of docs/controller.md."""
    lines = ["## Local loop", "",
             "The paper's third update policy: between two chain updates (1 kHz here) every "
             "node re-runs its own segments at k times the chain rate on its joint's fresh "
             "state, with the neighbours' messages of the last chain update "
             "(`linkdyn.model.local_loop.LocalLoopChain`). The error is the node's torque "
             "against a full chain update on the same state (the fixed-point chain's exact "
             "answer), beside the error of holding the last chain update's torque (no local "
             "loop). Largest error over the joints and every local tick, N·m "
             "(`python -m linkdyn.bench.local_loop`):", "",
             "| robot | trajectory | local rate | max error, local loop | max error, hold | "
             "RMS local loop | RMS hold | worst joint (local) |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for (robot_name, trajectory, *_), result in zip(cases, results):
        for k in MULTIPLES:
            local, hold, rms_local, rms_hold = _errors(result, k)
            lines.append(f"| {robot_name} | {trajectory} | {k * CHAIN_RATE_HZ / 1000:g} kHz | "
                         f"{local.max():.4f} | {hold.max():.4f} | {rms_local.max():.4f} | "
                         f"{rms_hold.max():.4f} | {int(np.argmax(local)) + 1} |")
    lines += ["", "Per joint at 10 kHz (max error, N·m, local loop / hold, and their ratio):",
              ""]
    better, worse = [], []
    for (robot_name, trajectory, *_), result in zip(cases, results):
        local, hold, _, _ = _errors(result, max(MULTIPLES))
        cells = ", ".join(f"{j + 1}: {a:.4f} / {b:.4f} ({a / b:.2f})" for j, (a, b) in
                          enumerate(zip(local, hold)))
        lines.append(f"- {robot_name}, {trajectory}: {cells}")
        better += [f"{robot_name} {j + 1}" for j in range(len(local)) if local[j] < 0.8 * hold[j]]
        worse += [f"{robot_name} {j + 1}" for j in range(len(local)) if local[j] > hold[j]]
    lines += ["",
              "What the local update follows is the node's own joint: its link's inertia, "
              "Coriolis and friction terms on the fresh state. What it does not follow is the "
              "backward message: the weight and inertia of every link beyond the node arrive "
              "as the distal neighbour's wrench of the last chain update, computed with the "
              "joint angles and the forward message of then. On the proximal joints that part "
              "is most of the torque, so the local loop removes little of the hold's error "
              "there; it removes a fifth or more on "
              + (", ".join(better) if better else "no joint")
              + "; it is worse than holding on "
              + (", ".join(worse) if worse else "no joint")
              + " (a fresh own state combined with stale neighbour messages is not always "
              "closer than the consistent old update). The error grows with the time since the "
              "chain update (larger at 10 kHz, whose ticks reach 0.9 ms, than at 2 kHz, whose "
              "only tick is at 0.5 ms). A node whose neighbours do not move gets the full "
              "update's words exactly (tests/model/test_local_loop.py). So the local loop "
              "suits the fast feedback and the guard (they need the fresh local state), while "
              "the model's feed-forward is only as fresh as the chain rate: a faster chain "
              "(docs/performance.md) is what lowers this error."]
    seconds = np.mean([r["seconds_per_local_update"] for r in results])
    lines += ["", f"Golden model: {seconds * 1e3:.2f} ms per local update of every node (Python). "
              "The gateware does not run local updates yet (docs/controller.md, *Integration*).",
              "", "![Local loop error](img/local_loop.png)", ""]
    return "\n".join(lines)


def plot(path, cases, results):
    """Plot the UR5's error over time (worst joint, 10 kHz) and the max error per joint."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(cases) + 1, figsize=(5 * (len(cases) + 1), 4))
    name, trajectory, robot, t, *_ = cases[0]
    result = results[0]
    k = max(MULTIPLES)
    local, hold, _, _ = _errors(result, k)
    j = int(np.argmax(hold))
    ticks = result[k]["ticks"]
    ax = axes[0]
    ax.plot(t[ticks], result[k]["hold"][:, j] - result["full"][ticks, j], ".", ms=1,
            label="hold last chain update")
    ax.plot(t[ticks], result[k]["local"][:, j] - result["full"][ticks, j], ".", ms=1,
            label=f"local loop, {k * CHAIN_RATE_HZ / 1000:g} kHz")
    ax.set(xlabel="t (s)", ylabel="torque error (N·m)",
           title=f"{name}, joint {j + 1}, {trajectory}")
    ax.legend(markerscale=8)
    for ax, (name, trajectory, robot, *_), result in zip(axes[1:], cases, results):
        width = 0.8 / (2 * len(MULTIPLES))
        joints = np.arange(robot.n)
        for m, k in enumerate(MULTIPLES):
            local, hold, _, _ = _errors(result, k)
            ax.bar(joints + 1 + (2 * m - len(MULTIPLES)) * width, hold, width,
                   label=f"hold, {k} kHz", alpha=0.45)
            ax.bar(joints + 1 + (2 * m + 1 - len(MULTIPLES)) * width, local, width,
                   label=f"local loop, {k} kHz")
        ax.set_yscale("log")
        ax.set(xlabel="joint", ylabel="max torque error (N·m)", title=f"{name}: {trajectory}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    """Measure, print the section; optionally write it and the plot."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.bench.local_loop",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="trajectory length, s")
    parser.add_argument("--write-docs", metavar="PATH",
                        help="replace the '## Local loop' section of this Markdown file")
    parser.add_argument("--plot", type=Path, help="write the plot (PNG) here")
    args = parser.parse_args(argv)
    cases = trajectories(args.seconds)
    results = []
    for name, trajectory, robot, t, q, qd, qdd in cases:
        print(f"{name}: {trajectory}, {len(t)} samples ...", flush=True)
        results.append(measure(robot, q, qd, qdd))
    text = section(cases, results)
    print(text)
    if args.write_docs:
        replace_section(args.write_docs, text, title="# Joint controller")
    if args.plot:
        plot(args.plot, cases, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
