"""Host API of the board: the protocol of :mod:`linkdyn.model.protocol` over a serial port.

:class:`Board` is the client. It opens the port with :func:`serial.serial_for_url` (a real
port, a pseudo-terminal such as :attr:`linkdyn.sim.SimulatedBoard.port`, or any pyserial URL
such as ``socket://host:port``), sends request frames, reads until whole reply frames have
arrived, and turns every failure into a :class:`BoardError`::

    from linkdyn.host import Board
    from linkdyn.model import load_robot

    robot = load_robot("ur5")
    with Board.open("/dev/ttyUSB0") as board:
        print(board.info())
        board.load_robot(robot)
        tau = board.inverse_dynamics(q, qd, qdd)        # (n,) or (K, n), N·m

Reliability
-----------
Every reply is checked (CRC, version, sequence number, command, payload length) before a value
is used; a reply that fails is never used. Requests are retried (at most ``retries`` times each)
when a reply is damaged or missing or the board reports a damaged request (BAD_CRC, TRUNCATED,
BAD_LENGTH) or BUSY. Before resending after such an error the host lets the line go idle for
``settle`` seconds, which resynchronises the board's receiver (``docs/protocol.md``). A retry
always carries a new sequence number, so a late reply to the first attempt is recognised and
dropped.

Retrying is safe for every command but CONTROL (whose step changes the joint controllers' state;
:mod:`linkdyn.host.board_controller` says how its retries go) because every other request the host
sends is *self-contained*:
INFO, READ, STATUS read; WRITE, LOAD_ROBOT and CLEAR set the same words again; and a STEP is a
pure function of the words it carries and of state the host has confirmed before streaming:
the robot's constants (LOAD_ROBOT, read back) and the external wrench registers, which a STEP
without wrench words leaves as they are. With ``f_ext`` every STEP frame carries the wrench;
without, the host first runs one confirmed STEP with a zero state and a zero wrench per
register bank of the chain (the build info's BANKS; a pipelined chain writes each sample's
inputs into the next bank), once, and again after any call with a wrench
or a WRITE to the inputs. A STEP whose reply was lost has run on the board, and running it
again gives the same torques; the only trace is the board's UPDATE_COUNT, which advances once
per execution. The host checks that UPDATE_COUNT increases from reply to reply (a reply matched
to the wrong request, or a board reset in between, would break it) and reports the updates the
board ran in :attr:`BoardResult.updates`.

On a pipelined board (INFO's BANKS > 1) the states go in BATCH requests of up to BANKS states
each (``docs/protocol.md``): the board starts state j+1 while state j still runs and replies
with every state's torques, overflow flags and update number. A BATCH is retried under the
same rules as a STEP and is as safe to retry: it is validated whole before anything runs, so a
damaged request (BAD_CRC, TRUNCATED, BAD_LENGTH) or a BUSY reply ran nothing; a BATCH that
ran has run *all* its states (the board's only other answers, TIMEOUT and BUS_ERROR, are not
retried but raised), and every one of them is a STEP's pure function of its own words and the
confirmed state -- each state writes all its inputs into the bank it uses, and every bank's
wrench was zeroed as above. Running a BATCH again gives the same torques and advances
UPDATE_COUNT by K once more; the host checks that the K update numbers of a reply follow each
other and the last reply's, and that the last one is the board's UPDATE_COUNT. After a BATCH
the board refused midway (BUS_ERROR: its RESULT_SELECT may still pick one of the batch's
updates) the host writes RESULT_SELECT back to ``follow`` before it raises.

Saturation
----------
A torque whose computation saturated somewhere in the chain (the board's OVERFLOW flags) is
never returned as a plain number: :meth:`Board.inverse_dynamics` raises
:class:`SaturationError` (the complete result, flags included, is attached), and
:meth:`Board.rnea` returns a :class:`BoardResult` whose ``overflow`` array carries the flags.

Streaming
---------
For K states the STEP frames are pipelined: up to :meth:`Board.window` requests are in flight
(as many as fit twice the board's longest request, so the board's receive FIFO never
overflows); the replies come back in order. Long runs show a progress bar
(:func:`linkdyn.host.progress.progress_bar`: tqdm on a terminal, a line now and then in a log).
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from dataclasses import dataclass

import numpy as np
import serial

from ..model.fixedpoint import FixedPointRangeError, QFormat, WORD_WIDTH
from ..model.controller import WORD as CONTROLLER_WORD
from ..model.microprogram import NODE_FORMATS, microprogram
from .board_controller import ControllerCommands
from ..model.protocol import (
    CONTROL_NODE, CRC_BYTES, DEFAULT_BAUDRATE, INFO_COUNT, INTER_BYTE_TIMEOUT, MAGIC,
    PROTOCOL_VERSION, REPLY_HEADER_BYTES, REQUEST_HEADER_BYTES, STATUS_COUNT, STEP_TIMEOUT,
    PARENTS_WORDS, WORD_BYTES, BuildInfo, ChainStatus, Command, ErrorCode, ProtocolSpec,
    BatchResult, ReplyDecoder, StepResult, VersionError, batch_payload,
    bytes_to_words, encode_request, load_robot_payload, read_payload, unpack_parents,
    write_payload,
)

__all__ = [
    "Board", "BoardInfo", "BoardResult", "BoardStatistics", "BoardError",
    "BoardConnectionError", "BoardTimeoutError", "BoardProtocolError",
    "IncompatibleBoardError", "NoControllersError", "BoardDeviceError", "SaturationError",
    "CertificateWarning",
    "DEFAULT_TIMEOUT", "DEFAULT_RETRIES", "PROGRESS_THRESHOLD",
]

#: Default longest silence while a reply is awaited, seconds.
DEFAULT_TIMEOUT = 1.0
#: Default number of times a request is resent before giving up.
DEFAULT_RETRIES = 3
#: Runs of at least this many states show a progress bar (when stderr is a terminal).
PROGRESS_THRESHOLD = 1000

# Error statuses that say the request was damaged on the way, or came too early: resend.
_TRANSIENT = frozenset({ErrorCode.BAD_CRC, ErrorCode.TRUNCATED, ErrorCode.BAD_LENGTH,
                        ErrorCode.BUSY})


# -- errors ------------------------------------------------------------------------------------

class BoardError(Exception):
    """Base class of the errors of the board link."""


class BoardConnectionError(BoardError):
    """The serial port cannot be opened, or failed while in use (the board was unplugged,
    the simulator ended)."""


class BoardTimeoutError(BoardError):
    """The board stopped answering: no valid reply within the timeout, after every retry."""


class BoardProtocolError(BoardError):
    """The replies are damaged or inconsistent (after every retry), or do not have the layout
    the protocol defines."""


class IncompatibleBoardError(BoardProtocolError):
    """The board speaks another protocol version or register map, or has another node count
    or word format than required."""


class NoControllersError(IncompatibleBoardError):
    """A joint-controller call (:mod:`linkdyn.host.board_controller`) on a board built without
    joint controllers (INFO CONTROLLERS = 0)."""


class BoardDeviceError(BoardError):
    """The board answered a request with an error status.

    Attributes
    ----------
    code : ErrorCode
        The status.
    command : Command
        The request's command.
    """

    def __init__(self, code, command, message=None):
        self.code = ErrorCode(code)
        self.command = command
        from ..model.protocol import ERROR_DOCS
        super().__init__(message or f"the board answered {self.code.name} to "
                                    f"{_name(command)}: {ERROR_DOCS[self.code]}")


class CertificateWarning(UserWarning):
    """The loaded robot's fixed-point torques are not certified for its default box of states
    (:func:`linkdyn.model.certify.certify`): no certificate could be made, or some register may
    saturate in the box (the board then flags those torques, and they are never returned as plain
    numbers, but states near such corners should be expected to saturate)."""


class SaturationError(BoardError, OverflowError):
    """The board saturated some result while computing the torques (its OVERFLOW flags).

    Attributes
    ----------
    result : BoardResult
        Everything the board returned, the flags included.
    """

    def __init__(self, result):
        self.result = result
        flags = np.atleast_2d(result.overflow)
        states, joints = np.nonzero(flags)
        where = ", ".join(f"state {s} joint {j + 1}" for s, j in zip(states[:5], joints[:5]))
        more = f" and {len(states) - 5} more" if len(states) > 5 else ""
        super().__init__(
            f"the board saturated while computing {int(flags.any(axis=-1).sum())} of "
            f"{flags.shape[0]} states ({where}{more}): those torques are clamped, not the "
            "inverse dynamics; use Board.rnea() to get the result with its overflow flags")


def _name(command):
    try:
        return Command(command).name
    except ValueError:
        return f"command {command:#04x}"


# -- results -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class BoardInfo:
    """The board's build information (INFO), checked against this host's protocol.

    Attributes
    ----------
    nodes : int
        Number of nodes n.
    fmt : QFormat
        Word format of the nodes.
    clock_hz : int
        System clock, Hz.
    baudrate : int
        UART line rate, baud.
    board_id : int
        Board identifier (:data:`linkdyn.boards.BOARD_IDS`; bits 0 .. 15 of BOARD_ID).
    node_map_size : int
        Words per node register map.
    buffer_words : int
        Frame buffer, words (the longest payload).
    map_check : int
        CRC-32 of the register maps.
    protocol_version : int
        The board's protocol version.
    spec : ProtocolSpec
        The protocol parameters of the board.
    banks : int or None
        Register banks of the board's chain (1 sequential; 2 or 4 pipelined; INFO's BANKS).
    controllers : bool
        A joint controller beside every node (INFO's CONTROLLERS;
        :mod:`linkdyn.host.board_controller`).
    parents : tuple of int
        The parent node of every node (INFO's PARENTS_k; ``-1`` a root on the base): the chain
        ``(-1, 0, 1, ...)`` or a tree of nodes (docs/trees.md).
    boards : int
        Boards the chain is distributed over, one node each (BOARDS); 1 for all nodes on one
        FPGA.
    links : ChainLinks or None
        A distributed chain's links as read with INFO (LINK_DOWN and every reachable board's
        link window, :class:`linkdyn.host.board_links.ChainLinks`; :meth:`Board.links` reads
        them anew); ``None`` on a single FPGA.
    """

    nodes: int
    fmt: QFormat
    clock_hz: int
    baudrate: int
    board_id: int
    node_map_size: int
    buffer_words: int
    map_check: int
    protocol_version: int
    spec: ProtocolSpec
    banks: int = 1
    controllers: bool = False
    parents: tuple = None
    boards: int = 1
    links: object = None

    @property
    def is_chain(self):
        """bool: the nodes form one chain (parents ``-1, 0, 1, ...``)."""
        return self.parents is None or tuple(self.parents) == tuple(range(-1, self.nodes - 1))

    def __str__(self):
        banks = f", {self.banks} register bank{'s' if self.banks > 1 else ''}"
        if self.controllers:
            banks += ", joint controllers"
        if not self.is_chain:
            banks += f", a tree of nodes (parents {','.join(map(str, self.parents))})"
        if self.links is not None:
            banks += f", distributed over {self.boards} boards"
        return (f"LinkDyn board: {self.nodes} nodes, {self.fmt.name}, clock "
                f"{self.clock_hz / 1e6:g} MHz, UART {self.baudrate:,} baud, board id "
                f"{self.board_id:#x}{banks}, protocol v{self.protocol_version}, register map "
                f"{self.map_check:#010x}")


@dataclass(frozen=True)
class BoardResult:
    """Torques computed by the board, with the board's flags (like
    :class:`linkdyn.model.FixedResult`).

    Attributes
    ----------
    tau : numpy.ndarray, shape (n,) or (K, n)
        Joint torques, N·m (decoded words).
    tau_words : numpy.ndarray of int64, same shape
        The raw ``tau`` words, in the board's format.
    overflow : numpy.ndarray of bool, same shape
        Node i saturated some result in this update (the OVERFLOW register).
    update_count : numpy.ndarray of int64, shape () or (K,)
        The board's UPDATE_COUNT after each update.
    latency_cycles : numpy.ndarray of int64, shape () or (K,)
        Cycles of each update (LATENCY_CYCLES); on a pipelined board (BATCH) those of the
        last update of the state's batch.
    interval_cycles : numpy.ndarray of int64, shape () or (K,)
        Cycles between the start of the previous update and the start of this one
        (INTERVAL_CYCLES): the line rate when streaming; on a pipelined board those of the
        last update of the state's batch (below LATENCY_CYCLES when the updates overlapped).
    updates : int
        Updates the board ran for these states (more than K when STEP requests were retried).
    retries : int
        Requests resent.
    node_tau_words : numpy.ndarray of int64, shape (nodes,) or (K, nodes), or None
        On a tree robot with mount nodes (:meth:`Board.load_robot`): every node's ``tau`` word
        (``tau_words`` is then per link: its node's); else None (``tau_words`` is per node).
    node_overflow : numpy.ndarray of bool, same shape, or None
        Every node's OVERFLOW bit, with ``node_tau_words`` (``overflow`` is then per link: its
        node's or its mount node's, as :class:`linkdyn.model.golden_tree.TreeResult`).
    """

    tau: np.ndarray
    tau_words: np.ndarray
    overflow: np.ndarray
    update_count: np.ndarray
    latency_cycles: np.ndarray
    interval_cycles: np.ndarray
    updates: int
    retries: int
    node_tau_words: np.ndarray = None
    node_overflow: np.ndarray = None

    @property
    def saturated(self):
        """bool: some torque saturated (see ``overflow``)."""
        return bool(np.any(self.overflow))


@dataclass
class BoardStatistics:
    """Counters of a :class:`Board` since it was opened.

    Attributes
    ----------
    requests : int
        Request frames sent (retries included).
    replies : int
        Valid replies used.
    retries : int
        Requests resent (for every reason).
    timeouts : int
        Of ``retries``, the requests resent because the line stayed silent for ``timeout``
        (plus the request's line time) while their reply was due: a board that did not answer,
        or one slower than that, such as an HDL simulator on a busy machine. The others were
        resent because their reply was damaged, lost or a transient error status.
    damaged_bytes : int
        Received bytes that were not part of a valid reply (noise, damaged replies).
    stale_replies : int
        Valid replies to requests that had been given up on already (dropped).
    error_replies : dict
        ``{ErrorCode: count}`` of error replies received.
    """

    requests: int = 0
    replies: int = 0
    retries: int = 0
    timeouts: int = 0
    damaged_bytes: int = 0
    stale_replies: int = 0
    error_replies: dict = None

    def __post_init__(self):
        if self.error_replies is None:
            self.error_replies = {}


@dataclass
class _Request:
    command: Command
    payload: bytes
    reply_words: int | None       # expected reply payload words (None: any)
    attempts: int = 0
    last_failure: str = ""
    last_code: ErrorCode | None = None


# -- the client --------------------------------------------------------------------------------

class Board(ControllerCommands):
    """Client of a LinkDyn board on a serial port.

    On a board with joint controllers it also runs them (the methods of
    :class:`~linkdyn.host.board_controller.ControllerCommands`: ``configure_controllers``,
    ``control``, ``read_controller_state``, ``clear_faults``, ``set_control_period``).

    Use :meth:`open` to open a port by name or URL; the constructor takes an already open
    pyserial port (or any object with ``write``, ``read``, ``in_waiting``, ``timeout`` and
    ``close``).

    Parameters
    ----------
    port : serial.SerialBase
        The open port.
    timeout : float
        Longest silence while a reply is awaited, seconds; then the requests in flight are
        resent, and after ``retries`` times :class:`BoardTimeoutError` is raised. It is also
        the silence after which a frame that has begun to arrive is given up: a reply that
        keeps arriving, however slowly (an HDL simulator behind a pseudo-terminal, a USB
        adapter's latency timer), is read to its end, never cut off by its total duration.
        While a reply is awaited, the request's own time on the line is added: its 8N1 time
        at the port's baud rate, or twice its time at the slowest rate a reply has arrived
        at so far (a board receives at the line's pace: a simulated board at the simulator's),
        whichever is longer.
    retries : int
        How many times a request is resent before giving up.
    settle : float, optional
        Idle time of the line before resending after an error, seconds (default: the board's
        inter-byte timeout plus its step timeout, twice).
    name : str, optional
        Name of the port in messages.

    Attributes
    ----------
    statistics : BoardStatistics
        Counters since the port was opened.

    Raises
    ------
    TypeError, ValueError
        If a parameter is invalid.
    """

    def __init__(self, port, *, timeout=DEFAULT_TIMEOUT, retries=DEFAULT_RETRIES, settle=None,
                 name=None):
        timeout, retries, settle = _check_link_parameters(timeout, retries, settle)
        self._port = port
        self.name = name or getattr(port, "port", None) or repr(port)
        self.timeout = timeout
        self.retries = retries
        self.settle = settle
        self.statistics = BoardStatistics()
        self._decoder = ReplyDecoder()
        self._seq = 0
        self._info = None
        self._wrench_zero = False        # the board's external wrench words are known zero
        self._last_update = None
        self._line_rate = None           # slowest rate a reply frame arrived at, bytes/s
        self.robot = None
        self._tree = None                # the loaded tree robot's NodeTree (None: a chain)
        #: Certificate of the loaded robot for its default box (:meth:`load_robot`), or None.
        self.certificate = None
        #: The joint controllers' configurations this host wrote (:meth:`configure_controllers`).
        self.controller_configs = None

    @classmethod
    def open(cls, url, baudrate=DEFAULT_BAUDRATE, *, timeout=DEFAULT_TIMEOUT,
             retries=DEFAULT_RETRIES, settle=None, **serial_options):
        """Open a serial port and return a :class:`Board` on it (a context manager).

        Parameters
        ----------
        url : str
            Device (``/dev/ttyUSB0``, ``COM3``, a pseudo-terminal ``/dev/pts/N``) or pyserial
            URL (``socket://host:port``, ``rfc2217://...``).
        baudrate : int
            Line rate, baud (the board's UART rate; ignored by pseudo-terminals).
        timeout, retries, settle
            See :class:`Board`.
        **serial_options
            More arguments of :func:`serial.serial_for_url`.

        Raises
        ------
        BoardConnectionError
            If the port cannot be opened.
        """
        if not isinstance(url, str) or not url:
            raise BoardConnectionError(f"a serial port name or URL is required, not {url!r}")
        timeout, retries, settle = _check_link_parameters(timeout, retries, settle)
        options = {"baudrate": baudrate, "timeout": 0.05, "write_timeout": max(timeout, 1.0)}
        if "://" not in url:
            options["exclusive"] = True
        options.update(serial_options)
        try:
            port = serial.serial_for_url(url, **options)
        except (serial.SerialException, OSError, ValueError) as error:
            raise BoardConnectionError(f"cannot open the serial port {url!r}: {error}") from None
        board = cls(port, timeout=timeout, retries=retries, settle=settle, name=url)
        with _closing_on_error(board):
            board._drain(0.0)
        return board

    # -- context -------------------------------------------------------------------------------

    def close(self):
        """Close the port (safe to call twice)."""
        port, self._port = self._port, None
        if port is not None:
            try:
                port.close()
            except (serial.SerialException, OSError):
                pass

    @property
    def closed(self):
        """bool: the port is closed."""
        return self._port is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"Board({self.name!r}{', closed' if self.closed else ''})"

    # -- commands ------------------------------------------------------------------------------

    def info(self, refresh=False):
        """Return the board's build information, checked against this host's protocol.

        Parameters
        ----------
        refresh : bool
            Ask the board again (else the first answer is kept).

        Returns
        -------
        BoardInfo
            On a distributed chain (MAP_CHECK of ``ProtocolSpec(boards=n)``) with ``boards``
            and ``links``, the state and counters of every neighbour link read with it
            (:mod:`linkdyn.host.board_links`).

        Raises
        ------
        IncompatibleBoardError
            If the magic word, the protocol version, the word format or the register map
            (its CRC, MAP_CHECK) differ from this host's.
        BoardError
            If the link fails.
        """
        if self._info is not None and not refresh:
            return self._info
        from . import board_links
        (reply,) = self._exchange([_Request(Command.INFO, b"", INFO_COUNT)])
        words = BuildInfo.from_payload(reply).words
        if words["MAGIC"] != MAGIC:
            raise IncompatibleBoardError(f"{self.name} answers INFO with magic "
                                         f"{words['MAGIC']:#010x}, not a LinkDyn board's "
                                         f"{MAGIC:#010x}")
        if words["PROTOCOL_VERSION"] != PROTOCOL_VERSION:
            raise IncompatibleBoardError(f"the board speaks protocol version "
                                         f"{words['PROTOCOL_VERSION']}, this host "
                                         f"{PROTOCOL_VERSION}")
        word_format = words["WORD_FORMAT"]
        fraction, integer, width, per_quantity = (word_format & 0xFF, (word_format >> 8) & 0xFF,
                                                  (word_format >> 16) & 0xFF, word_format >> 24)
        if width != WORD_WIDTH or 1 + integer + fraction != WORD_WIDTH or per_quantity > 1:
            raise IncompatibleBoardError(f"the board's word format {word_format:#x} is not a "
                                         f"{WORD_WIDTH}-bit format")
        # Formats per quantity: the host's (NODE_FORMATS); MAP_CHECK, below, compares every
        # register's format with the board's.
        fmt = NODE_FORMATS if per_quantity else QFormat(integer, fraction)
        nodes = words["NODES"]
        if words["CONTROLLERS"] not in (0, 1, 3):
            raise IncompatibleBoardError(f"the board's CONTROLLERS word is "
                                         f"{words['CONTROLLERS']:#x}, not 0, 1 or 3 (with the "
                                         "local loop)")
        try:
            parents = unpack_parents([words[f"PARENTS_{k}"] for k in range(PARENTS_WORDS)],
                                     nodes)
        except ValueError as error:
            raise IncompatibleBoardError(f"the board's topology words (INFO PARENTS_k) are not "
                                         f"a tree of {nodes} nodes: {error}") from None
        try:
            spec = ProtocolSpec(nodes, fmt, clock_hz=words["CLOCK_HZ"],
                                baudrate=words["BAUDRATE"], board_id=words["BOARD_ID"],
                                banks=words["BANKS"], controllers=bool(words["CONTROLLERS"]),
                                parents=parents, local_loop=bool(words["CONTROLLERS"] & 2))
        except (TypeError, ValueError) as error:
            raise IncompatibleBoardError(f"the board reports {nodes} nodes, "
                                         f"{words['BANKS']} register banks and CONTROLLERS "
                                         f"{words['CONTROLLERS']}: {error}") from None
        spec = board_links.board_count(words, spec) or spec
        for name, mine in (("MAP_CHECK", spec.map_check), ("NODE_MAP_SIZE", spec.node_map_size),
                           ("BUFFER_WORDS", spec.buffer_words)):
            if words[name] != mine:
                raise IncompatibleBoardError(
                    f"the board's {name} is {words[name]:#x}, this host's {mine:#x} for "
                    f"{nodes} nodes in {fmt.name}: the board was built from another register "
                    "map or protocol (rebuild the bitstream or update the host)")
        self._info = BoardInfo(nodes, fmt, words["CLOCK_HZ"], words["BAUDRATE"],
                               words["BOARD_ID"], words["NODE_MAP_SIZE"],
                               words["BUFFER_WORDS"], words["MAP_CHECK"],
                               words["PROTOCOL_VERSION"], spec, words["BANKS"],
                               spec.controllers, spec.parents, spec.boards or 1)
        if spec.distributed:
            self._info = dataclasses.replace(self._info, links=board_links.read_links(self))
        return self._info

    def links(self):
        """Read the boards of a distributed chain and the state of their neighbour links.

        Returns
        -------
        linkdyn.host.board_links.ChainLinks
            BOARDS, LINK_DOWN and the link window (state, frames sent and received, CRC
            errors, retransmissions, link drops) of every port of every board that can be
            reached.

        Raises
        ------
        IncompatibleBoardError
            If the board is not a distributed chain.
        BoardError
            If the link to the board fails.
        """
        from . import board_links
        if not self.info().spec.distributed:
            raise IncompatibleBoardError(f"the board on {self.name} is not a distributed "
                                         "chain (all its nodes are on one FPGA)")
        return board_links.read_links(self)

    def _read_direct(self, node, address, count):
        """READ without the link diagnosis of :meth:`_exchange` (used by it)."""
        payload = read_payload(node, address, count)
        (reply,) = self._exchange_frames([_Request(Command.READ, payload, count)])
        return bytes_to_words(reply)

    @property
    def spec(self):
        """ProtocolSpec: the board's protocol parameters (asks INFO once)."""
        return self.info().spec

    @property
    def nodes(self):
        """int: the board's node count (asks INFO once)."""
        return self.info().nodes

    def window(self, wrench=False):
        """Return how many STEP requests are kept in flight when streaming: as many as fit
        twice the board's longest request (its receive FIFO holds at least that), at most 64.

        Parameters
        ----------
        wrench : bool
            For STEP frames that carry the external wrench (longer).
        """
        spec = self.spec
        longest = REQUEST_HEADER_BYTES + spec.max_payload_bytes + CRC_BYTES
        step = REQUEST_HEADER_BYTES + 4 * spec.step_words(wrench) + CRC_BYTES
        return max(1, min(64, (2 * longest) // step))

    def batch_window(self, wrench=False):
        """Return how many BATCH requests (of the board's most states, ``spec.max_batch``) are
        kept in flight when streaming on a pipelined board: as :meth:`window`, at least 1.

        Parameters
        ----------
        wrench : bool
            For BATCH frames that carry the external wrench (longer).
        """
        spec = self.spec
        longest = REQUEST_HEADER_BYTES + spec.max_payload_bytes + CRC_BYTES
        frame = REQUEST_HEADER_BYTES + 4 * spec.batch_words(max(spec.max_batch, 1), wrench) \
            + CRC_BYTES
        return max(1, min(64, (2 * longest) // frame))

    def status(self):
        """Return the chain's status and the engine's counters (STATUS).

        Returns
        -------
        linkdyn.model.protocol.ChainStatus
            ``.words`` (``{register name: word}``), ``.busy``, ``.done``, ``.errors``.
        """
        (reply,) = self._exchange([_Request(Command.STATUS, b"", STATUS_COUNT)])
        return ChainStatus.from_payload(reply)

    def clear(self):
        """Clear the sticky overflow flags and the board's error counters (CLEAR)."""
        self._exchange([_Request(Command.CLEAR, b"", 0)])

    def reset(self):
        """Bring the link and the board to a known state: let the line go idle (the board's
        receiver resynchronises), drop whatever was received, clear the sticky flags and
        error counters (CLEAR), and forget what the host assumed about the board's input
        registers. The robot's constants stay loaded."""
        self._drain(self.settle)
        self._decoder = ReplyDecoder()
        self._wrench_zero = False
        self._last_update = None
        self.clear()

    def read(self, node, address, count=1):
        """Read ``count`` words of ``node`` (or :data:`CONTROL_NODE`) from ``address`` (READ).

        Returns
        -------
        list of int
            Unsigned 32-bit words.
        """
        payload = read_payload(node, address, count)
        (reply,) = self._exchange([_Request(Command.READ, payload, count)])
        return bytes_to_words(reply)

    def write(self, node, address, words):
        """Write words to ``node`` from ``address`` (WRITE). Signed or unsigned 32-bit ints."""
        words = [int(w) for w in words]
        if not words:
            raise ValueError("nothing to write")
        payload = write_payload(node, address, [w & 0xFFFFFFFF for w in words])
        spec = self.spec
        if node != CONTROL_NODE and address < spec.writable_end and \
                address + len(words) > spec.input_address:
            self._wrench_zero = False       # the host no longer knows the input registers
        self._exchange([_Request(Command.WRITE, payload, 0)])

    def load_robot(self, robot, *, verify=True):
        """Load a robot's constants and base motion into the board (LOAD_ROBOT).

        Every constant is encoded in the board's word format first; nothing is sent if one
        does not fit.

        A tree robot (``robot.parents`` not a chain, or links with mounts; docs/trees.md) is
        loaded node by node as :func:`linkdyn.model.golden_tree.encode_tree` encodes it, its
        mount nodes included, onto a board built with the same tree of nodes (INFO's
        PARENTS_k); :meth:`rnea` then takes the robot's joints and returns its links' torques.

        Parameters
        ----------
        robot : linkdyn.model.Robot
            The robot; its nodes (:func:`~linkdyn.model.golden_tree.node_tree`: its joints and
            mount nodes) must be the board's, node for node with the same parents.
        verify : bool
            Read every loaded word back and compare (default).

        Warns
        -----
        CertificateWarning
            If the robot's fixed-point torques cannot be certified for its default box of
            states (``q`` within the joint limits, ``|qd|`` within the velocity limits,
            ``|qdd| <= 10 rad/s^2``, no external wrench; :func:`linkdyn.model.certify.certify`),
            or some register may saturate there (the message names node and register). The
            certificate is kept in :attr:`certificate` (``bound_nm`` per joint).

        Raises
        ------
        ValueError
            If the robot's joint count differs from the board's node count, or its topology
            from the board's (the message names the first node that differs and both parents).
        FixedPointRangeError
            If a constant does not fit the board's format (the message names node and
            constant).
        BoardProtocolError
            If a word read back differs.
        BoardError
            If the link fails.
        """
        from ..model.golden import encode_base_motion, encode_robot
        from ..model.robot import Robot
        if not isinstance(robot, Robot):
            raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
        info = self.info()
        tree = _robot_nodes(robot)
        if tree is None:
            if robot.n != info.nodes:
                raise ValueError(f"the robot {robot.name!r} has {robot.n} joints, the board "
                                 f"{info.nodes} nodes" + (" (a shorter chain of it: choose its "
                                 "last link with tip=LINK, --tip)" if robot.n > info.nodes
                                 else ""))
            _check_topology(robot, None, tuple(range(-1, robot.n - 1)), info)
            constants = encode_robot(robot, info.fmt)
            certificate = _certificate(robot, info.fmt)
        else:
            if tree.n != info.nodes:
                raise ValueError(f"the robot {robot.name!r} has {robot.n} joints on {tree.n} "
                                 f"nodes (a tree, mount nodes included), the board "
                                 f"{info.nodes} nodes")
            _check_topology(robot, tree, tree.parents, info)
            from ..model.golden_tree import encode_tree
            constants = encode_tree(robot, info.fmt)
            certificate = _tree_certificate(robot)
        base = encode_base_motion(robot, info.fmt)
        spec = info.spec
        self._exchange([_Request(Command.LOAD_ROBOT,
                                 load_robot_payload(spec, constants, base), 0)])
        if verify:
            names = [reg.name for reg in spec.registers.of_kind("constant")]
            for i, node in enumerate(constants):
                got = self.read(i, 0, spec.constant_count)
                for name, word, back in zip(names, (node[n] for n in names), got):
                    if (word & 0xFFFFFFFF) != back:
                        raise BoardProtocolError(
                            f"node {i} constant {name}: loaded {word & 0xFFFFFFFF:#010x}, "
                            f"read back {back:#010x}")
            got = self.read(0, spec.base_motion_address, spec.base_motion_count)
            expected = [base[reg.name] & 0xFFFFFFFF for reg in spec.registers.of_kind("forward_in")]
            if got != expected:
                raise BoardProtocolError(f"base motion: loaded {expected}, read back {got}")
        self.robot = robot
        self.certificate = certificate
        self._tree = tree

    # -- inverse dynamics ----------------------------------------------------------------------

    def robot_loaded(self):
        """Return whether the board holds a robot: False when every node's constants are zero
        (the state after power-up; no robot encodes to all-zero constants: ``sin alpha`` and
        ``cos alpha`` of a link are never both zero). Reads the constants of every node (READ).

        Returns
        -------
        bool
        """
        spec = self.spec
        return any(any(self.read(i, 0, spec.constant_count)) for i in range(spec.n_nodes))

    def rnea(self, q, qd, qdd, f_ext=None, *, progress=None, batch=None):
        """Compute the inverse dynamics on the board for one state or a batch (STEP, or BATCH
        on a pipelined board).

        On a tree robot loaded with :meth:`load_robot`, ``n`` is the robot's joint count: the
        states go to the joints' nodes, zeros to the mount nodes (a joint that never moves), and
        the torques are the links' (:class:`linkdyn.model.golden_tree.GoldenTree`'s words);
        else ``n`` is the board's node count.

        Parameters
        ----------
        q, qd, qdd : array_like, shape (n,) or (K, n)
            Joint positions (rad), velocities (rad/s), accelerations (rad/s^2); encoded in the
            board's format exactly as :func:`linkdyn.model.rnea_fixed` encodes them
            (broadcast against each other).
        f_ext : array_like, shape (n, 6) or (K, n, 6), optional
            External wrench per link ``(f_x, f_y, f_z, mu_x, mu_y, mu_z)``, as for
            :func:`linkdyn.model.rnea` (N, N·m); default none.
        progress : bool, optional
            Show a progress bar (default: for at least :data:`PROGRESS_THRESHOLD` states, on a
            terminal).
        batch : bool, optional
            Send BATCH requests of up to BANKS states (default: on a pipelined board, INFO's
            BANKS > 1), or one STEP per state (``False``; the only way on a sequential board).

        Returns
        -------
        BoardResult
            Torques with the overflow flags; shapes follow ``q`` ((n,) or (K, n)).

        Raises
        ------
        ValueError
            If an array has the wrong shape, or ``batch=True`` on a sequential board.
        FixedPointRangeError
            If a value does not fit the board's format (the message names state, joint and
            quantity); nothing is sent then.
        BoardError
            If the link fails (:class:`BoardTimeoutError`, :class:`BoardConnectionError`,
            :class:`BoardProtocolError`, :class:`BoardDeviceError`).
        """
        info = self.info()
        if batch not in (None, True, False):
            raise TypeError(f"batch must be None, True or False, not {batch!r}")
        if batch and not info.spec.max_batch:
            raise ValueError(f"batch=True needs a pipelined board (BANKS > 1); this one has "
                             f"BANKS = {info.banks} (the sequential policy): no BATCH")
        spec = info.spec
        tree = self._tree
        if tree is not None:
            q, qd, qdd, f_ext = _tree_inputs(tree, self.robot, q, qd, qdd, f_ext)
        single, frames = self._step_frames(q, qd, qdd, f_ext, info)
        count = len(frames)
        retries_before = self.statistics.retries
        if f_ext is None and not self._wrench_zero:
            self._zero_wrench(spec)
        if self._last_update is None:
            self._last_update = self._update_count()
        baseline = self._last_update
        batch = spec.max_batch if batch is None or batch else 0
        if batch:
            chunks = [frames[k:k + batch] for k in range(0, count, batch)]
            requests = [_Request(Command.BATCH, batch_payload(spec, chunk),
                                 spec.batch_reply_words(len(chunk))) for chunk in chunks]
            window, check = self.batch_window(f_ext is not None), self._check_batch
        else:
            requests = [_Request(Command.STEP, frame, spec.step_reply_words)
                        for frame in frames]
            window, check = self.window(f_ext is not None), self._check_step
        bar = None
        show = (count >= PROGRESS_THRESHOLD) if progress is None else bool(progress)
        if show:
            from .progress import progress_bar
            bar = progress_bar(count, desc="board", unit="state",
                               terminal_only=progress is None)
        try:
            replies = self._exchange(requests, window=window,
                                     progress=None if bar is None else
                                     _StatesDone(bar, batch or 1, count), check=check)
        except BoardDeviceError:
            if batch:
                self._follow_results()
            raise
        finally:
            if bar is not None:
                bar.close()
        if f_ext is not None:
            self._wrench_zero = False
        n = info.nodes
        results = [StepResult.from_payload(reply, n) for reply in replies] if not batch \
            else [sample for reply in replies for sample in _batch_samples(reply, n)]
        tau_words = np.array([r.tau_words for r in results], dtype=np.int64).reshape(count, n)
        flags = np.array([r.overflow for r in results], dtype=np.int64).reshape(count, 1)
        overflow = ((flags >> np.arange(n)) & 1).astype(bool)
        update = np.array([r.update_count for r in results], dtype=np.int64)
        latency = np.array([r.latency_cycles for r in results], dtype=np.int64)
        interval = np.array([r.interval_cycles for r in results], dtype=np.int64)
        updates = int((self._last_update - baseline) % (1 << 32))
        node_words = node_overflow = None
        if tree is not None:
            node_words, node_overflow = tau_words, overflow
            tau_words = node_words[:, list(tree.link_node)]
            overflow = node_overflow[:, list(tree.link_node)].copy()
            for i, mount in enumerate(tree.mount_node):
                if mount >= 0:
                    overflow[:, i] |= node_overflow[:, mount]
        if single:
            tau_words, overflow, update, latency, interval = (
                tau_words[0], overflow[0], update[0], latency[0], interval[0])
            if tree is not None:
                node_words, node_overflow = node_words[0], node_overflow[0]
        tau = microprogram(info.fmt).registers.decode("tau", tau_words)
        return BoardResult(tau, tau_words, overflow, update, latency, interval, updates, self.statistics.retries - retries_before,
                           node_words, node_overflow)

    def inverse_dynamics(self, q, qd, qdd, f_ext=None, *, progress=None, batch=None):
        """Return the joint torques the board computes, N·m; raise if any saturated.

        Same parameters as :meth:`rnea`.

        Returns
        -------
        numpy.ndarray, shape (n,) or (K, n)
            ``tau``, N·m.

        Raises
        ------
        SaturationError
            If the board saturated a result for some state (the complete
            :class:`BoardResult` is attached as ``.result``).
        ValueError, FixedPointRangeError, BoardError
            As :meth:`rnea`.
        """
        result = self.rnea(q, qd, qdd, f_ext, progress=progress, batch=batch)
        if result.saturated:
            raise SaturationError(result)
        return result.tau

    def _step_frames(self, q, qd, qdd, f_ext, info, names=("q", "qd", "qdd")):
        n, rmap = info.nodes, microprogram(info.fmt).registers
        # The node's registers in their formats; other names (the joint controllers' q_ref,
        # qd_ref, qdd_ref) are the controllers' Q15.16 words.
        formats = [rmap.qformat(name) if name in rmap else CONTROLLER_WORD for name in names]
        arrays = []
        for name, value in zip(names, (q, qd, qdd)):
            try:
                array = np.asarray(value, dtype=float)
            except (TypeError, ValueError):
                raise ValueError(f"{name} must be an array of numbers, not {value!r}") from None
            if array.ndim not in (1, 2) or array.shape[-1] != n:
                raise ValueError(f"{name} must have shape ({n},) or (K, {n}) for this "
                                 f"{n}-node board, not {array.shape}")
            arrays.append(array)
        try:
            shape = np.broadcast_shapes(*(a.shape for a in arrays))
        except ValueError:
            raise ValueError(f"{', '.join(names[:2])} and {names[2]} have shapes that do not "
                             "broadcast: "
                             + ", ".join(str(a.shape) for a in arrays)) from None
        single = len(shape) == 1
        count = 1 if single else shape[0]
        if count == 0:
            raise ValueError(f"{', '.join(names)} hold no state (shape {shape}): give at least "
                             "one row")
        columns = [np.broadcast_to(a, shape).reshape(count, n) for a in arrays]
        words = np.empty((count, n, 3 if f_ext is None else 9), dtype=np.int64)
        for k, (name, unit, array) in enumerate(zip(names,
                                                    ("rad", "rad/s", "rad/s^2"), columns)):
            words[:, :, k] = _encode(formats[k], array, name, unit)
        if f_ext is not None:
            wrench = np.asarray(f_ext, dtype=float)
            if wrench.shape not in ((n, 6), (count, n, 6)) or (single and wrench.ndim != 2):
                raise ValueError(f"f_ext must have shape ({n}, 6)"
                                 + ("" if single else f" or ({count}, {n}, 6)")
                                 + f", not {wrench.shape}")
            wrench = np.broadcast_to(wrench, (count, n, 6))
            for c, label in enumerate(("f_ext_x", "f_ext_y", "f_ext_z", "mu_ext_x",
                                       "mu_ext_y", "mu_ext_z")):
                words[:, :, 3 + c] = _encode(rmap.qformat(label), wrench[:, :, c], label,
                                             "N" if c < 3 else "N·m")
        payloads = (words & 0xFFFFFFFF).astype("<u4").reshape(count, -1)
        return single, [row.tobytes() for row in payloads]

    def _zero_wrench(self, spec):
        # A STEP without wrench words leaves the wrench registers as they are. Make them zero
        # before streaming, so that every STEP is self-contained: one confirmed STEP with a
        # zero state and a zero wrench per register bank of the chain (a pipelined chain
        # writes each sample's inputs into the next of its banks, docs/chain.md; a WRITE
        # would reach one bank only), one at a time: as many as the build info's BANKS says.
        # Their results are not used.
        zero = bytes(WORD_BYTES * spec.step_words(True))
        for _ in range(self.info().banks):
            self._exchange([_Request(Command.STEP, zero, spec.step_reply_words)],
                           check=self._check_step)
        self._wrench_zero = True

    def _update_count(self):
        from ..model.protocol import control_register
        (word,) = self.read(CONTROL_NODE, control_register("UPDATE_COUNT").address)
        return word

    def _check_step(self, payload):
        result = StepResult.from_payload(payload, self.nodes)
        if self._last_update is not None:
            step = (result.update_count - self._last_update) % (1 << 32)
            if not 0 < step < (1 << 31):
                raise BoardProtocolError(
                    f"the board's UPDATE_COUNT went from {self._last_update} to "
                    f"{result.update_count}: the board was reset, or a reply was matched to the "
                    "wrong request")
        self._last_update = result.update_count

    def _follow_results(self):
        # A BATCH that failed on the board (BUS_ERROR) may have left RESULT_SELECT on one of
        # its updates, and STEP and READ would then show that update's results: select the
        # last update again, as the engine does at the end of every BATCH. Best effort: the
        # error that led here is what the caller gets.
        from ..model.protocol import RESULT_FOLLOW, RESULT_SELECT
        try:
            self.write(CONTROL_NODE, RESULT_SELECT, [RESULT_FOLLOW])
        except BoardError:
            pass

    def _check_batch(self, payload):
        result = BatchResult.from_payload(payload, self.nodes)
        samples = len(result.update_numbers)
        last = result.last.update_count
        numbers = [(last - samples + 1 + j) & 0x7FFFFFFF for j in range(samples)]
        if result.update_numbers != numbers:
            raise BoardProtocolError(
                f"the board answered a BATCH of {samples} with the update numbers "
                f"{result.update_numbers}, not the {samples} up to its UPDATE_COUNT {last}")
        if self._last_update is not None:
            step = (last - samples + 1 - self._last_update) % (1 << 32)
            if not 0 < step < (1 << 31):
                raise BoardProtocolError(
                    f"the board's UPDATE_COUNT went from {self._last_update} to {last} over a "
                    f"BATCH of {samples}: the board was reset, or a reply was matched to the "
                    "wrong request")
        self._last_update = last

    # -- the link ------------------------------------------------------------------------------

    def _next_seq(self):
        seq = self._seq
        self._seq = (self._seq + 1) & 0xFF
        return seq

    def _write(self, data):
        if self._port is None:
            raise BoardConnectionError(f"the board on {self.name} is closed")
        try:
            self._port.write(data)
        except serial.SerialTimeoutException:
            raise BoardTimeoutError(f"writing to {self.name} timed out: the port does not "
                                    "take data (flow control, or nothing on the other side)") \
                from None
        except (serial.SerialException, OSError) as error:
            raise BoardConnectionError(f"the serial port {self.name} failed: {error} (board "
                                       "disconnected or powered off?)") from None

    def _read(self):
        if self._port is None:
            raise BoardConnectionError(f"the board on {self.name} is closed")
        try:
            waiting = self._port.in_waiting
            return self._port.read(max(1, waiting))
        except (serial.SerialException, OSError) as error:
            raise BoardConnectionError(f"the serial port {self.name} failed: {error} (board "
                                       "disconnected or powered off?)") from None

    def _drain(self, idle):
        """Read and drop bytes until none arrived for ``idle`` seconds (at least one read),
        and no frame is half received (a frame in progress ends after ``timeout`` of
        silence, as in :meth:`_exchange`)."""
        last = time.monotonic()
        while True:
            data = self._read()
            now = time.monotonic()
            if data:
                last = now
                for reply in self._decoder.feed(data):
                    self.statistics.stale_replies += 1
            elif now - last >= idle and (not self._decoder.pending
                                         or now - last > self.timeout):
                break
        self.statistics.damaged_bytes += self._decoder.discarded
        self._decoder = ReplyDecoder()

    def _exchange(self, requests, **options):
        """:meth:`_exchange_frames`; an error status that a link down explains (a distributed
        chain, :func:`linkdyn.host.board_links.diagnose`) becomes a ``LinkDownError``."""
        try:
            return self._exchange_frames(requests, **options)
        except BoardDeviceError as error:
            from . import board_links
            raise board_links.diagnose(self, error) from None

    def _exchange_frames(self, requests, *, window=1, progress=None, check=None):
        """Send requests (pipelined, up to ``window`` in flight), retrying as needed; return
        the reply payloads in request order.

        Replies come in request order, so a valid reply to a later request means the earlier
        ones in flight lost theirs (or the board never got them): they are resent. A damaged
        or lost reply, or a transient error status, puts the exchange in recovery: nothing new
        is sent until every request in flight is answered or given up (after ``settle``
        seconds of silence), then the line is left idle for ``settle`` seconds and the lost
        requests are resent with new sequence numbers. Silence for ``timeout`` seconds
        while a reply is due loses every request in flight.

        Every time limit on reading is a limit on *silence*, counted from the last byte
        received: a frame in progress is given up only after ``timeout`` seconds without a
        byte (then its sync byte is taken as false, and the bytes behind it are decoded), never
        because the whole frame takes long. A line that delivers its bytes slowly or in
        bursts (an HDL simulator, a USB adapter's 16 ms latency timer) is slow, not damaged.
        """
        results = [None] * len(requests)
        queue = deque(range(len(requests)))
        outstanding = {}                  # seq -> index, in sending order (dicts keep order)
        done = 0
        recovering = False
        damaged = False                   # bytes were discarded since the last resend
        last_byte = time.monotonic()
        transfer = 0.0                    # line time of the longest request in flight, s
        frame_first = None                # when the first byte of the frame in progress came
        decoder = self._decoder
        stats = self.statistics
        lost = []

        def lose(index, why, code=None, timeout=False):
            request = requests[index]
            request.attempts += 1
            request.last_failure = why
            request.last_code = code
            if request.attempts > self.retries:
                self._give_up(request)
            stats.retries += 1
            stats.timeouts += timeout
            lost.append(index)

        def lose_all(why, timeout=False):
            for seq in list(outstanding):
                lose(outstanding.pop(seq), why, timeout=timeout)

        while done < len(requests):
            while queue and not recovering and len(outstanding) < window:
                index = queue.popleft()
                seq = self._next_seq()
                frame = encode_request(requests[index].command, requests[index].payload,
                                       seq=seq)
                if not outstanding:
                    last_byte = time.monotonic()
                    transfer = 0.0
                transfer = max(transfer, self._line_time(len(frame)))
                self._write(frame)
                stats.requests += 1
                outstanding[seq] = index
            data = self._read()
            now = time.monotonic()
            if data:
                last_byte = now
            discarded = decoder.discarded
            if data and not decoder.pending:
                frame_first = now
            replies = decoder.feed(data)
            if replies and frame_first is not None:
                self._measure_line(len(replies[0].payload), now - frame_first)
            if replies or not decoder.pending:
                frame_first = now if decoder.pending else None
            if decoder.pending and now - last_byte > self.timeout:
                # The line went silent inside a frame for as long as a reply may take: its sync
                # byte was false (a damaged reply can announce a long payload); the replies
                # behind it are still good. (Not after `settle`: bytes may arrive at gaps
                # longer than that on a slow line, and a frame still arriving is not damaged.)
                replies += decoder.flush()
            for reply in replies:
                if reply.seq not in outstanding:
                    stats.stale_replies += 1
                    continue
                for seq in list(outstanding):
                    if seq == reply.seq:
                        break
                    lose(outstanding.pop(seq), "its reply was damaged" if damaged
                         else "its reply was lost")
                    recovering = True
                index = outstanding.pop(reply.seq)
                request = requests[index]
                if not reply.ok:
                    code = ErrorCode(reply.status)
                    stats.error_replies[code] = stats.error_replies.get(code, 0) + 1
                    if code not in _TRANSIENT:
                        raise BoardDeviceError(code, request.command)
                    lose(index, f"the board answered {code.name}", code)
                    recovering = True
                    continue
                if reply.command != request.command:
                    lose(index, f"the reply was to {_name(reply.command)}")
                    recovering = True
                    continue
                if request.reply_words is not None and \
                        len(reply.payload) != 4 * request.reply_words:
                    raise BoardProtocolError(
                        f"the board answered {_name(request.command)} with "
                        f"{len(reply.payload)} payload bytes, the protocol defines "
                        f"{4 * request.reply_words}")
                if check is not None:
                    check(reply.payload)
                results[index] = reply.payload
                stats.replies += 1
                done += 1
                if progress is not None:
                    progress.update(1)
            if decoder.discarded != discarded:
                if isinstance(decoder.last_error, VersionError):
                    raise IncompatibleBoardError(f"the board answers with another protocol "
                                                 f"version ({decoder.last_error})")
                recovering = damaged = True
            silence = now - last_byte
            if outstanding and silence > self.timeout + transfer:
                lose_all("its reply was damaged" if damaged else
                         f"no reply within {self.timeout + transfer:.3g} s",
                         timeout=not damaged)
                recovering = True
            elif outstanding and recovering and decoder.pending == 0 and silence > self.settle:
                lose_all("its reply was damaged" if damaged else "its reply was lost")
            if recovering and not outstanding:
                # Every request sent is answered or given up: let the line go idle so that
                # the board's receiver resynchronises, then resend.
                self._drain(self.settle)
                decoder = self._decoder
                recovering = damaged = False
            if lost:
                queue = deque(sorted(set(lost)) + list(queue))
                lost.clear()
        return results

    def _measure_line(self, payload_bytes, seconds):
        """Note the rate a reply frame of ``payload_bytes`` arrived at over ``seconds``, from
        its first byte to its last (frames that came in one read say nothing)."""
        if seconds > 0.05:
            rate = (REPLY_HEADER_BYTES + payload_bytes + CRC_BYTES) / seconds
            self._line_rate = rate if self._line_rate is None else min(self._line_rate, rate)

    def _line_time(self, frame_bytes):
        """Return the time a request of ``frame_bytes`` may take to reach the board, s: twice
        its time at the slowest rate a reply arrived at (the board receives at its own pace:
        on a simulated board, the simulator's), and at least its 8N1 time at the port's
        baud rate. Added to ``timeout`` before a reply counts as missing."""
        baudrate = getattr(self._port, "baudrate", None)
        nominal = 10 * frame_bytes / baudrate if isinstance(baudrate, (int, float)) and \
            baudrate > 0 else 0.0
        observed = 2 * frame_bytes / self._line_rate if self._line_rate else 0.0
        return max(nominal, observed)

    def _give_up(self, request):
        why = request.last_failure
        what = f"{_name(request.command)} failed {request.attempts} times (last: {why})"
        if request.last_code is not None:
            raise BoardDeviceError(request.last_code, request.command,
                                   f"{what}; the board keeps answering "
                                   f"{request.last_code.name}")
        if why.startswith("no reply"):
            raise BoardTimeoutError(f"the board on {self.name} stopped answering: {what}")
        raise BoardProtocolError(f"the replies from {self.name} keep arriving damaged or "
                                 f"lost: {what}")


def _batch_samples(payload, n):
    """Return the states of a BATCH reply as :class:`StepResult` each: its own ``tau``,
    OVERFLOW and update number (UPDATE_COUNT after it); OVERFLOW_STICKY, LATENCY_CYCLES and
    INTERVAL_CYCLES are the batch's last update's (the chain keeps them for the last only)."""
    result = BatchResult.from_payload(payload, n)
    last, samples = result.last, len(result.update_numbers)
    return [StepResult(tau, overflow, last.overflow_sticky, last.latency_cycles,
                       last.interval_cycles, (last.update_count - samples + 1 + j) % (1 << 32))
            for j, (tau, overflow) in enumerate(zip(result.tau_words, result.overflow))]


class _StatesDone:
    """The progress bar of states, advanced per BATCH reply by its states."""

    def __init__(self, bar, per_request, total):
        self.bar, self.per_request, self.left = bar, per_request, total

    def update(self, _):
        step = min(self.per_request, self.left)
        self.left -= step
        self.bar.update(step)


def _check_link_parameters(timeout, retries, settle):
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout > 0:
        raise ValueError(f"Timeout must be a positive number of seconds, not {timeout!r}")
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        raise ValueError(f"Retries must be a non-negative integer, not {retries!r}")
    if settle is None:
        settle = 2 * (INTER_BYTE_TIMEOUT + STEP_TIMEOUT)
    if not isinstance(settle, (int, float)) or isinstance(settle, bool) or not settle >= 0:
        raise ValueError(f"Settle time must be a non-negative number of seconds, "
                         f"not {settle!r}")
    return float(timeout), retries, float(settle)


def _encode(fmt, values, name, unit):
    """Encode a (K, n) array as words of register ``name`` in its format ``fmt`` (a QFormat)
    like :func:`linkdyn.model.rnea_fixed`; name the state and joint of the first value that
    does not fit, the register and its format."""
    try:
        return fmt.encode(values, name)
    except FixedPointRangeError:
        bad = ~np.isfinite(values)
        with np.errstate(invalid="ignore"):
            bad |= ~((values >= fmt.min_value) & (values <= fmt.max_value + fmt.resolution / 2))
        states, joints = np.nonzero(bad)
        if len(states):
            k, j = int(states[0]), int(joints[0])
        else:
            k, j = 0, 0
        detail = (f"{name} = {float(values[k, j])!r} {unit} does not fit the board's "
                  f"{fmt.name} [{fmt.min_value!r}, {fmt.max_value!r}] (register {name})")
        error = FixedPointRangeError(f"state {k}, joint {j + 1}: {detail}")
        error.state, error.joint, error.quantity, error.detail = k, j, name, detail
        raise error from None


class _closing_on_error:
    def __init__(self, board):
        self.board = board

    def __enter__(self):
        return self.board

    def __exit__(self, exc_type, *exc):
        if exc_type is not None:
            self.board.close()


def _robot_nodes(robot):
    """Return the NodeTree of a tree robot (a parent list that is not a chain, or a mount),
    None for a chain in plain DH (loaded as before: ``encode_robot``, node i = link i)."""
    if robot.is_chain and not any(link.has_mount for link in robot.links):
        return None
    from ..model.golden_tree import node_tree
    return node_tree(robot)


def _node_label(robot, tree, node):
    if tree is None:
        return f"joint {robot.joint_names[node]!r}"
    if node in tree.link_node:
        return f"joint {robot.joint_names[tree.link_node.index(node)]!r}"
    link = tree.mount_node.index(node)
    return f"the mount node of joint {robot.joint_names[link]!r}"


def _check_topology(robot, tree, parents, info):
    """Raise ValueError naming the first node whose parent differs between robot and board."""
    board = info.parents if info.parents is not None else tuple(range(-1, info.nodes - 1))
    for node, (mine, theirs) in enumerate(zip(parents, board)):
        if mine != theirs:
            def name(parent):
                return "the base (a root)" if parent < 0 else f"node {parent}"
            raise ValueError(
                f"the robot {robot.name!r} does not fit the board's topology: node {node} "
                f"({_node_label(robot, tree, node)}) has parent {name(mine)} in the robot, "
                f"{name(theirs)} on the board (board parents {','.join(map(str, board))}; "
                f"robot nodes {','.join(map(str, parents))})")


def _tree_inputs(tree, robot, q, qd, qdd, f_ext):
    """Spread the states of a tree robot's joints over its nodes (zeros on mount nodes)."""
    n, nodes = robot.n, tree.n
    if nodes == n:
        return q, qd, qdd, f_ext
    out = []
    columns = list(tree.link_node)
    for name, value in zip(("q", "qd", "qdd"), (q, qd, qdd)):
        try:
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be an array of numbers, not {value!r}") from None
        if array.ndim not in (1, 2) or array.shape[-1] != n:
            raise ValueError(f"{name} must have shape ({n},) or (K, {n}) for the robot "
                             f"{robot.name!r} ({n} joints on {nodes} nodes), not {array.shape}")
        spread = np.zeros(array.shape[:-1] + (nodes,))
        spread[..., columns] = array
        out.append(spread)
    if f_ext is not None:
        wrench = np.asarray(f_ext, dtype=float)
        if wrench.ndim not in (2, 3) or wrench.shape[-2:] != (n, 6):
            raise ValueError(f"f_ext must have shape ({n}, 6) or (K, {n}, 6) for the robot "
                             f"{robot.name!r}, not {wrench.shape}")
        spread = np.zeros(wrench.shape[:-2] + (nodes, 6))
        spread[..., columns, :] = wrench
        f_ext = spread
    return (*out, f_ext)


def _tree_certificate(robot):
    """The certificate covers serial chains only: warn and return None for a tree."""
    import warnings
    warnings.warn(f"robot {robot.name!r}: no certificate of its fixed-point torques (the "
                  "certificate covers serial chains; a tree's accuracy is measured in "
                  "docs/accuracy.md); the board's torques carry no guaranteed error bound",
                  CertificateWarning, stacklevel=3)
    return None


def _certificate(robot, fmt):
    """Return the certificate of a robot's default box, or None with a CertificateWarning."""
    import warnings

    from ..model.certify import certify
    try:
        certificate = certify(robot, fmt=fmt)
    except (NotImplementedError, ValueError) as error:
        warnings.warn(f"robot {robot.name!r}: no certificate of its fixed-point torques "
                      f"({error}); the board's torques carry no guaranteed error bound",
                      CertificateWarning, stacklevel=3)
        return None
    if not certificate.saturation_free:
        where = certificate.saturations[0]
        warnings.warn(f"robot {robot.name!r}: {len(certificate.saturations)} register(s) may "
                      f"saturate in the default box of states, first node {where['node']} "
                      f"{where['register']}; the board flags such torques (OVERFLOW)",
                      CertificateWarning, stacklevel=3)
    return certificate

