"""The main job (``make demo``): a robot's inverse dynamics streamed through a simulated board.

``python -m linkdyn.host.demo [--out build/demo] [--seconds 3] [--rate 1000]``

1. Starts :class:`linkdyn.sim.SimulatedBoard` (the board's own gateware, UART included, in an
   HDL simulator behind a pseudo-terminal) and opens it with :class:`linkdyn.host.Board` like
   any serial port.
2. Loads the UR5 of example-robot-data (URDF) over the serial port.
3. Streams a smooth Fourier trajectory (paper eq. 23) sampled at ``--rate`` through the board
   and measures the serial round trip of single control cycles. The trajectory is checked
   against the URDF's joint, velocity and effort limits before anything is streamed
   (:func:`check_limits`; a ``--seconds`` too short for them is refused with the joint, the
   quantity and the time that break them).
4. Writes ``OUT/ur5_torques.csv`` (board, golden model, float model and Pinocchio side by side),
   ``OUT/ur5_torques.png`` and ``OUT/summary.json`` (max errors in N·m, words that differ from
   the golden model, round trip per control cycle).
5. If the measured Panda run of the ``panda-gaz2019`` data set is there
   (:func:`linkdyn.host.identification.data.dataset_path`), identifies the Panda's parameters
   from its first 70 % (:func:`linkdyn.host.identification.pipeline.identify`, as ``linkdyn
   identify`` does), then runs the held-out 30 % through a 7-node board twice, with the URDF's
   nominal parameters and with the identified ones (friction included), and compares both with
   the measured torques, as the paper's Fig. 10 does (``OUT/panda_*``,
   ``OUT/panda_identified_robot.json``).

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

__all__ = ["main", "demo_trajectory", "check_limits", "TrajectoryLimitError"]

#: Pinocchio's gravity, m/s^2: the demo's robots use it so that the comparison is exact.
PINOCCHIO_GRAVITY = (0.0, 0.0, -9.81)


class TrajectoryLimitError(ValueError):
    """A trajectory leaves the robot's joint range or exceeds its velocity or effort limits."""


def demo_trajectory(n, seconds, rate, seed=5):
    """Return ``(t, q, qd, qdd)`` of a smooth 5-harmonic Fourier trajectory, shape (K, n).

    The trajectory (paper eq. 23) starts and ends at rest (fade-in and fade-out of one period
    each, paper Fig. 9); the fundamental period is ``seconds / 3``. Harmonic h has an amplitude
    of at most 0.25 / h^2 rad, so that every harmonic contributes about as much acceleration:
    with the default 3 s, the UR5 stays within 82 % of its URDF's velocity limits and 84 % of
    its effort limits (joint 2), accelerations up to about 42 rad/s^2 (:func:`check_limits`).
    """
    from linkdyn.host.identification.fourier import FadedTrajectory, FourierTrajectory

    rng = np.random.default_rng(seed)
    harmonics = 5
    period = seconds / 3
    h = np.arange(1, harmonics + 1)
    a = rng.uniform(-0.25, 0.25, (n, harmonics)) / h ** 2
    b = rng.uniform(-0.25, 0.25, (n, harmonics)) / h ** 2
    q0 = np.resize([0.3, -1.2, 1.0, -0.8, 0.6, 0.2, 0.5], n)
    trajectory = FadedTrajectory(FourierTrajectory(q0, a, b, 2 * np.pi / period), periods=1)
    t = np.arange(int(round(trajectory.duration * rate))) / rate
    return (t, *trajectory.evaluate(t))


def check_limits(robot, t, q, qd, qdd):
    """Check a sampled trajectory against the robot's joint, velocity and effort limits.

    The torques are the float model's, :func:`linkdyn.model.rnea` (friction included when the
    robot has any); a limit that is ``None`` (not given by the robot file) is not checked.

    Parameters
    ----------
    robot : Robot
        The robot; its links' :class:`~linkdyn.model.robot.JointLimits` (from the URDF's
        ``<limit lower upper velocity effort>``).
    t : array_like, shape (K,)
        Times, s.
    q, qd, qdd : array_like, shape (K, n)
        Joint positions (rad), velocities (rad/s), accelerations (rad/s^2).

    Returns
    -------
    dict
        Per quantity (``"position"``, ``"velocity"``, ``"effort"``), the peak use of the limit
        per joint (fraction; position: of the distance from the range's middle to its ends).

    Raises
    ------
    TrajectoryLimitError
        If a sample breaks a limit; the message names the first joint and quantity that does,
        its peak value, the limit and the time of the peak.
    """
    t = np.asarray(t, dtype=float)
    q, qd, qdd = (np.asarray(a, dtype=float) for a in (q, qd, qdd))
    tau = rnea(robot, q, qd, qdd)
    limits = [link.limits for link in robot.links]
    use = {}
    problems = []

    def bound(name, missing):
        return np.array([missing if getattr(lim, name) is None else getattr(lim, name)
                         for lim in limits])

    low, high = bound("q_min", -np.inf), bound("q_max", np.inf)
    middle = np.where(np.isfinite(low) & np.isfinite(high), (low + high) / 2, 0.0)
    half = np.where(np.isfinite(low) & np.isfinite(high), (high - low) / 2, np.inf)
    use["position"] = np.max(np.abs(q - middle), axis=0) / half
    for j in range(robot.n):
        outside = (q[:, j] < low[j]) | (q[:, j] > high[j])
        if outside.any():
            k = int(np.argmax(outside))
            problems.append(f"joint {j + 1} position {q[k, j]:.4g} rad at t = {t[k]:.3f} s is "
                            f"outside the joint range [{low[j]:.4g}, {high[j]:.4g}] rad")
    for quantity, values, name, unit in (("velocity", qd, "qd_max", "rad/s"),
                                         ("effort", tau, "tau_max", "N·m")):
        limit = bound(name, np.inf)
        peak = np.max(np.abs(values), axis=0)
        use[quantity] = peak / limit
        for j in np.nonzero(peak > limit)[0]:
            k = int(np.argmax(np.abs(values[:, j])))
            what = "torque (float model)" if quantity == "effort" else "velocity"
            problems.append(f"joint {j + 1} {what} reaches {values[k, j]:.4g} {unit} at t = "
                            f"{t[k]:.3f} s, the robot's {quantity} limit is {limit[j]:.4g} "
                            f"{unit}")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise TrajectoryLimitError(f"the trajectory breaks the limits of {robot.name}: "
                                   f"{problems[0]}{more} (a slower trajectory lowers "
                                   "velocities and torques)")
    return {quantity: value.tolist() for quantity, value in use.items()}


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


def _plot(path, t, columns, title, limits=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = columns[0][1].shape[1]
    figure, axes = plt.subplots(n, 1, figsize=(9, 1.6 * n + 1), sharex=True)
    for i, axis in enumerate(np.atleast_1d(axes)):
        for label, values, style in columns:
            axis.plot(t, values[:, i], style, label=label, linewidth=1)
        if limits is not None and limits[i] is not None:
            # As text, not as lines: the wrist's torques are small against their limits.
            peak = float(np.max(np.abs(columns[0][1][:, i])))
            axis.text(0.01, 0.92, f"peak |tau| {peak:.3g} N·m = {peak / limits[i]:.0%} of the "
                      f"effort limit {limits[i]:g} N·m", transform=axis.transAxes,
                      fontsize="small", va="top")
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
    limit_use = check_limits(robot, t, q, qd, qdd)        # before anything is streamed
    log(f"UR5: {len(t)} states ({t[-1]:.2f} s at {rate} Hz), within the URDF's limits "
        f"(peak use: velocity {max(limit_use['velocity']):.0%}, effort "
        f"{max(limit_use['effort']):.0%})")
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
        "peak_qdd_rad_s2": float(np.max(np.abs(qdd))),
        "limit_use": {"note": "peak |value| / the URDF's limit per joint (position: of the "
                              "half range around its middle); torques of the float model",
                      **limit_use},
    }
    blocks = [("tau_board", result.tau), ("tau_golden", golden.tau), ("tau_float", float_tau)]
    if pin_tau is not None:
        blocks.append(("tau_pinocchio", pin_tau))
    _write_csv(out / "ur5_torques.csv", t, blocks)
    _plot(out / "ur5_torques.png", t,
          [("board", result.tau, "-"), ("float model", float_tau, "--")]
          + ([("Pinocchio", pin_tau, ":")] if pin_tau is not None else []),
          "UR5 joint torques: simulated LinkDyn board vs float model vs Pinocchio",
          limits=[link.limits.tau_max for link in robot.links])
    return summary


def run_panda(out, dataset, every, simulator, log):
    """Identify the Panda from the measured run, then run its held-out part through a 7-node
    board with the nominal and with the identified parameters; return the summary dict."""
    from linkdyn.host.identification.data import load_measurements
    from linkdyn.host.identification.pipeline import identify
    from linkdyn.host.simulated import open_simulated
    from linkdyn.model import save_robot
    from linkdyn.sim import SimulatedBoard

    nominal = load_reference_robot("panda")
    measured = load_measurements(dataset, nominal.n)
    log(f"Panda: identifying from {len(measured.t)} measured samples ...")
    identification = identify(nominal, measured, progress=lambda text: log(f"  {text}"))
    identified = identification.identified
    save_robot(identified, out / "panda_identified_robot.json",
               source=f"linkdyn.host.demo: identified from {dataset}")
    validation = identification.validation
    index = np.arange(0, len(validation.t), every)
    t, q, qd, qdd = (validation.t[index], validation.q[index], validation.qd[index],
                     validation.qdd[index])
    measured_tau = validation.tau[index]
    log(f"Panda: {len(t)} held-out states (every {every}th validation sample, "
        f"t = {t[0]:.2f} .. {t[-1]:.2f} s) through the board, nominal and identified")
    results = {}
    with SimulatedBoard(nodes=nominal.n, simulator=simulator) as sim, \
            open_simulated(sim) as board:
        for label, robot in (("nominal", nominal), ("identified", identified)):
            board.load_robot(robot)
            results[label] = board.rnea(q, qd, qdd, progress=True)
    parts = {}
    for label, robot in (("nominal", nominal), ("identified", identified)):
        result = results[label]
        golden = rnea_fixed(robot, q, qd, qdd)
        parts[label] = {
            "words_differing_from_golden_model": int(np.count_nonzero(
                result.tau_words != golden.tau_words)),
            "overflow": bool(np.any(result.overflow)),
            "rms_error_vs_measured_nm": np.sqrt(np.mean((result.tau - measured_tau) ** 2,
                                                        axis=0)).tolist(),
            "max_error_vs_float_model_nm": float(np.max(np.abs(
                result.tau - rnea(robot, q, qd, qdd)))),
        }
    _write_csv(out / "panda_torques.csv", t,
               [("tau_measured", measured_tau), ("tau_board_nominal", results["nominal"].tau),
                ("tau_board_identified", results["identified"].tau)])
    _plot(out / "panda_torques.png", t,
          [("measured (low-passed)", measured_tau, "-"),
           ("board, nominal (URDF)", results["nominal"].tau, ":"),
           ("board, identified", results["identified"].tau, "--")],
          "Panda, held-out run: measured vs simulated board\n(URDF nominal and identified "
          "parameters)")
    return {
        "robot": "panda (example-robot-data URDF; identified: physically consistent SDP "
                 "parameters with friction, eq. 20)",
        "data": str(dataset),
        "states": int(len(t)),
        "validation_part": "the last 30 % of the run, held out from the identification",
        "torques_measured": "low-passed as the identification prepares them",
        "friction_steepness_s_per_rad": identification.steepness,
        "physically_consistent": bool(identification.physically_consistent),
        "nominal": parts["nominal"],
        "identified": parts["identified"],
        "words_differing_from_golden_model": parts["nominal"][
            "words_differing_from_golden_model"] + parts["identified"][
            "words_differing_from_golden_model"],
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
                        help="use every Nth sample of the Panda's held-out run (10)")
    parser.add_argument("--simulator", choices=("verilator", "icarus"), default=None,
                        help="HDL simulator (default: $SIM, else Verilator)")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.rate <= 0 or args.panda_every <= 0:
        parser.error("--seconds, --rate and --panda-every must be positive")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def log(message):
        print(message, flush=True)

    try:
        summary = {"ur5": run_ur5(out, args.seconds, args.rate, args.simulator, log)}
    except TrajectoryLimitError as error:
        print(f"linkdyn.host.demo: error: {error}", file=sys.stderr)
        return 2
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
        for label in ("nominal", "identified"):
            rms = ", ".join(f"{v:.2f}"
                            for v in summary["panda"][label]["rms_error_vs_measured_nm"])
            log(f"Panda ({label}): RMS |board - measured| per joint = [{rms}] N·m")
    log(f"wrote {os.fspath(out)}/summary.json, ur5_torques.csv, ur5_torques.png"
        + (", panda_torques.csv, panda_torques.png, panda_identified_robot.json"
           if "panda" in summary else ""))
    differing = sum(part["words_differing_from_golden_model"] for part in summary.values())
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
