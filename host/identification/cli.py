"""Command line: ``linkdyn identify`` and ``linkdyn excite``.

``linkdyn identify --robot ROBOT --data PATH --out DIR`` identifies a robot from one measured run
(:func:`~.pipeline.identify`) and writes ``DIR/summary.json``, ``DIR/identified_robot.json`` (a
robot file for :func:`linkdyn.model.load_robot`) and the validation plots.

``linkdyn excite --robot ROBOT --out FILE.csv`` optimises a Fourier excitation trajectory
(:func:`~.excitation.optimise_excitation`) and writes it sampled (``t, q, qd, qdd``), with
``FILE.json`` (coefficients, criterion before and after, constraint check) and ``FILE.png``.

Both are thin layers over the library; user errors become :class:`linkdyn.host.cli.CommandError`
(exit status 2, one line, no traceback).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["register", "run_identify", "run_excite", "parse_box"]


def _error(message):
    from linkdyn.host.cli import CommandError
    return CommandError(message)


def _load_robot(name, tip):
    from linkdyn.model import RobotDescriptionError, load_robot
    try:
        return load_robot(name, tip=tip)
    except (RobotDescriptionError, FileNotFoundError, NotImplementedError, OSError) as error:
        raise _error(f"cannot load robot {name!r}: {error}") from None


def _positive(kind):
    def parse(text):
        import argparse
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number, not {text!r}")
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"expected a positive number, not {text!r}")
        return value
    return parse


def parse_box(text):
    """Parse ``FRAME:AXIS:LOW:HIGH`` (e.g. ``6:z:0.25:inf``) into ``(frame, axis, low, high)``.

    Raises
    ------
    ValueError
        With a message saying what was expected.
    """
    parts = text.split(":")
    if len(parts) != 4:
        raise ValueError(f"box {text!r} must be FRAME:AXIS:LOW:HIGH, e.g. 6:z:0.25:inf")
    frame, axis, low, high = parts
    try:
        frame = int(frame)
    except ValueError:
        raise ValueError(f"box {text!r}: the frame must be a DH frame number, not "
                         f"{frame!r}") from None
    if axis.lower() not in ("x", "y", "z"):
        raise ValueError(f"box {text!r}: the axis must be x, y or z, not {axis!r}")
    try:
        low = float(low) if low else -math.inf
        high = float(high) if high else math.inf
    except ValueError:
        raise ValueError(f"box {text!r}: LOW and HIGH must be numbers in m (or inf)") from None
    if math.isnan(low) or math.isnan(high) or low >= high:
        raise ValueError(f"box {text!r}: LOW must be below HIGH")
    return frame, "xyz".index(axis.lower()), low, high


def _vector(text, n, what):
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise _error(f"{what} must be {n} comma-separated numbers, not {text!r}") from None
    if len(values) != n or not all(math.isfinite(v) for v in values):
        raise _error(f"{what} must be {n} comma-separated finite numbers, not {text!r}")
    return np.array(values)


def register(subparsers):
    """Add the ``identify`` and ``excite`` subcommands."""
    identify = subparsers.add_parser(
        "identify", help="identify dynamic parameters from a measured run",
        description="Identify the dynamic parameters of a robot from measured joint positions, "
                    "velocities and torques (paper Sect. 2.5, eq. 25): base parameters, least "
                    "squares, physically consistent SDP, validation on held-out data.")
    identify.add_argument("--robot", required=True,
                          help="built-in robot name, robot file (.json) or URDF file")
    identify.add_argument("--tip", help="last link of the chain (URDF) or where to cut it")
    identify.add_argument("--data", required=True,
                          help="measurements: CSV file (t, q1..qn, qd1..qdn[, qdd1..qddn], "
                               "tau1..taun), a panda-gaz2019-layout folder or a data-set name")
    identify.add_argument("--out", required=True, help="output folder")
    identify.add_argument("--train-fraction", type=float, default=0.7,
                          help="share of the run (from its start) used for the fit "
                               "(default 0.7)")
    identify.add_argument("--steepness", type=_positive(float),
                          help="friction atan steepness k in s/rad (default: 1-D search)")
    identify.add_argument("--cutoff", type=float, default=10.0,
                          help="zero-phase low-pass cut-off in Hz, 0 for none (default 10)")
    identify.add_argument("--accelerations", default="auto",
                          choices=("auto", "trajectory", "differentiate", "measured"),
                          help="source of the accelerations (default: measured if recorded, "
                               "else the known trajectory, else filtered differentiation)")
    identify.add_argument("--decimate", type=_positive(int), default=1,
                          help="keep every N-th sample after filtering (default 1)")
    identify.add_argument("--regularisation", type=float, default=1e-4,
                          help="pull of the undetermined directions towards the nominal "
                               "parameters (default 1e-4)")
    identify.add_argument("--no-plots", action="store_true", help="write no PNG files")
    identify.add_argument("--quiet", action="store_true", help="print no progress")
    identify.set_defaults(func=run_identify)

    excite = subparsers.add_parser(
        "excite", help="optimise a Fourier excitation trajectory",
        description="Optimise the Fourier coefficients of an excitation trajectory (paper "
                    "eq. 23-24): d-optimality of the base regressor under joint and Cartesian "
                    "limits; fade-in and fade-out of one period each.")
    excite.add_argument("--robot", required=True,
                        help="built-in robot name, robot file (.json) or URDF file")
    excite.add_argument("--tip", help="last link of the chain (URDF) or where to cut it")
    excite.add_argument("--out", required=True, help="output CSV file (t, q, qd, qdd)")
    excite.add_argument("--harmonics", type=_positive(int), default=5,
                        help="number of harmonics (default 5)")
    excite.add_argument("--period", type=_positive(float), default=10.0,
                        help="period in s (default 10)")
    excite.add_argument("--criterion", default="d-optimality",
                        choices=("d-optimality", "condition"), help="optimisation criterion")
    excite.add_argument("--samples", type=_positive(int), default=100,
                        help="samples of one period in the criterion (default 100)")
    excite.add_argument("--max-iterations", type=_positive(int), default=100,
                        help="SLSQP iterations (default 100)")
    excite.add_argument("--seed", type=int, default=0, help="seed of the random start")
    excite.add_argument("--center", help="centre pose q1,...,qn in rad (default: middle of "
                                         "the joint limits)")
    excite.add_argument("--box", action="append", default=[], metavar="FRAME:AXIS:LOW:HIGH",
                        help="Cartesian limit on a DH frame origin in m, e.g. 6:z:0.25:inf "
                             "(repeatable)")
    excite.add_argument("--qd-max", type=_positive(float),
                        help="velocity limit in rad/s for every joint (default: the robot's)")
    excite.add_argument("--qdd-max", type=_positive(float),
                        help="acceleration limit in rad/s^2 for every joint (default: the "
                             "robot's, else 10)")
    excite.add_argument("--sample-step", type=_positive(float), default=1e-3,
                        help="time step of the CSV and of the constraint check in s "
                             "(default 0.001)")
    excite.add_argument("--quiet", action="store_true", help="show no progress")
    excite.set_defaults(func=run_excite)


def _output_folder(text):
    folder = Path(text)
    if folder.exists() and not folder.is_dir():
        raise _error(f"output {text!r} exists and is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _error(f"cannot create output folder {text!r}: {error}") from None
    return folder


def run_identify(args):
    """Run ``linkdyn identify``; return the exit status."""
    from .data import DataError, load_measurements
    from .pipeline import IdentificationOptions, identify, write_outputs

    clock = time.perf_counter()
    if not 0 < args.train_fraction < 1:
        raise _error(f"--train-fraction must be between 0 and 1, not {args.train_fraction}")
    if not (math.isfinite(args.cutoff) and args.cutoff >= 0):
        raise _error(f"--cutoff must be a frequency >= 0 in Hz, not {args.cutoff}")
    if not (math.isfinite(args.regularisation) and args.regularisation >= 0):
        raise _error(f"--regularisation must be >= 0, not {args.regularisation}")
    robot = _load_robot(args.robot, args.tip)
    folder = _output_folder(args.out)
    say = None if args.quiet else (lambda text: print(f"linkdyn identify: {text}",
                                                      file=sys.stderr))
    start = time.perf_counter()
    try:
        measurements = load_measurements(args.data, n=robot.n)
    except DataError as error:
        raise _error(str(error)) from None
    load_seconds = time.perf_counter() - start
    if measurements.n != robot.n:
        raise _error(f"the data have {measurements.n} joints, robot {robot.name!r} has "
                     f"{robot.n}")
    try:
        options = IdentificationOptions(
            train_fraction=args.train_fraction, steepness=args.steepness,
            cutoff=args.cutoff or None, acceleration=args.accelerations,
            decimate=args.decimate, regularisation=args.regularisation)
        if say:
            say(f"robot {robot.name!r} ({robot.n} joints), data {measurements.name} "
                f"({measurements.count} samples, read in {load_seconds:.2f} s)")
        result = identify(robot, measurements, options, progress=say)
    except (DataError, ValueError) as error:
        raise _error(str(error)) from None
    except np.linalg.LinAlgError as error:
        raise _error(f"the data cannot identify the robot: {error}") from None
    except RuntimeError as error:
        raise _error(str(error)) from None
    extra = {"command": "identify", "robot_argument": args.robot, "tip": args.tip,
             "train_fraction": args.train_fraction, "cutoff_hz": args.cutoff or None,
             "load_seconds": load_seconds}
    paths = write_outputs(result, folder, plots=not args.no_plots, extra=extra)
    summary_path = paths["summary"]
    data = json.loads(summary_path.read_text(encoding="utf-8"))
    data["seconds_total"] = time.perf_counter() - clock
    summary_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    if say:
        say(f"wrote {', '.join(os.fspath(p) for p in paths.values())}")
    return 0


def run_excite(args):
    """Run ``linkdyn excite``; return the exit status."""
    from .data import write_csv
    from .excitation import CartesianBox, ExcitationLimits, optimise_excitation
    from .plots import plot_trajectory

    robot = _load_robot(args.robot, args.tip)
    out = Path(args.out)
    if out.suffix.lower() != ".csv":
        raise _error(f"--out must name a .csv file, not {args.out!r}")
    if out.exists() and out.is_dir():
        raise _error(f"--out {args.out!r} is a folder")
    if not out.parent.is_dir():
        raise _error(f"--out {args.out!r}: folder {os.fspath(out.parent)!r} does not exist")
    boxes = {}
    for text in args.box:
        try:
            frame, axis, low, high = parse_box(text)
        except ValueError as error:
            raise _error(str(error)) from None
        if not 1 <= frame <= robot.n:
            raise _error(f"box {text!r}: frame must be 1..{robot.n} for robot {robot.name!r}")
        lower, upper = boxes.setdefault(frame, (np.full(3, -np.inf), np.full(3, np.inf)))
        lower[axis], upper[axis] = max(lower[axis], low), min(upper[axis], high)
    center = None if args.center is None else _vector(args.center, robot.n, "--center")
    try:
        limits = ExcitationLimits.from_robot(
            robot, boxes=tuple(CartesianBox(f, lo, hi) for f, (lo, hi) in boxes.items()),
            qd_max=args.qd_max, qdd_max=args.qdd_max)
        result = optimise_excitation(
            robot, harmonics=args.harmonics, period=args.period, limits=limits,
            criterion=args.criterion, samples=args.samples, max_iterations=args.max_iterations,
            seed=args.seed, center=center, check_dt=args.sample_step,
            progress=not args.quiet)
    except ValueError as error:
        raise _error(str(error)) from None
    trajectory = result.trajectory
    t = trajectory.sample_times(args.sample_step)
    q, qd, qdd = trajectory.evaluate(t)
    write_csv(out, t, q, qd, qdd)
    fourier = trajectory.fourier
    summary = {
        "format": "linkdyn-excitation", "version": 1, "robot": robot.name,
        "robot_argument": args.robot, "tip": args.tip, "criterion": result.criterion,
        "criterion_initial": result.initial_value, "criterion_final": result.value,
        "condition_initial": result.initial_condition, "condition_final": result.condition,
        "base_parameter_count": result.base_parameter_count,
        "harmonics": fourier.harmonics, "period_s": fourier.period,
        "omega_f_rad_s": fourier.omega_f, "fade_s": trajectory.fade,
        "duration_s": trajectory.duration, "excitation_interval_s": list(
            trajectory.excitation_interval),
        "q0": fourier.q0.tolist(), "a": fourier.a.tolist(), "b": fourier.b.tolist(),
        "initial": {"q0": result.initial.fourier.q0.tolist(),
                    "a": result.initial.fourier.a.tolist(),
                    "b": result.initial.fourier.b.tolist()},
        "limits": {"q_min": limits.q_min.tolist(), "q_max": limits.q_max.tolist(),
                   "qd_max": limits.qd_max.tolist(), "qdd_max": limits.qdd_max.tolist(),
                   "boxes": [{"frame": b.frame, "lower": _json_bounds(b.lower),
                              "upper": _json_bounds(b.upper)} for b in limits.boxes]},
        "check": result.check.as_dict(), "amplitude_scale": result.amplitude_scale,
        "iterations": result.iterations, "optimiser_success": result.success,
        "optimiser_message": result.message, "seconds": result.seconds,
        "seed": args.seed, "samples_per_period": args.samples, "csv": out.name,
    }
    plot = plot_trajectory(out.with_suffix(".png"), t, q, qd, qdd,
                           limits=(limits.q_min, limits.q_max, limits.qd_max, limits.qdd_max),
                           interval=trajectory.excitation_interval,
                           title=f"{robot.name}: excitation, {result.criterion} "
                                 f"{result.initial_value:.4g} -> {result.value:.4g}")
    summary["plot"] = plot.name
    out.with_suffix(".json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if not args.quiet:
        print(f"linkdyn excite: {result.criterion} {result.initial_value:.6g} -> "
              f"{result.value:.6g} in {result.iterations} iterations ({result.seconds:.1f} s); "
              f"check at {args.sample_step * 1e3:g} ms: {'ok' if result.check.ok else 'FAILED'}; "
              f"wrote {out}, {out.with_suffix('.json')}, {plot}", file=sys.stderr)
    return 0 if result.check.ok else 1


def _json_bounds(values):
    return [None if not math.isfinite(v) else float(v) for v in values]
