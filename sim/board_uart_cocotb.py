"""cocotb 2 testbench of the whole board at its UART pins: UR5 updates against the golden model,
and thousands of malformed frames and byte streams against the protocol's reference engine.

The simulator runs this module (``COCOTB_TEST_MODULES``) on the simulated board's testbench
``linkdyn_board_sim`` (:func:`linkdyn.sim.board.testbench_verilog`, built by
:meth:`linkdyn.sim.board.SimulatedBoard.build`): the board core
(:class:`linkdyn.boards.core.BoardCore`: UART receiver and transmitter, FIFOs, protocol engine,
:class:`~linkdyn.gateware.chain.LinkDynChain`) and its clock. The testbench's bit mode is used:
cocotbext-uart's :class:`~cocotbext.uart.UartSource` drives ``tb_rx_pin`` (the board's ``rx``)
and :class:`~cocotbext.uart.UartSink` receives the board's ``tx``, 8N1 at the board's divisor.
``tests/sim/test_board_uart.py`` builds the board and starts this module; parameters come in
environment variables:

``LINKDYN_BOARD_UART_CASE``
    JSON object: ``nodes``, ``clock_hz``, ``divisor``, ``period_steps`` (clock period in
    simulator steps), ``timeout_cycles`` and ``step_timeout_cycles`` (the engine's inter-byte
    and step timeouts), ``robot`` (name of a built-in robot), ``updates`` and
    ``final_updates`` (joint states: lists of ``{"q", "qd", "qdd", "f_ext"}``, ``f_ext`` an
    n x 6 list or null), ``malformed_frames``, ``mixed_frames``, ``seed``, ``weights``
    (request kinds of :func:`linkdyn.sim.protocol_fuzz.random_request`) and ``shares``
    (corrupted, invalid, garbage of :func:`~linkdyn.sim.protocol_fuzz.malformed_script`).
``LINKDYN_BOARD_UART_SUMMARY``
    Path of the JSON summary, rewritten after every test.

Everything the board answers, from power-up on, is checked against
:class:`linkdyn.model.protocol.ReferenceEngine` on :class:`ChainModel` (the chain in Python: its
register words, updated by the golden model's microprogram interpreter), reply by reply and
byte for byte, except the timing-dependent words LATENCY_CYCLES and INTERVAL_CYCLES, which are
taken from the board and recorded. :class:`BoardLink` holds the line: it sends each event of a
script, follows the reference, waits for the replies the reference predicts within a bound of
clock cycles (else the board hung) and keeps every discrepancy with the bytes that caused it.

The tests, in order, on one board:

:func:`ur5_updates_equal_the_golden_model`
    INFO, the power-up register file, LOAD_ROBOT of the robot, STEP of every state of
    ``updates``: the ``tau`` words and overflow flags equal :func:`linkdyn.model.golden.rnea_fixed`;
    the constants read back equal the encoded robot.
:func:`malformed_frames_change_nothing`
    ``malformed_frames`` corrupted frames, invalid requests and runs of garbage
    (:func:`~linkdyn.sim.protocol_fuzz.malformed_script`), each run of garbage followed by a
    read-only probe: every reply as the reference's, no hang, and every node register and chain
    control word read back afterwards equal to before.
:func:`random_frames_equal_the_reference`
    ``mixed_frames`` random requests, half of them corrupted
    (:func:`~linkdyn.sim.protocol_fuzz.fuzz_script`): the valid ones execute (random constants,
    inputs, updates); every reply and the final register file as the reference's.
:func:`ur5_updates_after_the_fuzz`
    LOAD_ROBOT again, STEP of ``final_updates`` (the golden model again), the error counters,
    CLEAR, and no reply beyond those expected.
"""

from __future__ import annotations

import json
import logging
import os
import random
import struct
import time
import warnings
from collections import Counter

import cocotb
import numpy as np
from cocotb.simtime import get_sim_time
from cocotb.triggers import SimTimeoutError, Timer, with_timeout
from cocotbext.uart import UartSink, UartSource

from linkdyn.model import load_robot
from linkdyn.model import protocol as P
from linkdyn.model.golden import encode_base_motion, encode_robot, rnea_fixed
from linkdyn.sim.chain_model import TIMING_MARKS, ChainModel
from linkdyn.sim.protocol_fuzz import IDLE, REQUEST_WEIGHTS, fuzz_script, malformed_script

__all__ = ["ChainModel", "FrameTracker", "BoardLink", "BoardHang", "TIMING_MARKS"]

_MASK = 0xFFFFFFFF
#: Cycles the line stays idle beyond the inter-byte timeout for an :data:`IDLE` event.
IDLE_MARGIN_CYCLES = 64
#: Discrepancies kept in full in the summary (all are counted).
KEPT_DISCREPANCIES = 20
#: Names of the chain-owned control words STATUS .. UPDATE_COUNT.
CHAIN_WORDS = [reg.name for reg in P.CONTROL_REGISTERS
               if reg.owner == "chain" and reg.access == "r" and not reg.requires]



class BoardHang(AssertionError):
    """The board did not send a reply the reference predicts within the bound."""


# -- the line ------------------------------------------------------------------------------------

class FrameTracker:
    """The engine's request framing as the host sees it (``docs/protocol.md``, Reception):
    whether the bytes sent so far leave a frame open, i.e. whether the engine waits for more.

    Parameters
    ----------
    max_payload : int
        The frame buffer, bytes: a longer announced payload ends the frame after its header.
    """

    def __init__(self, max_payload):
        self.max_payload = max_payload
        self._header = None
        self._remaining = 0

    @property
    def open(self):
        """bool: a frame has started and has not ended."""
        return self._header is not None

    def feed(self, data):
        """Follow the bytes ``data`` sent back to back."""
        for byte in data:
            if self._header is None:
                if byte == P.REQUEST_SYNC:
                    self._header = bytearray([byte])
            elif len(self._header) < P.REQUEST_HEADER_BYTES:
                self._header.append(byte)
                if len(self._header) == P.REQUEST_HEADER_BYTES:
                    (length,) = struct.unpack_from("<H", self._header, 4)
                    if length > self.max_payload:
                        self._header = None
                    else:
                        self._remaining = length + P.CRC_BYTES
            else:
                self._remaining -= 1
                if not self._remaining:
                    self._header = None

    def idle(self):
        """The line went idle for longer than the inter-byte timeout: no frame is open."""
        self._header = None


class BoardLink:
    """The host side of the board's serial line, checked reply by reply against the reference.

    Parameters
    ----------
    dut : cocotb handle
        The testbench ``linkdyn_board_sim``.
    case : dict
        The parameters (module docstring).
    spec : ProtocolSpec
        The board's protocol (clock, baud rate and board id as its INFO reports them).

    Attributes
    ----------
    reference : ReferenceEngine
        Fed with every event sent, on :attr:`model`.
    model : ChainModel
    expected : list of (bytes, int)
        Every reply frame the reference predicts, with the index of the event that caused it.
    received : list of (bytes, Reply)
        Every reply frame received from the board.
    events : list
        Every event sent: ``bytes`` or :data:`IDLE`.
    statuses : collections.Counter
        Replies received per status name.
    discrepancies : list of dict
        The first :data:`KEPT_DISCREPANCIES` differences (:attr:`mismatches` counts all).
    timing : dict
        Per timing word (:data:`TIMING_MARKS`), the values the board answered.
    max_excess_cycles : int
        Largest delay of a reply beyond the line time of the replies outstanding, counted from
        the end of the last byte sent (the bound is :attr:`allowance_cycles`).
    """

    def __init__(self, dut, case, spec):
        self.dut = dut
        self.spec = spec
        self.period = case["period_steps"]
        self.divisor = case["divisor"]
        self.bit_steps = self.divisor * self.period
        self.byte_steps = 10 * self.bit_steps
        if self.bit_steps % 1000:
            raise ValueError(f"a bit lasts {self.bit_steps} ps; cocotbext-uart needs whole ns")
        # cocotbext-uart times a bit as int(1e9 / baud) ns: a quarter ns more than the bit makes
        # that exactly the bit (the board's line rate is clock / divisor whatever INFO says).
        self.baud = 1e9 / (self.bit_steps // 1000 + 0.25)
        self.source = self.sink = None
        self.attach()
        self.timeout_cycles = case["timeout_cycles"]
        self.step_timeout_cycles = case["step_timeout_cycles"]
        self.allowance_cycles = (2 * self.step_timeout_cycles + 2 * self.timeout_cycles
                                 + 4096)
        self.model = ChainModel(spec)
        self.reference = P.ReferenceEngine(spec, self.model)
        self.tracker = FrameTracker(spec.max_payload_bytes)
        self.events = []
        self.expected = []
        self.received = []
        self.statuses = Counter()
        self.discrepancies = []
        self.mismatches = 0
        self.timing = {name: Counter() for name in TIMING_MARKS.values()}
        self.max_excess_cycles = 0
        self.bytes_sent = 0
        self.bytes_received = 0
        self.hung = None
        self._buffer = bytearray()
        self._compared = 0

    def attach(self):
        """Put a new UART source on ``rx`` and sink on ``tx`` (call at the start of every test:
        cocotb ends the tasks a test started, the UARTs' among them, when the test ends)."""
        dut = self.dut
        dut.tb_bit_mode.value = 1
        if self.sink is not None:
            self._collect()
        with warnings.catch_warnings():
            # cocotbext-uart 0.1.4 still calls setimmediatevalue (deprecated in cocotb 2).
            warnings.filterwarnings("ignore", category=DeprecationWarning,
                                    module="cocotbext.uart")
            self.source = UartSource(dut.tb_rx_pin, baud=self.baud)
            self.sink = UartSink(dut.tx, baud=self.baud)
        for uart in (self.source, self.sink):
            uart.log.setLevel(logging.WARNING)

    # -- time ----------------------------------------------------------------------------------

    def cycles(self):
        """int: clock cycles since the start of the simulation."""
        return get_sim_time("step") // self.period

    async def wait_cycles(self, cycles):
        """Let ``cycles`` clock cycles pass."""
        await Timer(cycles * self.period, "step")

    # -- events ----------------------------------------------------------------------------------

    async def send(self, data):
        """Send bytes back to back after those sent before; then, unless they leave a request
        frame open (so that the engine waits for the next bytes within its inter-byte
        timeout), wait for every reply expected so far (:meth:`settle`)."""
        data = bytes(data)
        if self.hung:
            raise BoardHang(self.hung)
        index = len(self.events)
        self.events.append(data)
        self._expect(self.reference.receive(data), index)
        self.tracker.feed(data)
        if self.source.idle():
            # Start on a falling clock edge: the line changes half a cycle away from the
            # board's sampling edges (bytes sent back to back keep that phase).
            offset = get_sim_time("step") % self.period
            if offset:
                await Timer(self.period - offset, "step")
        self.source.write_nowait(data)
        self.bytes_sent += len(data)
        if not self.tracker.open:
            await self.settle()

    async def idle(self):
        """Keep the line idle until the engine's inter-byte timeout has passed (a frame in
        progress ends with TRUNCATED), then wait for the replies."""
        await self.settle()
        await self.wait_cycles(self.timeout_cycles + IDLE_MARGIN_CYCLES)
        index = len(self.events)
        self.events.append(IDLE)
        self._expect(self.reference.idle(), index)
        self.tracker.idle()
        await self.settle()

    async def run(self, script):
        """Send a script (:mod:`linkdyn.sim.protocol_fuzz`) event by event."""
        for event in script:
            if event == IDLE:
                await self.idle()
            else:
                await self.send(event)

    async def request(self, frame):
        """Send one well-formed request on a synchronised line; return the board's reply
        (:class:`~linkdyn.model.protocol.Reply`)."""
        count = len(self.expected)
        await self.send(frame)
        if self.tracker.open or len(self.expected) != count + 1:
            raise AssertionError(f"the reference expects {len(self.expected) - count} replies "
                                 f"to {frame.hex(' ')}: the line was not synchronised")
        return self.received[count][1]

    async def settle(self):
        """Wait until the bytes handed over are sent and every reply the reference expects has
        arrived; raise :class:`BoardHang` if the board takes longer than the line time of the
        outstanding replies plus :attr:`allowance_cycles`."""
        if not self.source.idle():
            limit = (self.source.count() + 2) * self.byte_steps
            try:
                await with_timeout(self.source.wait(), limit, "step")
            except SimTimeoutError:
                raise AssertionError("the UART source did not finish sending") from None
        self._collect()
        if len(self.received) >= len(self.expected):
            return
        start = get_sim_time("step")
        outstanding = (sum(len(frame) for frame, _ in self.expected[len(self.received):])
                       - len(self._buffer))
        line = max(0, outstanding) * self.byte_steps
        deadline = start + line + self.allowance_cycles * self.period
        while len(self.received) < len(self.expected):
            now = get_sim_time("step")
            if now >= deadline:
                frame, index = self.expected[len(self.received)]
                self.hung = (f"no reply {len(self.received)} within "
                             f"{(deadline - start) // self.period} cycles of the last byte "
                             f"sent: expected {frame.hex(' ')}, received "
                             f"{bytes(self._buffer).hex(' ') or 'nothing'}; input "
                             f"{self._inputs(index)}")
                raise BoardHang(self.hung)
            missing = (sum(len(frame) for frame, _ in self.expected[len(self.received):])
                       - len(self._buffer))
            await Timer(min(deadline - now, max(1, missing) * self.byte_steps), "step")
            self._collect()
        excess = (get_sim_time("step") - start - line) // self.period
        self.max_excess_cycles = max(self.max_excess_cycles, excess)

    async def quiet(self, cycles):
        """Let ``cycles`` pass on an idle line and check that no reply beyond the expected ones
        came."""
        await self.settle()
        await self.wait_cycles(cycles)
        self._collect()
        if len(self.received) > len(self.expected) or self._buffer:
            extra = (self.received[len(self.expected)][0]
                     if len(self.received) > len(self.expected) else bytes(self._buffer))
            self._record("reply the reference does not expect", len(self.expected), None,
                         b"", extra)

    # -- replies ---------------------------------------------------------------------------------

    def _expect(self, data, index):
        while data:
            frame, data = P.split_frame(data, reply=True)
            self.expected.append((P.encode_reply(frame.seq, frame.command, frame.status,
                                                 frame.payload), index))

    def _collect(self):
        data = self.sink.read_nowait()
        if data:
            self._buffer += data
            self.bytes_received += len(data)
        while self._buffer:
            try:
                reply, rest = P.split_frame(self._buffer, reply=True)
            except P.TruncatedFrameError:
                break
            except P.ProtocolError as error:
                self._record(f"undecodable reply bytes ({error})", len(self.received), None,
                             b"", bytes(self._buffer[:64]))
                skip = self._buffer.find(bytes([P.REPLY_SYNC]), 1)
                del self._buffer[:skip if skip > 0 else len(self._buffer)]
                continue
            raw = bytes(self._buffer[:len(self._buffer) - len(rest)])
            self._buffer = bytearray(rest)
            self.received.append((raw, reply))
            self.statuses[P.ErrorCode(reply.status).name] += 1
        while self._compared < min(len(self.expected), len(self.received)):
            k = self._compared
            want, index = self.expected[k]
            got, reply = self.received[k]
            want = self._unmask(want, reply)
            if want != got:
                self._record("reply differs from the reference", k, index, want, got)
            self._compared += 1

    def _unmask(self, want, reply):
        frame = P.decode_reply(want)
        if not (frame.ok and reply.ok and frame.command == reply.command
                and len(frame.payload) == len(reply.payload)):
            return want
        words, got = frame.words, reply.words
        marked = False
        for k, word in enumerate(words):
            if word in TIMING_MARKS:
                self.timing[TIMING_MARKS[word]][got[k]] += 1
                words[k] = got[k]
                marked = True
        if not marked:
            return want
        return P.encode_reply(frame.seq, frame.command, frame.status, words)

    def _inputs(self, index, before=2):
        if index is None:
            return []
        return [event if event == IDLE else event.hex(" ")
                for event in self.events[max(0, index - before):index + 1]]

    def _record(self, what, reply_index, event_index, want, got):
        self.mismatches += 1
        if len(self.discrepancies) >= KEPT_DISCREPANCIES:
            return

        def decoded(frame):
            try:
                return repr(P.decode_reply(frame))
            except (P.ProtocolError, ValueError) as error:
                return f"undecodable ({error})"

        self.discrepancies.append({
            "what": what, "reply": reply_index, "event": event_index,
            "input": self._inputs(event_index),
            "expected": want.hex(" "), "actual": got.hex(" "),
            "expected_decoded": decoded(want) if want else None,
            "actual_decoded": decoded(got) if got else None,
            "cycle": self.cycles(),
        })

    # -- helpers ---------------------------------------------------------------------------------

    async def snapshot(self):
        """Read every node register and the chain's control words STATUS .. UPDATE_COUNT;
        return ``{"nodes": [[word, ...], ...], "chain": {name: word}}`` as the board
        answered."""
        spec = self.spec
        nodes = []
        for i in range(spec.n_nodes):
            reply = await self.request(P.encode_request(
                P.Command.READ, P.read_payload(i, 0, spec.node_map_size), seq=0xF0 + i))
            if not reply.ok:
                raise AssertionError(f"READ of node {i}'s registers: {reply}")
            nodes.append(reply.words)
        first = P.control_register(CHAIN_WORDS[0]).address
        reply = await self.request(P.encode_request(
            P.Command.READ, P.read_payload(P.CONTROL_NODE, first, len(CHAIN_WORDS)), seq=0xFF))
        if not reply.ok:
            raise AssertionError(f"READ of the control words: {reply}")
        return {"nodes": nodes, "chain": dict(zip(CHAIN_WORDS, reply.words))}

    def counters(self):
        """Return a copy of the per-status reply counts and the traffic so far."""
        return {"statuses": dict(self.statuses), "replies": len(self.received),
                "expected": len(self.expected), "bytes_sent": self.bytes_sent,
                "bytes_received": self.bytes_received, "mismatches": self.mismatches}


# -- parameters and summary ------------------------------------------------------------------------

_STATE = {}
_SUMMARY = {"tests": {}}


def _case():
    return json.loads(os.environ["LINKDYN_BOARD_UART_CASE"])


def _weights(case):
    return tuple(case.get("weights") or REQUEST_WEIGHTS)


def _spec(case):
    # The simulated board's chain is the sequential LinkDynChain: one register bank.
    return P.ProtocolSpec(case["nodes"], clock_hz=case["clock_hz"],
                          baudrate=case["clock_hz"] // case["divisor"], banks=1)


async def _link(dut):
    """Return the board link of this simulation (made by the first test)."""
    if "link" not in _STATE:
        case = _case()
        link = BoardLink(dut, case, _spec(case))
        await link.wait_cycles(16)
        _STATE["link"] = link
    else:
        _STATE["link"].attach()
    return _STATE["link"]


def _write_summary(link):
    path = os.environ.get("LINKDYN_BOARD_UART_SUMMARY")
    _SUMMARY.update({
        "statuses": dict(link.statuses), "replies": len(link.received),
        "expected_replies": len(link.expected), "mismatches": link.mismatches,
        "discrepancies": link.discrepancies, "hung": link.hung,
        "bytes_sent": link.bytes_sent, "bytes_received": link.bytes_received,
        "max_excess_cycles": link.max_excess_cycles,
        "reply_bound_cycles": link.allowance_cycles,
        "timing": {name: {str(k): v for k, v in sorted(values.items())}
                   for name, values in link.timing.items()},
        "updates": link.model.updates, "cycles": link.cycles(),
    })
    if path:
        with open(path, "w") as file:
            json.dump(_SUMMARY, file, indent=1)


class _Part:
    """Bookkeeping of one test: cycles, wall time, replies, discrepancies; the summary is
    written when the test ends, passed or not."""

    def __init__(self, name, link):
        self.name = name
        self.link = link
        self.record = {}

    def __enter__(self):
        self.wall = time.monotonic()
        self.cycles = self.link.cycles()
        self.before = self.link.counters()
        self.mismatches = self.link.mismatches
        return self.record

    def __exit__(self, exc_type, exc, tb):
        link = self.link
        after = link.counters()
        statuses = Counter(after["statuses"])
        statuses.subtract(self.before["statuses"])
        self.record.update({
            "cycles": link.cycles() - self.cycles,
            "wall_seconds": time.monotonic() - self.wall,
            "replies": after["replies"] - self.before["replies"],
            "statuses": {k: v for k, v in statuses.items() if v},
            "bytes_sent": after["bytes_sent"] - self.before["bytes_sent"],
            "bytes_received": after["bytes_received"] - self.before["bytes_received"],
            "mismatches": link.mismatches - self.mismatches,
            "passed": exc_type is None and link.mismatches == self.mismatches,
        })
        if exc is not None:
            self.record["error"] = f"{exc_type.__name__}: {exc}"
        _SUMMARY["tests"][self.name] = self.record
        _write_summary(link)
        link.dut._log.info("%s: %d cycles, %.1f s, %d replies %s", self.name,
                           self.record["cycles"], self.record["wall_seconds"],
                           self.record["replies"], self.record["statuses"])
        return False


def _check_no_discrepancy(link, part):
    assert part["mismatches"] == 0, (
        f"{part['mismatches']} replies differ from the reference; first: "
        f"{json.dumps(link.discrepancies[:3], indent=1)}")


async def _updates(link, robot, updates, part):
    """STEP every state of ``updates``; check tau and the overflow flags against rnea_fixed and
    record the board's words in ``part``."""
    spec = link.spec
    fmt = spec.fmt
    tau_words, overflow_words, failures = [], [], []
    for k, update in enumerate(updates):
        q, qd, qdd = (np.asarray(update[name], dtype=float) for name in ("q", "qd", "qdd"))
        f_ext = None if update.get("f_ext") is None else np.asarray(update["f_ext"], dtype=float)
        wrench = None
        if f_ext is not None:
            names = [reg.name for reg in spec.registers.of_kind("input")[3:]]
            wrench = [[int(spec.registers.encode(names[c], f_ext[i, c],
                                                 f"node {i + 1} wrench {c}"))
                       for c in range(6)] for i in range(spec.n_nodes)]
        payload = P.step_payload(spec, *([int(w) for w in spec.registers.encode(name, value)]
                                         for name, value in (("q", q), ("qd", qd),
                                                             ("qdd", qdd))), wrench)
        reply = await link.request(P.encode_request(P.Command.STEP, payload, seq=k & 0xFF))
        assert reply.ok, f"STEP {k}: {P.ErrorCode(reply.status).name}"
        result = P.StepResult.from_payload(reply.payload, spec.n_nodes)
        golden = rnea_fixed(robot, q, qd, qdd, fmt, f_ext=f_ext)
        want_tau = [int(w) for w in golden.tau_words]
        want_overflow = sum(1 << i for i in range(spec.n_nodes) if golden.overflow[i])
        if result.tau_words != want_tau or result.overflow != want_overflow:
            failures.append({"state": k, "tau": result.tau_words, "golden_tau": want_tau,
                             "overflow": result.overflow, "golden_overflow": want_overflow})
        tau_words.append(result.tau_words)
        overflow_words.append(result.overflow)
    part.update({"states": len(updates), "tau_words": tau_words, "overflow": overflow_words,
                 "golden_failures": failures[:KEPT_DISCREPANCIES],
                 "golden_mismatches": len(failures)})
    assert not failures, f"{len(failures)} of {len(updates)} STEPs differ from rnea_fixed: " \
                         f"{failures[:2]}"


async def _load_robot(link, robot):
    spec = link.spec
    constants = encode_robot(robot, spec.fmt)
    base = encode_base_motion(robot, spec.fmt)
    reply = await link.request(P.encode_request(
        P.Command.LOAD_ROBOT, P.load_robot_payload(spec, constants, base), seq=0x40))
    assert reply.ok, f"LOAD_ROBOT: {P.ErrorCode(reply.status).name}"
    return constants, base


# -- the tests -----------------------------------------------------------------------------------

@cocotb.test()
async def ur5_updates_equal_the_golden_model(dut):
    """INFO, the power-up registers, LOAD_ROBOT, then STEP of every state: tau words and
    overflow flags equal rnea_fixed; every reply equals the reference's."""
    case = _case()
    link = await _link(dut)
    spec = link.spec
    with _Part("ur5", link) as part:
        reply = await link.request(P.encode_request(P.Command.INFO, seq=1))
        info = P.BuildInfo.from_payload(reply.payload)
        assert info.words == spec.build_info(), f"INFO {info.words}"
        power_up = await link.snapshot()
        part["power_up_nonzero_words"] = sum(bool(w) for node in power_up["nodes"]
                                             for w in node)
        robot = load_robot(case["robot"])
        constants, base = await _load_robot(link, robot)
        await _updates(link, robot, case["updates"], part)
        loaded = await link.snapshot()
        names = [reg.name for reg in spec.registers.of_kind("constant")]
        for i, node in enumerate(constants):
            assert loaded["nodes"][i][:spec.constant_count] == [node[name] & _MASK
                                                                for name in names]
        forward = [reg.name for reg in spec.registers.of_kind("forward_in")]
        assert loaded["nodes"][0][spec.base_motion_address:spec.writable_end_node0] == [
            base[name] & _MASK for name in forward]
        part["latency_cycles"] = loaded["chain"]["LATENCY_CYCLES"]
        part["update_count"] = loaded["chain"]["UPDATE_COUNT"]
        assert part["update_count"] == len(case["updates"])
    _check_no_discrepancy(link, part)


@cocotb.test()
async def malformed_frames_change_nothing(dut):
    """Corrupted frames, invalid requests and garbage: every reply as the reference's, none
    missing (no hang), every garbage run followed by an answered probe, and no node register or
    chain control word changed."""
    case = _case()
    link = await _link(dut)
    spec = link.spec
    rng = random.Random(case["seed"])
    stats = Counter()
    script = malformed_script(rng, spec, case["malformed_frames"], _weights(case),
                              shares=tuple(case.get("shares", (0.5, 0.3, 0.2))), stats=stats)
    with _Part("malformed", link) as part:
        await link.idle()
        before = await link.snapshot()
        first_event = len(link.events)
        first_reply = len(link.expected)
        await link.run(script)
        await link.idle()
        last_reply = len(link.expected)
        probes = {k for k, event in enumerate(link.events[first_event:], first_event)
                  if _is_probe(event)}
        answered = sum(1 for (frame, index), (got, reply)
                       in zip(link.expected[first_reply:last_reply],
                              link.received[first_reply:last_reply])
                       if index in probes and reply.ok)
        ok_other = sum(1 for frame, index in link.expected[first_reply:last_reply]
                       if index not in probes and P.decode_reply(frame).ok)
        after = await link.snapshot()
        changed = [(i, a) for i in range(spec.n_nodes) for a in range(spec.node_map_size)
                   if before["nodes"][i][a] != after["nodes"][i][a]]
        part.update({
            "frames": sum(1 for event in script if event != IDLE) - stats["probe"],
            "events": len(script), "script": dict(stats), "probes": len(probes),
            "probes_answered": answered, "ok_replies_to_malformed_frames": ok_other,
            "changed_node_words": [list(c) for c in changed[:KEPT_DISCREPANCIES]],
            "chain_before": before["chain"], "chain_after": after["chain"],
            "state_unchanged": not changed and before["chain"] == after["chain"],
        })
        assert ok_other == 0, f"{ok_other} malformed frames were executed (reference)"
        assert part["state_unchanged"], f"state changed: words {changed[:8]}, control " \
                                        f"{before['chain']} -> {after['chain']}"
    _check_no_discrepancy(link, part)


def _is_probe(event):
    return (event != IDLE and len(event) == P.REQUEST_HEADER_BYTES + P.CRC_BYTES
            and event[3] in (P.Command.INFO, P.Command.STATUS)
            and event == P.encode_request(event[3], seq=event[2]))


@cocotb.test()
async def random_frames_equal_the_reference(dut):
    """Random requests, half of them corrupted, the valid ones executed: every reply and the
    final register file as the reference predicts on the chain model."""
    case = _case()
    link = await _link(dut)
    spec = link.spec
    rng = random.Random(case["seed"] + 1)
    stats = Counter()
    script = fuzz_script(rng, spec, case["mixed_frames"], False, _weights(case), strict=True,
                         stats=stats)
    with _Part("mixed", link) as part:
        updates = link.model.updates
        await link.run(script)
        await link.idle()
        final = await link.snapshot()
        model = [[link.model.read(i, a)[1] for a in range(spec.node_map_size)]
                 for i in range(spec.n_nodes)]
        part.update({
            "frames": sum(1 for event in script if event != IDLE), "events": len(script),
            "script": dict(stats), "updates": link.model.updates - updates,
            "registers_equal_model": final["nodes"] == model,
        })
        assert part["registers_equal_model"], "the register file differs from the model"
    _check_no_discrepancy(link, part)


@cocotb.test()
async def ur5_updates_after_the_fuzz(dut):
    """LOAD_ROBOT again and STEP: the golden model's torques again; the error counters as the
    reference counted; CLEAR; no reply beyond those expected."""
    case = _case()
    link = await _link(dut)
    with _Part("ur5_after", link) as part:
        robot = load_robot(case["robot"])
        await _load_robot(link, robot)
        await _updates(link, robot, case["final_updates"], part)
        reply = await link.request(P.encode_request(P.Command.STATUS, seq=2))
        status = P.ChainStatus.from_payload(reply.payload)
        part["error_counters"] = {code.name: count for code, count in status.errors.items()}
        part["frame_count"] = status.words["FRAME_COUNT"]
        part["uart_errors"] = {name: status.words[name]
                               for name in ("UART_FRAME_ERRORS", "UART_OVERFLOWS")}
        reply = await link.request(P.encode_request(P.Command.CLEAR, seq=3))
        assert reply.ok, f"CLEAR: {P.ErrorCode(reply.status).name}"
        reply = await link.request(P.encode_request(P.Command.STATUS, seq=4))
        cleared = P.ChainStatus.from_payload(reply.payload)
        assert not any(cleared.errors.values()), f"CLEAR left {cleared.errors}"
        await link.quiet(2 * link.allowance_cycles)
        part["replies_total"] = len(link.received)
        part["expected_total"] = len(link.expected)
        assert len(link.received) == len(link.expected)
    _check_no_discrepancy(link, part)
