"""Command line of the float model: ``python -m linkdyn.model {torques,info} ...``.

``torques`` computes the inverse dynamics (:func:`linkdyn.model.rnea`) of every row of a CSV
file of joint states; ``info`` prints a robot's DH table and dynamic parameters.

Examples
--------
::

    python -m linkdyn.model torques --robot ur5 --input states.csv --output tau.csv
    python -m linkdyn.model torques --robot my_arm.urdf --tip wrist_3_link --input s.csv \\
        --output tau.csv --no-friction
    python -m linkdyn.model info --robot puma560

Input CSV: a header row, then one state per row. Columns ``q1..qn, qd1..qdn, qdd1..qddn``
(rad, rad/s, rad/s^2), optionally preceded by a time column ``t`` (s). Output CSV: ``t`` (copied
from the input, when it has one) and ``tau1..taun`` (N·m), written with 17 significant digits.
Errors (missing file, wrong columns for the robot, non-numeric values) are reported on stderr
with exit status 2.
"""

from __future__ import annotations

import argparse
import csv
import sys

import numpy as np

from .library import BUILTIN_ROBOTS, load_robot, robot_source
from .rnea import rnea
from .robot import PARAMETER_NAMES, RobotDescriptionError
from .statefile import StateFileError, read_states

PROG = "python -m linkdyn.model"


class CommandError(Exception):
    """An error in the user's input: reported on stderr without a traceback, exit status 2."""


def write_torques(path, t, tau):
    """Write ``[t,] tau1..taun`` (s, N·m) to a CSV file with 17 significant digits."""
    n = tau.shape[-1]
    header = (["t"] if t is not None else []) + [f"tau{i}" for i in range(1, n + 1)]
    columns = tau if t is None else np.column_stack([t, tau])
    try:
        with open(path, "w", newline="", encoding="utf-8") as file:
            writer = csv.writer(file)
            writer.writerow(header)
            writer.writerows([[f"{v:.17g}" for v in row] for row in columns])
    except OSError as error:
        raise CommandError(f"cannot write output file {path!r}: {error}") from None


def _load(args):
    try:
        return load_robot(args.robot, tip=args.tip)
    except FileNotFoundError as error:
        raise CommandError(str(error)) from None
    except (RobotDescriptionError, NotImplementedError) as error:
        raise CommandError(str(error)) from None


def command_torques(args):
    """Compute ``tau = rnea(robot, q, qd, qdd)`` for every row of the input CSV."""
    robot = _load(args)
    if args.no_friction:
        robot = robot.without_friction()
    try:
        t, q, qd, qdd = read_states(args.input, robot.n)
    except StateFileError as error:
        raise CommandError(str(error)) from None
    if not len(q):
        raise CommandError(f"input file {args.input!r} has no states, only a header")
    tau = rnea(robot, q, qd, qdd)
    write_torques(args.output, t, tau)
    return 0


def _format(value, width=11):
    # Always one blank before the number, so that wide values never run together.
    return " " + f"{value:>{width - 1}.6g}"


def describe(robot, source=""):
    """Return a text description of ``robot``: DH table, inertial parameters, friction, limits."""
    plain = robot.is_chain and not robot.has_prismatic and not any(
        link.has_mount for link in robot.links)
    if plain:
        lines = [f"robot {robot.name!r}: {robot.n} revolute joints, standard DH", ""]
    else:
        prismatic = sum(link.joint_type == "prismatic" for link in robot.links)
        shape = "a chain" if robot.is_chain else f"a tree with {robot.parents.count(-1)} roots"
        lines = [f"robot {robot.name!r}: {robot.n} joints ({prismatic} prismatic), standard DH, "
                 f"{shape}", ""]
    if source:
        lines += ["source:"] + [f"  {line}" for line in source.splitlines()] + [""]
    lines.append(f"gravity (world frame): {robot.gravity.tolist()} m/s^2")
    if not np.array_equal(robot.base, np.eye(4)):
        lines.append(f"base (world -> DH frame 0): {robot.base.tolist()}")
    if not np.array_equal(robot.tool, np.eye(4)):
        lines.append(f"tool (DH frame n -> tool): {robot.tool.tolist()}")
    lines += ["", "DH table (theta = q + offset):",
              f"{'j':>2} {'link':<16}{'a [m]':>11}{'d [m]':>11}{'alpha [rad]':>12}"
              f"{'offset':>11}{'q_min':>11}{'q_max':>11}{'qd_max':>11}{'tau_max':>11}"]
    for j, link in enumerate(robot.links, 1):
        limits = link.limits
        lim = ["-" if v is None else f"{v:.6g}"
               for v in (limits.q_min, limits.q_max, limits.qd_max, limits.tau_max)]
        lines.append(f"{j:>2} {link.name:<16}{_format(link.a)}{_format(link.d)}"
                     f"{_format(link.alpha, 12)}{_format(link.offset)}"
                     + "".join(f"{v:>11}" for v in lim))
    if not plain:
        wide = max(16, *(len(link.name) + 1 for link in robot.links))
        joint_wide = max(16, *(len(name) + 1 for name in robot.joint_names))
        lines += ["", "tree (parent: its j, 0 the base; prismatic: theta = offset, d = q + d; "
                      "mount: DH step a, d, alpha, theta from the parent's frame):",
                  f"{'j':>2} {'link':<{wide}}{'parent':>7}  {'type':<11}{'joint':<{joint_wide}}"
                  f"{'mount a':>11}{'d':>11}{'alpha':>12}{'theta':>11}"]
        for j, (link, parent, joint) in enumerate(zip(robot.links, robot.parents,
                                                      robot.joint_names), 1):
            mount = ("".join(_format(v, w) for v, w in zip(link.mount, (11, 11, 12, 11)))
                     if link.has_mount else "")
            lines.append(f"{j:>2} {link.name:<{wide}}{parent + 1:>7}  {link.joint_type:<11}"
                         f"{joint:<{joint_wide}}{mount}".rstrip())
    lines += ["", "mass [kg], centre of mass [m] in DH frame i:",
              f"{'j':>2} {'link':<16}{'mass':>11}{'c_x':>11}{'c_y':>11}{'c_z':>11}"]
    for j, link in enumerate(robot.links, 1):
        lines.append(f"{j:>2} {link.name:<16}{_format(link.mass)}"
                     + "".join(_format(v) for v in link.com))
    lines += ["", "inertial parameters, eq. (11) (inertia about the origin of DH frame i; "
                  "kg, kg m, kg m^2):",
              f"{'j':>2}" + "".join(f"{name:>13}" for name in PARAMETER_NAMES)]
    for j, link in enumerate(robot.links, 1):
        lines.append(f"{j:>2}" + "".join(_format(v, 13) for v in link.parameters()))
    lines += ["", "friction, eq. (20): F_c atan(k qd) + F_v qd + F_o:",
              f"{'j':>2} {'F_c [N m]':>11}{'F_v':>11}{'F_o [N m]':>11}{'k [s/rad]':>11}"]
    for j, link in enumerate(robot.links, 1):
        f = link.friction
        lines.append(f"{j:>2} {_format(f.coulomb)}{_format(f.viscous)}{_format(f.offset)}"
                     f"{_format(f.steepness)}")
    return "\n".join(lines)


def command_info(args):
    """Print the robot's DH table and parameters."""
    robot = _load(args)
    source = ""
    if not str(args.robot).lower().endswith(".urdf"):
        try:
            source = robot_source(args.robot)
        except (OSError, RobotDescriptionError):
            source = ""
    print(describe(robot, source))
    return 0


def build_parser():
    """Return the :class:`argparse.ArgumentParser` of the command line."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Float inverse dynamics of a robot arm (LinkDyn model).")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    robot_help = (f"built-in robot ({', '.join(BUILTIN_ROBOTS)}), robot file (.json) or "
                  f"URDF (.urdf)")

    torques = commands.add_parser(
        "torques", help="joint torques of the states in a CSV file",
        description="Compute tau = rnea(q, qd, qdd) for every row of a CSV file. Input "
                    "columns: [t,] q1..qn, qd1..qdn, qdd1..qddn (rad, rad/s, rad/s^2; header "
                    "required). Output columns: [t,] tau1..taun (N m).")
    torques.add_argument("--robot", required=True, help=robot_help)
    torques.add_argument("--input", required=True, metavar="CSV", help="joint states")
    torques.add_argument("--output", required=True, metavar="CSV", help="joint torques")
    torques.add_argument("--tip", metavar="LINK", help="last link of the chain")
    torques.add_argument("--no-friction", action="store_true",
                         help="leave out joint friction (eq. 20)")
    torques.set_defaults(run=command_torques)

    info = commands.add_parser("info", help="print the DH table and the dynamic parameters")
    info.add_argument("--robot", required=True, help=robot_help)
    info.add_argument("--tip", metavar="LINK", help="last link of the chain")
    info.set_defaults(run=command_info)
    return parser


def main(argv=None):
    """Run the command line; return the exit status (0, or 2 on an input error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except CommandError as error:
        print(f"{PROG} {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
