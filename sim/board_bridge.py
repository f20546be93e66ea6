"""The cocotb side of :class:`linkdyn.sim.board.SimulatedBoard`: a pseudo-terminal on the pins.

This module is the cocotb test module the simulator runs (``COCOTB_TEST_MODULES``); it is not
meant to be imported by host code. Its one test, :func:`serve_pseudo_terminal`, drives the
board core's clock and reset, opens a pseudo-terminal (``os.openpty``, raw mode) and bridges it
to the UART pins until it is told to stop:

- bytes written by the host to the pseudo-terminal's slave side are sent on ``rx`` as 8N1
  frames, bit by bit, at the board's divisor (:class:`UARTSource`);
- ``tx`` is sampled in the middle of every bit (:class:`UARTSink`) and each byte is written
  to the pseudo-terminal for the host to read.

So the whole board (UART receiver and transmitter, FIFOs, protocol engine, chain) is in the
loop, and a host using pyserial on the slave path cannot tell it from a board on a USB serial
adapter, apart from the speed.

Simulated time
--------------
Simulated time only runs while there is something to simulate: while bytes are sent or
received, and for ``quiet_cycles`` after the last of them (at least the board's step timeout
plus its inter-byte timeout, so that a running update, a STEP timeout or a TRUNCATED reply
always finishes). Then the bridge blocks on the pseudo-terminal without advancing time until
the host writes again. Bytes the host writes in several pieces are sent back to back if the
pieces arrive within ``join_seconds`` of wall-clock time while a request frame is incomplete
(the bridge follows the request framing of :mod:`linkdyn.model.protocol` for this only; it
never alters a byte), so that the operating system's splitting of writes does not truncate
frames.

Parameters arrive in environment variables (``LINKDYN_BRIDGE_*``, see :func:`_config`) set by
:class:`~linkdyn.sim.board.SimulatedBoard`. When the board is ready the bridge writes the
ready file (JSON: ``port``, ``pid``); it stops when the stop file appears or the owner process
is gone.
"""

from __future__ import annotations

import errno
import json
import os
import select
import struct
import time
import tty

import cocotb
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from cocotb.triggers import FallingEdge, Timer

from linkdyn.model.protocol import REQUEST_HEADER_BYTES, REQUEST_SYNC, CRC_BYTES

__all__ = ["UARTSource", "UARTSink", "PseudoTerminal", "RequestFramer", "serve_pseudo_terminal"]

#: Bytes kept for the host at most when it does not read (then the oldest are dropped, as a
#: real serial port's buffer overflows).
OUTPUT_LIMIT = 1 << 20


def _config():
    env = os.environ
    return {
        "divisor": int(env["LINKDYN_BRIDGE_DIVISOR"]),
        "period_steps": int(env["LINKDYN_BRIDGE_PERIOD_STEPS"]),
        "quiet_cycles": int(env["LINKDYN_BRIDGE_QUIET_CYCLES"]),
        "poll_cycles": int(env.get("LINKDYN_BRIDGE_POLL_CYCLES", "64")),
        "join_seconds": float(env.get("LINKDYN_BRIDGE_JOIN_SECONDS", "0.02")),
        "ready_file": env["LINKDYN_BRIDGE_READY_FILE"],
        "stop_file": env["LINKDYN_BRIDGE_STOP_FILE"],
        "owner_pid": int(env.get("LINKDYN_BRIDGE_OWNER_PID", "0")),
        "trace_file": env.get("LINKDYN_BRIDGE_TRACE_FILE") or None,
    }


class PseudoTerminal:
    """A pseudo-terminal pair in raw mode; the bridge holds the master side.

    The slave side stays open here as well, so that the master never sees a hang-up while no
    host has the port open (hosts may come and go).

    Attributes
    ----------
    port : str
        Path of the slave side (``/dev/pts/N``), what the host opens.
    """

    def __init__(self):
        self.master, self._slave = os.openpty()
        tty.setraw(self._slave)
        os.set_blocking(self.master, False)
        self.port = os.ttyname(self._slave)
        self._output = bytearray()
        self.dropped = 0

    def read(self, timeout=0.0):
        """Return the bytes the host wrote (``b""`` if none within ``timeout`` seconds)."""
        if timeout:
            readable, _, _ = select.select([self.master], [], [], timeout)
            if not readable:
                return b""
        try:
            return os.read(self.master, 4096)
        except BlockingIOError:
            return b""
        except OSError as error:            # EIO: no slave side open (cannot happen here)
            if error.errno == errno.EIO:
                return b""
            raise

    def write(self, data):
        """Queue bytes for the host and send what the terminal takes now."""
        self._output += data
        if len(self._output) > OUTPUT_LIMIT:
            excess = len(self._output) - OUTPUT_LIMIT
            del self._output[:excess]
            self.dropped += excess
        self.flush()

    def flush(self):
        """Send queued bytes as far as the terminal's buffer takes them (never blocks)."""
        while self._output:
            try:
                sent = os.write(self.master, self._output)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:
                if error.errno == errno.EIO:
                    return
                raise
            del self._output[:sent]

    def close(self):
        """Close both sides."""
        for fd in (self.master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass


class RequestFramer:
    """Follow the request framing of the byte stream, to know whether a frame is incomplete.

    Used only to schedule simulated time (see the module notes); the bytes themselves go to the
    board unchanged, whatever they are.
    """

    def __init__(self):
        self._header = bytearray()
        self._remaining = 0

    @property
    def incomplete(self):
        """bool: a request frame has started and not all of its bytes were seen."""
        return bool(self._header) or self._remaining > 0

    def feed(self, data):
        """Account for bytes about to be sent to the board."""
        for byte in data:
            if self._remaining:
                self._remaining -= 1
            elif self._header:
                self._header.append(byte)
                if len(self._header) == REQUEST_HEADER_BYTES:
                    (length,) = struct.unpack_from("<H", self._header, REQUEST_HEADER_BYTES - 2)
                    self._remaining = length + CRC_BYTES
                    self._header.clear()
            elif byte == REQUEST_SYNC:
                self._header.append(byte)


class UARTSource:
    """Drive a serial line with 8N1 frames, least significant bit first.

    Parameters
    ----------
    signal : cocotb handle
        The board's ``rx`` input.
    bit_steps : int
        Duration of one bit, simulator steps (divisor times the clock period).
    """

    def __init__(self, signal, bit_steps):
        self.signal = signal
        self.bit_steps = bit_steps
        self.signal.value = 1

    async def send(self, byte):
        """Send one byte: start bit, 8 data bits, stop bit (returns at the end of the stop
        bit)."""
        signal = self.signal
        bit = Timer(self.bit_steps, "step")
        signal.value = 0
        await bit
        for i in range(8):
            signal.value = (byte >> i) & 1
            await bit
        signal.value = 1
        await bit


class UARTSink:
    """Receive 8N1 frames from a serial line, sampling every bit in its middle.

    Parameters
    ----------
    signal : cocotb handle
        The board's ``tx`` output.
    bit_steps : int
        Duration of one bit, simulator steps.
    sample_offset_steps : int
        Delay of the first sample (the start bit) after the falling edge; half a bit plus a
        fraction of a clock period, away from the clock edges where the line may change.
    deliver : callable
        Called with every byte received (a byte with a stop bit of 0 is counted in
        :attr:`frame_errors` and dropped, as a UART does).

    Attributes
    ----------
    busy : bool
        A frame is being received.
    last_end : int
        Simulator time (steps) of the last stop bit sampled.
    """

    def __init__(self, signal, bit_steps, sample_offset_steps, deliver):
        self.signal = signal
        self.bit_steps = bit_steps
        self.sample_offset_steps = sample_offset_steps
        self.deliver = deliver
        self.busy = False
        self.last_end = 0
        self.frame_errors = 0

    async def run(self):
        """Receive bytes forever (start it as a task)."""
        signal = self.signal
        first = Timer(self.sample_offset_steps, "step")
        bit = Timer(self.bit_steps, "step")
        while True:
            await FallingEdge(signal)
            self.busy = True
            start = get_sim_time("step")
            await first
            if int(signal.value) != 0:          # a glitch, not a start bit
                self.busy = False
                continue
            byte = 0
            for i in range(8):
                await bit
                byte |= int(signal.value) << i
            await bit
            stop = int(signal.value)
            self.busy = False
            self.last_end = get_sim_time("step")
            if stop:
                self.deliver(byte, start)
            else:
                self.frame_errors += 1


@cocotb.test()
async def serve_pseudo_terminal(dut):
    """Serve the board core's UART on a pseudo-terminal until told to stop."""
    config = _config()
    period = config["period_steps"]
    bit_steps = config["divisor"] * period
    quiet_steps = config["quiet_cycles"] * period
    poll = Timer(config["poll_cycles"] * period, "step")

    Clock(dut.clk, period, "step", impl="gpi").start()
    dut.rx.value = 1
    dut.rst.value = 1
    await Timer(8 * period, "step")
    dut.rst.value = 0
    await Timer(8 * period, "step")

    pty = PseudoTerminal()
    trace = open(config["trace_file"], "a") if config["trace_file"] else None
    state = {"last_rx_end": 0, "frame_start": True}

    def deliver(byte, start):
        pty.write(bytes([byte]))
        if trace is not None and state["frame_start"]:
            # First byte after host bytes: record the turnaround (reply start - last stop bit).
            trace.write(json.dumps({"rx_end": state["last_rx_end"], "tx_start": start,
                                    "period": period}) + "\n")
            trace.flush()
            state["frame_start"] = False

    source = UARTSource(dut.rx, bit_steps)
    sink = UARTSink(dut.tx, bit_steps, bit_steps // 2 + period // 4, deliver)
    cocotb.start_soon(sink.run())

    ready = config["ready_file"]
    with open(ready + ".tmp", "w") as f:
        json.dump({"port": pty.port, "pid": os.getpid()}, f)
    os.replace(ready + ".tmp", ready)
    dut._log.info("board on %s", pty.port)

    stop_file, owner = config["stop_file"], config["owner_pid"]
    next_check = 0.0

    def should_stop():
        if os.path.exists(stop_file):
            return True
        if owner:
            try:
                os.kill(owner, 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                pass
        return False

    framer = RequestFramer()
    pending = bytearray()
    last_activity = get_sim_time("step")
    try:
        while True:
            if pending:
                byte = pending.pop(0)
                await source.send(byte)
                now = get_sim_time("step")
                state["last_rx_end"] = now
                state["frame_start"] = True
                last_activity = now
                if not pending:
                    pending += pty.read()
                    if not pending and framer.incomplete:
                        pending += pty.read(config["join_seconds"])
                    framer.feed(pending)
                continue
            data = pty.read()
            if data:
                framer.feed(data)
                pending += data
                continue
            pty.flush()
            now = get_sim_time("step")
            active = sink.busy or now - max(last_activity, sink.last_end) < quiet_steps
            clock = time.monotonic()
            if clock >= next_check:
                next_check = clock + 0.1
                if should_stop():
                    break
            if active:
                await poll
                continue
            # Nothing to simulate: wait for the host without advancing simulated time.
            data = pty.read(0.1)
            if data:
                framer.feed(data)
                pending += data
    finally:
        pty.flush()
        pty.close()
        if trace is not None:
            trace.close()
