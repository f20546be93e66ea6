"""The host link protocol: the one definition shared by the gateware and the host.

The board and the host PC exchange *frames* over a serial line (8N1, default 3 Mbaud). The host
sends *requests*; the board answers every request with exactly one *reply*, in order. Everything
the two sides must agree on is defined here, as data: the frame layout, the command and error
codes, the payload layouts, the register map of the chain's control block at
:data:`~linkdyn.gateware.bus.CONTROL_NODE`, the access rules of the node registers
(:class:`~linkdyn.model.microprogram.RegisterMap`), the CRC, and an executable reference of the
board's protocol engine (:class:`ReferenceEngine`). The gateware (:mod:`linkdyn.gateware.protocol`)
derives its constants from this module, and ``docs/protocol.md`` is generated from it::

    python -m linkdyn.model.protocol --markdown > docs/protocol.md

Frames
------
All multi-byte fields are little-endian. A request::

    offset  size  field
    0       1     sync      0xA5 (REQUEST_SYNC)
    1       1     version   PROTOCOL_VERSION
    2       1     seq       sequence number, echoed in the reply
    3       1     command   Command code
    4       2     length    payload length L in bytes (a multiple of 4)
    6       L     payload   32-bit little-endian words
    6+L     2     crc       CRC-16/CCITT-FALSE of bytes 1 .. 5+L (version .. end of payload)

A reply has the same form with the sync byte 0x5A (REPLY_SYNC), the request's command byte
and one more header byte, ``status`` (:class:`ErrorCode`, 0 = OK), before ``length``. An error
reply has an empty payload.

Reception (board side): the engine hunts for the sync byte, collects the header and, if the
length fits its frame buffer, the payload and the CRC, then validates the *whole* frame (CRC,
version, command, length, node, addresses, access, busy) before it executes anything, so a
malformed frame changes no state. A gap of more than the inter-byte timeout inside a frame ends
it with a TRUNCATED error reply. After any error the engine hunts for the next sync byte; a host
that recovers from an error waits for the timeout (an idle line) before it sends again, which
always resynchronises the engine.
"""

from __future__ import annotations

import argparse
import binascii
import enum
import struct
import sys
import zlib
from dataclasses import dataclass

from .fixedpoint import Q15_16, QFormat, WORD_WIDTH

__all__ = [
    "PROTOCOL_VERSION", "REQUEST_SYNC", "REPLY_SYNC", "WORD_BYTES",
    "REQUEST_HEADER", "REPLY_HEADER", "REQUEST_HEADER_BYTES", "REPLY_HEADER_BYTES",
    "CRC_BYTES", "BLOCK_FIELDS", "CRC16", "crc16", "CONTROL_NODE", "MAX_NODES",
    "INTER_BYTE_TIMEOUT", "STEP_TIMEOUT", "DEFAULT_BAUDRATE", "Command", "ErrorCode",
    "STATE_CHANGING", "ControlRegister", "MAGIC", "CONTROL_START", "CONTROL_CLEAR",
    "STATUS_BUSY", "STATUS_DONE", "STATUS_OVERFLOW", "STATUS_FIRST", "STATUS_COUNT",
    "INFO_FIRST", "INFO_COUNT", "STEP_CONTROL_FIRST", "STEP_CONTROL_COUNT",
    "ControlField", "CONTROL_REGISTERS", "CONTROL_FIELDS", "STATUS_FIELDS", "control_register",
    "ProtocolSpec", "Access", "Request", "Reply", "BuildInfo", "ChainStatus", "StepResult",
    "ProtocolError", "FrameSyncError", "TruncatedFrameError", "ChecksumError", "VersionError",
    "UnknownCommandError", "PayloadError", "DeviceError", "words_to_bytes", "bytes_to_words",
    "encode_request", "decode_request", "encode_reply", "decode_reply", "split_frame",
    "ReplyDecoder", "block_word", "read_payload", "write_payload", "load_robot_payload",
    "step_payload", "ReferenceEngine", "RegisterTarget", "generate_markdown",
]

#: Version of this protocol, carried in every frame; the board answers other versions with
#: :attr:`ErrorCode.BAD_VERSION`. The header layout (sync, version, seq, command, ...) is the
#: same in every version.
PROTOCOL_VERSION = 1

#: First byte of a request frame.
REQUEST_SYNC = 0xA5
#: First byte of a reply frame (distinct, so that an echoed reply is never taken for a request).
REPLY_SYNC = 0x5A
#: Bytes per payload word (little-endian).
WORD_BYTES = 4

#: Request header fields ``(name, bits)``, in transmission order (little-endian).
REQUEST_HEADER = (("sync", 8), ("version", 8), ("seq", 8), ("command", 8), ("length", 16))
#: Reply header fields ``(name, bits)``, in transmission order (little-endian).
REPLY_HEADER = (("sync", 8), ("version", 8), ("seq", 8), ("command", 8), ("status", 8),
                ("length", 16))
REQUEST_HEADER_BYTES = sum(bits for _, bits in REQUEST_HEADER) // 8
REPLY_HEADER_BYTES = sum(bits for _, bits in REPLY_HEADER) // 8
#: Bytes of the trailing CRC (little-endian).
CRC_BYTES = 2

#: Fields of the block word that starts READ and WRITE payloads ``(name, bits)``, LSB first.
BLOCK_FIELDS = (("node", 8), ("addr", 8), ("count", 16))

#: ``node`` value that selects the chain's control block (same as
#: :data:`linkdyn.gateware.bus.CONTROL_NODE`, tested equal).
CONTROL_NODE = 0xFF
#: Most nodes a chain may have (one overflow bit per node in a 32-bit word).
MAX_NODES = 32

#: Inter-byte timeout inside a frame, seconds: a longer gap truncates the frame.
INTER_BYTE_TIMEOUT = 0.005
#: Default longest wait for an update started by STEP, seconds (then a TIMEOUT reply).
STEP_TIMEOUT = 0.01
#: Default line rate, baud (8N1), where the clock allows it.
DEFAULT_BAUDRATE = 3_000_000


@dataclass(frozen=True)
class _CRCParameters:
    """Parameters of a CRC in the Williams model (as :class:`amaranth.lib.crc.Algorithm`)."""

    name: str
    crc_width: int
    polynomial: int
    initial_crc: int
    reflect_input: bool
    reflect_output: bool
    xor_output: int
    check: int


#: The frame check: CRC-16/CCITT-FALSE (reveng: CRC-16/IBM-3740), check value 0x29B1.
CRC16 = _CRCParameters("CRC-16/CCITT-FALSE", 16, 0x1021, 0xFFFF, False, False, 0x0000, 0x29B1)


def crc16(data, crc=CRC16.initial_crc):
    """Return the CRC-16/CCITT-FALSE of ``data``.

    Parameters
    ----------
    data : bytes-like
        The bytes covered (a frame's bytes from ``version`` to the end of the payload).
    crc : int
        Running value to continue from (default: the initial value ``0xFFFF``).

    Returns
    -------
    int
        The 16-bit CRC.

    Notes
    -----
    CRC-16/CCITT-FALSE is the CRC of :func:`binascii.crc_hqx` started from ``0xFFFF``
    (``tests/test_protocol_model.py`` checks it against Amaranth's CRC catalogue).
    """
    return binascii.crc_hqx(data, crc)


class Command(enum.IntEnum):
    """Command codes (the request's ``command`` byte, echoed in the reply)."""

    INFO = 0x01
    READ = 0x02
    WRITE = 0x03
    LOAD_ROBOT = 0x04
    STEP = 0x05
    STATUS = 0x06
    CLEAR = 0x07


class ErrorCode(enum.IntEnum):
    """Reply ``status`` codes. Checks run in this order; the first failing one is reported."""

    OK = 0x00
    BAD_CRC = 0x01
    TRUNCATED = 0x02
    BAD_VERSION = 0x03
    UNKNOWN_COMMAND = 0x04
    BAD_LENGTH = 0x05
    BAD_NODE = 0x06
    BAD_ADDRESS = 0x07
    READ_ONLY = 0x08
    BUSY = 0x09
    BUS_ERROR = 0x0A
    TIMEOUT = 0x0B


_ERROR_DOCS = {
    ErrorCode.OK: "executed",
    ErrorCode.BAD_CRC: "the CRC does not match the frame",
    ErrorCode.TRUNCATED: "the line went idle for longer than the inter-byte timeout inside a "
                         "frame",
    ErrorCode.BAD_VERSION: "the frame's version is not PROTOCOL_VERSION",
    ErrorCode.UNKNOWN_COMMAND: "the command code is not defined",
    ErrorCode.BAD_LENGTH: "the payload length is wrong for the command (or larger than the "
                          "frame buffer, reported right after the header), or a block count "
                          "is 0, exceeds the buffer or disagrees with the length",
    ErrorCode.BAD_NODE: "the node is neither 0 .. n-1 nor CONTROL_NODE",
    ErrorCode.BAD_ADDRESS: "a word of the block is outside the node's register map",
    ErrorCode.READ_ONLY: "a word of a WRITE block is not writable by the host",
    ErrorCode.BUSY: "a state-changing command (WRITE, LOAD_ROBOT, STEP, CLEAR) arrived while "
                    "the chain is busy with an update",
    ErrorCode.BUS_ERROR: "the chain refused a register access the protocol allows (a chain "
                         "defect; earlier words of the command may have been written)",
    ErrorCode.TIMEOUT: "the update started by STEP did not finish within the step timeout; "
                       "the chain stays busy until it does",
}

#: Commands that change state: they need the chain idle (else BUSY).
STATE_CHANGING = frozenset({Command.WRITE, Command.LOAD_ROBOT, Command.STEP, Command.CLEAR})


@dataclass(frozen=True)
class ControlField:
    """One bit field of a control register."""

    name: str
    offset: int
    width: int
    doc: str


#: Bits of the CONTROL register (write-only; a write with no bit set does nothing).
CONTROL_FIELDS = (
    ControlField("start", 0, 1, "start one update of the chain (STATUS.busy rises, "
                                "STATUS.done falls)"),
    ControlField("clear", 1, 1, "clear OVERFLOW_STICKY and STATUS.overflow; the protocol "
                                "engine also clears its error counters"),
)

#: Bits of the STATUS register.
STATUS_FIELDS = (
    ControlField("busy", 0, 1, "an update is running"),
    ControlField("done", 1, 1, "the last update started has finished (0 after reset)"),
    ControlField("overflow", 2, 1, "OVERFLOW_STICKY is not zero"),
)


@dataclass(frozen=True)
class ControlRegister:
    """One register of the control block at :data:`CONTROL_NODE`.

    Attributes
    ----------
    name : str
        Register name.
    address : int
        Word address.
    access : str
        ``"w"`` (host-writable, reads 0) or ``"r"`` (read-only).
    owner : str
        ``"chain"``: implemented by the chain behind the register bus; ``"engine"``: answered by
        the protocol engine itself, never seen on the bus.
    unit : str
        Unit of the value.
    doc : str
        Meaning.
    fields : tuple of ControlField
        Bit fields, if any.
    """

    name: str
    address: int
    access: str
    owner: str
    unit: str
    doc: str
    fields: tuple = ()


def _control_registers():
    regs = [
        ControlRegister("CONTROL", 0x00, "w", "chain", "", "commands to the chain (bits below)",
                        CONTROL_FIELDS),
        ControlRegister("STATUS", 0x01, "r", "chain", "", "state of the chain (bits below)",
                        STATUS_FIELDS),
        ControlRegister("OVERFLOW", 0x02, "r", "chain", "",
                        "bit i: node i saturated a result in the last update"),
        ControlRegister("OVERFLOW_STICKY", 0x03, "r", "chain", "",
                        "bit i: node i saturated a result since the last clear"),
        ControlRegister("LATENCY_CYCLES", 0x04, "r", "chain", "cycles",
                        "cycles from the start of the last update to its end"),
        ControlRegister("INTERVAL_CYCLES", 0x05, "r", "chain", "cycles",
                        "cycles between the starts of the last two updates"),
        ControlRegister("UPDATE_COUNT", 0x06, "r", "chain", "",
                        "updates finished since reset (wraps)"),
        ControlRegister("FRAME_COUNT", 0x07, "r", "engine", "",
                        "frames executed without error since reset (wraps)"),
        ControlRegister("UART_FRAME_ERRORS", 0x08, "r", "engine", "",
                        "bytes received with a bad stop bit (saturating)"),
        ControlRegister("UART_OVERFLOWS", 0x09, "r", "engine", "",
                        "bytes lost because the receive buffer was full (saturating)"),
    ]
    for code in ErrorCode:
        if code is ErrorCode.OK:
            continue
        regs.append(ControlRegister(f"ERRORS_{code.name}", 0x09 + code, "r", "engine", "",
                                    f"error replies with status {code.name} (saturating)"))
    info = [
        ("MAGIC", "", "0x4E59444C, the bytes 'LDYN'"),
        ("PROTOCOL_VERSION", "", "PROTOCOL_VERSION"),
        ("NODES", "", "number of nodes n"),
        ("WORD_FORMAT", "", "fraction bits | integer bits << 8 | word width << 16"),
        ("CLOCK_HZ", "Hz", "system clock frequency"),
        ("BAUDRATE", "baud", "line rate of the UART"),
        ("BOARD_ID", "", "board identifier (boards.<board>)"),
        ("NODE_MAP_SIZE", "words", "host-addressable words per node"),
        ("BUFFER_WORDS", "words", "frame buffer size, the longest payload"),
        ("MAP_CHECK", "", "CRC-32 of the register maps (ProtocolSpec.map_check)"),
    ]
    for k, (name, unit, doc) in enumerate(info):
        regs.append(ControlRegister(name, 0x20 + k, "r", "engine", unit, doc))
    return tuple(regs)


#: The control block at :data:`CONTROL_NODE`, in address order.
CONTROL_REGISTERS = _control_registers()
_CONTROL_BY_NAME = {reg.name: reg for reg in CONTROL_REGISTERS}
#: Words 0x01 .. STATUS_END-1: the STATUS command's reply.
STATUS_FIRST = _CONTROL_BY_NAME["STATUS"].address
STATUS_COUNT = _CONTROL_BY_NAME[f"ERRORS_{ErrorCode.TIMEOUT.name}"].address + 1 - STATUS_FIRST
#: The INFO command's reply: the build-information words.
INFO_FIRST = _CONTROL_BY_NAME["MAGIC"].address
INFO_COUNT = _CONTROL_BY_NAME["MAP_CHECK"].address + 1 - INFO_FIRST
#: The words after ``tau`` in a STEP reply: OVERFLOW .. UPDATE_COUNT.
STEP_CONTROL_FIRST = _CONTROL_BY_NAME["OVERFLOW"].address
STEP_CONTROL_COUNT = _CONTROL_BY_NAME["UPDATE_COUNT"].address + 1 - STEP_CONTROL_FIRST
MAGIC = 0x4E59444C


def control_register(name):
    """Return the :class:`ControlRegister` called ``name``."""
    try:
        return _CONTROL_BY_NAME[name]
    except KeyError:
        raise KeyError(f"no control register named {name!r}") from None


def _field_mask(fields, name):
    for f in fields:
        if f.name == name:
            return ((1 << f.width) - 1) << f.offset
    raise KeyError(name)


CONTROL_START = _field_mask(CONTROL_FIELDS, "start")
CONTROL_CLEAR = _field_mask(CONTROL_FIELDS, "clear")
STATUS_BUSY = _field_mask(STATUS_FIELDS, "busy")
STATUS_DONE = _field_mask(STATUS_FIELDS, "done")
STATUS_OVERFLOW = _field_mask(STATUS_FIELDS, "overflow")


@dataclass(frozen=True)
class Access:
    """Host access to one register word: whether it exists, is writable, and who answers it."""

    exists: bool
    writable: bool = False
    owner: str = "node"


class ProtocolSpec:
    """The protocol for one chain: node count, word format, sizes, access rules, build info.

    Parameters
    ----------
    n_nodes : int
        Number of nodes, ``1 .. MAX_NODES``.
    fmt : QFormat
        Word format of the nodes (default Q15.16).
    clock_hz : int
        System clock frequency, Hz (reported by INFO).
    baudrate : int
        UART line rate, baud (reported by INFO).
    board_id : int
        Board identifier, 32 bits (reported by INFO).

    Raises
    ------
    TypeError, ValueError
        If a parameter has the wrong type or range.

    Notes
    -----
    Node registers (:class:`~linkdyn.model.microprogram.RegisterMap` of
    ``linkdyn.model.golden.microprogram(fmt)``): every address below :attr:`node_map_size`
    can be read; ``constant`` and ``input`` registers can be written on every node, the
    ``forward_in`` registers on node 0 only (the base motion); everything else is read-only.
    """

    def __init__(self, n_nodes, fmt=Q15_16, *, clock_hz=0, baudrate=0, board_id=0):
        if not isinstance(n_nodes, int) or isinstance(n_nodes, bool):
            raise TypeError(f"Node count must be an integer, not {n_nodes!r}")
        if not 1 <= n_nodes <= MAX_NODES:
            raise ValueError(f"Node count must be 1 .. {MAX_NODES}, not {n_nodes!r}")
        if not isinstance(fmt, QFormat):
            raise TypeError(f"Word format must be a QFormat, not {fmt!r}")
        for name, value, bits in (("clock_hz", clock_hz, 32), ("baudrate", baudrate, 32),
                                  ("board_id", board_id, 32)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an integer, not {value!r}")
            if not 0 <= value < (1 << bits):
                raise ValueError(f"{name} must be 0 .. 2**{bits}-1, not {value!r}")
        from .golden import microprogram
        self.n_nodes = n_nodes
        self.fmt = fmt
        self.clock_hz = clock_hz
        self.baudrate = baudrate
        self.board_id = board_id
        self.registers = microprogram(fmt).registers
        rmap = self.registers
        self.node_map_size = rmap.size
        constants = rmap.of_kind("constant")
        inputs = rmap.of_kind("input")
        forward_in = rmap.of_kind("forward_in")
        self.constant_count = len(constants)
        self.input_address = inputs[0].address
        self.input_count = len(inputs)
        if [r.name for r in inputs[:3]] != ["q", "qd", "qdd"]:
            raise ValueError("the first three input registers must be q, qd, qdd")
        self.base_motion_address = forward_in[0].address
        self.base_motion_count = len(forward_in)
        self.tau_address = rmap["tau"].address
        # Writable words form one range from address 0 (constants, then inputs), extended by
        # the forward mailbox on node 0; the gateware checks ranges, so check that they are.
        writable = sorted(r.address for r in constants + inputs)
        if writable != list(range(len(writable))):
            raise ValueError("constant and input registers must be the addresses 0 .. k-1")
        self.writable_end = len(writable)
        fwd = [r.address for r in forward_in]
        if fwd != list(range(self.writable_end, self.writable_end + len(fwd))):
            raise ValueError("the forward mailbox must follow the input registers")
        self.writable_end_node0 = self.writable_end + len(fwd)
        if self.node_map_size > 256:
            raise ValueError("the node register map exceeds the 8-bit bus address")

    # -- sizes -------------------------------------------------------------------------------

    @property
    def load_robot_words(self):
        """int: payload words of LOAD_ROBOT: every node's constants, then the base motion."""
        return self.n_nodes * self.constant_count + self.base_motion_count

    def step_words(self, wrench=False):
        """Return the payload words of STEP: 3 per node, or all inputs with the wrench."""
        return self.n_nodes * (self.input_count if wrench else 3)

    @property
    def step_reply_words(self):
        """int: reply words of STEP: tau per node, then OVERFLOW .. UPDATE_COUNT."""
        return self.n_nodes + STEP_CONTROL_COUNT

    @property
    def buffer_words(self):
        """int: frame buffer words: the longest request or reply payload of any command
        (a whole node register map plus the block word fits in one WRITE)."""
        return max(self.load_robot_words, self.step_words(True), self.step_reply_words,
                   STATUS_COUNT, INFO_COUNT, self.node_map_size + 1)

    @property
    def max_payload_bytes(self):
        """int: the longest payload a frame may carry, bytes."""
        return WORD_BYTES * self.buffer_words

    def request_lengths(self, command):
        """Return the allowed payload lengths (bytes) of a command, or ``None`` for WRITE
        (``4 + 4 * count``, checked against the block word)."""
        command = Command(command)
        if command in (Command.INFO, Command.STATUS, Command.CLEAR):
            return (0,)
        if command is Command.READ:
            return (WORD_BYTES,)
        if command is Command.LOAD_ROBOT:
            return (WORD_BYTES * self.load_robot_words,)
        if command is Command.STEP:
            return (WORD_BYTES * self.step_words(False), WORD_BYTES * self.step_words(True))
        return None

    # -- access ------------------------------------------------------------------------------

    def access(self, node, addr):
        """Return the :class:`Access` of word ``addr`` of ``node`` (or of the control block)."""
        if node == CONTROL_NODE:
            for reg in CONTROL_REGISTERS:
                if reg.address == addr:
                    return Access(True, reg.access == "w", reg.owner)
            return Access(False)
        if not 0 <= node < self.n_nodes or not 0 <= addr < self.node_map_size:
            return Access(False)
        end = self.writable_end_node0 if node == 0 else self.writable_end
        return Access(True, addr < end, "node")

    def node_valid(self, node):
        """Return whether ``node`` addresses a node or the control block."""
        return node == CONTROL_NODE or 0 <= node < self.n_nodes

    # -- build info ----------------------------------------------------------------------------

    @property
    def word_format(self):
        """int: the WORD_FORMAT build-info word."""
        return (self.fmt.fraction_bits | (self.fmt.integer_bits << 8) | (WORD_WIDTH << 16))

    @property
    def map_check(self):
        """int: CRC-32 of the node register map and the control map (a host compares it)."""
        text = [f"v{PROTOCOL_VERSION}"]
        for reg in self.registers:
            if reg.address is not None:
                text.append(f"{reg.address}:{reg.name}:{reg.kind}:{reg.format.fraction_bits}")
        for reg in CONTROL_REGISTERS:
            text.append(f"c{reg.address}:{reg.name}:{reg.access}:{reg.owner}")
        return zlib.crc32(";".join(text).encode())

    def build_info(self):
        """Return the build-information words (INFO reply), ``{name: word}`` in address order."""
        return {
            "MAGIC": MAGIC,
            "PROTOCOL_VERSION": PROTOCOL_VERSION,
            "NODES": self.n_nodes,
            "WORD_FORMAT": self.word_format,
            "CLOCK_HZ": self.clock_hz,
            "BAUDRATE": self.baudrate,
            "BOARD_ID": self.board_id,
            "NODE_MAP_SIZE": self.node_map_size,
            "BUFFER_WORDS": self.buffer_words,
            "MAP_CHECK": self.map_check,
        }

    def __repr__(self):
        return (f"ProtocolSpec(n_nodes={self.n_nodes}, fmt={self.fmt.name}, "
                f"clock_hz={self.clock_hz}, baudrate={self.baudrate}, "
                f"board_id={self.board_id:#x})")


# -- exceptions --------------------------------------------------------------------------------

class ProtocolError(Exception):
    """A frame could not be decoded."""


class FrameSyncError(ProtocolError):
    """The data does not start with the expected sync byte."""


class TruncatedFrameError(ProtocolError):
    """The data ends before the frame does."""


class ChecksumError(ProtocolError):
    """The frame's CRC does not match its bytes."""


class VersionError(ProtocolError):
    """The frame carries another protocol version."""


class UnknownCommandError(ProtocolError):
    """The frame's command code (or a reply's status code) is not defined."""


class PayloadError(ProtocolError, ValueError):
    """A payload does not have the layout its command requires."""


class DeviceError(ProtocolError):
    """The board answered with an error status.

    Attributes
    ----------
    code : ErrorCode
        The status.
    reply : Reply
        The error reply.
    """

    def __init__(self, reply):
        self.code = ErrorCode(reply.status)
        self.reply = reply
        super().__init__(f"board replied {self.code.name} to {_command_name(reply.command)} "
                         f"(seq {reply.seq}): {_ERROR_DOCS[self.code]}")


def _command_name(code):
    try:
        return Command(code).name
    except ValueError:
        return f"command {code:#04x}"


# -- frames ------------------------------------------------------------------------------------

def words_to_bytes(words):
    """Pack words (ints, signed or unsigned 32-bit) into little-endian bytes."""
    out = bytearray()
    for word in words:
        word = int(word)
        if not -(1 << 31) <= word < (1 << 32):
            raise ValueError(f"word {word!r} does not fit 32 bits")
        out += struct.pack("<I", word & 0xFFFFFFFF)
    return bytes(out)


def bytes_to_words(data, signed=False):
    """Unpack little-endian bytes (a multiple of 4) into a list of 32-bit ints."""
    if len(data) % WORD_BYTES:
        raise PayloadError(f"payload of {len(data)} bytes is not a whole number of words")
    fmt = "<%d%s" % (len(data) // WORD_BYTES, "i" if signed else "I")
    return list(struct.unpack(fmt, bytes(data)))


@dataclass(frozen=True)
class Request:
    """A decoded request frame."""

    seq: int
    command: int
    payload: bytes = b""
    version: int = PROTOCOL_VERSION

    @property
    def words(self):
        """list of int: the payload as unsigned words."""
        return bytes_to_words(self.payload)


@dataclass(frozen=True)
class Reply:
    """A decoded reply frame.

    Attributes
    ----------
    seq : int
        Sequence number of the request answered.
    command : int
        Command byte of the request (any byte in an error reply).
    status : int
        :class:`ErrorCode`.
    payload : bytes
        Reply payload.
    version : int
        Protocol version of the board.
    """

    seq: int
    command: int
    status: int = ErrorCode.OK
    payload: bytes = b""
    version: int = PROTOCOL_VERSION

    @property
    def ok(self):
        """bool: the status is OK."""
        return self.status == ErrorCode.OK

    @property
    def words(self):
        """list of int: the payload as unsigned words."""
        return bytes_to_words(self.payload)

    def check(self):
        """Return ``self``; raise :class:`DeviceError` if the status is not OK."""
        if not self.ok:
            raise DeviceError(self)
        return self


def _check_byte(name, value):
    if not isinstance(value, int) or not 0 <= value <= 0xFF:
        raise ValueError(f"{name} must be a byte 0 .. 255, not {value!r}")


def encode_request(command, payload=b"", *, seq=0, version=PROTOCOL_VERSION):
    """Return the bytes of a request frame.

    Parameters
    ----------
    command : Command or int
        Command code (any byte, so that tests can send unknown codes).
    payload : bytes-like or sequence of int
        Payload bytes, or words (packed little-endian).
    seq : int
        Sequence number, echoed in the reply, ``0 .. 255``.
    version : int
        Protocol version (default :data:`PROTOCOL_VERSION`).

    Returns
    -------
    bytes

    Raises
    ------
    ValueError
        If a field does not fit its byte or the payload exceeds 65535 bytes.
    """
    _check_byte("seq", seq)
    _check_byte("command", int(command))
    _check_byte("version", version)
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        payload = words_to_bytes(payload)
    payload = bytes(payload)
    if len(payload) > 0xFFFF:
        raise ValueError(f"payload of {len(payload)} bytes exceeds 65535")
    body = struct.pack("<BBBH", version, seq, int(command), len(payload)) + payload
    return bytes([REQUEST_SYNC]) + body + struct.pack("<H", crc16(body))


def encode_reply(seq, command, status=ErrorCode.OK, payload=b"", *, version=PROTOCOL_VERSION):
    """Return the bytes of a reply frame (``command``: the request's command byte)."""
    _check_byte("seq", seq)
    _check_byte("command", int(command))
    _check_byte("status", int(status))
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        payload = words_to_bytes(payload)
    payload = bytes(payload)
    body = struct.pack("<BBBBH", version, seq, int(command), int(status),
                       len(payload)) + payload
    return bytes([REPLY_SYNC]) + body + struct.pack("<H", crc16(body))


_ERROR_CODES = frozenset(int(code) for code in ErrorCode)
_COMMANDS = frozenset(int(command) for command in Command)


def split_frame(data, *, reply=True):
    """Decode the frame at the start of ``data`` and return it with the bytes after it.

    Parameters
    ----------
    data : bytes-like
        Starts with a frame's sync byte.
    reply : bool
        Decode a reply (default) or a request.

    Returns
    -------
    (Reply or Request, bytes)

    Raises
    ------
    FrameSyncError
        The first byte is not the sync byte.
    TruncatedFrameError
        ``data`` ends before the frame does.
    ChecksumError
        The CRC does not match.
    VersionError
        The version is not :data:`PROTOCOL_VERSION`.
    UnknownCommandError
        The command is not a :class:`Command` (for a reply: an OK reply's command, or the
        status is not an :class:`ErrorCode`).
    """
    data = bytes(data)
    sync, header = (REPLY_SYNC, REPLY_HEADER_BYTES) if reply else (REQUEST_SYNC,
                                                                   REQUEST_HEADER_BYTES)
    if not data:
        raise TruncatedFrameError("no data")
    if data[0] != sync:
        raise FrameSyncError(f"frame starts with {data[0]:#04x}, not the sync byte {sync:#04x}")
    if len(data) < header:
        raise TruncatedFrameError(f"{len(data)} bytes, the header alone has {header}")
    length = struct.unpack_from("<H", data, header - 2)[0]
    end = header + length + CRC_BYTES
    if len(data) < end:
        raise TruncatedFrameError(f"{len(data)} bytes, the frame has {end}")
    body = data[1:header + length]
    (crc,) = struct.unpack_from("<H", data, header + length)
    if crc != crc16(body):
        raise ChecksumError(f"CRC {crc:#06x}, computed {crc16(body):#06x}")
    version, seq, command = data[1], data[2], data[3]
    if version != PROTOCOL_VERSION:
        raise VersionError(f"frame version {version}, expected {PROTOCOL_VERSION}")
    payload = data[header:header + length]
    if reply:
        status = data[4]
        if status not in _ERROR_CODES:
            raise UnknownCommandError(f"reply status {status:#04x} is not an error code")
        if status == ErrorCode.OK and command not in _COMMANDS:
            raise UnknownCommandError(f"OK reply to command byte {command:#04x}")
        frame = Reply(seq, command, status, payload, version)
    else:
        if command not in _COMMANDS:
            raise UnknownCommandError(f"request command byte {command:#04x}")
        frame = Request(seq, command, payload, version)
    return frame, data[end:]


def decode_reply(data):
    """Decode one whole reply frame (exactly ``data``); see :func:`split_frame` for errors.

    Raises
    ------
    ProtocolError
        As :func:`split_frame`, or if bytes follow the frame.
    """
    frame, rest = split_frame(data, reply=True)
    if rest:
        raise ProtocolError(f"{len(rest)} bytes follow the reply frame")
    return frame


def decode_request(data):
    """Decode one whole request frame (exactly ``data``); see :func:`split_frame`."""
    frame, rest = split_frame(data, reply=False)
    if rest:
        raise ProtocolError(f"{len(rest)} bytes follow the request frame")
    return frame


class ReplyDecoder:
    """Incremental decoder of a byte stream of replies, for the host.

    Feed it the bytes read from the port; it returns the complete replies, in order. Bytes that
    do not form a valid frame are skipped one at a time, hunting for the next sync byte (each
    skipped byte is counted in :attr:`discarded`, the last reason kept in :attr:`last_error`),
    so that a damaged frame costs only itself.

    Parameters
    ----------
    max_payload : int
        Longest payload a reply can have, bytes (``ProtocolSpec.max_payload_bytes`` of the
        board, or 65535): a header announcing more is rejected at once instead of waited for.
    """

    def __init__(self, max_payload=0xFFFF):
        self.max_payload = max_payload
        self._buffer = bytearray()
        self.discarded = 0
        self.last_error = None

    def feed(self, data):
        """Add received bytes; return the list of :class:`Reply` completed by them."""
        self._buffer += bytes(data)
        replies = []
        while self._buffer:
            start = self._buffer.find(REPLY_SYNC)
            if start < 0:
                self.discarded += len(self._buffer)
                self._buffer.clear()
                break
            if start:
                self.discarded += start
                del self._buffer[:start]
            end = len(self._buffer)
            try:
                if end >= REPLY_HEADER_BYTES:
                    length = struct.unpack_from("<H", self._buffer, REPLY_HEADER_BYTES - 2)[0]
                    if length > self.max_payload:
                        raise PayloadError(f"reply announces {length} payload bytes, more "
                                           f"than {self.max_payload}")
                    end = min(end, REPLY_HEADER_BYTES + length + CRC_BYTES)
                frame, _ = split_frame(self._buffer[:end], reply=True)
            except TruncatedFrameError:
                break
            except ProtocolError as error:
                self.last_error = error
                self.discarded += 1
                del self._buffer[:1]
                continue
            replies.append(frame)
            del self._buffer[:end]
        return replies

    def flush(self):
        """Give up on the frame in progress (the line went idle); return the replies found in
        the bytes held after its sync byte."""
        replies = []
        while self._buffer:
            self.discarded += 1
            del self._buffer[:1]
            replies += self.feed(b"")
        return replies

    @property
    def pending(self):
        """int: bytes held while waiting for the rest of a frame."""
        return len(self._buffer)


# -- payloads ----------------------------------------------------------------------------------

def block_word(node, addr, count):
    """Return the block word ``node | addr << 8 | count << 16`` of READ and WRITE."""
    for name, value, bits in (("node", node, 8), ("addr", addr, 8), ("count", count, 16)):
        if not isinstance(value, int) or not 0 <= value < (1 << bits):
            raise ValueError(f"{name} must be 0 .. {(1 << bits) - 1}, not {value!r}")
    return node | (addr << 8) | (count << 16)


def read_payload(node, addr, count):
    """Return the READ payload: read ``count`` words of ``node`` from ``addr``."""
    return words_to_bytes([block_word(node, addr, count)])


def write_payload(node, addr, words):
    """Return the WRITE payload: write ``words`` to ``node`` from ``addr``."""
    words = list(words)
    return words_to_bytes([block_word(node, addr, len(words))] + words)


def load_robot_payload(spec, constants, base_motion):
    """Return the LOAD_ROBOT payload.

    Parameters
    ----------
    spec : ProtocolSpec
    constants : list of dict
        Per node, ``{register name: word}`` of every constant register
        (:func:`linkdyn.model.golden.encode_robot`).
    base_motion : dict
        The 9 forward-mailbox words of node 0 (:func:`linkdyn.model.golden.encode_base_motion`).
    """
    if len(constants) != spec.n_nodes:
        raise PayloadError(f"{len(constants)} nodes of constants, the chain has {spec.n_nodes}")
    words = []
    for node in constants:
        words += [node[reg.name] for reg in spec.registers.of_kind("constant")]
    words += [base_motion[reg.name] for reg in spec.registers.of_kind("forward_in")]
    return words_to_bytes(words)


def step_payload(spec, q, qd, qdd, wrench=None):
    """Return the STEP payload from joint words.

    Parameters
    ----------
    spec : ProtocolSpec
    q, qd, qdd : sequence of int, length n
        Joint position, velocity, acceleration words (the node format).
    wrench : sequence of sequence of int, shape (n, 6), optional
        External wrench words per node, ``f_ext_x .. mu_ext_z`` (then every input is sent).
    """
    n = spec.n_nodes
    for name, values in (("q", q), ("qd", qd), ("qdd", qdd)):
        if len(values) != n:
            raise PayloadError(f"{name} has {len(values)} words, the chain has {n} nodes")
    words = []
    for i in range(n):
        words += [q[i], qd[i], qdd[i]]
        if wrench is not None:
            if len(wrench[i]) != spec.input_count - 3:
                raise PayloadError(f"wrench of node {i} must have {spec.input_count - 3} words")
            words += list(wrench[i])
    return words_to_bytes(words)


@dataclass(frozen=True)
class BuildInfo:
    """The INFO reply, decoded."""

    words: dict

    @classmethod
    def from_payload(cls, payload):
        """Decode an INFO reply payload."""
        words = bytes_to_words(payload)
        names = [reg.name for reg in CONTROL_REGISTERS if INFO_FIRST <= reg.address
                 < INFO_FIRST + INFO_COUNT]
        if len(words) != len(names):
            raise PayloadError(f"INFO payload has {len(words)} words, not {len(names)}")
        return cls(dict(zip(names, words)))

    def __getattr__(self, name):
        try:
            return self.words[name.upper()]
        except KeyError:
            raise AttributeError(name) from None


@dataclass(frozen=True)
class ChainStatus:
    """The STATUS reply, decoded: ``{control register name: word}``."""

    words: dict

    @classmethod
    def from_payload(cls, payload):
        """Decode a STATUS reply payload."""
        words = bytes_to_words(payload)
        names = [reg.name for reg in CONTROL_REGISTERS if STATUS_FIRST <= reg.address
                 < STATUS_FIRST + STATUS_COUNT]
        if len(words) != len(names):
            raise PayloadError(f"STATUS payload has {len(words)} words, not {len(names)}")
        return cls(dict(zip(names, words)))

    @property
    def busy(self):
        return bool(self.words["STATUS"] & STATUS_BUSY)

    @property
    def done(self):
        return bool(self.words["STATUS"] & STATUS_DONE)

    @property
    def errors(self):
        """dict: error code -> count of error replies."""
        return {code: self.words[f"ERRORS_{code.name}"] for code in ErrorCode
                if code is not ErrorCode.OK}


@dataclass(frozen=True)
class StepResult:
    """The STEP reply, decoded.

    Attributes
    ----------
    tau_words : list of int
        Signed ``tau`` word per node (N·m in the node format).
    overflow : int
        Bit i: node i saturated in this update.
    overflow_sticky : int
        Bit i: node i saturated since the last clear.
    latency_cycles, interval_cycles, update_count : int
        See the control map.
    """

    tau_words: list
    overflow: int
    overflow_sticky: int
    latency_cycles: int
    interval_cycles: int
    update_count: int

    @classmethod
    def from_payload(cls, payload, n_nodes):
        """Decode a STEP reply payload of a chain of ``n_nodes``."""
        words = bytes_to_words(payload)
        if len(words) != n_nodes + STEP_CONTROL_COUNT:
            raise PayloadError(f"STEP payload has {len(words)} words, not "
                               f"{n_nodes + STEP_CONTROL_COUNT}")
        tau = [w - (1 << 32) if w & 0x80000000 else w for w in words[:n_nodes]]
        return cls(tau, *words[n_nodes:])


# -- reference engine --------------------------------------------------------------------------

class RegisterTarget:
    """The register-bus target seen by :class:`ReferenceEngine` (the chain, or a model of it).

    Subclasses implement :meth:`read` and :meth:`write` with the semantics of
    :class:`linkdyn.gateware.bus.RegisterBusSignature`.
    """

    def read(self, node, addr):
        """Return ``(ok, word)``."""
        raise NotImplementedError

    def write(self, node, addr, word):
        """Return ``ok`` (``False``: refused, nothing changed)."""
        raise NotImplementedError


class ReferenceEngine:
    """Executable reference of the board's protocol engine, byte for byte.

    It receives request bytes and produces reply bytes exactly as
    :class:`linkdyn.gateware.protocol.ProtocolEngine` does, executing the commands on a
    :class:`RegisterTarget`. The gateware is tested equal to it; a host can use it (with a
    target that models the chain) as a software board.

    Parameters
    ----------
    spec : ProtocolSpec
    target : RegisterTarget
    max_polls : int
        STATUS polls after a STEP's start before a TIMEOUT error (the gateware counts cycles).
    counter_width : int
        Width of the saturating error counters, bits.
    """

    def __init__(self, spec, target, *, max_polls=1 << 20, counter_width=16):
        self.spec = spec
        self.target = target
        self.max_polls = max_polls
        self.counter_max = (1 << counter_width) - 1
        self.counters = {reg.name: 0 for reg in CONTROL_REGISTERS
                         if reg.owner == "engine" and reg.address < INFO_FIRST}
        self._info = spec.build_info()
        self._hunt()

    def _hunt(self):
        self._state = "hunt"
        self._frame = bytearray()

    # reception --------------------------------------------------------------------------------

    def receive(self, data):
        """Receive bytes sent back to back; return the reply bytes they cause."""
        out = bytearray()
        for byte in bytes(data):
            out += self._byte(byte)
        return bytes(out)

    def idle(self):
        """The line went idle for longer than the inter-byte timeout; return the reply bytes."""
        if self._state == "hunt":
            return b""
        frame = bytes(self._frame) + bytes(REQUEST_HEADER_BYTES)
        self._hunt()
        return self._reply(frame[2], frame[3], ErrorCode.TRUNCATED, [])

    def uart_error(self, frame=False, overflow=False):
        """Count a UART frame error or receive overflow (the UART reports them)."""
        if frame:
            self._count("UART_FRAME_ERRORS")
        if overflow:
            self._count("UART_OVERFLOWS")

    def _byte(self, byte):
        if self._state == "hunt":
            if byte == REQUEST_SYNC:
                self._frame = bytearray([byte])
                self._state = "frame"
            return b""
        self._frame.append(byte)
        frame = self._frame
        if len(frame) == REQUEST_HEADER_BYTES:
            length = struct.unpack_from("<H", frame, 4)[0]
            if length > self.spec.max_payload_bytes:
                self._hunt()
                return self._reply(frame[2], frame[3], ErrorCode.BAD_LENGTH, [])
        if len(frame) >= REQUEST_HEADER_BYTES:
            length = struct.unpack_from("<H", frame, 4)[0]
            if len(frame) == REQUEST_HEADER_BYTES + length + CRC_BYTES:
                self._hunt()
                return self._execute(bytes(frame))
        return b""

    # execution ----------------------------------------------------------------------------------

    def _execute(self, frame):
        seq, command = frame[2], frame[3]
        length = struct.unpack_from("<H", frame, 4)[0]
        payload = frame[REQUEST_HEADER_BYTES:REQUEST_HEADER_BYTES + length]
        (crc,) = struct.unpack_from("<H", frame, REQUEST_HEADER_BYTES + length)
        status, words = self._run(frame[1], command, payload, crc,
                                  crc16(frame[1:REQUEST_HEADER_BYTES + length]))
        return self._reply(seq, command, status, words if status == ErrorCode.OK else [])

    def _run(self, version, command, payload, crc, computed):
        spec = self.spec
        if crc != computed:
            return ErrorCode.BAD_CRC, []
        if version != PROTOCOL_VERSION:
            return ErrorCode.BAD_VERSION, []
        if command not in set(Command):
            return ErrorCode.UNKNOWN_COMMAND, []
        command = Command(command)
        lengths = spec.request_lengths(command)
        words = bytes_to_words(payload + bytes(-len(payload) % WORD_BYTES))
        node = addr = count = 0
        if lengths is not None:
            if len(payload) not in lengths:
                return ErrorCode.BAD_LENGTH, []
        else:
            if len(payload) % WORD_BYTES or len(payload) < 2 * WORD_BYTES:
                return ErrorCode.BAD_LENGTH, []
        if command in (Command.READ, Command.WRITE):
            node, addr, count = words[0] & 0xFF, (words[0] >> 8) & 0xFF, words[0] >> 16
            if command is Command.READ and not 1 <= count <= spec.buffer_words:
                return ErrorCode.BAD_LENGTH, []
            if command is Command.WRITE and count != len(words) - 1:
                return ErrorCode.BAD_LENGTH, []
            if not spec.node_valid(node):
                return ErrorCode.BAD_NODE, []
            for k in range(count):
                access = spec.access(node, addr + k) if addr + k < 256 else Access(False)
                if not access.exists:
                    return ErrorCode.BAD_ADDRESS, []
                if command is Command.WRITE and not access.writable:
                    return ErrorCode.READ_ONLY, []
        if command in STATE_CHANGING:
            ok, status = self._access(CONTROL_NODE, STATUS_FIRST)
            if not ok:
                return ErrorCode.BUS_ERROR, []
            if status & STATUS_BUSY:
                return ErrorCode.BUSY, []
        try:
            return ErrorCode.OK, self._command(command, node, addr, count, words)
        except _Abort as abort:
            return abort.code, []

    def _command(self, command, node, addr, count, words):
        spec = self.spec
        n = spec.n_nodes
        if command is Command.INFO:
            return self._block(CONTROL_NODE, INFO_FIRST, INFO_COUNT)
        if command is Command.STATUS:
            return self._block(CONTROL_NODE, STATUS_FIRST, STATUS_COUNT)
        if command is Command.READ:
            return self._block(node, addr, count)
        if command is Command.WRITE:
            self._block(node, addr, count, words[1:])
            return []
        if command is Command.CLEAR:
            self._block(CONTROL_NODE, 0, 1, [CONTROL_CLEAR])
            return []
        if command is Command.LOAD_ROBOT:
            c = spec.constant_count
            for i in range(n):
                self._block(i, 0, c, words[i * c:(i + 1) * c])
            self._block(0, spec.base_motion_address, spec.base_motion_count, words[n * c:])
            return []
        # STEP
        k = len(words) // n
        for i in range(n):
            self._block(i, spec.input_address, k, words[i * k:(i + 1) * k])
        self._block(CONTROL_NODE, 0, 1, [CONTROL_START])
        for _ in range(self.max_polls):
            (status,) = self._block(CONTROL_NODE, STATUS_FIRST, 1)
            if status & STATUS_DONE and not status & STATUS_BUSY:
                break
        else:
            raise _Abort(ErrorCode.TIMEOUT)
        tau = [self._block(i, spec.tau_address, 1)[0] for i in range(n)]
        return tau + self._block(CONTROL_NODE, STEP_CONTROL_FIRST, STEP_CONTROL_COUNT)

    def _block(self, node, addr, count, data=None):
        out = []
        for k in range(count):
            ok, word = self._access(node, addr + k, None if data is None else data[k])
            if not ok:
                raise _Abort(ErrorCode.BUS_ERROR)
            out.append(word)
        return out

    def _access(self, node, addr, data=None):
        if node == CONTROL_NODE:
            reg = next((r for r in CONTROL_REGISTERS if r.address == addr), None)
            if reg is not None and reg.owner == "engine":
                if data is not None:
                    return False, 0
                if reg.name in self.counters:
                    return True, self.counters[reg.name]
                return True, self._info[reg.name]
        if data is None:
            return self.target.read(node, addr)
        ok = self.target.write(node, addr, data)
        if ok and node == CONTROL_NODE and addr == 0 and data & CONTROL_CLEAR:
            for name in self.counters:
                if name != "FRAME_COUNT":
                    self.counters[name] = 0
        return ok, data

    def _count(self, name):
        if name == "FRAME_COUNT":
            self.counters[name] = (self.counters[name] + 1) & 0xFFFFFFFF
        else:
            self.counters[name] = min(self.counters[name] + 1, self.counter_max)

    def _reply(self, seq, command, status, words):
        self._count("FRAME_COUNT" if status == ErrorCode.OK else f"ERRORS_{status.name}")
        return encode_reply(seq, command & 0xFF, status, words)


class _Abort(Exception):
    def __init__(self, code):
        self.code = code


# -- documentation -----------------------------------------------------------------------------

def _row(*cells):
    """Return a Markdown table row, with ``|`` inside cells escaped."""
    return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"


def _frame_table(header, reply):
    lines = ["| offset | bytes | field | value |", "|---:|---:|---|---|"]
    offset = 0
    values = {
        "sync": f"`{REPLY_SYNC:#04x}`" if reply else f"`{REQUEST_SYNC:#04x}`",
        "version": f"`{PROTOCOL_VERSION}` (PROTOCOL_VERSION)",
        "seq": "sequence number" + (", echoed from the request" if reply else
                                    ", chosen by the host"),
        "command": "command code of the request" if reply else "command code",
        "status": "error code, `0` = OK",
        "length": "payload length L in bytes",
    }
    for name, bits in header:
        lines.append(_row(offset, bits // 8, name, values[name]))
        offset += bits // 8
    lines.append(_row(offset, "L", "payload", "32-bit little-endian words"))
    lines.append(_row(f"{offset}+L", CRC_BYTES, "crc",
                      f"{CRC16.name} of bytes 1 .. {offset - 1}+L (little-endian)"))
    return "\n".join(lines)


def generate_markdown(n_nodes=6, fmt=Q15_16):
    """Return the text of ``docs/protocol.md``, generated from this module.

    Parameters
    ----------
    n_nodes : int
        Node count used for the example sizes.
    fmt : QFormat
        Node word format of the register map.
    """
    spec = ProtocolSpec(n_nodes, fmt)
    n = "n"
    c, b = spec.constant_count, spec.base_motion_count
    out = []
    w = out.append
    w("# LinkDyn host link protocol")
    w("")
    w("<!-- Generated by `python -m linkdyn.model.protocol --markdown > docs/protocol.md` from "
      "`model/protocol.py` and `model/microprogram.py`; do not edit by hand "
      "(tests/test_protocol_docs.py checks it). -->")
    w("")
    w(f"Protocol version **{PROTOCOL_VERSION}**. The host sends request frames over the serial "
      f"line (8N1, default {DEFAULT_BAUDRATE:,} baud where the board clock allows it); the "
      "board answers every request with exactly one reply, in order. All multi-byte fields are "
      "little-endian; payloads are 32-bit words.")
    w("")
    w("## Frames")
    w("")
    w("Request:")
    w("")
    w(_frame_table(REQUEST_HEADER, False))
    w("")
    w("Reply:")
    w("")
    w(_frame_table(REPLY_HEADER, True))
    w("")
    w(f"The CRC is {CRC16.name}: polynomial `{CRC16.polynomial:#06x}`, initial value "
      f"`{CRC16.initial_crc:#06x}`, no reflection, no final XOR (check value of `123456789`: "
      f"`{CRC16.check:#06x}`). An error reply has an empty payload. Requests and replies have "
      "different sync bytes, so an echoed reply is never taken for a request.")
    w("")
    w("### Reception, errors and resynchronisation")
    w("")
    w("- The engine hunts for the request sync byte, then collects the header. A length larger "
      f"than the frame buffer ({spec.buffer_words} words = {spec.max_payload_bytes} bytes for "
      f"n = {n_nodes}; `BUFFER_WORDS` in INFO) is answered with BAD_LENGTH right after the "
      "header, and the engine hunts again.")
    w("- Otherwise it collects the payload and the CRC and validates the *whole* frame before "
      "executing anything: CRC, version, command, length, node, every address of a block, "
      "write access, chain idle. The first failing check of the error table (in its order) is "
      "reported. A malformed frame changes no state (except the engine's error counters).")
    w(f"- A gap longer than the inter-byte timeout ({INTER_BYTE_TIMEOUT * 1e3:g} ms by default) "
      "inside a frame ends it with a TRUNCATED reply (seq and command as far as received, else "
      "0).")
    w("- After any error the engine hunts for the next sync byte. A host recovering from an "
      "error or a missing reply waits for the inter-byte timeout (an idle line) before sending "
      "again; that always resynchronises the engine.")
    w("- Stream mode: the host may send STEP frames back to back; the board answers each in "
      "order. The host keeps at most as many requests outstanding as fit the board's receive "
      "FIFO.")
    w("")
    w("## Commands")
    w("")
    w("| code | command | request payload (words) | reply payload (words) |")
    w("|---:|---|---|---|")
    rows = {
        Command.INFO: ("none", f"build info, control words `{INFO_FIRST:#04x}` .. "
                               f"`{INFO_FIRST + INFO_COUNT - 1:#04x}` ({INFO_COUNT})"),
        Command.READ: ("block word (`node | addr << 8 | count << 16`), 1 <= count <= "
                       "BUFFER_WORDS", "count words of the node from addr"),
        Command.WRITE: ("block word, then count words", "none"),
        Command.LOAD_ROBOT: (f"per node its {c} constant words (address order), then node 0's "
                             f"{b} forward-mailbox words (base motion): {n}·{c} + {b}", "none"),
        Command.STEP: (f"per node `q, qd, qdd` (3·{n}), or per node all {spec.input_count} "
                       f"inputs `q .. mu_ext_z` ({spec.input_count}·{n})",
                       f"per node `tau`, then control words OVERFLOW .. UPDATE_COUNT: "
                       f"{n} + {STEP_CONTROL_COUNT}"),
        Command.STATUS: ("none", f"control words `{STATUS_FIRST:#04x}` .. "
                                 f"`{STATUS_FIRST + STATUS_COUNT - 1:#04x}` ({STATUS_COUNT})"),
        Command.CLEAR: ("none", "none"),
    }
    for cmd in Command:
        req, rep = rows[cmd]
        w(_row(f"`{cmd.value:#04x}`", cmd.name, req, rep))
    w("")
    w("What the commands do, as bus transactions on the chain (`CONTROL_NODE` = "
      f"`{CONTROL_NODE:#04x}`):")
    w("")
    w("- INFO, STATUS: read the control words (the engine answers its own words itself).")
    w("- READ / WRITE: one bus access per word. Nodes: every address below NODE_MAP_SIZE "
      f"({spec.node_map_size}) is readable; constants and inputs (`0` .. "
      f"`{spec.writable_end - 1}`) are writable, and on node 0 also the forward mailbox "
      f"(`{spec.writable_end}` .. `{spec.writable_end_node0 - 1}`, the base motion). Control "
      "block: see the map; CONTROL is the only writable word.")
    w(f"- LOAD_ROBOT: writes constants `0` .. `{c - 1}` of every node, then the base motion.")
    w(f"- STEP: writes inputs from `{spec.input_address}` (q, qd, qdd [, f_ext, mu_ext]) of "
      "every node, writes CONTROL.start, polls STATUS until done (else TIMEOUT, after "
      f"{STEP_TIMEOUT * 1e3:g} ms by default), reads `tau` "
      f"(address `{spec.tau_address}`) of every node and OVERFLOW .. UPDATE_COUNT. Without the "
      "wrench words the external wrench registers keep their values.")
    w("- CLEAR: writes CONTROL.clear (the chain clears its sticky overflow flags, the engine "
      "its error counters; FRAME_COUNT stays).")
    w("- WRITE, LOAD_ROBOT, STEP and CLEAR first read STATUS and answer BUSY if an update runs.")
    w("")
    w(f"Sizes for n = {n_nodes}: LOAD_ROBOT {spec.load_robot_words} words, STEP "
      f"{spec.step_words()} or {spec.step_words(True)} words, STEP reply "
      f"{spec.step_reply_words} words, frame buffer {spec.buffer_words} words.")
    w("")
    w("## Error codes")
    w("")
    w("Checked in this order; the first failing check is the reply's status.")
    w("")
    w("| code | name | meaning |")
    w("|---:|---|---|")
    for code in ErrorCode:
        w(_row(f"`{code.value:#04x}`", code.name, _ERROR_DOCS[code]))
    w("")
    w(f"## Control block (node `{CONTROL_NODE:#04x}`)")
    w("")
    w("Owner *chain*: implemented by the chain behind the register bus "
      "(`linkdyn.gateware.bus`). Owner *engine*: answered by the protocol engine, never on "
      "the bus. Other addresses do not exist (BAD_ADDRESS).")
    w("")
    w("| address | name | access | owner | unit | meaning |")
    w("|---:|---|---|---|---|---|")
    for reg in CONTROL_REGISTERS:
        w(_row(f"`{reg.address:#04x}`", reg.name, reg.access, reg.owner, reg.unit, reg.doc))
    for reg in (control_register("CONTROL"), control_register("STATUS")):
        w("")
        w(f"{reg.name} bits:")
        w("")
        w("| bit | name | meaning |")
        w("|---:|---|---|")
        for f in reg.fields:
            w(_row(f.offset, f.name, f.doc))
    w("")
    w("### What the chain implements at the control block")
    w("")
    w("- Every bus access is answered (`ready`) within a bounded time; STATUS reads also while "
      "an update runs.")
    w("- CONTROL (write): `start` starts one update unless one is running (then the write is "
      "refused with `error`); from the completion of the accepted write on, STATUS reads "
      "busy = 1, done = 0 until the update ends, then busy = 0, done = 1. `clear` zeroes "
      "OVERFLOW_STICKY. Reads of CONTROL return 0.")
    w("- STATUS, OVERFLOW, OVERFLOW_STICKY, LATENCY_CYCLES, INTERVAL_CYCLES, UPDATE_COUNT as in "
      "the map (read-only: writes are refused).")
    w("- Engine-owned addresses never reach the bus; the chain may refuse them.")
    w("- Node registers: reads of every address below NODE_MAP_SIZE; writes of the host-writable "
      "words of the node map below, refused (nothing changed) while an update runs; node 0's "
      "forward mailbox holds the base motion and is not overwritten by the chain.")
    w("")
    w("## Node register map")
    w("")
    w(f"Every node has the same map (word format {fmt.name}; formats give the fractional bits "
      "of the 32-bit word). Access: `r` read, `w` write, `w0` writable on node 0 only.")
    w("")
    w("| address | name | kind | format | unit | access | meaning |")
    w("|---:|---|---|---|---|---|---|")
    for reg in spec.registers:
        if reg.address is None:
            continue
        if reg.address < spec.writable_end:
            access = "rw"
        elif reg.address < spec.writable_end_node0:
            access = "r, w0"
        else:
            access = "r"
        w(_row(reg.address, reg.name, reg.kind,
               f"{reg.format.name} ({reg.format.fraction_bits})", reg.unit, access, reg.doc))
    w("")
    w("## Example")
    w("")
    req = encode_request(Command.READ, read_payload(0, spec.tau_address, 1), seq=7)
    rep = encode_reply(7, Command.READ, ErrorCode.OK, [0x00018000])
    err = encode_reply(8, Command.WRITE, ErrorCode.READ_ONLY)
    w(f"READ `tau` of node 0 (seq 7): `{req.hex(' ')}`; reply with 1.5 N·m: `{rep.hex(' ')}`; "
      f"an error reply READ_ONLY to seq 8: `{err.hex(' ')}`.")
    w("")
    return "\n".join(out)


def main(argv=None):
    """Command line: ``python -m linkdyn.model.protocol --markdown [--nodes N]``."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.model.protocol",
                                     description="LinkDyn host link protocol definition.")
    parser.add_argument("--markdown", action="store_true",
                        help="print docs/protocol.md (generated from this module)")
    parser.add_argument("--nodes", type=int, default=6, help="node count of the example sizes")
    args = parser.parse_args(argv)
    if not args.markdown:
        parser.print_help()
        return 0
    sys.stdout.write(generate_markdown(args.nodes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
