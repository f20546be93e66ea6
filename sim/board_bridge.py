"""The cocotb side of :class:`linkdyn.sim.board.SimulatedBoard`: a pseudo-terminal on the pins.

This is the cocotb test module the simulator runs (``COCOTB_TEST_MODULES``); host code does not
import it. Its one test, :func:`serve_pseudo_terminal`, opens a pseudo-terminal
(``os.openpty``, raw mode) and bridges it to the UART pins of the board core until it is told
to stop. The toplevel is the testbench ``linkdyn_board_sim``
(:func:`linkdyn.sim.board.testbench_verilog`): the board core, its clock (generated in the
testbench, not through the simulator interface, which would cost a callback per edge) and a
serial line on each pin. Two line drivers, chosen with ``LINKDYN_BRIDGE_LINE``:

``"bytes"`` (default, fast)
    :class:`ByteLine`: cocotb hands up to ``SEND_BYTES`` bytes at a time to the testbench's
    8N1 serialiser, which shifts them onto ``rx`` back to back at the board's divisor; the
    testbench's 8N1 receiver samples ``tx`` in the middle of every bit and shifts the bytes into a
    register that cocotb reads. Python runs a few times per frame, not per bit.
``"bits"``
    :class:`UARTSource` / :class:`UARTSink`: cocotb drives ``rx`` and samples ``tx`` itself,
    one ``Timer`` per bit (slower; a cross-check of the byte driver).

Either way the board's own UART receiver and transmitter, FIFOs, protocol engine and chain are
in the loop, and a host using pyserial on the pseudo-terminal cannot tell the board from one on
a USB serial adapter, apart from the speed.

Simulated time
--------------
Simulated time runs while bytes are sent or received, and for ``quiet_cycles`` after the last
of them (at least the board's step timeout plus its inter-byte timeout, so that an update, a
STEP timeout or a TRUNCATED reply always completes). Then the bridge blocks on the
pseudo-terminal without advancing time until the host writes again. Host bytes that arrive in
pieces within ``join_seconds`` of wall-clock time while a request frame is incomplete are sent
back to back (the bridge follows the request framing of :mod:`linkdyn.model.protocol` for this
only and never alters a byte), so that the operating system's splitting of a write cannot
truncate a frame.

Parameters come in environment variables (``LINKDYN_BRIDGE_*``, see :func:`_config`) set by
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
from cocotb.simtime import get_sim_time
from cocotb.triggers import FallingEdge, Timer

from linkdyn.model.protocol import CRC_BYTES, REQUEST_HEADER_BYTES, REQUEST_SYNC

__all__ = ["PseudoTerminal", "RequestFramer", "ByteLine", "UARTSource", "UARTSink",
           "SensorPorts", "serve_pseudo_terminal"]

#: Bytes kept for the host at most when it does not read (then the oldest are dropped, as a
#: real serial port's buffer overflows).
OUTPUT_LIMIT = 1 << 20


def _config():
    env = os.environ
    return {
        "line": env.get("LINKDYN_BRIDGE_LINE", "bytes"),
        "divisor": int(env["LINKDYN_BRIDGE_DIVISOR"]),
        "period_steps": int(env["LINKDYN_BRIDGE_PERIOD_STEPS"]),
        "quiet_cycles": int(env["LINKDYN_BRIDGE_QUIET_CYCLES"]),
        "send_bytes": int(env.get("LINKDYN_BRIDGE_SEND_BYTES", "64")),
        "recv_bytes": int(env.get("LINKDYN_BRIDGE_RECV_BYTES", "64")),
        "poll_cycles": int(env.get("LINKDYN_BRIDGE_POLL_CYCLES", "64")),
        "max_poll_cycles": int(env.get("LINKDYN_BRIDGE_MAX_POLL_CYCLES", "1024")),
        "join_seconds": float(env.get("LINKDYN_BRIDGE_JOIN_SECONDS", "0.02")),
        "ready_file": env["LINKDYN_BRIDGE_READY_FILE"],
        "stop_file": env["LINKDYN_BRIDGE_STOP_FILE"],
        "owner_pid": int(env.get("LINKDYN_BRIDGE_OWNER_PID", "0")),
        "trace_file": env.get("LINKDYN_BRIDGE_TRACE_FILE") or None,
        "sensor_file": env.get("LINKDYN_BRIDGE_SENSOR_FILE") or None,
        "link_file": env.get("LINKDYN_BRIDGE_LINK_FILE") or None,
        "run_file": env.get("LINKDYN_BRIDGE_RUN_FILE") or None,
    }


class PseudoTerminal:
    """A pseudo-terminal pair in raw mode; the bridge holds the master side.

    The slave side stays open here as well, so that the master never sees a hang-up while no
    host has the port open (hosts may come and go).

    Attributes
    ----------
    port : str
        Path of the slave side (``/dev/pts/N``), what the host opens.
    dropped : int
        Bytes for the host dropped because it did not read (see :data:`OUTPUT_LIMIT`).
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
        except OSError as error:
            if error.errno == errno.EIO:
                return b""
            raise

    def write(self, data):
        """Queue bytes for the host and pass on what the terminal takes now."""
        self._output += data
        if len(self._output) > OUTPUT_LIMIT:
            excess = len(self._output) - OUTPUT_LIMIT
            del self._output[:excess]
            self.dropped += excess
        self.flush()

    def flush(self):
        """Pass queued bytes on as far as the terminal's buffer takes them (never blocks)."""
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
    """Follow the request framing of a byte stream, to know whether a frame is incomplete.

    Only used to schedule simulated time (see the module notes); the bytes go to the board
    unchanged, whatever they are.
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


class ByteLine:
    """Byte-level line driver on the testbench's serialiser and receiver (``line="bytes"``).

    Parameters
    ----------
    dut : cocotb handle
        The testbench ``linkdyn_board_sim``.
    bit_steps : int
        One bit, simulator steps.
    send_bytes, recv_bytes : int
        Sizes of the testbench's send buffer and receive register.

    Attributes
    ----------
    send_until : int
        Simulator time (steps) at which the bytes handed over last have been sent.
    """

    def __init__(self, dut, bit_steps, send_bytes, recv_bytes):
        self.dut = dut
        self.bit_steps = bit_steps
        self.send_bytes = send_bytes
        self.recv_bytes = recv_bytes
        self.send_until = 0
        self._go = 0
        self._received = 0
        self._turnarounds = 0
        dut.tb_bit_mode.value = 0
        dut.tb_send_go.value = 0
        dut.tb_send_count.value = 0

    @property
    def sending(self):
        """bool: bytes handed over are still being shifted out."""
        return get_sim_time("step") < self.send_until or int(self.dut.tb_send_busy.value)

    def send(self, data):
        """Hand over up to ``send_bytes`` bytes (the serialiser must be idle); return how many
        were taken."""
        chunk = bytes(data[:self.send_bytes])
        dut = self.dut
        dut.tb_send_data.value = int.from_bytes(chunk, "little")
        dut.tb_send_count.value = len(chunk)
        self._go ^= 1
        dut.tb_send_go.value = self._go
        # The serialiser starts at the next clock edge; a cycle of margin is checked by busy.
        self.send_until = get_sim_time("step") + len(chunk) * 10 * self.bit_steps
        return len(chunk)

    def receive(self):
        """Return the bytes the testbench received from ``tx`` since the last call."""
        count = int(self.dut.tb_recv_count.value)
        new = (count - self._received) & 0xFFFFFFFF
        if not new:
            return b""
        if new > self.recv_bytes:
            raise RuntimeError(f"the receive register overflowed ({new} bytes since the last "
                               "poll)")
        # The newest byte is the most significant one of the shift register.
        last = self.dut.tb_recv_data.value.to_unsigned().to_bytes(self.recv_bytes, "little")
        self._received = count
        return last[self.recv_bytes - new:]

    @property
    def frame_errors(self):
        """int: bytes from the board with a stop bit of 0 (dropped)."""
        return int(self.dut.tb_recv_frame_errors.value)

    def turnaround(self):
        """Return the newest turnaround (cycles from the end of the last stop bit sent to the
        start bit of the first byte received after it), or ``None`` if there is no new one."""
        count = int(self.dut.tb_turnaround_count.value)
        if count == self._turnarounds:
            return None
        self._turnarounds = count
        return int(self.dut.tb_turnaround.value)


class UARTSource:
    """Drive a serial line with 8N1 frames from cocotb, one ``Timer`` per bit
    (``line="bits"``).

    Parameters
    ----------
    signal : cocotb handle
        The line (the testbench's ``tb_rx_pin``, which drives the board's ``rx``).
    bit_steps : int
        One bit, simulator steps.
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
    """Receive 8N1 frames in cocotb, sampling every bit in its middle (``line="bits"``).

    Parameters
    ----------
    signal : cocotb handle
        The board's ``tx``.
    bit_steps : int
        One bit, simulator steps.
    sample_offset_steps : int
        Delay of the start bit's sample after the falling edge: half a bit plus a fraction of
        a clock period, away from the clock edges where the line may change.
    deliver : callable
        Called as ``deliver(byte, start_steps)`` for every byte; a byte with a stop bit of 0 is
        counted in :attr:`frame_errors` and dropped, as a UART does.

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


class _WatchedFile:
    """Testbench inputs set from a JSON file that the host side rewrites: :meth:`update` reads
    the file when its inode or modification time changed and hands the object to
    :meth:`apply`; a file that is missing or half written is tried again at the next call."""

    #: The DUT inputs driven, each 0 at start.
    inputs = ()

    def __init__(self, dut, path):
        self.dut = dut
        self.path = path
        self._stamp = None
        if path is not None:
            for name in self.inputs:
                getattr(dut, name).value = 0

    def update(self):
        """Apply the file if it changed since the last call."""
        if self.path is None:
            return
        try:
            info = os.stat(self.path)
            stamp = (info.st_ino, info.st_mtime_ns)
            if stamp == self._stamp:
                return
            data = json.loads(open(self.path).read())
        except (OSError, ValueError):
            return
        self._stamp = stamp
        self.apply(data)

    def apply(self, data):
        raise NotImplementedError


class SensorPorts(_WatchedFile):
    """The joints' sensor ports of a board with controllers: ``tb_sensor_q``, ``tb_sensor_qd``
    (joint i in bits ``32 i .. 32 i + 31``), 0 at start, then the words of the sensor file
    (JSON ``{"q": [...], "qd": [...]}``, written by
    :meth:`linkdyn.sim.board.SimulatedBoard.set_sensor`) whenever it changes."""

    inputs = ("tb_sensor_q", "tb_sensor_qd")

    def apply(self, words):
        for name in ("q", "qd"):
            packed = sum((int(w) & 0xFFFFFFFF) << (32 * i) for i, w in enumerate(words[name]))
            getattr(self.dut, f"tb_sensor_{name}").value = packed


class LinkControls(_WatchedFile):
    """The line controls of a distributed chain: ``tb_link_cut``, ``tb_link_noise`` (bit h:
    hop h), 0 at start, then the masks of the link file (JSON ``{"cut": c, "noise": n}``,
    written by :meth:`linkdyn.sim.board.SimulatedBoard.cut_link`) whenever it changes."""

    inputs = ("tb_link_cut", "tb_link_noise")

    def apply(self, masks):
        self.dut.tb_link_cut.value = int(masks["cut"])
        self.dut.tb_link_noise.value = int(masks["noise"])


class _Controls:
    """The sensor ports and the line controls, applied together before the host's bytes."""

    def __init__(self, *parts):
        self.parts = parts

    def update(self):
        for part in self.parts:
            part.update()


class RunRequests(_WatchedFile):
    """Requests to let simulated time run with the serial line idle (the board's period timer,
    watchdogs and links go on): the run file (JSON ``{"id": k, "cycles": c}``, written by
    :meth:`linkdyn.sim.board.SimulatedBoard.run_cycles`) asks for ``c`` clock cycles; when they
    have passed the bridge writes ``{"id": k, "time_steps": t}`` (the simulated time then) to
    the run file's name + ``.done``. Taken only while no host byte is pending."""

    def __init__(self, dut, path):
        super().__init__(dut, path)
        self._wanted = None

    def apply(self, request):
        self._wanted = (int(request["id"]), int(request["cycles"]))

    def take(self):
        """Return the pending request ``(id, cycles)`` (once), or None."""
        self.update()
        wanted, self._wanted = self._wanted, None
        return wanted

    def done(self, request_id):
        """Tell the host that request ``request_id`` has run."""
        path = self.path + ".done"
        with open(path + ".tmp", "w") as f:
            json.dump({"id": request_id, "time_steps": get_sim_time("step")}, f)
        os.replace(path + ".tmp", path)


async def _run_idle(requests, controls, period, chunk_steps, drain):
    """Run a pending request of :class:`RunRequests` (if any): apply the host's controls
    (sensors, links), let ``cycles`` clock cycles pass in chunks of at most ``chunk_steps``,
    calling ``drain()`` after each (bytes the board sends go to the host), then answer.
    Return whether a request ran."""
    request = requests.take()
    if request is None:
        return False
    request_id, cycles = request
    controls.update()
    remaining = cycles * period
    while remaining > 0:
        step = min(remaining, chunk_steps)
        await Timer(step, "step")
        remaining -= step
        drain()
    requests.done(request_id)
    return True


class _Stopper:
    """Decide, at most every 0.1 s of wall-clock time, whether the bridge must stop."""

    def __init__(self, stop_file, owner_pid):
        self.stop_file = stop_file
        self.owner_pid = owner_pid
        self._next = 0.0

    def __call__(self):
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = now + 0.1
        if os.path.exists(self.stop_file):
            return True
        if self.owner_pid:
            try:
                os.kill(self.owner_pid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                pass
        return False


def _announce(config, pty):
    ready = config["ready_file"]
    with open(ready + ".tmp", "w") as f:
        json.dump({"port": pty.port, "pid": os.getpid()}, f)
    os.replace(ready + ".tmp", ready)


@cocotb.test()
async def serve_pseudo_terminal(dut):
    """Serve the board core's UART on a pseudo-terminal until told to stop."""
    config = _config()
    period = config["period_steps"]
    bit_steps = config["divisor"] * period
    dut.tb_rx_pin.value = 1
    dut.tb_bit_mode.value = 1 if config["line"] == "bits" else 0
    await Timer(16 * period, "step")

    pty = PseudoTerminal()
    trace = open(config["trace_file"], "a") if config["trace_file"] else None
    sensors = _Controls(SensorPorts(dut, config["sensor_file"]),
                        LinkControls(dut, config["link_file"]))
    sensors.update()
    runs = RunRequests(dut, config["run_file"])
    try:
        if config["line"] == "bits":
            await _serve_bits(dut, config, pty, bit_steps, trace, sensors, runs)
        else:
            await _serve_bytes(dut, config, pty, bit_steps, trace, sensors, runs)
    finally:
        pty.flush()
        pty.close()
        if trace is not None:
            trace.close()


async def _serve_bytes(dut, config, pty, bit_steps, trace, sensors, runs):
    period = config["period_steps"]
    quiet_steps = config["quiet_cycles"] * period
    line = ByteLine(dut, bit_steps, config["send_bytes"], config["recv_bytes"])
    stop = _Stopper(config["stop_file"], config["owner_pid"])
    framer = RequestFramer()
    pending = bytearray()
    last_activity = get_sim_time("step")
    poll_cycles = config["poll_cycles"]
    _announce(config, pty)
    dut._log.info("board on %s (byte-level line driver)", pty.port)

    while True:
        received = line.receive()
        now = get_sim_time("step")
        if received:
            pty.write(received)
            last_activity = now
        if trace is not None:
            turnaround = line.turnaround()
            if turnaround is not None:
                trace.write(json.dumps({"turnaround_cycles": turnaround}) + "\n")
                trace.flush()
        data = pty.read()
        if data:
            framer.feed(data)
            pending += data
        sending = line.sending
        if pending and not sending:
            if framer.incomplete and len(pending) < config["send_bytes"]:
                more = pty.read(config["join_seconds"])
                framer.feed(more)
                pending += more
            sensors.update()                # the sensor words the host set before these bytes
            del pending[:line.send(pending)]
            sending = True
        if sending or pending:
            last_activity = now
            poll_cycles = config["poll_cycles"]
            # Wake when the serialiser is done, or before the receive register can fill up.
            wait = max(period, min(line.send_until - now, config["max_poll_cycles"] * period))
            await Timer(wait, "step")
            continue
        pty.flush()
        if stop():
            return

        def drain():
            received = line.receive()
            if received:
                pty.write(received)
                pty.flush()

        if await _run_idle(runs, sensors, period, config["max_poll_cycles"] * period, drain):
            last_activity = get_sim_time("step")
            continue
        if now - last_activity < quiet_steps:
            await Timer(poll_cycles * period, "step")
            poll_cycles = min(2 * poll_cycles, config["max_poll_cycles"])
            continue
        # Nothing to simulate: wait for the host without advancing simulated time.
        data = pty.read(0.1)
        if data:
            framer.feed(data)
            pending += data
            poll_cycles = config["poll_cycles"]


async def _serve_bits(dut, config, pty, bit_steps, trace, sensors, runs):
    period = config["period_steps"]
    quiet_steps = config["quiet_cycles"] * period
    poll = Timer(config["poll_cycles"] * period, "step")
    state = {"last_rx_end": 0, "awaiting": False}

    def deliver(byte, start):
        pty.write(bytes([byte]))
        if state["awaiting"]:
            state["awaiting"] = False
            if trace is not None:
                turnaround = (start - state["last_rx_end"]) // period
                trace.write(json.dumps({"turnaround_cycles": turnaround}) + "\n")
                trace.flush()

    source = UARTSource(dut.tb_rx_pin, bit_steps)
    sink = UARTSink(dut.tx, bit_steps, bit_steps // 2 + period // 4, deliver)
    cocotb.start_soon(sink.run())
    stop = _Stopper(config["stop_file"], config["owner_pid"])
    framer = RequestFramer()
    pending = bytearray()
    last_activity = get_sim_time("step")
    _announce(config, pty)
    dut._log.info("board on %s (bit-level line driver)", pty.port)

    while True:
        if pending:
            sensors.update()
            byte = pending.pop(0)
            await source.send(byte)
            now = get_sim_time("step")
            state["last_rx_end"] = now
            state["awaiting"] = True
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
        if stop():
            return
        if await _run_idle(runs, sensors, period, config["max_poll_cycles"] * period,
                           pty.flush):
            last_activity = get_sim_time("step")
            continue
        if sink.busy or now - max(last_activity, sink.last_end) < quiet_steps:
            await poll
            continue
        data = pty.read(0.1)
        if data:
            framer.feed(data)
            pending += data
