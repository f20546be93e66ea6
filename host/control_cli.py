"""``linkdyn control``: the joint controllers of a board (source paper Sect. 3.1, Fig. 7) from the
command line.

::

    linkdyn control --port PORT --robot ur5 configure [--kp 400] [--kd 40,40,40,30,30,30]
                                                      [--set qd_hard_max=3.5] [--period 0.001]
    linkdyn control --port PORT [--robot ur5] hold [--steps 10] [--at current|zero]
    linkdyn control --port PORT [--robot ur5] track --trajectory states.csv --output records.csv
                                                    [--plot records.png]
    linkdyn control --port PORT status
    linkdyn control --port PORT clear [--joint 2]

``--robot`` loads the robot into the board first (``configure`` needs it: the controllers'
ranges and torque limits come from its joint limits, :meth:`ControllerConfig.for_joint`).
Values are SI units (rad, rad/s, N·m, A); joints are numbered from 1. A list option takes one
value for every joint or ``n`` comma-separated values. A joint that faults is reported (exit
status 1), not an error; errors (a value that does not fit its register, a board without
controllers, a bad file) exit with status 2 and a message. The library API is
:mod:`linkdyn.host.board_controller`.

``track`` reads a state file like ``linkdyn torques`` (``[t,] q1..qn, qd1..qdn, qdd1..qddn``,
the references) and writes ``[t,] tau_cmd1..n, i_ref1..n, q1..n, qd1..n, fault1..n`` (N·m, A,
the measured rad and rad/s, the latched fault code; 0 none).
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import fields

import numpy as np

from linkdyn.host.board_cli import (_board_errors, _check_writable, _load_robot, _open, _robot,
                                    port_arguments)
from linkdyn.host.cli import CommandError

__all__ = ["register", "EXIT_FAULT"]

#: Exit status of ``hold`` and ``track`` when a joint reported a fault.
EXIT_FAULT = 1


def register(subparsers):
    """Add ``control`` and its subcommands to the parser."""
    control = subparsers.add_parser(
        "control", help="run the board's joint controllers",
        description="Configure, run and inspect the joint controllers of a board built with "
                    "them (paper Fig. 7): computed-torque feedback, guard, torque limit, "
                    "shut-off. Values in SI units; joints numbered from 1.")
    port_arguments(control)
    control.add_argument("--robot", help="built-in robot name, robot file (.json) or URDF "
                                         "(.urdf); loaded into the board first")
    control.add_argument("--tip", metavar="LINK", help="last link of the chain (with --robot)")
    commands = control.add_subparsers(dest="control_command", metavar="ACTION", required=True)

    configure = commands.add_parser(
        "configure", help="write every joint controller's configuration",
        description="Write the controllers' parameters from the robot's joint limits "
                    "(ControllerConfig.for_joint) with the gains and values given, and read "
                    "them back. Nothing is written if a value does not fit its register.")
    configure.add_argument("--kp", metavar="LIST", help="position gain, 1/s^2 (default 400)")
    configure.add_argument("--kd", metavar="LIST", help="velocity gain, 1/s (default 40)")
    configure.add_argument("--guard-fraction", metavar="LIST",
                           help="guard's small limit as a fraction of the joint's effort limit "
                                "(default 0.04; the paper says 3-5 %%)")
    configure.add_argument("--measured-state", action="store_true",
                           help="feed the model the measured state (default: the reference)")
    configure.add_argument("--set", metavar="NAME=LIST", action="append", default=[],
                           help="any ControllerConfig field (e.g. qd_hard_max=3.5, "
                                "tau_saturation_cycles=100, watchdog_reference=1); repeatable")
    period = configure.add_mutually_exclusive_group()
    period.add_argument("--period", type=float, metavar="SECONDS",
                        help="also run a control step every SECONDS on the board's clock "
                             "(CONTROL_PERIOD; 0: only on request)")
    period.add_argument("--period-cycles", type=int, metavar="CYCLES",
                        help="the same in clock cycles")
    configure.add_argument("--local-multiple", type=int, metavar="M",
                           help="boards built with the local loop: M control steps per chain "
                                "update, the M - 1 between them local updates (LOCAL_MULTIPLE; "
                                "1: every step a chain update)")
    configure.set_defaults(func=command_configure)

    hold = commands.add_parser(
        "hold", help="hold the joints for some control steps and print the records",
        description="Run control steps with the position reference held (the joints' sensor "
                    "positions now, or zero) and zero velocity and acceleration references; "
                    "print the commanded torques and the faults of every step.")
    hold.add_argument("--steps", type=int, default=10, help="control steps (default 10)")
    hold.add_argument("--at", choices=("current", "zero"), default="current",
                      help="position reference: the sensor positions now (default) or zero")
    hold.set_defaults(func=command_hold)

    track = commands.add_parser(
        "track", help="stream a trajectory of references and write the step records",
        description="Stream the references of a state file to the board's controllers "
                    "(CONTROL, several frames in flight) and write every step's record.")
    track.add_argument("--trajectory", required=True, metavar="CSV",
                       help="references: [t,] q1..qn, qd1..qdn, qdd1..qddn (rad, rad/s, "
                            "rad/s^2)")
    track.add_argument("--output", required=True, metavar="CSV",
                       help="records: [t,] tau_cmd1..n (N·m), i_ref1..n (A), q1..n (rad), "
                            "qd1..n (rad/s), fault1..n (code)")
    track.add_argument("--plot", metavar="PNG", help="also plot the commanded torques")
    track.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                       help="show a progress bar (default: for long runs on a terminal)")
    track.set_defaults(func=command_track)

    status = commands.add_parser(
        "status", help="show every joint controller's state and faults",
        description="Read every controller's mode, sensor, last step and fault latch, and the "
                    "control block's controller registers.")
    status.set_defaults(func=command_status)

    clear = commands.add_parser("clear", help="clear latched faults",
                                description="Clear the fault latch and shut-off counters of "
                                            "every joint, or of one.")
    clear.add_argument("--joint", type=int, help="only this joint (1 .. n)")
    clear.set_defaults(func=command_clear)


# -- helpers -----------------------------------------------------------------------------------

def _values(text, n, option, kind=float):
    """Parse ``"v"`` or ``"v1,...,vn"`` into n values; name the option in errors."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        values = [kind(p) for p in parts]
    except ValueError:
        raise CommandError(f"{option} must be a number or {n} comma-separated numbers, not "
                           f"{text!r}") from None
    if len(values) == 1:
        return values * n
    if len(values) != n:
        raise CommandError(f"{option} has {len(values)} values: give one for every joint or "
                           f"{n}, one per joint")
    return values


def _bool(text):
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)


def _configs(robot, args):
    from linkdyn.model.controller import ControllerConfig
    n = robot.n
    per_joint = [dict() for _ in range(n)]
    for name, option in (("kp", "--kp"), ("kd", "--kd"), ("guard_fraction", "--guard-fraction")):
        text = getattr(args, name)
        if text is not None:
            for j, value in enumerate(_values(text, n, option)):
                per_joint[j][name] = value
    kinds = {f.name: f.type for f in fields(ControllerConfig)}
    for item in args.set:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or name not in kinds:
            raise CommandError(f"--set takes NAME=VALUE with NAME a controller field "
                               f"({', '.join(kinds)}), not {item!r}")
        kind = {"float": float, "int": int, "bool": _bool}[kinds[name]]
        for j, value in enumerate(_values(text, n, f"--set {name}", kind)):
            per_joint[j][name] = value
    configs = []
    for j, link in enumerate(robot.links):
        options = per_joint[j]
        if args.measured_state:
            options.setdefault("measured_state", True)
        try:
            configs.append(ControllerConfig.for_joint(link.limits, **options))
        except ValueError as error:
            raise CommandError(f"joint {j + 1} ({link.name}): {error}") from None
    return configs


def _connected(args):
    """Open the board, check its controllers and load ``--robot``; return (board, robot)."""
    robot = _robot(args.robot, args.tip) if args.robot else None
    if args.tip and not args.robot:
        raise CommandError("--tip needs --robot")
    board = _open(args)
    try:
        with _board_errors():
            info = board.info()
            if not info.controllers:
                board.require_controllers()            # raises NoControllersError
            if robot is not None:
                if robot.n != info.nodes:
                    raise CommandError(f"the robot {robot.name!r} has {robot.n} joints, the "
                                       f"board on {args.port} {info.nodes} nodes")
                _load_robot(board, robot)
    except BaseException:
        board.close()
        raise
    return board, robot


def _need_robot(board, args):
    if args.robot is None and not board.robot_loaded():
        raise CommandError(f"the board on {args.port} has no robot loaded (its constants are "
                           "all zero): run 'linkdyn load' first or pass --robot")


def _fault_text(cause_row):
    from linkdyn.host.board_controller import fault_names
    faulted = [f"{j + 1}:{'+'.join(fault_names(c))}" for j, c in enumerate(cause_row) if c]
    return " ".join(faulted) if faulted else "-"


def _report_faults(result, what):
    """Print a warning for the steps whose joints faulted; return the exit status."""
    from linkdyn.host.board_controller import fault_names
    faulted = np.atleast_2d(result.faulted)
    if not faulted.any():
        return 0
    first = int(np.nonzero(faulted.any(axis=1))[0][0])
    cause = np.atleast_2d(result.fault_cause)[first]
    joints = ", ".join(f"joint {j + 1} ({', '.join(fault_names(c))})"
                       for j, c in enumerate(cause) if c)
    print(f"linkdyn: warning: {int(faulted.any(axis=1).sum())} of {len(faulted)} {what} "
          f"report latched faults, first at step {first + 1}: {joints}; the faulted joints "
          "drive zero current until 'linkdyn control clear'", file=sys.stderr)
    return EXIT_FAULT


# -- commands ----------------------------------------------------------------------------------

def command_configure(args):
    """Write every joint controller's configuration."""
    if args.robot is None:
        raise CommandError("configure needs --robot: the controllers' ranges and torque limits "
                           "come from the robot's joint limits")
    board, robot = _connected(args)
    with board, _board_errors():
        configs = _configs(robot, args)
        board.configure_controllers(configs)
        period = None
        if args.period is not None:
            period = board.set_control_period(seconds=args.period)
        elif args.period_cycles is not None:
            period = board.set_control_period(args.period_cycles)
        multiple = None
        if args.local_multiple is not None:
            try:
                multiple = board.set_local_multiple(args.local_multiple)
            except (TypeError, ValueError) as error:
                raise CommandError(f"--local-multiple: {error}") from None
    print(f"configured {robot.n} joint controllers of {robot.name!r} on {args.port}, read "
          "back and checked")
    print(f"{'joint':>5} {'kp 1/s^2':>9} {'kd 1/s':>7} {'tau_max N·m':>11} "
          f"{'guard N·m':>9} {'q range rad':>17} {'qd_hard_max rad/s':>17}  mode")
    for j, c in enumerate(configs):
        mode = ",".join(name for name in ("measured_state", "drive_enable",
                                          "watchdog_reference", "watchdog_message")
                        if getattr(c, name)) or "-"
        print(f"{j + 1:>5} {c.kp:>9.4g} {c.kd:>7.4g} {c.tau_max:>11.4g} {c.guard_small:>9.4g} "
              f"{f'[{c.q_min:.3g}, {c.q_max:.3g}]':>17} {c.qd_hard_max:>17.4g}  {mode}")
    if period is not None:
        print(f"control period: {period} cycles" + (" (steps only on request)" if not period
                                                    else ""))
    if multiple is not None:
        print(f"local multiple: {multiple} control steps per chain update"
              + (f" ({multiple - 1} local updates between chain updates)" if multiple > 1
                 else " (no local updates)"))
    return 0


def command_hold(args):
    """Hold the joints and print the step records."""
    if args.steps < 1:
        raise CommandError(f"--steps must be at least 1, not {args.steps}")
    board, robot = _connected(args)
    with board, _board_errors():
        _need_robot(board, args)
        q = None if args.at == "current" else np.zeros(board.nodes)
        result = board.hold(args.steps, q=q)
    n = result.tau_cmd.shape[1]
    print(f"{'step':>5} " + " ".join(f"{f'tau_cmd{j + 1}':>10}" for j in range(n))
          + "  faults (joint:cause)")
    for k in range(len(result.tau_cmd)):
        print(f"{k + 1:>5} " + " ".join(f"{v:>10.4f}" for v in result.tau_cmd[k])
              + f"  {_fault_text(result.fault_cause[k])}")
    print(f"{len(result.tau_cmd)} control steps, N·m ({result.steps} run on the board, "
          f"{result.retries} frames resent)")
    return _report_faults(result, "steps")


def command_track(args):
    """Stream a trajectory of references and write the records."""
    from linkdyn.model import FixedPointRangeError
    from linkdyn.model.statefile import StateFileError, read_states
    for path, what in ((args.output, "output file"), (args.plot, "plot")):
        if path:
            _check_writable(path, what)
    board, robot = _connected(args)
    with board, _board_errors():
        _need_robot(board, args)
        n = board.nodes
        try:
            t, q, qd, qdd = read_states(args.trajectory, n)
        except StateFileError as error:
            raise CommandError(str(error)) from None
        if not len(q):
            raise CommandError(f"trajectory file {args.trajectory!r} has no states")
        try:
            result = board.control(q, qd, qdd, progress=args.progress)
        except FixedPointRangeError as error:
            if getattr(error, "state", None) is None:
                raise
            raise CommandError(f"trajectory file {args.trajectory!r} state {error.state + 1} "
                               f"(data row {error.state + 1}), column "
                               f"'{error.quantity.removesuffix('_ref')}{error.joint + 1}': "
                               f"{error.detail}") from None
    _write_records(args.output, t, result)
    if args.plot:
        _plot(args.plot, t, result)
    print(f"{len(q)} references -> {args.output} ({result.steps} control steps run on the "
          f"board, {result.retries} frames resent)")
    return _report_faults(result, "steps")


def _write_records(path, t, result):
    n = result.tau_cmd.shape[1]
    header = ([] if t is None else ["t"])
    for name in ("tau_cmd", "i_ref", "q", "qd", "fault"):
        header += [f"{name}{j}" for j in range(1, n + 1)]
    try:
        with open(path, "w", newline="", encoding="utf-8") as file:
            writer = csv.writer(file)
            writer.writerow(header)
            for k in range(len(result.tau_cmd)):
                row = [] if t is None else [f"{t[k]:.17g}"]
                for array in (result.tau_cmd, result.i_ref, result.q, result.qd):
                    row += [f"{v:.17g}" for v in array[k]]
                row += [str(int(c)) for c in result.fault_code[k]]
                writer.writerow(row)
    except OSError as error:
        raise CommandError(f"cannot write output file {path!r}: {error}") from None


def _plot(path, t, result):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tau = result.tau_cmd
    x = np.arange(1, len(tau) + 1) if t is None else t
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True,
                                      layout="constrained", height_ratios=(3, 1.3))
    for j in range(tau.shape[1]):
        top.plot(x, tau[:, j], label=f"joint {j + 1}")
        bottom.step(x, result.fault_code[:, j] + 0.05 * j, where="post")
    top.set_ylabel("tau_cmd [N·m]")
    top.set_title("Commanded joint torques (board's joint controllers)")
    top.grid(True, alpha=0.3)
    top.legend(ncol=3, fontsize="small")
    from linkdyn.model.controller import FAULTS
    bottom.set_ylabel("latched fault")
    bottom.set_xlabel("t [s]" if t is not None else "control step")
    bottom.set_yticks(range(len(FAULTS) + 1),
                      ["none"] + [FAULTS[code][0] for code in sorted(FAULTS)], fontsize="small")
    bottom.grid(True, alpha=0.3)
    try:
        fig.savefig(path, dpi=120)
    except OSError as error:
        raise CommandError(f"cannot write plot {path!r}: {error}") from None
    finally:
        plt.close(fig)


def command_status(args):
    """Print every joint controller's state."""
    board, _ = _connected(args)
    with board, _board_errors():
        state = board.read_controller_state()
        clock = board.info().clock_hz
    period = state.control_period
    rate = f" ({clock / period:,.6g} Hz)" if period and clock else ""
    print(f"control steps {state.control_steps}; period {period} cycles"
          + (rate if period else " (steps only on request)")
          + f"; overruns {state.control_overruns}; last step {state.control_latency_cycles} "
          "cycles")
    if state.local_multiple > 1:
        chain = f" ({clock / period / state.local_multiple:,.6g} Hz)" if period and clock else ""
        print(f"local loop: {state.local_multiple} control steps per chain update{chain}, "
              f"{state.local_multiple - 1} of them local updates")
    ports = any(j.joint_port.present for j in state.joints)
    port_head = f" {'joint port':<27}" if ports else ""
    print(f"{'joint':>5} {'sensor q':>9} {'qd':>8} {'step q':>9} {'qd':>8} {'tau_cmd':>9} "
          f"{'i_ref':>8}  {'mode':<27}{port_head} fault")
    for j in state.joints:
        fault = "-" if not j.faulted else j.fault + (
            f" (causes: {', '.join(j.faults)})" if j.faults != [j.fault] else "")
        port = f" {str(j.joint_port):<27}" if ports else ""
        print(f"{j.joint + 1:>5} {j.sensor_q:>9.4f} {j.sensor_qd:>8.4f} {j.q:>9.4f} "
              f"{j.qd:>8.4f} {j.tau_cmd:>9.4f} {j.i_ref:>8.4f}  "
              f"{','.join(j.mode_bits()) or '-':<27}{port} {fault}")
    if not ports:
        print("joint ports: none in this build (the sensor inputs are not read from drives)")
    print("units: rad, rad/s, N·m, A; " + (f"faulted joints: "
          f"{', '.join(str(j + 1) for j in state.faulted)}" if state.faulted
          else "no latched faults"))
    return 0


def command_clear(args):
    """Clear latched faults."""
    board, _ = _connected(args)
    with board, _board_errors():
        n = board.nodes
        if args.joint is not None and not 1 <= args.joint <= n:
            raise CommandError(f"--joint must be 1 .. {n}, not {args.joint}")
        faults = board.clear_faults(None if args.joint is None else args.joint - 1)
        ports = board.read_joint_ports()
    which = "every joint" if args.joint is None else f"joint {args.joint}"
    left = [str(j + 1) for j in range(n) if faults >> j & 1 or ports[j].fault]
    print(f"cleared the faults of {which}; " + (f"still latched: joints {', '.join(left)}"
                                                 if left else "no latched faults"))
    return 0
