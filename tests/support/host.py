"""Helpers of the host-link tests: the simulated board under test and what it must answer, a
software board on a fake serial port, a faulty serial line between the host and a board.

The simulated board runs the real chain (``linkdyn.gateware.chain.LinkDynChain``); the torques
it must answer are ``rnea_fixed`` word for word.
"""

from __future__ import annotations

import os
import select
import threading
import time
import tty

import numpy as np

from linkdyn.sim.fake_chain_model import FakeChainModel
from linkdyn.model import load_robot, rnea_fixed
from linkdyn.model import protocol as P
from linkdyn.model.fixedpoint import signed_word
from linkdyn.model.microprogram import microprogram
from linkdyn.sim.runner import SimulatorMissing, simulator

#: The chain of the simulated board (the ``--chain`` of ``linkdyn sim-board``).
CHAIN = "linkdyn"
NODES = 6
ROBOT = load_robot("ur5")


def simulator_or_none():
    """Return the simulator the tests use, or ``None`` if none is installed."""
    try:
        return simulator(use="board")
    except SimulatorMissing:
        return None


def make_board(**kwargs):
    """Return a (not yet started) simulated board with the chain under test."""
    from linkdyn.sim.board import SimulatedBoard
    return SimulatedBoard(NODES, **kwargs)


def expected(robot, q, qd, qdd, f_ext=None):
    """Return the ``(tau_words, overflow)`` the simulated board must answer (the golden
    model's)."""
    result = rnea_fixed(robot, q, qd, qdd, f_ext=f_ext)
    return result.tau_words, result.overflow


def random_states(count, seed):
    """Joint states inside the UR5's limits: q within the position limits, qd in [-2, 2]
    rad/s, qdd in [-5, 5] rad/s^2."""
    rng = np.random.default_rng(seed)
    low, high = ROBOT.q_limits()
    q = rng.uniform(low, high, (count, NODES))
    return q, rng.uniform(-2, 2, (count, NODES)), rng.uniform(-5, 5, (count, NODES))


class ReferenceSerial:
    """A pyserial-like port whose other end is the protocol's :class:`ReferenceEngine` on a
    :class:`FakeChainModel`: a software board, with faults to order. With ``parents`` the
    board is a tree of nodes and its target the tree's
    :class:`~linkdyn.sim.chain_model.ChainModel` (the golden tree's words); with ``banks`` 2 or
    4 a pipelined chain, :class:`~linkdyn.sim.pipelined_chain_model.PipelinedChainModel` (the
    golden model's words, the BATCH command).

    Faults are given by the index of the request (``write`` calls, one frame each) or reply
    frame they hit, counted from 0 since the port was made.

    Attributes
    ----------
    damage_replies : set of int
        Replies whose 10th byte (or last) is flipped.
    drop_replies : set of int
        Replies that are not delivered.
    damage_requests : set of int
        Requests whose last payload byte is flipped before the board sees them.
    false_sync_replies : set of int
        Replies damaged into a false frame start: the sync byte of a header announcing a
        payload longer than the replies that follow, 9 bytes into the frame.
    mute_after : int or None
        Deliver no reply after this many.
    steps : list of int
        The payload words of every STEP request received, in order (a BATCH of K: K entries,
        each sample's words).
    """

    def __init__(self, n_nodes=6, latency=96, *, clock_hz=12_000_000, baudrate=3_000_000,
                 banks=1, parents=None):
        self.spec = P.ProtocolSpec(n_nodes, clock_hz=clock_hz, baudrate=baudrate, banks=banks,
                                   parents=parents)
        if banks > 1:
            from linkdyn.sim.pipelined_chain_model import PipelinedChainModel
            self.target = PipelinedChainModel(self.spec)
        elif parents is None:
            self.target = FakeChainModel(self.spec, latency)
        else:
            # A tree of nodes: the chain model with the tree's wiring (real dynamics, the
            # words of LinkDynChain(n, parents=...)), an update that ends at once.
            from linkdyn.sim.chain_model import ChainModel
            self.target = ChainModel(self.spec)
        self.engine = P.ReferenceEngine(self.spec, self.target)
        self.timeout = 0.002
        self.port = "reference"
        self.requests = 0
        self.replies = 0
        self.damage_replies = set()
        self.drop_replies = set()
        self.false_sync_replies = set()
        self.damage_requests = set()
        self.mute_after = None
        self.steps = []
        self._out = bytearray()
        self.closed = False

    def write(self, data):
        data = bytearray(data)
        if self.requests in self.damage_requests:
            data[-3] ^= 0x10
        words = (len(data) - P.REQUEST_HEADER_BYTES - P.CRC_BYTES) // 4
        if data[3] == P.Command.STEP:
            self.steps.append(words)
        if data[3] == P.Command.BATCH and words > 1:
            samples = data[P.REQUEST_HEADER_BYTES]
            self.steps += [(words - 1) // max(samples, 1)] * samples
        self.requests += 1
        self._deliver(self.engine.receive(bytes(data)))
        return len(data)

    def _deliver(self, data):
        while data:
            length = int.from_bytes(data[P.REPLY_HEADER_BYTES - 2:P.REPLY_HEADER_BYTES], "little")
            end = P.REPLY_HEADER_BYTES + length + P.CRC_BYTES
            frame, data = bytearray(data[:end]), data[end:]
            index = self.replies
            self.replies += 1
            if index in self.drop_replies or (self.mute_after is not None
                                              and index >= self.mute_after):
                continue
            if index in self.damage_replies:
                frame[min(9, len(frame) - 1)] ^= 0x01
            if index in self.false_sync_replies:
                header = bytes((P.REPLY_SYNC, P.PROTOCOL_VERSION, 0, P.Command.STEP,
                                P.ErrorCode.OK)) + self.spec.max_payload_bytes.to_bytes(2, "little")
                frame[9:9 + len(header)] = header
            self._out += frame

    @property
    def in_waiting(self):
        return len(self._out)

    def read(self, size=1):
        if not self._out:
            self._deliver(self.engine.idle())      # the host waits: the line is idle
        if not self._out:
            time.sleep(self.timeout)
            return b""
        data = bytes(self._out[:size])
        del self._out[:size]
        return data

    def close(self):
        self.closed = True


def fake_chain_tau_words(spec, robot_words, base_words, q, qd, qdd, wrench=None):
    """Return the tau words the FakeChain computes (its documented update):
    ``tau_i = saturate(sum of node i's 9 input words + m_i + p_ddot_in_z_i)``, and the
    overflow flags.

    Parameters
    ----------
    spec : ProtocolSpec
    robot_words : list of dict
        Constants per node (``encode_robot``).
    base_words : dict
        Node 0's forward mailbox (``encode_base_motion``); the other nodes' mailboxes are 0.
    q, qd, qdd : array of int, shape (K, n)
        Input words.
    wrench : array of int, shape (K, n, 6), optional
    """
    q, qd, qdd = (np.asarray(a, dtype=np.int64) for a in (q, qd, qdd))
    total = q + qd + qdd
    if wrench is not None:
        total = total + np.asarray(wrench, dtype=np.int64).sum(axis=-1)
    mass = np.array([signed_word(node["m"]) for node in robot_words], dtype=np.int64)
    p_ddot = np.zeros(spec.n_nodes, dtype=np.int64)
    p_ddot[0] = signed_word(base_words["p_ddot_in_z"])
    total = total + mass + p_ddot
    overflow = (total > (1 << 31) - 1) | (total < -(1 << 31))
    return np.clip(total, -(1 << 31), (1 << 31) - 1), overflow



def words(values, register, fmt=None):
    """Encode an array of floats as words of ``register`` in its format (as the host does)."""
    return microprogram(fmt).registers.encode(register, values)


def tau_values(tau_words, fmt=None):
    """Decode ``tau`` words in the register's format (as the host does), N·m."""
    return microprogram(fmt).registers.decode("tau", tau_words)


class FaultyLine:
    """A pseudo-terminal between the host and a board's port that damages chosen bytes.

    The host opens :attr:`port`; the bytes are passed on both ways by a thread. Arm a fault
    with :meth:`damage_reply` or :meth:`damage_request`: the byte at that offset of the stream
    (counted from the call) is flipped, once.
    """

    def __init__(self, board_port):
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)
        self.port = os.ttyname(self._slave)
        self._board = os.open(board_port, os.O_RDWR | os.O_NOCTTY)
        tty.setraw(self._board)
        self._faults = {"reply": None, "request": None}
        self._lock = threading.Lock()
        self.damaged = {"reply": 0, "request": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def damage_reply(self, offset):
        """Flip bit 0 of the board's byte at ``offset`` from now."""
        with self._lock:
            self._faults["reply"] = offset

    def damage_request(self, offset):
        """Flip bit 4 of the host's byte at ``offset`` from now."""
        with self._lock:
            self._faults["request"] = offset

    def _pass(self, data, direction):
        with self._lock:
            offset = self._faults[direction]
            if offset is not None:
                if offset < len(data):
                    data = bytearray(data)
                    data[offset] ^= 0x01 if direction == "reply" else 0x10
                    data = bytes(data)
                    self._faults[direction] = None
                    self.damaged[direction] += 1
                else:
                    self._faults[direction] = offset - len(data)
        return data

    def _run(self):
        while not self._stop.is_set():
            readable, _, _ = select.select([self._master, self._board], [], [], 0.05)
            for fd in readable:
                try:
                    data = os.read(fd, 4096)
                except OSError:
                    return
                if fd == self._master:
                    os.write(self._board, self._pass(data, "request"))
                else:
                    os.write(self._master, self._pass(data, "reply"))

    def close(self):
        self._stop.set()
        self._thread.join(2)
        for fd in (self._master, self._slave, self._board):
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def sim_board_arguments(monkeypatch, argv):
    """Run ``linkdyn sim-board ARGV`` up to the board it would build and serve; return the
    keyword arguments it gives :class:`~linkdyn.sim.board.SimulatedBoard` (nothing is built)."""
    from linkdyn.host.cli import main
    from linkdyn.sim import board as sim_board
    made = {}

    class Built(Exception):
        pass

    def record(*args, **kwargs):
        made.update(kwargs)
        raise Built

    monkeypatch.setattr(sim_board, "SimulatedBoard", record)
    try:
        main(["sim-board", *argv])
    except Built:
        return made
    raise AssertionError(f"linkdyn sim-board {' '.join(argv)} built no board")
