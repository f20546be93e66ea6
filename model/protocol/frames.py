"""Frames of the host link protocol: sync bytes, headers, CRC, codes, encoder and decoders.

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
"""

from __future__ import annotations

import binascii
import enum
import struct
from dataclasses import dataclass

__all__ = [
    "PROTOCOL_VERSION", "REQUEST_SYNC", "REPLY_SYNC", "WORD_BYTES",
    "REQUEST_HEADER", "REPLY_HEADER", "REQUEST_HEADER_BYTES", "REPLY_HEADER_BYTES",
    "CRC_BYTES", "BLOCK_FIELDS", "CRC16", "crc16", "INTER_BYTE_TIMEOUT", "STEP_TIMEOUT",
    "DEFAULT_BAUDRATE", "Command", "ErrorCode", "ERROR_DOCS", "STATE_CHANGING",
    "Request", "Reply", "ProtocolError", "FrameSyncError", "TruncatedFrameError",
    "ChecksumError", "VersionError", "UnknownCommandError", "PayloadError", "DeviceError",
    "words_to_bytes", "bytes_to_words", "encode_request", "decode_request", "encode_reply",
    "decode_reply", "split_frame", "ReplyDecoder",
]

PROTOCOL_VERSION = 5

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
    (``tests/model/test_protocol.py`` checks it against Amaranth's CRC catalogue).
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
    CONTROL = 0x08
    BATCH = 0x09


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


#: Meaning of each :class:`ErrorCode` (the error table of ``docs/protocol.md``).
ERROR_DOCS = {
    ErrorCode.OK: "executed",
    ErrorCode.BAD_CRC: "the CRC does not match the frame",
    ErrorCode.TRUNCATED: "the line went idle for longer than the inter-byte timeout inside a "
                         "frame",
    ErrorCode.BAD_VERSION: "the frame's version is not PROTOCOL_VERSION",
    ErrorCode.UNKNOWN_COMMAND: "the command code is not defined, or not built into this "
                               "board (CONTROL without joint controllers, BATCH on a "
                               "sequential chain)",
    ErrorCode.BAD_LENGTH: "the payload length is wrong for the command (or larger than the "
                          "frame buffer, reported right after the header), or a block count "
                          "is 0, exceeds the buffer or disagrees with the length, or a BATCH "
                          "sample count is 0, exceeds the chain's banks or disagrees with "
                          "the length",
    ErrorCode.BAD_NODE: "the node is neither 0 .. n-1 nor CONTROL_NODE",
    ErrorCode.BAD_ADDRESS: "a word of the block is outside the node's register map",
    ErrorCode.READ_ONLY: "a word of a WRITE block is not writable by the host",
    ErrorCode.BUSY: "a state-changing command (WRITE, LOAD_ROBOT, STEP, BATCH, CLEAR) arrived "
                    "while "
                    "the chain is busy with an update",
    ErrorCode.BUS_ERROR: "the chain refused a register access the protocol allows: a "
                         "RESULT_SELECT value that does not select a kept update, else a "
                         "chain defect (earlier words of the command may have been written)",
    ErrorCode.TIMEOUT: "the update started by STEP (the updates started by BATCH) did not "
                       "finish within the step timeout; the chain stays busy until it does",
}

#: Commands that change state: they need the chain idle (else BUSY).
STATE_CHANGING = frozenset({Command.WRITE, Command.LOAD_ROBOT, Command.STEP, Command.CLEAR,
                            Command.CONTROL, Command.BATCH})


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
                         f"(seq {reply.seq}): {ERROR_DOCS[self.code]}")


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
