"""``linkdyn info|load|torques|status|sim-board``: the board from the command line.

::

    linkdyn sim-board --nodes 6 [--chain fake | --controllers [--local-loop] | --boards 6 | --policy pipelined [--banks 2]]
        [--robot ur5]
                      [--port /tmp/linkdyn0]
    linkdyn info    --port PORT
    linkdyn load    --port PORT --robot ROBOT [--tip LINK]
    linkdyn torques --port PORT --input states.csv --output tau.csv [--robot ROBOT] [--plot tau.png]
    linkdyn status  --port PORT

``PORT`` is a serial device (``/dev/ttyUSB0``), a pseudo-terminal (what ``sim-board`` prints)
or a pyserial URL; ``--baudrate`` sets the line rate (default 3 Mbaud). The library API is
:class:`linkdyn.host.Board` and :class:`linkdyn.sim.SimulatedBoard`.

``torques`` reads ``[t,] q1..qn, qd1..qdn, qdd1..qddn`` (rad, rad/s, rad/s^2) and writes
``[t,] tau1..taun, overflow`` (N·m; ``overflow`` is the board's flag word, bit i-1 for joint i).
If the board saturated any torque, the rows are still written with their flags, a warning
names them, and the exit status is 1.

A branched robot (a URDF without ``--tip``, ``--robot baxter``: example-robot-data's Baxter)
is a tree of nodes (docs/trees.md): ``sim-board --robot`` builds the board with the robot's
topology, ``load`` loads it onto a board of the same topology (INFO's parents; another
topology is refused, naming the node), and ``torques --robot`` reads and writes one column per
joint of the robot (its mount nodes are internal). ``torques`` without ``--robot`` on a tree
board takes one column per node.
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import sys
import threading

import numpy as np

from linkdyn.host.cli import CommandError
from linkdyn.model.microprogram import BANK_COUNTS

__all__ = ["register", "EXIT_SATURATED"]

#: Exit status of ``torques`` when the board saturated some torque.
EXIT_SATURATED = 1


def port_arguments(parser):
    """Add the board-link options (``--port``, ``--baudrate``, ``--timeout``, ``--retries``)."""
    from linkdyn.model.protocol import DEFAULT_BAUDRATE
    parser.add_argument("--port", required=True,
                        help="serial port, pseudo-terminal or pyserial URL of the board")
    parser.add_argument("--baudrate", type=int, default=DEFAULT_BAUDRATE,
                        help=f"line rate, baud (default {DEFAULT_BAUDRATE:,})")
    parser.add_argument("--timeout", type=float, default=None,
                        help="longest silence while a reply is awaited, s (default 1; a "
                             "slow line, such as a simulated board's, is waited for as "
                             "long as its bytes keep coming)")
    parser.add_argument("--retries", type=int, default=3,
                        help="times a request is resent before giving up (default 3)")


def register(subparsers):
    """Add ``info``, ``load``, ``torques``, ``status`` and ``sim-board`` to the parser."""
    robot_help = "built-in robot name, robot file (.json) or URDF (.urdf)"

    info = subparsers.add_parser("info", help="show the board's build information",
                                 description="Ask the board for its build information (INFO) "
                                             "and check it against this host's protocol.")
    port_arguments(info)
    info.set_defaults(func=command_info)

    load = subparsers.add_parser("load", help="load a robot into the board",
                                 description="Encode a robot's constants in the board's number "
                                             "format, load them (LOAD_ROBOT) and read them "
                                             "back.")
    port_arguments(load)
    load.add_argument("--robot", required=True, help=robot_help)
    load.add_argument("--tip", metavar="LINK", help="last link of the chain")
    load.add_argument("--no-verify", action="store_true", help="do not read the words back")
    load.set_defaults(func=command_load)

    torques = subparsers.add_parser(
        "torques", help="inverse dynamics of a CSV of joint states on the board",
        description="Stream the joint states of a CSV file to the board (STEP) and write the "
                    "torques it computes, with its overflow flags.")
    port_arguments(torques)
    torques.add_argument("--input", required=True, metavar="CSV",
                         help="states: [t,] q1..qn, qd1..qdn, qdd1..qddn (rad, rad/s, rad/s^2)")
    torques.add_argument("--output", required=True, metavar="CSV",
                         help="torques: [t,] tau1..taun (N·m), overflow")
    torques.add_argument("--robot", help=robot_help + "; loaded into the board first")
    torques.add_argument("--tip", metavar="LINK", help="last link of the chain (with --robot)")
    torques.add_argument("--plot", metavar="PNG", help="also plot the torques")
    torques.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                         help="show a progress bar (default: for long runs on a terminal)")
    torques.set_defaults(func=command_torques)

    status = subparsers.add_parser("status", help="show the chain's status and the counters",
                                   description="Ask the board for its status (STATUS): busy, "
                                               "overflow flags, cycle counters, error counters.")
    port_arguments(status)
    status.add_argument("--clear", action="store_true",
                        help="then clear the sticky flags and error counters (CLEAR)")
    status.set_defaults(func=command_status)

    sim = subparsers.add_parser(
        "sim-board", help="serve a simulated board on a pseudo-terminal",
        description="Build (cached under build/sim/) and run the board core in an HDL "
                    "simulator, its UART bridged to a pseudo-terminal; print the port and "
                    "serve until interrupted (Ctrl-C).")
    sim.add_argument("--nodes", type=int, default=None,
                     help="number of nodes (default: the robot's nodes, or --boards, else 6)")
    sim.add_argument("--chain", choices=("linkdyn", "fake"), default="linkdyn",
                     help="the chain behind the host link: the LinkDyn chain (default) or the "
                          "FakeChain stand-in of the host-link tests")
    sim.add_argument("--controllers", action="store_true",
                     help="build the board with a joint controller beside every node (the "
                          "CONTROL command; drive it with `linkdyn control`); the joints' "
                          "sensor ports read 0")
    sim.add_argument("--local-loop", action="store_true",
                     help="with --controllers: build the controlled chain with the local loop "
                          "(local updates between chain updates; set the multiple with "
                          "`linkdyn control configure --local-multiple m`)")
    sim.add_argument("--boards", type=int, default=None, metavar="N",
                     help="distribute the chain over N boards, one node each (N = --nodes; "
                          "the default of --nodes): board 0 has the UART, the boards "
                          "are joined by simulated neighbour links")
    sim.add_argument("--policy", choices=("sequential", "pipelined"), default="sequential",
                     help="update policy of the LinkDyn chain (docs/chain.md; with --boards: "
                          "over the links): pipelined builds 4 register banks (or --banks), "
                          "and the host sends BATCH requests; default sequential")
    sim.add_argument("--banks", type=int, choices=BANK_COUNTS[1:], default=None,
                     help="with --policy pipelined: the chain's register banks (default 4; "
                          "as the board build's --banks)")
    sim.add_argument("--link-bitrate", type=float, default=None, metavar="BIT/S",
                     help="with --boards: line rate of the links, a multiple of the "
                          "simulated clock of 1, 2 or 5 (default twice the clock)")
    sim.add_argument("--link-ber", type=float, default=0.0,
                     help="with --boards: bit-error rate of every line (default 0)")
    sim.add_argument("--link-cuts", metavar="HOP:CUT:RESTORE,...", default=None,
                     help="with --boards: cut hop HOP (board HOP to HOP+1) at simulated cycle "
                          "CUT and restore it at RESTORE, e.g. 0:300000:500000")
    sim.add_argument("--robot", help=robot_help + "; loaded once the board runs")
    sim.add_argument("--tip", metavar="LINK", help="last link of the chain (with --robot)")
    sim.add_argument("--baudrate", type=int, default=None,
                     help="line rate of the simulated UART, baud (default 3,000,000)")
    sim.add_argument("--port", metavar="PATH",
                     help="also make PATH a symbolic link to the pseudo-terminal")
    sim.add_argument("--simulator", choices=("verilator", "icarus"),
                     help="HDL simulator (default: $SIM, else Verilator when installed)")
    sim.add_argument("--line", choices=("bytes", "bits"), default="bytes",
                     help="line driver: bytes (fast) or bits (cocotb drives every bit)")
    sim.set_defaults(func=command_sim_board)


# -- helpers -----------------------------------------------------------------------------------

def _robot(name, tip):
    """Load a robot the board can compute: a chain or tree of revolute and prismatic joints
    of at most MAX_NODES nodes."""
    import warnings
    from linkdyn.model import RobotDescriptionError, load_robot
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            robot = load_robot(name, tip=tip)
    except (FileNotFoundError, RobotDescriptionError, NotImplementedError) as error:
        raise CommandError(str(error)) from None
    for warning in caught:      # the URDF importer's notes, one line each
        print(f"warning: {warning.message}", file=sys.stderr)
    from linkdyn.model.protocol import MAX_NODES
    nodes = _node_count(robot)
    if nodes > MAX_NODES:
        raise CommandError(f"robot {robot.name!r} needs {nodes} nodes ({robot.n} joints"
                           + ("" if nodes == robot.n else ", mount nodes included")
                           + f"), a board has at most {MAX_NODES}: choose a part of it with "
                           "--tip LINK")
    return robot


def _open(args):
    from linkdyn.host.board import DEFAULT_TIMEOUT, Board, BoardError
    timeout = DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    try:
        return Board.open(args.port, args.baudrate, timeout=timeout, retries=args.retries)
    except (BoardError, ValueError) as error:
        raise CommandError(str(error)) from None


class _board_errors:
    """Turn board and input errors into :class:`CommandError`."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, error, traceback):
        from linkdyn.host.board import BoardError, SaturationError
        from linkdyn.model import FixedPointRangeError
        if exc_type is None or issubclass(exc_type, SaturationError):
            return False
        if issubclass(exc_type, (BoardError, FixedPointRangeError, ValueError)):
            raise CommandError(str(error)) from None
        return False


# -- commands ----------------------------------------------------------------------------------

def command_info(args):
    """Print the board's build information."""
    with _open(args) as board, _board_errors():
        info = board.info()
        spec = info.spec
        print(info)
        print(f"  node register map: {info.node_map_size} words, frame buffer "
              f"{info.buffer_words} words")
        print(f"  STEP: {spec.step_words()} request words ({spec.step_words(True)} with the "
              f"external wrench), {spec.step_reply_words} reply words; LOAD_ROBOT "
              f"{spec.load_robot_words} words")
        if info.controllers:
            print(f"  joint controllers: CONTROL {spec.control_words} request words, "
                  f"{spec.control_reply_words} reply words ('linkdyn control')")
            if spec.local_loop:
                print("  local loop: local updates between chain updates, LOCAL_MULTIPLE "
                      "control steps per chain update ('linkdyn control configure "
                      "--local-multiple')")
        if info.links is not None:
            print("  " + str(info.links).replace("\n", "\n  "))
    return 0


def _link_cuts(text):
    """``"0:300000:500000,1:..."`` -> ``[(0, 300000, 500000), ...]`` (checked further by
    SimulatedBoard)."""
    cuts = []
    for item in text.split(","):
        fields = item.strip().split(":")
        try:
            if len(fields) != 3:
                raise ValueError
            cuts.append(tuple(int(field) for field in fields))
        except ValueError:
            raise CommandError(f"--link-cuts: each cut is HOP:CUT:RESTORE (three integers, "
                               f"simulated cycles), not {item.strip()!r}") from None
    return cuts


def command_load(args):
    """Load a robot into the board."""
    robot = _robot(args.robot, args.tip)
    with _open(args) as board, _board_errors():
        _load_robot(board, robot, verify=not args.no_verify)
        print(f"loaded {robot.name!r} ({robot.n} joints) into the board on {args.port}"
              + ("" if args.no_verify else ", read back and checked"))
        certificate = board.certificate
    if certificate is not None:
        types = certificate.box.get("joint_types", ("revolute",) * len(certificate.bound_nm))
        bounds = ", ".join(f"{b:.1e} {'N' if kind == 'prismatic' else 'N·m'}"
                           for b, kind in zip(certificate.bound_nm, types))
        print(f"certified fixed-point torque error (default box: q within the joint limits, "
              f"|qd| within the velocity limits, |qdd| <= 10 rad/s^2): <= {bounds} per "
              f"joint, " + ("saturation-free" if certificate.saturation_free
                            else "registers may saturate"))
    return 0


def _load_robot(board, robot, verify=True):
    """Load a robot; print the certificate's warnings as one line each (not as Python's)."""
    import warnings
    from linkdyn.host.board import CertificateWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CertificateWarning)
        board.load_robot(robot, verify=verify)
    for warning in caught:
        if issubclass(warning.category, CertificateWarning):
            print(f"warning: {warning.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename,
                                   warning.lineno)


def command_torques(args):
    """Compute the torques of a CSV of states on the board."""
    from linkdyn.model import FixedPointRangeError
    from linkdyn.model.statefile import StateFileError, read_states
    if args.tip and not args.robot:
        raise CommandError("--tip needs --robot")
    robot = _robot(args.robot, args.tip) if args.robot else None
    for path, what in ((args.output, "output file"), (args.plot, "plot")):
        if path:
            _check_writable(path, what)
    with _open(args) as board, _board_errors():
        n = board.nodes
        if robot is not None and _node_count(robot) != n:
            raise CommandError(f"the robot {robot.name!r} has {robot.n} joints"
                               + ("" if _node_count(robot) == robot.n else
                                  f" on {_node_count(robot)} nodes")
                               + f", the board on {args.port} {n} nodes")
        if robot is not None:
            n = robot.n
        try:
            t, q, qd, qdd = read_states(args.input, n)
        except StateFileError as error:
            hint = ("" if robot is not None else
                    f" (without --robot the columns are the board's {n} nodes, a tree's mount "
                    "nodes included: pass --robot to give the robot's joints)")
            raise CommandError(str(error) + hint) from None
        if not len(q):
            raise CommandError(f"input file {args.input!r} has no states")
        if robot is not None:
            _load_robot(board, robot)
        elif not board.robot_loaded():
            raise CommandError(f"the board on {args.port} has no robot loaded (its constants "
                               "are all zero): run 'linkdyn load' first or pass --robot")
        try:
            result = board.rnea(q, qd, qdd, progress=args.progress)
        except FixedPointRangeError as error:
            if getattr(error, "state", None) is None:
                raise
            raise CommandError(f"input file {args.input!r} state {error.state + 1} (data row "
                               f"{error.state + 1}), column '{error.quantity}{error.joint + 1}'"
                               f": {error.detail}") from None
    flags = (result.overflow.astype(np.int64) << np.arange(n)).sum(axis=1)
    _write_torques(args.output, t, result.tau, flags)
    if args.plot:
        _plot(args.plot, t, result.tau, result.overflow)
    print(f"{len(q)} states -> {args.output} ({result.updates} board updates, "
          f"{result.retries} requests resent)")
    if result.saturated:
        rows = np.nonzero(flags)[0]
        print(f"linkdyn: warning: the board saturated {len(rows)} of {len(q)} states (first: "
              f"row {rows[0] + 1}); their torques are clamped, see the overflow column",
              file=sys.stderr)
        return EXIT_SATURATED
    return 0


def _node_count(robot):
    """Return the nodes a robot needs: its joints, and a mount node per mounted link."""
    if robot.is_chain and not any(link.has_mount for link in robot.links):
        return robot.n
    from linkdyn.model.golden_tree import node_tree
    return node_tree(robot).n


def _check_writable(path, what):
    """Refuse an output path whose folder does not exist or that is a folder, before any work."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise CommandError(f"{what} {path!r} is a folder")
    if not os.path.isdir(folder):
        raise CommandError(f"cannot write {what} {path!r}: the folder {folder!r} does not "
                           "exist")


def _write_torques(path, t, tau, flags):
    n = tau.shape[1]
    header = (["t"] if t is not None else []) + [f"tau{i}" for i in range(1, n + 1)]
    try:
        with open(path, "w", newline="", encoding="utf-8") as file:
            writer = csv.writer(file)
            writer.writerow(header + ["overflow"])
            for k in range(len(tau)):
                row = ([] if t is None else [f"{t[k]:.17g}"]) + [f"{v:.17g}" for v in tau[k]]
                writer.writerow(row + [str(int(flags[k]))])
    except OSError as error:
        raise CommandError(f"cannot write output file {path!r}: {error}") from None


def _plot(path, t, tau, overflow):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    x = np.arange(len(tau)) if t is None else t
    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    for i in range(tau.shape[1]):
        ax.plot(x, tau[:, i], label=f"joint {i + 1}")
    bad = overflow.any(axis=1)
    if bad.any():
        ax.plot(x[bad], np.zeros(int(bad.sum())), "rx", label="saturated")
    ax.set_xlabel("t [s]" if t is not None else "state")
    ax.set_ylabel("tau [N·m]")
    ax.set_title("Joint torques computed by the board")
    ax.grid(True, alpha=0.3)
    ax.legend(ncol=2, fontsize="small")
    try:
        fig.savefig(path, dpi=120)
    except OSError as error:
        raise CommandError(f"cannot write plot {path!r}: {error}") from None
    finally:
        plt.close(fig)


def command_status(args):
    """Print the chain's status and counters."""
    with _open(args) as board, _board_errors():
        status = board.status()
        words = status.words
        n = board.nodes
        print(f"chain: {'busy' if status.busy else 'idle'}, last update "
              f"{'done' if status.done else 'not done'}; updates {words['UPDATE_COUNT']}, "
              f"latency {words['LATENCY_CYCLES']} cycles, interval {words['INTERVAL_CYCLES']} "
              "cycles")
        print(f"overflow (last update): {_joints(words['OVERFLOW'], n)}; since the last "
              f"clear: {_joints(words['OVERFLOW_STICKY'], n)}")
        print(f"frames executed: {words['FRAME_COUNT']}; UART frame errors "
              f"{words['UART_FRAME_ERRORS']}, overflows {words['UART_OVERFLOWS']}")
        errors = {code.name: count for code, count in status.errors.items() if count}
        print("error replies: " + (", ".join(f"{name} {count}" for name, count in
                                             errors.items()) or "none"))
        if args.clear:
            board.clear()
            print("cleared")
    return 0


def _joints(mask, n):
    joints = [str(i + 1) for i in range(n) if mask >> i & 1]
    return "joints " + ", ".join(joints) if joints else "none"


def command_sim_board(args):
    """Serve a simulated board until interrupted."""
    from linkdyn.sim.board import SimulatedBoard, SimulatedBoardError
    from linkdyn.sim.runner import SimulatorMissing
    if args.nodes is None and args.boards is not None:
        args.nodes = args.boards
    robot = _robot(args.robot, args.tip) if args.robot else None
    if robot is not None:
        from linkdyn.model import FixedPointRangeError
        from linkdyn.model.golden import encode_robot
        from linkdyn.model.golden_tree import encode_tree
        nodes = _node_count(robot)
        if args.boards is not None and (nodes != robot.n or not robot.is_chain):
            raise CommandError(f"the robot {robot.name!r} is a tree of nodes; --boards builds a "
                               "chain of boards (one node each): drop --boards, or choose a "
                               "chain with --tip")
        if args.nodes is None:
            args.nodes = nodes
        if nodes != args.nodes:
            raise CommandError(f"the robot {robot.name!r} has {robot.n} joints"
                               + ("" if nodes == robot.n else f" on {nodes} nodes")
                               + f", the board {args.nodes} nodes (--nodes)")
        if nodes != robot.n or not robot.is_chain:
            if args.controllers or args.chain != "linkdyn":
                raise CommandError(f"the robot {robot.name!r} is a tree of nodes: the board "
                                   "is the tree of LinkDyn nodes, without --controllers or "
                                   "--chain fake")
        try:
            encode_robot(robot) if nodes == robot.n and robot.is_chain else encode_tree(robot)
        except FixedPointRangeError as error:
            raise CommandError(str(error)) from None
    if args.nodes is None:
        args.nodes = 6
    if args.port:
        folder = os.path.dirname(os.path.abspath(args.port))
        if not os.path.isdir(folder):
            raise CommandError(f"cannot create the link {args.port!r}: its folder {folder!r} "
                               "does not exist")
        if os.path.exists(args.port) and not os.path.islink(args.port):
            raise CommandError(f"cannot create the link {args.port!r}: a file of that name "
                               "exists (the link would replace only a link)")
    chain = None
    if args.controllers and args.chain != "linkdyn":
        raise CommandError("--controllers builds its own chain (the LinkDyn chain with the "
                           f"controllers); it cannot be combined with --chain {args.chain}")
    if args.local_loop and not args.controllers:
        raise CommandError("--local-loop is built with the joint controllers; give "
                           "--controllers as well")
    if args.policy == "pipelined" and (args.controllers or args.chain != "linkdyn"):
        raise CommandError("--policy pipelined builds the pipelined LinkDyn chain; it cannot "
                           "be combined with --controllers or --chain fake")
    if args.banks is not None and args.policy != "pipelined":
        raise CommandError("--banks needs --policy pipelined (the sequential policy has one "
                           "register bank)")
    links = {}
    if args.boards is not None:
        if args.chain != "linkdyn":
            raise CommandError("--boards builds its own chain (the distributed chain, with "
                               "--controllers a joint controller on every board); it cannot "
                               "be combined with --chain fake")
        links = {"boards": args.boards, "link_ber": args.link_ber}
        if args.link_bitrate is not None:
            links["link_bitrate"] = int(args.link_bitrate)
        if args.link_cuts is not None:
            links["link_cuts"] = _link_cuts(args.link_cuts)
    elif args.link_bitrate is not None or args.link_ber or args.link_cuts is not None:
        raise CommandError("--link-bitrate, --link-ber and --link-cuts need --boards")
    # The chain is made once every option is checked (an unused one warns when collected).
    if args.chain == "fake":
        from linkdyn.gateware.fake_chain import FakeChain
        chain = FakeChain(args.nodes)
    try:
        board = SimulatedBoard(args.nodes, robot, baudrate=args.baudrate, chain=chain,
                               simulator=args.simulator, line=args.line,
                               controllers=args.controllers, local_loop=args.local_loop,
                               **links,
                               **({"policy": "pipelined", "banks": args.banks}
                                  if args.policy == "pipelined" else {}))
    except (TypeError, ValueError) as error:
        raise CommandError(str(error)) from None
    stop = threading.Event()
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, lambda *_: stop.set())}
    link = None
    try:
        kind = ("controlled chain" + (" with the local loop" if args.local_loop else "")
                if args.controllers else "tree of LinkDyn nodes"
                if board.parents is not None else f"{args.chain} chain"
                + (", pipelined" if args.policy == "pipelined" else ""))
        if args.boards is not None:
            kind = f"linkdyn chain distributed over {args.boards} boards" + (
                ", a joint controller on each" if args.controllers else "")
        if args.policy == "pipelined":
            kind += ", pipelined policy" + (f", {args.banks} register banks"
                                            if args.banks is not None else "")
        print(f"building the simulated board ({args.nodes} nodes, {kind}) ...",
              file=sys.stderr, flush=True)
        try:
            board.start()
        except (SimulatedBoardError, SimulatorMissing) as error:
            raise CommandError(str(error)) from None
        # The build information as the host reads it, before the port is announced (the
        # port is opened exclusively).
        from linkdyn.host.board import BoardError
        from linkdyn.host.simulated import open_simulated
        try:
            with open_simulated(board) as client:
                info = client.info()
        except BoardError as error:
            raise CommandError(f"the simulated board does not answer: {error}") from None
        if args.port:
            link = args.port
            if os.path.islink(link):
                os.unlink(link)
            try:
                os.symlink(board.port, link)
            except OSError as error:
                raise CommandError(f"cannot create the link {link!r} to {board.port}: "
                                   f"{error.strerror}") from None
        print(board.port, flush=True)
        print(f"serving {info} on {board.port}"
              + (f" (linked as {link})" if link else "") + "; Ctrl-C stops",
              file=sys.stderr, flush=True)
        # Ctrl-C ends the serving loop like SIGTERM: a flag, not a KeyboardInterrupt raised at
        # an arbitrary point (inside Popen.poll it can leave the Popen's wait lock held, and
        # stopping the simulator would then wait forever).
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, lambda *_: stop.set())
        while not stop.is_set():
            if not board.running:
                raise CommandError("the simulator ended unexpectedly")
            stop.wait(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        board.stop()
        if link and os.path.islink(link):
            os.unlink(link)
    print("simulated board stopped", file=sys.stderr)
    return 0
