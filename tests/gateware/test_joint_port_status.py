"""The joint port's status in the register map: the controller window's ``joint_port`` word
(model/protocol/joint_port_map.py) read over the register bus, against the reference.

A :class:`~linkdyn.gateware.joint_port.JointPort` joined to joint 0 of a
:class:`~linkdyn.gateware.controlled_chain.ControlledChain` as a board top joins it
(:func:`linkdyn.boards.joint_pins.connect_joint_port`) talks to the behavioural drive of
tests/gateware/test_joint_port.py (tests/support/joint_drive.py: an SPI slave with its own
bitwise CRC-8/AUTOSAR). The drive answers good frames and damaged ones of every kind (a payload
bit, a CRC bit, a line stuck at 1 or at 0); after every frame the test reads the window's
``joint_port`` and sensor words over the chain's bus and compares them with
:class:`~linkdyn.sim.controlled_chain_model.ControlledChainModel`, whose
:class:`~linkdyn.model.protocol.JointPortModel` takes the same frames (good or bad by the drive's
own CRC), and with the counts written out by hand from docs/controller.md ("Joint port"): the
error count, the fault after three bad frames in a row, ``valid``; the joint's ``fault_clear``
word and CONTROL.fault_clear clear the fault (not the count) on both. Joint 1 has no port and
reads 0 ("no port") throughout. The host's path: a board core (UART, protocol engine) with its
port answers READ frames of the word with the model's values before and after CONTROL.fault_clear
(a WRITE frame). The distributed boards' controller window answers the same word (one board, its
status input driven directly), and the counter saturates at 255 as the model's.
"""

import gc
import warnings
from types import SimpleNamespace

import pytest
from amaranth.hdl import Const, Elaboratable, Module, UnusedElaboratable
from amaranth.sim import Simulator

from linkdyn.boards.core import BoardCore
from linkdyn.boards.joint_pins import connect_joint_port
from linkdyn.gateware.controlled_actuator import ControlledDistributedChain
from linkdyn.gateware.controlled_chain import ControlledChain
from linkdyn.gateware.joint_port import (DEFAULT_FAULT_ERRORS, ERROR_COUNTER_BITS, JointPort,
                                         status_word)
from linkdyn.model import protocol as P
from linkdyn.sim.chain_testbench import BusHost
from linkdyn.sim.controlled_chain_model import ControlledChainModel

from support.joint_drive import DriveModel, bits_word, crc8_autosar, feedback_frame

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

DIVISOR, GAP = 2, 8
UART_DIVISOR = 4            # board core clock cycles per UART bit
JOINT_PORT = P.controller_word("joint_port").address
SENSOR = [P.controller_word(name).address for name in ("sensor_q", "sensor_qd")]
FAULT_CLEAR = P.controller_word("fault_clear").address
CONTROL = P.control_register("CONTROL").address
FAULTS = P.control_register("FAULTS").address


def _good(frame):
    """The drive's own CRC check of a 72-bit frame."""
    return crc8_autosar(frame[:64]) == bits_word(frame[64:])


def _flipped(frame, position):
    bits = list(frame)
    bits[position] ^= 1
    return bits


def _word(fault, valid, present, errors):
    """The word as docs/protocol.md gives its fields (bit 0, 1, 2, bits 8 .. 15)."""
    return fault | valid << 1 | present << 2 | errors << 8


def test_the_word_is_in_the_controller_window_and_decodes_its_fields():
    word = P.controller_word("joint_port")
    assert (word.address, word.access, word.format) == (0xCF, "r", None)
    assert word.address == SENSOR[1] + 1
    assert [(f.name, f.offset, f.width) for f in P.JOINT_PORT_FIELDS] == [
        ("fault", 0, 1), ("valid", 1, 1), ("present", 2, 1), ("errors", 8, 8)]
    # The gateware's counter and threshold are the map's.
    assert (ERROR_COUNTER_BITS, DEFAULT_FAULT_ERRORS) == (P.ERROR_COUNTER_BITS, P.FAULT_ERRORS)
    assert P.JointPortStatus.from_word(0) == P.JointPortStatus(False, False, False, 0)
    status = P.JointPortStatus.from_word(_word(1, 0, 1, 200) | 0xFFFF_0000)
    assert status == P.JointPortStatus(present=True, fault=True, valid=False, errors=200)
    assert status.word == _word(1, 0, 1, 200)
    assert P.pack_joint_port_status(fault=0, valid=1, present=1, errors=255) == 0xFF06
    assert P.JointPortStatus.from_word(0xFF06).errors_saturated
    assert str(P.JointPortStatus.from_word(0)) == "none"
    assert str(P.JointPortStatus.from_word(_word(1, 0, 1, 4))) == "fault, 4 bad frames"
    with pytest.raises(ValueError, match="errors must be an integer 0 .. 255, not 256"):
        P.pack_joint_port_status(fault=0, valid=0, present=1, errors=256)
    with pytest.raises(KeyError, match="no field 'crc'"):
        P.joint_port_field("crc")
    with pytest.raises(ValueError, match="fault_errors must be at least 1, not 0"):
        P.JointPortModel(0)
    # MAP_CHECK covers the word on a board with controllers, not on one without.
    assert "joint_port" in [w.name for w in P.CONTROLLER_WORDS]
    assert P.ProtocolSpec(1, controllers=True).access(0, 0xCF).exists
    assert not P.ProtocolSpec(1).access(0, 0xCF).exists


def test_the_model_counts_and_latches_as_the_joint_port_tests_expect():
    # The sequence of tests/gateware/test_joint_port.py (its hand-written expectations):
    # good, bad, good, bad x3 (the fault latches), good, good, clear, good, good.
    port = P.JointPortModel()
    seen = []
    for k, good in enumerate([1, 0, 1, 0, 0, 0, 1, 1, 1, 1]):
        port.frame(bool(good))
        seen.append((port.errors, int(port.fault), int(port.valid)))
        if k == 7:
            port.clear()
    assert [s[0] for s in seen] == [0, 1, 1, 2, 3, 4, 4, 4, 4, 4]
    assert [s[1] for s in seen] == [0, 0, 0, 0, 0, 1, 1, 1, 0, 0]
    assert [s[2] for s in seen] == [1, 1, 1, 1, 1, 0, 0, 0, 1, 1]


class _ChainWithPort(Elaboratable):
    """A two-joint controlled chain, joint 0's joint port joined as a board top joins it."""

    def __init__(self):
        self.chain = ControlledChain(2)
        self.port = JointPort(divisor=DIVISOR, gap=GAP)

    def elaborate(self, platform):
        m = Module()
        m.submodules.chain = chain = self.chain
        m.submodules.port = port = self.port
        connect_joint_port(m, port, chain.sensor[0], chain.actuator[0],
                           chain.controllers[0].fault_clear, chain.joint_port[0])
        return m


def test_the_window_reads_the_joint_ports_count_and_fault_as_the_model_and_clears_them():
    words = [(0x0001_8000 + 0x1111 * k, -0x0000_4000 - 0x0101 * k) for k in range(13)]
    good = [feedback_frame(q, qd) for q, qd in words]
    responses = [
        good[0],                               # valid
        _flipped(good[1], 7),                  # a payload bit: dropped, counted
        good[2],                               # the run of bad frames ends
        _flipped(good[3], 68),                 # a CRC bit
        [1] * 72,                              # miso at its pull-up (no drive)
        [0] * 72,                              # a line stuck low: 3 in a row, the fault
        good[6],                               # good again: words taken, still faulted
        _flipped(good[7], 40),                 # the window's fault_clear after this one
        good[8],                               # valid again
        _flipped(good[9], 0), _flipped(good[10], 63), _flipped(good[11], 71),  # the fault
        good[12],                              # after CONTROL.fault_clear: valid
    ]
    clears = {7: (0, FAULT_CLEAR, 1), 11: (P.CONTROL_NODE, CONTROL, P.CONTROL_FAULT_CLEAR)}
    dut = _ChainWithPort()
    model = ControlledChainModel(P.ProtocolSpec(2, controllers=True))
    reference = model.attach_joint_port(0)
    host = BusHost(dut.chain)
    seen = []

    async def bench(ctx):
        # Before the first frame: present, no fault, not valid, no errors; joint 1: no port.
        seen.append(((await host.access(ctx, 0, JOINT_PORT))[1],
                     (await host.access(ctx, 1, JOINT_PORT))[1]))
        for k, frame in enumerate(responses):
            while not ctx.get(dut.port.frame_done):
                await host.tick(ctx)
            reference.frame(_good(frame))
            if _good(frame):
                model.set_sensor(0, *words[k])
            row = []
            for node, address in ((0, JOINT_PORT), (1, JOINT_PORT), (0, SENSOR[0]),
                                  (0, SENSOR[1]), (P.CONTROL_NODE, FAULTS)):
                error, word = await host.access(ctx, node, address)
                ok, expected = model.read(node, address)
                assert not error and ok
                assert word == expected & 0xFFFF_FFFF, (k, node, hex(address), hex(word),
                                                        hex(expected))
                row.append(word)
            seen.append(tuple(row[:2]))
            if k in clears:
                node, address, value = clears[k]
                error, _ = await host.access(ctx, node, address, value)
                assert not error and model.write(node, address, value)
                seen.append(((await host.access(ctx, 0, JOINT_PORT))[1],
                             model.read(0, JOINT_PORT)[1]))

    async def drive_side(ctx):
        await DriveModel(responses).run(ctx, dut.port.drive, len(responses))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.add_testbench(drive_side, background=True)
    sim.run()
    ports = [row[0] for row in seen]
    # By hand: (fault, valid, present, errors) after each frame and after each clear.
    assert ports == [_word(*v) for v in [
        (0, 0, 1, 0),
        (0, 1, 1, 0), (0, 1, 1, 1), (0, 1, 1, 1), (0, 1, 1, 2), (0, 1, 1, 3), (1, 0, 1, 4),
        (1, 0, 1, 4), (1, 0, 1, 5),
        (0, 0, 1, 5),                          # the window's fault_clear: the count stays
        (0, 1, 1, 5), (0, 1, 1, 6), (0, 1, 1, 7), (1, 0, 1, 8),
        (0, 0, 1, 8),                          # CONTROL.fault_clear
        (0, 1, 1, 8)]]
    # After the clears the model read the same (second entry of those rows).
    assert seen[9][1] == ports[9] and seen[14][1] == ports[14]
    # Joint 1 has no port: the word for "none" throughout.
    assert all(row[1] == 0 for k, row in enumerate(seen) if k not in (9, 14))
    assert P.JointPortStatus.from_word(ports[6]) == P.JointPortStatus(True, True, False, 4)


class _CoreWithPort(Elaboratable):
    """A one-joint board core (UART, protocol engine, controlled chain) with its joint port,
    joined as a board top joins them (:meth:`linkdyn.boards.common.BoardTop.elaborate`)."""

    def __init__(self):
        self.core = BoardCore(1, clock_hz=12_000_000, divisor=UART_DIVISOR, controllers=True)
        self.port = JointPort(divisor=DIVISOR, gap=GAP)

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        m.submodules.port = port = self.port
        connect_joint_port(m, port, core.sensor[0], core.actuator[0],
                           core.chain.controllers[0].fault_clear, core.joint_port[0])
        return m


def test_the_host_reads_the_joint_port_word_over_the_uart_and_clears_it():
    # Good, then three bad frames (the fault), then good frames only: the fault holds until
    # CONTROL.fault_clear, after which the next good frame makes the port valid again.
    words = [(0x0002_0000 + k, 0x0000_8000 - k) for k in range(5)]
    responses = [feedback_frame(*words[0]), _flipped(feedback_frame(*words[1]), 3), [1] * 72,
                 _flipped(feedback_frame(*words[3]), 70), feedback_frame(*words[4])]
    reference = P.JointPortModel()
    for frame in responses[:4]:
        reference.frame(_good(frame))
    faulted = reference.word
    reference.clear()
    reference.frame(True)
    cleared = reference.word
    first_frames = 4 * (2 * DIVISOR * 72 + DIVISOR + GAP + 1) + 200   # cycles: 4 frames end
    requests = [
        (P.encode_request(P.Command.READ, P.read_payload(0, JOINT_PORT, 1), seq=1), 0),
        (P.encode_request(P.Command.WRITE, P.write_payload(P.CONTROL_NODE, CONTROL,
                                                           [P.CONTROL_FAULT_CLEAR]), seq=2), 0),
        (P.encode_request(P.Command.READ, P.read_payload(0, JOINT_PORT, 1), seq=3), 0),
        (P.encode_request(P.Command.READ, P.read_payload(P.CONTROL_NODE, FAULTS, 1), seq=4), 0),
    ]
    dut = _CoreWithPort()
    line = dut.core
    received = bytearray()
    sent = []

    async def send(ctx):
        ctx.set(line.rx, 1)
        await ctx.tick().repeat(first_frames)
        for frame, _ in requests:
            sent.append(len(received))
            for byte in frame:
                for bit in [0] + [(byte >> i) & 1 for i in range(8)] + [1]:
                    ctx.set(line.rx, bit)
                    await ctx.tick().repeat(UART_DIVISOR)
            while len(received) < sent[-1] + 7:           # the reply has come (its header)
                await ctx.tick()
            await ctx.tick().repeat(20 * UART_DIVISOR * 10)
        await ctx.tick().repeat(200)

    async def sample(ctx):
        while True:
            await ctx.negedge(line.tx)
            await ctx.tick().repeat(UART_DIVISOR // 2)
            byte = 0
            for i in range(8):
                await ctx.tick().repeat(UART_DIVISOR)
                byte |= ctx.get(line.tx) << i
            await ctx.tick().repeat(UART_DIVISOR)
            received.append(byte)

    async def drive_side(ctx):
        await DriveModel(responses).run(ctx, dut.port.drive, 1000)

    sim = Simulator(dut)
    sim.add_clock(1 / 12e6)
    sim.add_testbench(send)
    sim.add_testbench(sample, background=True)
    sim.add_testbench(drive_side, background=True)
    sim.run()
    replies, data = [], bytes(received)
    while data:
        reply, data = P.split_frame(data, reply=True)
        replies.append(reply)
    assert [r.status for r in replies] == [P.ErrorCode.OK] * 4
    read = [P.bytes_to_words(r.payload) for r in replies]
    assert read[0] == [faulted] == [_word(1, 0, 1, 3)]
    assert read[2] == [cleared] == [_word(0, 1, 1, 3)]
    assert read[3] == [0]                     # FAULTS: the controller's latch, not the port's


def test_the_distributed_boards_window_answers_the_joint_port_word():
    dut = ControlledDistributedChain(1, bits=5)
    host = BusHost(dut)
    cases = [(1, 0, 1, 3), (0, 1, 1, 255), (0, 0, 1, 0)]
    seen = []

    async def bench(ctx):
        seen.append((await host.access(ctx, 0, JOINT_PORT))[1])       # nothing joined
        for fault, valid, present, errors in cases:
            status = dut.joint_port[0]
            for signal, value in ((status.fault, fault), (status.valid, valid),
                                  (status.present, present), (status.errors, errors)):
                ctx.set(signal, value)
            seen.append((await host.access(ctx, 0, JOINT_PORT))[1])

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [0] + [_word(*case) for case in cases]
    model = ControlledChainModel(P.ProtocolSpec(1, controllers=True))
    assert model.read(0, JOINT_PORT) == (True, seen[0])


def test_the_error_count_saturates_at_255_as_the_model():
    # The port alone (its status word as the window builds it): a drive gone, every frame bad.
    port = JointPort(divisor=DIVISOR, gap=2 * DIVISOR)
    word = status_word(SimpleNamespace(fault=port.fault, valid=port.valid, present=Const(1),
                                       errors=port.errors))
    m = Module()
    m.submodules.port = port
    frames = P.ERROR_COUNTER_MAX + 3
    reference = P.JointPortModel()
    seen, expected = [], []

    async def bench(ctx):
        ctx.set(port.drive.miso, 1)                       # the pull-up
        for _ in range(frames):
            await ctx.tick().until(port.frame_done)
            reference.frame(False)
            seen.append(ctx.get(word))
            expected.append(reference.word)

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen == expected
    assert [P.JointPortStatus.from_word(w).errors for w in seen[-5:]] == [254] + [255] * 4
    assert P.JointPortStatus.from_word(seen[-1]) == P.JointPortStatus(True, True, False, 255)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        gc.collect()
