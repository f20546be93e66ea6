"""The host link protocol: the one definition shared by the gateware and the host.

The board and the host PC exchange *frames* over a serial line (8N1, default 3 Mbaud). The host
sends *requests*; the board answers every request with exactly one *reply*, in order. Everything
the two sides must agree on is defined here, as data: the frame layout, the command and error
codes, the payload layouts, the register map of the chain's control block at
:data:`CONTROL_NODE`, the access rules of the node registers
(:class:`~linkdyn.model.microprogram.RegisterMap`), the CRC, and an executable reference of the
board's protocol engine (:class:`ReferenceEngine`). The gateware (:mod:`linkdyn.gateware.protocol`)
derives its constants from this module, and ``docs/protocol.md`` is generated from it::

    python -m linkdyn.model.protocol --markdown > docs/protocol.md

Frames
------
A request is a sync byte (0xA5), version, sequence number, command, payload length, the
payload of 32-bit little-endian words and a CRC-16; a reply has the sync byte 0x5A and one more
header byte, the status (:mod:`~linkdyn.model.protocol.frames` has the byte layout).

Reception (board side): the engine hunts for the sync byte, collects the header and, if the
length fits its frame buffer, the payload and the CRC, then validates the *whole* frame (CRC,
version, command, length, node, addresses, access, busy) before it executes anything, so a
malformed frame changes no state. A gap of more than the inter-byte timeout inside a frame ends
it with a TRUNCATED error reply. After any error the engine hunts for the next sync byte; a host
that recovers from an error waits for the timeout (an idle line) before it sends again, which
always resynchronises the engine.

Modules
-------
:mod:`~linkdyn.model.protocol.frames`
    Sync bytes, headers, CRC, command and error codes, encoder and decoders of frames.
:mod:`~linkdyn.model.protocol.registers`
    The control block's register map, the node access rules, :class:`ProtocolSpec`.
:mod:`~linkdyn.model.protocol.payloads`
    Request payload builders and reply payload decoders.
:mod:`~linkdyn.model.protocol.engine`
    :class:`ReferenceEngine`, the executable reference of the board's engine.
:mod:`~linkdyn.model.protocol.document`
    The generator of ``docs/protocol.md``.

Every public name of these modules is available from :mod:`linkdyn.model.protocol` itself.
"""

from .document import generate_markdown, main
from .engine import ReferenceEngine, RegisterTarget
from .frames import (
    BLOCK_FIELDS, CRC16, CRC_BYTES, DEFAULT_BAUDRATE, ERROR_DOCS, INTER_BYTE_TIMEOUT,
    PROTOCOL_VERSION, REPLY_HEADER, REPLY_HEADER_BYTES, REPLY_SYNC, REQUEST_HEADER,
    REQUEST_HEADER_BYTES, REQUEST_SYNC, STATE_CHANGING, STEP_TIMEOUT, WORD_BYTES,
    ChecksumError, Command, DeviceError, ErrorCode, FrameSyncError, PayloadError,
    ProtocolError, Reply, ReplyDecoder, Request, TruncatedFrameError, UnknownCommandError,
    VersionError, bytes_to_words, crc16, decode_reply, decode_request, encode_reply,
    encode_request, split_frame, words_to_bytes,
)
from .payloads import (
    BuildInfo, ChainStatus, StepResult, block_word, load_robot_payload, read_payload,
    step_payload, write_payload,
)
from .registers import (
    CONTROL_CLEAR, CONTROL_FIELDS, CONTROL_NODE, CONTROL_REGISTERS, CONTROL_START, INFO_COUNT,
    INFO_FIRST, MAGIC, MAX_NODES, RESULT_FOLLOW, RESULT_SELECT, RESULT_SELECT_FIELDS,
    STATUS_BUSY, STATUS_COUNT, STATUS_DONE, STATUS_FIELDS, STATUS_FIRST, STATUS_OVERFLOW,
    STEP_CONTROL_COUNT, STEP_CONTROL_FIRST, Access, ControlField, ControlRegister, ProtocolSpec,
    control_register,
)

# The former private name of ERROR_DOCS (linkdyn.host.board imports it).
_ERROR_DOCS = ERROR_DOCS

__all__ = [
    "PROTOCOL_VERSION", "REQUEST_SYNC", "REPLY_SYNC", "WORD_BYTES",
    "REQUEST_HEADER", "REPLY_HEADER", "REQUEST_HEADER_BYTES", "REPLY_HEADER_BYTES",
    "CRC_BYTES", "BLOCK_FIELDS", "CRC16", "crc16", "CONTROL_NODE", "MAX_NODES",
    "INTER_BYTE_TIMEOUT", "STEP_TIMEOUT", "DEFAULT_BAUDRATE", "Command", "ErrorCode",
    "ERROR_DOCS", "STATE_CHANGING", "ControlRegister", "MAGIC", "CONTROL_START",
    "CONTROL_CLEAR", "STATUS_BUSY", "STATUS_DONE", "STATUS_OVERFLOW", "RESULT_SELECT",
    "RESULT_FOLLOW", "STATUS_FIRST", "STATUS_COUNT", "INFO_FIRST", "INFO_COUNT",
    "STEP_CONTROL_FIRST", "STEP_CONTROL_COUNT", "ControlField", "CONTROL_REGISTERS",
    "CONTROL_FIELDS", "STATUS_FIELDS", "RESULT_SELECT_FIELDS", "control_register",
    "ProtocolSpec", "Access", "Request", "Reply", "BuildInfo", "ChainStatus", "StepResult",
    "ProtocolError", "FrameSyncError", "TruncatedFrameError", "ChecksumError", "VersionError",
    "UnknownCommandError", "PayloadError", "DeviceError", "words_to_bytes", "bytes_to_words",
    "encode_request", "decode_request", "encode_reply", "decode_reply", "split_frame",
    "ReplyDecoder", "block_word", "read_payload", "write_payload", "load_robot_payload",
    "step_payload", "ReferenceEngine", "RegisterTarget", "generate_markdown",
]
