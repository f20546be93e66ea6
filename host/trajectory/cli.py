"""``linkdyn trajectory``: figure-eight tracking and path retiming from the command line.

::

    linkdyn trajectory eight --robot ROBOT --ik {fd,dls,jinv,jt} [--gamma G] [--alpha A]
                             [--size M] [--period S] [--rate HZ] [--tip LINK] --out FILE.csv
    linkdyn trajectory retime --robot ROBOT --path FILE.csv [--jerk-limit J] --out FILE.csv

Both write ``FILE.csv`` (``t, q1..qn, qd1..qdn, qdd1..qddn``, SI units), ``FILE.json`` (summary)
and ``FILE_path.png``, ``FILE_joints.png``; the library API is
:mod:`linkdyn.host.trajectory.pipeline`.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from linkdyn.host.cli import CommandError

__all__ = ["register"]


def _check_positive(args, *names):
    for name in names:
        value = getattr(args, name.replace("-", "_"))
        if value is not None and not (math.isfinite(value) and value > 0):
            raise CommandError(f"--{name} must be a positive number, not {value!r}")


def register(subparsers):
    """Add the ``trajectory`` command (``eight``, ``retime``) to the ``linkdyn`` parser."""
    parser = subparsers.add_parser(
        "trajectory", help="Cartesian figure-eight tracking and time-optimal retiming",
        description="Generate joint trajectories: track a Cartesian figure-eight with an IK "
                    "mapping (virtual forward dynamics, Jacobian inverse/transpose or damped least squares), or retime a joint path time-optimally (toppra) or with "
                    "a jerk limit (online jerk-limited path following). Output: CSV (t, q, qd, qdd), JSON summary "
                    "and PNG plots.")
    commands = parser.add_subparsers(dest="trajectory_command", metavar="SUBCOMMAND",
                                     required=True)

    eight = commands.add_parser(
        "eight", help="track a Lissajous figure-eight with an IK mapping",
        description="Track a figure-eight (source paper Sect. 4.4) in the x-y plane of the tool "
                    "at a well-conditioned start configuration, with one of the mappings of "
                    "virtual forward dynamics, damped least squares, Jacobian inverse or transpose, and write q, qd, qdd at the control rate.")
    _robot_arguments(eight)
    eight.add_argument("--ik", required=True, choices=("fd", "dls", "jinv", "jt"),
                       help="mapping: fd = virtual forward dynamics, dls = damped least "
                            "squares, jinv = Jacobian inverse, jt = Jacobian transpose")
    eight.add_argument("--gamma", type=float, default=1000.0,
                       help="fd: end-effector mass ratio of the virtual model (default 1000)")
    eight.add_argument("--alpha", type=float, default=0.01,
                       help="dls: damping (default 0.01)")
    eight.add_argument("--size", type=float, default=0.3,
                       help="width of the eight, m (default 0.3)")
    eight.add_argument("--period", type=float, default=4.0,
                       help="period of one eight, s (default 4)")
    eight.add_argument("--cycles", type=int, default=1, help="number of eights (default 1)")
    eight.add_argument("--rate", type=float, default=1000.0,
                       help="control rate, Hz (default 1000)")
    eight.add_argument("--centre", type=float, nargs=3, metavar=("X", "Y", "Z"),
                       help="centre of the eight in the world frame, m (default: the tool "
                            "position at the start configuration)")
    eight.add_argument("--q0", type=float, nargs="+", metavar="Q",
                       help="start configuration, rad (default: a well-conditioned one)")
    eight.add_argument("--qdd-max", type=float,
                       help="joint acceleration limit for every joint, rad/s^2")
    eight.add_argument("--no-limits", action="store_true",
                       help="do not apply the joint limits while tracking")
    eight.add_argument("--out", required=True, help="output CSV file")
    eight.add_argument("--no-plots", action="store_true", help="do not write the PNG plots")
    eight.set_defaults(func=_eight)

    retime = commands.add_parser(
        "retime", help="retime a joint path time-optimally or jerk-limited",
        description="Keep the geometric joint path of a trajectory CSV and give it a new time "
                    "law: time-optimal under velocity, acceleration and torque limits (toppra; "
                    "checked against an independent linear program) or, with --jerk-limit, the "
                    "online jerk-limited method (path jerk as input, continuability tests).")
    _robot_arguments(retime)
    retime.add_argument("--path", required=True, help="input trajectory CSV (t, q.., qd.., qdd..)")
    retime.add_argument("--jerk-limit", type=float,
                        help="joint jerk limit for every joint, rad/s^3")
    retime.add_argument("--qdd-max", type=float,
                        help="joint acceleration limit for every joint, rad/s^2 (default: the "
                             "robot's, if any)")
    retime.add_argument("--rate", type=float, default=1000.0,
                        help="output sample rate, Hz (default 1000)")
    retime.add_argument("--margin", type=float, default=0.98,
                        help="generate with the limits times this factor (default 0.98)")
    retime.add_argument("--gridpoints", type=int, default=1000,
                        help="grid segments of the time-optimal solvers (default 1000)")
    retime.add_argument("--step", type=float, default=0.004,
                        help="step of the jerk-limited method, s (default 0.004)")
    retime.add_argument("--out", required=True, help="output CSV file")
    retime.add_argument("--no-plots", action="store_true", help="do not write the PNG plots")
    retime.set_defaults(func=_retime)


def _robot_arguments(parser):
    parser.add_argument("--robot", required=True,
                        help="built-in robot (ur5, ur10, puma560), robot file (.json) or URDF")
    parser.add_argument("--tip", help="last link of the chain (URDF: required when branched)")


def _load(args):
    from linkdyn.model import RobotDescriptionError, load_robot
    try:
        return load_robot(args.robot, tip=args.tip)
    except (RobotDescriptionError, FileNotFoundError, NotImplementedError, TypeError) as error:
        raise CommandError(f"cannot load robot {args.robot!r}: {error}") from None


def _output(text):
    out = Path(text)
    if out.suffix.lower() != ".csv":
        raise CommandError(f"--out must name a .csv file, not {text!r}")
    if out.is_dir():
        raise CommandError(f"--out {text!r} is a directory")
    if not out.parent.is_dir():
        raise CommandError(f"--out {text!r}: folder {str(out.parent)!r} does not exist")
    return out


def _eight(args):
    from .ik import IKError
    from .pipeline import run_figure_eight

    out = _output(args.out)
    _check_positive(args, "gamma", "size", "period", "rate", "qdd-max")
    if not (math.isfinite(args.alpha) and args.alpha >= 0):
        raise CommandError(f"--alpha must be a number >= 0, not {args.alpha!r}")
    robot = _load(args)
    if args.cycles < 1:
        raise CommandError(f"--cycles must be >= 1, not {args.cycles}")
    if args.q0 is not None:
        if len(args.q0) != robot.n:
            raise CommandError(f"--q0 needs {robot.n} joint angles for robot {robot.name!r}, "
                               f"not {len(args.q0)}")
        low, high = robot.q_limits(default=math.inf)
        outside = [i + 1 for i, q in enumerate(args.q0) if not low[i] <= q <= high[i]]
        if outside:
            raise CommandError(f"--q0 is outside the joint range of joint(s) {outside}")
    if args.rate * args.period < 20:
        raise CommandError(f"--rate {args.rate:g} Hz gives fewer than 20 samples per period "
                           f"of {args.period:g} s")
    try:
        result, summary = run_figure_eight(
            robot, args.ik, out=out, gamma=args.gamma, alpha=args.alpha, size=args.size,
            period=args.period, cycles=args.cycles, rate=args.rate, centre=args.centre,
            q0=args.q0, qdd_max=args.qdd_max, respect_limits=not args.no_limits,
            make_plots=not args.no_plots, progress=True)
    except IKError as error:
        raise CommandError(f"the figure-eight cannot be tracked: {error}") from None
    except ValueError as error:
        raise CommandError(str(error)) from None
    print(f"{robot.name}: figure-eight with IK '{args.ik}', {summary['samples']} samples at "
          f"{args.rate:g} Hz, {summary['duration_s']:.3f} s")
    print(f"max tool position error {summary['max_cartesian_error_m']:.3g} m, orientation "
          f"{summary['max_orientation_error_rad']:.3g} rad")
    _print_check(summary["check"])
    if result.diverged:
        print("warning: the state diverged (singular configuration?); the file ends there")
    print(f"wrote {out}, {out.with_suffix('.json')}")
    return 0 if summary["check"]["ok"] else 1


def _retime(args):
    from .export import TrajectoryFileError
    from .pipeline import run_retime
    from .timing import TimingError

    out = _output(args.out)
    _check_positive(args, "jerk-limit", "qdd-max", "rate", "margin", "step")
    robot = _load(args)
    source = Path(args.path)
    if not source.is_file():
        raise CommandError(f"--path {os.fspath(source)!r} does not exist")
    if source.resolve() == out.resolve():
        raise CommandError("--out must differ from --path")
    if args.gridpoints < 10:
        raise CommandError(f"--gridpoints must be >= 10, not {args.gridpoints}")
    if args.margin > 1:
        raise CommandError(f"--margin must be in (0, 1], not {args.margin:g}")
    if args.step > 0.1:
        raise CommandError(f"--step must be at most 0.1 s, not {args.step:g}")
    try:
        summary = run_retime(robot, source, out=out, jerk_limit=args.jerk_limit,
                             qdd_max=args.qdd_max, rate=args.rate, margin=args.margin,
                             gridpoints=args.gridpoints, step=args.step,
                             make_plots=not args.no_plots, progress=True)
    except TrajectoryFileError as error:
        raise CommandError(str(error)) from None
    except TimingError as error:
        raise CommandError(f"no admissible time law: {error}") from None
    except ValueError as error:
        raise CommandError(str(error)) from None
    optimal = summary["time_optimal_duration_s"]
    print(f"{robot.name}: {summary['method']}: {summary['duration_s']:.4f} s "
          f"({summary['samples']} samples at {args.rate:g} Hz; input "
          f"{summary['source_duration_s']:.3f} s)")
    print(f"time-optimal duration: toppra {optimal['toppra']:.4f} s, linear program "
          f"{optimal['linear_program']:.4f} s "
          f"(difference {100 * optimal['relative_difference']:.3f} %)")
    _print_check(summary["check"])
    print(f"wrote {out}, {out.with_suffix('.json')}")
    return 0 if summary["check"]["ok"] else 1


def _print_check(check):
    """Print the independent check's peak/limit ratios (exit status 1 if one exceeds 1)."""
    ratios = ", ".join(f"{name} {'n/a' if ratio is None else format(ratio, '.3f')}"
                       for name, ratio in check["ratios"].items())
    print(f"limit check, peak/limit (finite differences of the CSV): {ratios}  "
          + ("ok" if check["ok"] else "VIOLATED"))
