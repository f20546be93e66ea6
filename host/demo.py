"""The main job (``make demo``): a robot's inverse dynamics streamed through a simulated board.

``python -m linkdyn.host.demo [--out build/demo] [--seconds 3] [--rate 1000]``

1. Starts :class:`linkdyn.sim.SimulatedBoard` (the board's own gateware, UART included, in an
   HDL simulator behind a pseudo-terminal) and opens it with :class:`linkdyn.host.Board` like
   any serial port.
2. Loads the UR5 of example-robot-data (URDF) over the serial port.
3. Streams a smooth Fourier trajectory (paper eq. 23) sampled at ``--rate`` through the board
   and measures the serial round trip of single control cycles.
4. Writes ``OUT/ur5_torques.csv`` (board, golden model, float model and Pinocchio side by side),
   ``OUT/ur5_torques.png`` and ``OUT/summary.json`` (max errors in N·m, words that differ from
   the golden model, round trip per control cycle).
5. If the measured Panda run of ``../shared/datasets/panda-gaz2019`` is there, runs it through a
   7-node board with the URDF's nominal parameters and compares with the measured torques
   (``OUT/panda_*``).

The board is checked word for word against :func:`linkdyn.model.rnea_fixed`; the exit status is 1
if any word differs, else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from linkdyn.model import rnea, rnea_fixed
from linkdyn.model.reference import load_reference_robot

__all__ = ["main", "demo_trajectory"]

#: Pinocchio's gravity, m/s^2: the demo's robots use it so that the comparison is exact.
PINOCCHIO_GRAVITY = (0.0, 0.0, -9.81)


def demo_trajectory(n, seconds, rate, seed=5):
    """Return ``(t, q, qd, qdd)`` of a smooth 5-harmonic Fourier trajectory, shape (K, n).

    The trajectory (paper eq. 23) starts and ends at rest (fade-in and fade-out of one period
    each, paper Fig. 9); amplitudes are a few tenths of a radian around a bent pose.
    """
    from linkdyn.host.identification.fourier import FadedTrajectory, FourierTrajectory

    rng = np.random.default_rng(seed)
    harmonics = 5
    period = seconds / 3
    h = np.arange(1, harmonics + 1)
    a = rng.uniform(-0.25, 0.25, (n, harmonics)) / h
    b = rng.uniform(-0.25, 0.25, (n, harmonics)) / h
    q0 = np.resize([0.3, -1.2, 1.0, -0.8, 0.6, 0.2, 0.5], n)
    trajectory = FadedTrajectory(FourierTrajectory(q0, a, b, 2 * np.pi / period), periods=1)
    t = np.arange(int(round(trajectory.duration * rate))) / rate
    return (t, *trajectory.evaluate(t))


def _pinocchio_rnea(urdf, q, qd, qdd, locked=()):
    try:
        import pinocchio
    except ImportError:
        return None
    model = pinocchio.buildModelFromUrdf(str(urdf))
    if locked:
        ids = [model.getJointId(name) for name in locked]
        model = pinocchio.buildReducedModel(model, ids, pinocchio.neutral(model))
    data = model.createData()
    return np.array([pinocchio.rnea(model, data, *state) for state in zip(q, qd, qdd)])


def _round_trip(board, state, cycles):
    """Return the wall-clock round trip of single STEP exchanges, s (median and 95th %)."""
    times = []
    for _ in range(cycles):
        start = time.perf_counter()
        board.rnea(*state)
        times.append(time.perf_counter() - start)
    return float(np.median(times)), float(np.percentile(times, 95))


def _plot(path, t, columns, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = columns[0][1].shape[1]
    figure, axes = plt.subplots(n, 1, figsize=(9, 1.6 * n + 1), sharex=True)
    for i, axis in enumerate(np.atleast_1d(axes)):
        for label, values, style in columns:
            axis.plot(t, values[:, i], style, label=label, linewidth=1)
        axis.set_ylabel(f"tau{i + 1} [N·m]")
        axis.grid(True, alpha=0.3)
    np.atleast_1d(axes)[0].legend(loc="upper right", fontsize="small")
    np.atleast_1d(axes)[-1].set_xlabel("t [s]")
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _write_csv(path, t, blocks):
    header = ["t"] + [f"{name}{i + 1}" for name, values in blocks
                      for i in range(values.shape[1])]
    table = np.column_stack([t] + [values for _, values in blocks])
    np.savetxt(path, table, delimiter=",", header=",".join(header), comments="", fmt="%.9g")


def run_ur5(out, seconds, rate, simulator, log):
    """Run the UR5 part; return its summary dict."""
    from dataclasses import replace

    from linkdyn.host import Board
    from linkdyn.model.reference import example_robot_urdf
    from linkdyn.sim import SimulatedBoard

    robot = replace(load_reference_robot("ur5"), gravity=np.array(PINOCCHIO_GRAVITY))
    t, q, qd, qdd = demo_trajectory(robot.n, seconds, rate)
    log(f"UR5: {len(t)} states ({t[-1]:.2f} s at {rate} Hz)")
    with SimulatedBoard(nodes=robot.n, simulator=simulator) as sim:
        log(f"simulated board on {sim.port} ({sim.simulator}, {sim.baudrate} baud)")
        with Board.open(sim.port, baudrate=sim.baudrate) as board:
            info = board.info()
            board.load_robot(robot)
            median, p95 = _round_trip(board, (q[0], qd[0], qdd[0]), 50)
            start = time.perf_counter()
            result = board.rnea(q, qd, qdd, progress=True)
            elapsed = time.perf_counter() - start
    golden = rnea_fixed(robot, q, qd, qdd)
    float_tau = rnea(robot, q, qd, qdd)
    pin_tau = _pinocchio_rnea(example_robot_urdf("ur5"), q, qd, qdd)
    differing = int(np.count_nonzero(result.tau_words != golden.tau_words))
    summary = {
        "robot": "ur5 (example-robot-data URDF)",
        "states": int(len(t)),
        "rate_hz": rate,
        "board": {"nodes": info.nodes, "format": info.fmt.name, "simulator": sim.simulator,
                  "baudrate": sim.baudrate},
        "words_differing_from_golden_model": differing,
        "overflow": bool(np.any(result.overflow)),
        "max_error_vs_float_nm": float(np.max(np.abs(result.tau - float_tau))),
        "max_error_vs_pinocchio_nm": (None if pin_tau is None
                                      else float(np.max(np.abs(result.tau - pin_tau)))),
        "error_note": f"the Q15.16 error on this trajectory, whose accelerations reach "
                      f"{np.max(np.abs(qdd)):.0f} rad/s^2; docs/accuracy.md measures random "
                      f"states with |qdd| <= 10 rad/s^2",
        "round_trip_per_cycle_s": {"median": median, "p95": p95,
                                   "note": "wall clock of one STEP exchange with the simulated "
                                           "board (simulation speed, not the board's)"},
        "streamed_states_per_s": len(t) / elapsed,
    }
    blocks = [("tau_board", result.tau), ("tau_golden", golden.tau), ("tau_float", float_tau)]
    if pin_tau is not None:
        blocks.append(("tau_pinocchio", pin_tau))
    _write_csv(out / "ur5_torques.csv", t, blocks)
    _plot(out / "ur5_torques.png", t,
          [("board", result.tau, "-"), ("float model", float_tau, "--")]
          + ([("Pinocchio", pin_tau, ":")] if pin_tau is not None else []),
          "UR5 joint torques: simulated LinkDyn board vs float model vs Pinocchio")
    return summary


def run_panda(out, dataset, every, simulator, log):
    """Run the measured Panda trajectory through a 7-node board; return its summary dict."""
    from linkdyn.host import Board
    from linkdyn.host.identification.data import load_measurements, with_accelerations
    from linkdyn.sim import SimulatedBoard

    robot = load_reference_robot("panda")
    measured = with_accelerations(load_measurements(dataset, robot.n))
    index = np.arange(0, len(measured.t), every)
    t, q, qd, qdd = measured.t[index], measured.q[index], measured.qd[index], measured.qdd[index]
    log(f"Panda: {len(t)} measured states (every {every}th sample, "
        f"accelerations: {measured.acceleration_source})")
    with SimulatedBoard(nodes=robot.n, simulator=simulator) as sim:
        with Board.open(sim.port, baudrate=sim.baudrate) as board:
            board.load_robot(robot)
            result = board.rnea(q, qd, qdd, progress=True)
    golden = rnea_fixed(robot, q, qd, qdd)
    measured_tau = measured.tau[index]
    rms = np.sqrt(np.mean((result.tau - measured_tau) ** 2, axis=0))
    _write_csv(out / "panda_torques.csv", t,
               [("tau_board", result.tau), ("tau_measured", measured_tau)])
    _plot(out / "panda_torques.png", t,
          [("measured", measured_tau, "-"), ("board (URDF nominal parameters)", result.tau, "--")],
          "Panda: measured joint torques vs the simulated board with nominal parameters")
    return {
        "robot": "panda (example-robot-data URDF, nominal parameters, no friction)",
        "states": int(len(t)),
        "words_differing_from_golden_model": int(np.count_nonzero(
            result.tau_words != golden.tau_words)),
        "rms_error_vs_measured_nm": rms.tolist(),
    }


def main(argv=None):
    """Run the demo; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.host.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="build/demo", help="output folder (build/demo)")
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="trajectory duration, s (default 3)")
    parser.add_argument("--rate", type=int, default=1000, help="sampling rate, Hz (1000)")
    parser.add_argument("--panda-every", type=int, default=10,
                        help="use every Nth sample of the measured Panda run (10)")
    parser.add_argument("--simulator", choices=("verilator", "icarus"), default=None,
                        help="HDL simulator (default: $SIM, else Verilator)")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.rate <= 0 or args.panda_every <= 0:
        parser.error("--seconds, --rate and --panda-every must be positive")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def log(message):
        print(message, flush=True)

    summary = {"ur5": run_ur5(out, args.seconds, args.rate, args.simulator, log)}
    from linkdyn.host.identification.data import DataError, dataset_path
    try:
        dataset = dataset_path("panda-gaz2019")
    except DataError as error:  # the data set is optional: it lives outside the project
        dataset = None
        log(f"Panda part skipped: {error}")
    if dataset is not None:
        summary["panda"] = run_panda(out, dataset, args.panda_every, args.simulator, log)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    ur5 = summary["ur5"]
    log(f"UR5: board vs golden model: {ur5['words_differing_from_golden_model']} words differ; "
        f"max |board - float| = {ur5['max_error_vs_float_nm']:.2e} N·m; "
        f"max |board - Pinocchio| = {ur5['max_error_vs_pinocchio_nm']:.2e} N·m")
    log(f"round trip per control cycle (simulated board): "
        f"{ur5['round_trip_per_cycle_s']['median'] * 1e3:.2f} ms median")
    if "panda" in summary:
        rms = ", ".join(f"{v:.2f}" for v in summary["panda"]["rms_error_vs_measured_nm"])
        log(f"Panda: RMS |board - measured| per joint = [{rms}] N·m")
    log(f"wrote {os.fspath(out)}/summary.json, ur5_torques.csv, ur5_torques.png")
    differing = sum(part["words_differing_from_golden_model"] for part in summary.values())
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
