"""UART receiver and transmitter (gateware/uart.py) in the Amaranth simulator."""

import random

import pytest
from amaranth import Elaboratable, Module
from amaranth.sim import Simulator

from linkdyn.gateware.uart import (MIN_DIVISOR, UARTReceiver, UARTTransmitter, default_baudrate,
                                   uart_divisor)

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


def test_divisor_is_computed_from_clock_and_baudrate_and_checked():
    assert uart_divisor(100_000_000, 3_000_000) == 33          # +1.0 %
    assert uart_divisor(12_000_000, 3_000_000) == 4
    assert uart_divisor(50_000_000, 2_000_000) == 25
    with pytest.raises(ValueError, match="1.96% off"):
        uart_divisor(50_000_000, 3_000_000)
    assert uart_divisor(50_000_000, 3_000_000, max_error=0.02) == 17
    with pytest.raises(ValueError, match="at least 4 is needed"):
        uart_divisor(10_000_000, 3_000_000)
    with pytest.raises(TypeError, match="Baud rate must be a number"):
        uart_divisor(10_000_000, "fast")
    with pytest.raises(ValueError, match="Clock frequency must be positive"):
        uart_divisor(0, 115_200)
    assert default_baudrate(100_000_000) == 3_000_000
    assert default_baudrate(50_000_000) == 2_000_000
    assert default_baudrate(25_000_000) == 1_000_000
    with pytest.raises(ValueError, match="none of the baud rates"):
        default_baudrate(100_000)


@pytest.mark.parametrize("component", [UARTReceiver, UARTTransmitter])
def test_components_check_their_divisor(component):
    with pytest.raises(ValueError, match="Divisor must be at least 4, not 3"):
        component(MIN_DIVISOR - 1)
    with pytest.raises(TypeError, match="Divisor must be an integer"):
        component(8.0)


def _simulate(dut, *testbenches, background=()):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    for testbench in testbenches:
        sim.add_testbench(testbench)
    for testbench in background:
        sim.add_testbench(testbench, background=True)
    sim.run()


def test_transmitter_sends_8n1_with_exact_bit_times():
    divisor = 5
    dut = UARTTransmitter(divisor)
    data = [0x00, 0xFF, 0xA5, 0x3C, 0x81]
    line = []

    async def send(ctx):
        for byte in data:
            ctx.set(dut.stream.payload, byte)
            ctx.set(dut.stream.valid, 1)
            await ctx.tick().until(dut.stream.ready)
        ctx.set(dut.stream.valid, 0)
        await ctx.tick().repeat(12 * divisor)

    async def watch(ctx):
        async for _, _, tx in ctx.tick().sample(dut.tx):
            line.append(tx)

    _simulate(dut, send, background=[watch])
    start = line.index(0)
    assert all(line[:start])
    for k, byte in enumerate(data):
        frame = [0] + [(byte >> i) & 1 for i in range(8)] + [1]
        for bit, level in enumerate(frame):
            first = start + (10 * k + bit) * divisor
            assert line[first:first + divisor] == [level] * divisor, (k, bit)
    assert all(line[start + 10 * len(data) * divisor:])


class _Loopback(Elaboratable):
    def __init__(self, tx_divisor, rx_divisor):
        self.transmitter = UARTTransmitter(tx_divisor)
        self.receiver = UARTReceiver(rx_divisor)

    def elaborate(self, platform):
        m = Module()
        m.submodules.transmitter = self.transmitter
        m.submodules.receiver = self.receiver
        m.d.comb += self.receiver.rx.eq(self.transmitter.tx)
        return m


def _collect(receiver, out, errors):
    async def collect(ctx):
        ctx.set(receiver.stream.ready, 1)
        async for _, _, valid, payload, frame, overflow in ctx.tick().sample(
                receiver.stream.valid, receiver.stream.payload, receiver.errors.frame,
                receiver.errors.overflow):
            if valid:
                out.append(payload)
            if frame:
                errors.append("frame")
            if overflow:
                errors.append("overflow")
    return collect


@pytest.mark.parametrize("tx_divisor, rx_divisor", [(4, 4), (50, 49), (50, 51)])
def test_receiver_gets_every_byte_from_the_transmitter(tx_divisor, rx_divisor):
    """Tiny divisor both ways, and a 2 % clock mismatch between the two ends."""
    dut = _Loopback(tx_divisor, rx_divisor)
    rng = random.Random(tx_divisor * 100 + rx_divisor)
    data = [0x00, 0xFF, 0x55, 0xAA] + [rng.getrandbits(8) for _ in range(
        150 if tx_divisor == 4 else 30)]
    out, errors = [], []

    async def send(ctx):
        for byte in data:
            ctx.set(dut.transmitter.stream.payload, byte)
            ctx.set(dut.transmitter.stream.valid, 1)
            await ctx.tick().until(dut.transmitter.stream.ready)
        ctx.set(dut.transmitter.stream.valid, 0)
        await ctx.tick().repeat(12 * tx_divisor)

    _simulate(dut, send, background=[_collect(dut.receiver, out, errors)])
    assert out == data and errors == []


async def _drive_line(ctx, line, bits, period, start=0.0):
    """Drive ``line`` with ``bits``, each ``period`` cycles long (fractional), from ``start``."""
    time = start
    for bit in bits:
        ctx.set(line, bit)
        end = time + period
        cycles = round(end) - round(time)
        if cycles:
            await ctx.tick().repeat(cycles)
        time = end
    return time


def _frame_bits(byte, stop=1):
    return [0] + [(byte >> i) & 1 for i in range(8)] + [stop]


@pytest.mark.parametrize("mismatch", [-0.02, 0.0, 0.02])
def test_receiver_tolerates_two_percent_rate_error_on_back_to_back_bytes(mismatch):
    divisor = 16
    dut = UARTReceiver(divisor)
    rng = random.Random(5)
    data = [0x00, 0xFF, 0x01, 0x80] + [rng.getrandbits(8) for _ in range(60)]
    out, errors = [], []

    async def drive(ctx):
        await ctx.tick().repeat(20)
        bits = [bit for byte in data for bit in _frame_bits(byte)]
        await _drive_line(ctx, dut.rx, bits + [1] * 20, divisor * (1 + mismatch))

    _simulate(dut, drive, background=[_collect(dut, out, errors)])
    assert out == data and errors == []


def test_receiver_fails_beyond_its_tolerance():
    """The tolerance test can fail: at 8 % off, bytes are lost or wrong."""
    divisor = 16
    dut = UARTReceiver(divisor)
    data = [0x00, 0x0F, 0xF0, 0x55] * 4
    out, errors = [], []

    async def drive(ctx):
        await ctx.tick().repeat(20)
        bits = [bit for byte in data for bit in _frame_bits(byte)]
        await _drive_line(ctx, dut.rx, bits + [1] * 20, divisor * 1.08)

    _simulate(dut, drive, background=[_collect(dut, out, errors)])
    assert out != data


def test_receiver_reports_a_frame_error_drops_the_byte_and_recovers_after_a_break():
    divisor = 8
    dut = UARTReceiver(divisor)
    out, errors = [], []

    async def drive(ctx):
        await ctx.tick().repeat(10)
        await _drive_line(ctx, dut.rx, _frame_bits(0x42, stop=0) + [0] * 30 + [1] * 3, divisor)
        await _drive_line(ctx, dut.rx, _frame_bits(0x99) + [1] * 3, divisor)

    _simulate(dut, drive, background=[_collect(dut, out, errors)])
    assert out == [0x99] and errors == ["frame"]


def test_receiver_reports_overflow_and_keeps_the_byte_not_yet_taken():
    divisor = 6
    dut = UARTReceiver(divisor)
    out, errors = [], []

    async def drive(ctx):
        ctx.set(dut.stream.ready, 0)
        await ctx.tick().repeat(10)
        await _drive_line(ctx, dut.rx, _frame_bits(0x11) + _frame_bits(0x22) + [1] * 4, divisor)
        assert ctx.get(dut.stream.valid) and ctx.get(dut.stream.payload) == 0x11
        ctx.set(dut.stream.ready, 1)
        await ctx.tick()
        await _drive_line(ctx, dut.rx, _frame_bits(0x33) + [1] * 4, divisor)

    async def collect(ctx):
        async for _, _, valid, ready, payload, overflow in ctx.tick().sample(
                dut.stream.valid, dut.stream.ready, dut.stream.payload, dut.errors.overflow):
            if valid and ready:
                out.append(payload)
            if overflow:
                errors.append("overflow")

    _simulate(dut, drive, background=[collect])
    assert out == [0x11, 0x33] and errors == ["overflow"]


def test_receiver_ignores_a_glitch_shorter_than_half_a_bit():
    divisor = 8
    dut = UARTReceiver(divisor)
    out, errors = [], []

    async def drive(ctx):
        await ctx.tick().repeat(10)
        ctx.set(dut.rx, 0)
        await ctx.tick().repeat(2)
        ctx.set(dut.rx, 1)
        await ctx.tick().repeat(30)
        await _drive_line(ctx, dut.rx, _frame_bits(0x5A) + [1] * 3, divisor)

    _simulate(dut, drive, background=[_collect(dut, out, errors)])
    assert out == [0x5A] and errors == []
