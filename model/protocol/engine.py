"""The executable reference of the board's protocol engine (:class:`ReferenceEngine`) and the
register-bus target it executes commands on (:class:`RegisterTarget`)."""

from __future__ import annotations

import struct

from .frames import (
    CRC_BYTES, PROTOCOL_VERSION, REQUEST_HEADER_BYTES, REQUEST_SYNC, STATE_CHANGING,
    WORD_BYTES, Command, ErrorCode, bytes_to_words, crc16, encode_reply,
)
from .controller_map import RECORD_WORDS, REFERENCE_WORDS
from .registers import (
    CONTROL_CLEAR, CONTROL_NODE, CONTROL_REGISTERS, CONTROL_START, CONTROL_STEP, INFO_COUNT, INFO_FIRST,
    RESULT_FOLLOW, RESULT_SELECT, STATUS_BUSY, STATUS_COUNT, STATUS_DONE, STATUS_FIRST,
    STEP_CONTROL_COUNT, STEP_CONTROL_FIRST, Access, control_register,
)

__all__ = ["RegisterTarget", "ReferenceEngine"]

_CONTROL_ADDR = control_register("CONTROL").address
_UPDATE_COUNT_ADDR = control_register("UPDATE_COUNT").address


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
        self._info = spec.engine_words()
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
        if command not in spec.commands:
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
        if command is Command.BATCH and len(payload) not in spec.batch_lengths(words[0]):
            return ErrorCode.BAD_LENGTH, []
        if command in (Command.READ, Command.WRITE):
            node, addr, count = words[0] & 0xFF, (words[0] >> 8) & 0xFF, words[0] >> 16
            if command is Command.READ and not 1 <= count <= spec.buffer_words:
                return ErrorCode.BAD_LENGTH, []
            if command is Command.WRITE and count != len(words) - 1:
                return ErrorCode.BAD_LENGTH, []
            if not spec.node_valid(node):
                return ErrorCode.BAD_NODE, []
            # The error table's order: every word exists (BAD_ADDRESS), then every word of a
            # WRITE is writable (READ_ONLY), whatever the order of the words in the block.
            accesses = [spec.access(node, addr + k) if addr + k < 256 else Access(False)
                        for k in range(count)]
            if not all(access.exists for access in accesses):
                return ErrorCode.BAD_ADDRESS, []
            if command is Command.WRITE and not all(access.writable for access in accesses):
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
            self._block(CONTROL_NODE, _CONTROL_ADDR, 1, [CONTROL_CLEAR])
            return []
        if command is Command.LOAD_ROBOT:
            c = spec.constant_count
            for i in range(n):
                self._block(i, 0, c, words[i * c:(i + 1) * c])
            self._block(0, spec.base_motion_address, spec.base_motion_count, words[n * c:])
            return []
        if command is Command.CONTROL:
            # The references into every node's controller window, one control step, the
            # records back (controller_map).
            k = len(REFERENCE_WORDS)
            for i in range(n):
                self._block(i, REFERENCE_WORDS[0].address, k, words[i * k:(i + 1) * k])
            self._block(CONTROL_NODE, _CONTROL_ADDR, 1, [CONTROL_STEP])
            self._poll()
            records = []
            for i in range(n):
                records += self._block(i, RECORD_WORDS[0].address, len(RECORD_WORDS))
            return records + self._block(CONTROL_NODE, STEP_CONTROL_FIRST, STEP_CONTROL_COUNT)
        if command is Command.BATCH:
            return self._batch(words)
        # STEP
        k = len(words) // n
        for i in range(n):
            self._block(i, spec.input_address, k, words[i * k:(i + 1) * k])
        self._block(CONTROL_NODE, _CONTROL_ADDR, 1, [CONTROL_START])
        self._poll()
        tau = [self._block(i, spec.tau_address, 1)[0] for i in range(n)]
        return tau + self._block(CONTROL_NODE, STEP_CONTROL_FIRST, STEP_CONTROL_COUNT)

    def _batch(self, words):
        """BATCH on a pipelined chain: sample j+1's inputs written and started while sample j
        runs (every sample in a bank of its own: K <= banks), then every result in turn
        through RESULT_SELECT, then RESULT_SELECT back to `follow`."""
        spec = self.spec
        n = spec.n_nodes
        samples = words[0]
        k = (len(words) - 1) // (samples * n)
        for j in range(samples):
            base = 1 + j * n * k
            for i in range(n):
                self._block(i, spec.input_address, k, words[base + i * k:base + (i + 1) * k])
            self._block(CONTROL_NODE, _CONTROL_ADDR, 1, [CONTROL_START])
        self._poll()
        # The chain was idle when the batch began (BUSY check): the last K updates are its.
        (count,) = self._block(CONTROL_NODE, _UPDATE_COUNT_ADDR, 1)
        first = count - samples + 1
        reply = []
        for j in range(samples):
            number = (first + j) & (RESULT_FOLLOW - 1)
            self._block(CONTROL_NODE, RESULT_SELECT, 1, [number])
            reply += [self._block(i, spec.tau_address, 1)[0] for i in range(n)]
            reply += self._block(CONTROL_NODE, STEP_CONTROL_FIRST, 1)
            reply += self._block(CONTROL_NODE, RESULT_SELECT, 1)
        self._block(CONTROL_NODE, RESULT_SELECT, 1, [RESULT_FOLLOW])
        return reply + self._block(CONTROL_NODE, STEP_CONTROL_FIRST, STEP_CONTROL_COUNT)

    def _poll(self):
        """Poll STATUS until the update (or control step) started has finished."""
        for _ in range(self.max_polls):
            (status,) = self._block(CONTROL_NODE, STATUS_FIRST, 1)
            if status & STATUS_DONE and not status & STATUS_BUSY:
                break
        else:
            raise _Abort(ErrorCode.TIMEOUT)

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
        if ok and node == CONTROL_NODE and addr == _CONTROL_ADDR and data & CONTROL_CLEAR:
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
