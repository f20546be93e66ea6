"""The main job, end to end: a robot's inverse dynamics computed by the simulated board over a
serial port, checked word for word against the golden model.

``python -m linkdyn.host.demo --out build/demo``

1. builds (cached) and starts :class:`linkdyn.sim.SimulatedBoard`: the board core with the
   LinkDyn chain, simulated by Verilator, its UART on a pseudo-terminal;
2. opens it with :class:`linkdyn.host.Board` (pyserial), reads its build information and loads
   the UR5 (constants encoded in Q15.16 and read back);
3. streams a joint trajectory (each joint a sum of two sines inside its limits, 250 Hz) to the
   board as STEP frames and collects the torques;
4. compares them with :func:`linkdyn.model.rnea_fixed` (must be equal word for word) and with
   the float :func:`linkdyn.model.rnea` (the fixed-point error, N·m);
5. writes ``states.csv``, ``torques.csv`` (board), ``summary.json`` and ``torques.png`` into
   ``--out``.

Exit status 0 if every torque equals the golden model's word, 1 otherwise.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["trajectory", "run", "main"]


def trajectory(robot, duration=2.0, rate=250.0, seed=0):
    """Return ``t, q, qd, qdd``: every joint a sum of two sines inside 80 % of its position
    limits (rad, rad/s, rad/s^2; shapes (K,) and (K, n))."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(round(duration * rate))) / rate
    low, high = robot.q_limits()
    centre, half = (low + high) / 2, 0.8 * (high - low) / 2
    n = robot.n
    amplitude = rng.uniform(0.2, 0.5, (2, n)) * np.minimum(half, 1.5)
    omega = 2 * np.pi * rng.uniform(0.3, 1.2, (2, n))
    phase = rng.uniform(0, 2 * np.pi, (2, n))
    arg = omega[:, None, :] * t[None, :, None] + phase[:, None, :]       # (2, K, n)
    q = centre + (amplitude[:, None, :] * np.sin(arg)).sum(axis=0)
    qd = (amplitude[:, None, :] * omega[:, None, :] * np.cos(arg)).sum(axis=0)
    qdd = -(amplitude[:, None, :] * omega[:, None, :] ** 2 * np.sin(arg)).sum(axis=0)
    return t, q, qd, qdd


def run(out, *, robot_name="ur5", chain="linkdyn", duration=2.0, rate=250.0,
        simulator=None):
    """Run the demo; return the summary (also written to ``out/summary.json``)."""
    from linkdyn.host.board import Board  # noqa: F401  (the API the demo shows)
    from linkdyn.model import load_robot, rnea, rnea_fixed
    from linkdyn.sim.board import SimulatedBoard

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    robot = load_robot(robot_name)
    t, q, qd, qdd = trajectory(robot, duration, rate)
    component = None
    if chain == "fake":
        from linkdyn.gateware.fake_chain import FakeChain
        component = FakeChain(robot.n)
    print(f"building and starting the simulated board ({robot.n} nodes, {chain} chain; the "
          "first build takes a minute or two) ...", flush=True)
    started = time.perf_counter()
    with SimulatedBoard(robot.n, chain=component, simulator=simulator) as sim:
        print(f"board on {sim.port}: {sim.build_info} ({time.perf_counter() - started:.0f} s)",
              flush=True)
        with sim.open() as board:
            board.load_robot(robot)
            print(f"loaded {robot.name!r}; streaming {len(t)} states ...", flush=True)
            started = time.perf_counter()
            result = board.rnea(q, qd, qdd)
            seconds = time.perf_counter() - started
            statistics = board.statistics
    golden = rnea_fixed(robot, q, qd, qdd)
    reference = rnea(robot, q, qd, qdd)
    equal = np.array_equal(result.tau_words, golden.tau_words) and np.array_equal(
        result.overflow, golden.overflow)
    mismatches = int(np.sum(np.any(result.tau_words != golden.tau_words, axis=1)))
    error = np.abs(result.tau - reference)
    _write_csv(out / "states.csv", ["t"] + [f"{x}{i}" for x in ("q", "qd", "qdd")
                                            for i in range(1, robot.n + 1)],
               np.column_stack([t, q, qd, qdd]))
    _write_csv(out / "torques.csv", ["t"] + [f"tau{i}" for i in range(1, robot.n + 1)],
               np.column_stack([t, result.tau]))
    _plot(out / "torques.png", t, result.tau, reference, robot.name)
    summary = {
        "robot": robot.name, "joints": robot.n, "chain": chain, "states": len(t),
        "rate_hz": rate, "port": "pseudo-terminal", "simulator": sim.simulator,
        "board_updates": result.updates, "requests_resent": result.retries,
        "equal_to_golden_model": bool(equal), "mismatching_states": mismatches,
        "saturated_states": int(np.sum(result.overflow.any(axis=1))),
        "max_error_vs_float_Nm": float(error.max()),
        "max_error_vs_float_per_joint_Nm": error.max(axis=0).tolist(),
        "latency_cycles": int(np.median(result.latency_cycles)),
        "simulated_updates_per_s": len(t) / seconds,
        "frames": statistics.requests, "damaged_bytes": statistics.damaged_bytes,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(header)
        writer.writerows([[f"{v:.17g}" for v in row] for row in rows])


def _plot(path, t, tau, reference, name):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True, layout="constrained")
    for i in range(tau.shape[1]):
        line, = top.plot(t, tau[:, i], label=f"joint {i + 1}")
        top.plot(t, reference[:, i], ":", color=line.get_color())
        bottom.plot(t, (tau[:, i] - reference[:, i]) * 1e3, color=line.get_color())
    top.set_ylabel("tau [N·m]")
    top.set_title(f"{name}: torques from the simulated board (solid) and the float model "
                  "(dotted)")
    top.legend(ncol=3, fontsize="small")
    bottom.set_ylabel("board - float [mN·m]")
    bottom.set_xlabel("t [s]")
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    """Command line of the demo."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.host.demo",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/demo", help="output folder (build/demo)")
    parser.add_argument("--robot", default="ur5", help="built-in robot, robot file or URDF")
    parser.add_argument("--chain", choices=("linkdyn", "fake"), default="linkdyn",
                        help="chain of the simulated board (fake: the host-link stand-in)")
    parser.add_argument("--duration", type=float, default=2.0, help="trajectory length, s")
    parser.add_argument("--rate", type=float, default=250.0, help="sample rate, Hz")
    parser.add_argument("--simulator", choices=("verilator", "icarus"))
    args = parser.parse_args(argv)
    summary = run(args.out, robot_name=args.robot, chain=args.chain, duration=args.duration,
                  rate=args.rate, simulator=args.simulator)
    print(json.dumps(summary, indent=2))
    if args.chain == "fake":
        print("(fake chain: the torques are the stand-in's sums, not the inverse dynamics)")
        return 0
    verdict = "equal to" if summary["equal_to_golden_model"] else "DIFFERENT FROM"
    print(f"{summary['states']} torques from the board over the serial port, {verdict} the "
          f"golden model word for word; max |board - float| "
          f"{summary['max_error_vs_float_Nm']:.2e} N·m; written to {args.out}/")
    return 0 if summary["equal_to_golden_model"] else 1


if __name__ == "__main__":
    sys.exit(main())
