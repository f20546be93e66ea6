"""The whole host link over its serial lines: UART, FIFOs, engine, on a FakeChain.

The host side is played at bit level in the testbench (a serial line driver and a sampler),
so the UART, the FIFOs and the engine are all in the loop; replies must equal the reference
(the host codec) byte for byte.
"""

import gc
import warnings

import pytest
from amaranth import Elaboratable, Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from linkdyn.gateware.fake_chain import FakeChain
from linkdyn.sim.fake_chain_model import FakeChainModel
from linkdyn.gateware.hostlink import HostLink
from linkdyn.model import protocol as P

from support.protocol_engine import assert_same_replies, split_replies

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

C = P.Command
E = P.ErrorCode
DIVISOR = 4


class _Board(Elaboratable):
    def __init__(self, n_nodes, latency=None, **kwargs):
        self.link = HostLink(n_nodes, clock_hz=1_000_000, divisor=DIVISOR, timeout_cycles=200,
                             step_timeout_cycles=20_000, **kwargs)
        self.chain = FakeChain(n_nodes, latency=latency)

    def elaborate(self, platform):
        m = Module()
        m.submodules.link = self.link
        m.submodules.chain = self.chain
        wiring.connect(m, self.link.bus, self.chain.bus)
        return m


def _serial(board, chunks, *, gap=400, end=5000):
    """Send chunks of bytes over the line (``gap`` idle cycles after each, ``end`` after the
    last); return the bytes received."""
    link = board.link
    received = bytearray()

    async def send(ctx):
        await ctx.tick().repeat(10)
        for chunk, stop_bits in chunks:
            for k, byte in enumerate(chunk):
                bits = [0] + [(byte >> i) & 1 for i in range(8)] + [stop_bits[k]]
                for bit in bits:
                    ctx.set(link.rx, bit)
                    await ctx.tick().repeat(DIVISOR)
            ctx.set(link.rx, 1)
            await ctx.tick().repeat(gap)
        await ctx.tick().repeat(end)

    async def ticks(ctx, count):
        for _ in range(count):      # one-shot waits: the simulation may end in between
            await ctx.tick()

    async def sample(ctx):
        while True:
            await ctx.negedge(link.tx)
            await ticks(ctx, DIVISOR // 2)
            assert ctx.get(link.tx) == 0
            byte = 0
            for i in range(8):
                await ticks(ctx, DIVISOR)
                byte |= ctx.get(link.tx) << i
            await ticks(ctx, DIVISOR)
            assert ctx.get(link.tx) == 1, "stop bit"
            received.append(byte)

    sim = Simulator(board)
    sim.add_clock(1e-6)
    sim.add_testbench(send)
    sim.add_testbench(sample, background=True)
    sim.run()
    return bytes(received)


def _good(frame):
    return frame, [1] * len(frame)


def test_host_link_answers_over_the_serial_line_like_the_reference():
    board = _Board(2)
    spec = board.link.spec
    steps = b"".join(P.encode_request(C.STEP, P.step_payload(spec, [k, 1], [2, k], [3, 3]),
                                      seq=k) for k in range(4))
    write = P.encode_request(C.WRITE, P.write_payload(1, 8, [1000]), seq=9)
    chunks = [
        _good(P.encode_request(C.INFO, seq=1)),
        _good(write),
        _good(steps),                                     # stream mode: back to back
        _good(P.encode_request(C.READ, P.read_payload(1, 0, 12), seq=10)),
        _good(write[:-1] + bytes([write[-1] ^ 0x20])),    # bad CRC
        _good(write[:7]),                                 # truncated
    ]
    replies = _serial(board, chunks)
    reference = P.ReferenceEngine(spec, FakeChainModel(spec, board.chain.latency))
    expected = b"".join(reference.receive(chunk) + reference.idle() for chunk, _ in chunks)
    assert_same_replies(replies, expected, spec.n_nodes)
    frames = [P.decode_reply(f) for f in split_replies(replies)]
    assert [(f.seq, E(f.status)) for f in frames] == [
        (1, E.OK), (9, E.OK), (0, E.OK), (1, E.OK), (2, E.OK), (3, E.OK), (10, E.OK),
        (9, E.BAD_CRC), (9, E.TRUNCATED)]
    info = P.BuildInfo.from_payload(frames[0].payload)
    assert info.baudrate == 1_000_000 // DIVISOR and info.clock_hz == 1_000_000
    assert [P.StepResult.from_payload(f.payload, 2).tau_words for f in frames[2:6]] == [
        [k + 2 + 3, 1 + k + 3 + 1000] for k in range(4)]


def test_host_link_counts_uart_frame_errors_and_receive_overflows():
    # A tiny receive FIFO and a long update: the bytes that arrive while the engine waits for
    # the update to finish overflow the FIFO.
    board = _Board(1, rx_fifo_depth=4, latency=1500)
    spec = board.link.spec
    step = P.encode_request(C.STEP, P.step_payload(spec, [1], [2], [3]), seq=1)
    info = P.encode_request(C.INFO, seq=2)
    chunks = [
        (bytes([0x00]), [0]),              # a byte with a bad stop bit
        _good(step + info + info),         # the INFO frames arrive during the update
        _good(P.encode_request(C.STATUS, seq=3)),
    ]
    replies = _serial(board, chunks, gap=2000, end=8000)
    frames = [P.decode_reply(f) for f in split_replies(replies)]
    assert (frames[0].seq, frames[0].status) == (1, E.OK)
    assert P.StepResult.from_payload(frames[0].payload, 1).tau_words == [6]
    last = P.ChainStatus.from_payload(frames[-1].check().payload)
    assert frames[-1].seq == 3
    assert last.words["UART_FRAME_ERRORS"] == 1
    assert last.words["UART_OVERFLOWS"] > 0
    # The frames damaged by the lost bytes were answered with errors (or not at all).
    assert sum(f.ok and f.command == C.INFO for f in frames) < 2


def test_host_link_checks_its_parameters():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the half-built components are never elaborated
        with pytest.raises(ValueError, match="either baudrate or divisor"):
            HostLink(2, clock_hz=1_000_000, baudrate=9600, divisor=4, timeout_cycles=10)
        with pytest.raises(ValueError, match="cannot make"):
            HostLink(2, clock_hz=1_000_000, baudrate=3_000_000)
        with pytest.raises(ValueError, match="Clock frequency must be a positive integer"):
            HostLink(2, clock_hz=0)
        gc.collect()
