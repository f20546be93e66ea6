"""Test bench of the protocol engine: the engine on a FakeChain, driven by a byte script.

A *script* is a list of events run in one simulation, in order:

- ``bytes``: sent to the engine back to back (the engine's ``rx.ready`` is honoured);
- :data:`IDLE`: the line stays idle until the engine has been waiting for a byte for longer
  than its inter-byte timeout (any frame in progress ends with TRUNCATED);
- ``Set(name, value)``: drive the FakeChain input ``force_error`` or ``hang``;
- ``Snapshot(key)``: after an IDLE, record the chain's register memory and control words;
- ``Wait(cycles)``: let cycles pass with the line idle.

:func:`expected_replies` runs the same script through
:class:`~linkdyn.model.protocol.ReferenceEngine` on a
:class:`~linkdyn.sim.fake_chain_model.FakeChainModel`.
"""

from dataclasses import dataclass

from amaranth import C, Cat, Elaboratable, Module, Signal
from amaranth.hdl import MemoryData
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.sim import Simulator

from linkdyn.gateware.fake_chain import NODE_STRIDE, FakeChain
from linkdyn.gateware.protocol import ProtocolEngine
from linkdyn.model import protocol as P
from linkdyn.sim.fake_chain_model import FakeChainModel
from linkdyn.sim.protocol_fuzz import IDLE


@dataclass(frozen=True)
class Set:
    name: str
    value: int


@dataclass(frozen=True)
class Snapshot:
    key: str


@dataclass(frozen=True)
class Wait:
    cycles: int


# Script entries of the hardware feeder: kind in bits 16.., argument below.
_BYTE, _IDLE, _WAIT, _SET, _PAUSE, _END = range(6)
_SET_NAMES = ("force_error", "hang")


class EngineBench(Elaboratable):
    """The engine with its bus connected to a FakeChain, fed and observed by hardware.

    The script is stored in a ROM that a small sequencer plays into the engine's ``rx``
    stream; reply bytes are captured in a RAM. The simulation thus needs no Python code per
    cycle; Python only acts at snapshots and at the end.
    """

    def __init__(self, n_nodes, *, latency=None, timeout_cycles=40, step_timeout_cycles=3000,
                 wait_states=True, parents=None):
        self.engine = ProtocolEngine(n_nodes, timeout_cycles=timeout_cycles,
                                     step_timeout_cycles=step_timeout_cycles, parents=parents)
        self.chain = FakeChain(n_nodes, latency=latency, wait_states=wait_states)
        self.spec = self.engine.spec
        self.timeout_cycles = timeout_cycles
        self.paused = Signal()
        self.finished = Signal()
        self.hung = Signal()
        self.resume = Signal()
        self.captured = Signal(32)
        self.cycles = Signal(32)
        self._entries = None

    def load(self, entries, capture_depth, tx_ready, watchdog):
        self._entries = entries
        self.capture = MemoryData(shape=8, depth=capture_depth, init=[])
        self._tx_ready = tx_ready
        self._watchdog = watchdog

    def elaborate(self, platform):
        m = Module()
        m.submodules.engine = self.engine
        m.submodules.chain = self.chain
        wiring.connect(m, self.engine.bus, self.chain.bus)
        m.submodules.player = _Player(self)
        return m


class _Player(Elaboratable):
    """Plays the script ROM into the engine and captures its replies (a separate fragment,
    so that the simulator re-evaluates it only when its own inputs change)."""

    def __init__(self, bench):
        self.bench = bench

    def elaborate(self, platform):
        m = Module()
        bench = self.bench
        engine, chain = bench.engine, bench.chain
        entries = bench._entries

        m.submodules.script = script = Memory(shape=20, depth=len(entries),
                                              init=entries)
        entry = script.read_port(domain="comb")
        ip = Signal(range(len(entries)))
        m.d.comb += entry.addr.eq(ip)
        kind, argument = entry.data[16:], entry.data[:16]
        quiet = Signal(32)
        waited = Signal(32)
        m.d.sync += bench.cycles.eq(bench.cycles + 1)

        with m.If(bench.hung):
            m.d.comb += bench.paused.eq(1)
        with m.Else():
            with m.Switch(kind):
                with m.Case(_BYTE):
                    m.d.comb += [engine.rx.valid.eq(1), engine.rx.payload.eq(argument[:8])]
                    with m.If(engine.rx.ready):
                        m.d.sync += [ip.eq(ip + 1), waited.eq(0)]
                    with m.Else():
                        m.d.sync += waited.eq(waited + 1)
                with m.Case(_IDLE):
                    m.d.sync += waited.eq(waited + 1)
                    with m.If(~engine.rx.ready):
                        m.d.sync += quiet.eq(0)
                    with m.Elif(quiet == bench.timeout_cycles + 2):
                        m.d.sync += [quiet.eq(0), waited.eq(0), ip.eq(ip + 1)]
                    with m.Else():
                        m.d.sync += quiet.eq(quiet + 1)
                with m.Case(_WAIT):
                    with m.If(waited == argument):
                        m.d.sync += [waited.eq(0), ip.eq(ip + 1)]
                    with m.Else():
                        m.d.sync += waited.eq(waited + 1)
                with m.Case(_SET):
                    for index, name in enumerate(_SET_NAMES):
                        with m.If(argument[8:] == index):
                            m.d.sync += getattr(chain, name).eq(argument[0])
                    m.d.sync += ip.eq(ip + 1)
                with m.Case(_PAUSE):
                    m.d.comb += bench.paused.eq(1)
                    with m.If(bench.resume):
                        m.d.sync += ip.eq(ip + 1)
                with m.Case(_END):
                    m.d.comb += [bench.paused.eq(1), bench.finished.eq(1)]
            with m.If(waited > bench._watchdog):
                m.d.sync += bench.hung.eq(1)

        m.submodules.capture = capture = Memory(data=bench.capture)
        write = capture.write_port()
        lfsr = Signal(16, init=0xBEEF)
        m.d.sync += lfsr.eq(Cat(lfsr[1:], lfsr[0] ^ lfsr[2] ^ lfsr[3] ^ lfsr[5]))
        ready = {"always": C(1, 1), "3/4": lfsr[:2] != 0, "1/4": lfsr[:2] == 0}[bench._tx_ready]
        m.d.comb += engine.tx.ready.eq(ready)
        with m.If(engine.tx.valid & ready):
            m.d.comb += [write.addr.eq(bench.captured), write.data.eq(engine.tx.payload),
                         write.en.eq(1)]
            m.d.sync += bench.captured.eq(bench.captured + 1)
        return m


@dataclass
class Result:
    replies: bytes
    snapshots: dict
    cycles: int


def _encode_script(script):
    entries = []
    for event in script:
        if isinstance(event, (bytes, bytearray)):
            entries += [(_BYTE << 16) | byte for byte in event]
        elif event == IDLE:
            entries.append(_IDLE << 16)
        elif isinstance(event, Wait):
            entries.append((_WAIT << 16) | event.cycles)
        elif isinstance(event, Set):
            entries.append((_SET << 16) | (_SET_NAMES.index(event.name) << 8) | event.value)
        elif isinstance(event, Snapshot):
            entries.append(_PAUSE << 16)
        else:
            raise TypeError(event)
    return entries + [_IDLE << 16, _END << 16]


def run(bench, script, *, tx_ready="always", capture_depth=None, watchdog=20_000):
    """Run a script on the bench; return the reply bytes, snapshots and cycles used.

    Parameters
    ----------
    tx_ready : str
        When the reply sink is ready: ``"always"``, ``"3/4"`` or ``"1/4"`` of the cycles
        (pseudo-random).
    capture_depth : int, optional
        Reply bytes to capture at most (default: from the reference's prediction).
    watchdog : int
        Cycles the engine may make the script wait before the run fails as hung.
    """
    if capture_depth is None:
        try:
            capture_depth = 2 * len(expected_replies(bench, script)[0]) + 4096
        except ValueError:
            capture_depth = 1 << 16
    bench.load(_encode_script(script), capture_depth, tx_ready, watchdog)
    keys = [event.key for event in script if isinstance(event, Snapshot)]
    snapshots = {}
    out = {}

    async def testbench(ctx):
        for key in keys + [None]:
            if not ctx.get(bench.paused):
                await ctx.posedge(bench.paused)
            if ctx.get(bench.hung):
                raise AssertionError(f"the engine hung (no progress for {watchdog} cycles)")
            if key is None:
                break
            snapshots[key] = _snapshot(ctx, bench)
            ctx.set(bench.resume, 1)
            await ctx.tick()
            ctx.set(bench.resume, 0)
        assert ctx.get(bench.finished)
        count = ctx.get(bench.captured)
        assert count <= capture_depth, "reply capture overflowed"
        out["replies"] = bytes(ctx.get(bench.capture[i]) for i in range(count))
        out["cycles"] = ctx.get(bench.cycles)

    sim = Simulator(bench)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return Result(out["replies"], snapshots, out["cycles"])


def _snapshot(ctx, bench):
    spec = bench.spec
    memory = [[ctx.get(bench.chain.registers[i * NODE_STRIDE + a])
               for a in range(spec.node_map_size)] for i in range(spec.n_nodes)]
    return memory


def reference(bench):
    """Return a fresh ReferenceEngine on a FakeChainModel matching the bench."""
    model = FakeChainModel(bench.spec, bench.chain.latency)
    return P.ReferenceEngine(bench.spec, model), model


def expected_replies(bench, script):
    """Return the reply bytes the reference predicts, and the model chain afterwards."""
    ref, model = reference(bench)
    out = bytearray()
    for event in script:
        if isinstance(event, (bytes, bytearray)):
            out += ref.receive(event)
        elif event == IDLE:
            out += ref.idle()
        elif isinstance(event, Set):
            raise ValueError("the reference cannot model FakeChain fault inputs")
    out += ref.idle()
    return bytes(out), model


def split_replies(data):
    """Split a byte stream of replies into frames (it must consist of whole frames only)."""
    frames = []
    while data:
        frame, rest = P.split_frame(data, reply=True)
        frames.append(data[:len(data) - len(rest)])
        data = rest
    return frames


def interval_index(command, n_nodes):
    """Word index of INTERVAL_CYCLES in an OK reply, or None (it depends on timing)."""
    interval = P.control_register("INTERVAL_CYCLES").address
    if command == P.Command.STATUS:
        return interval - P.STATUS_FIRST
    if command == P.Command.STEP:
        return n_nodes + interval - P.STEP_CONTROL_FIRST
    return None


def assert_same_replies(actual, expected, n_nodes):
    """Assert two reply streams equal byte for byte, INTERVAL_CYCLES taken from ``actual``.

    The expected frame is re-encoded with the actual interval, so the CRC of the actual frame
    is still checked against an independent encoding.
    """
    got, want = split_replies(actual), split_replies(expected)
    assert len(got) == len(want), f"{len(got)} replies, expected {len(want)}"
    for k, (a, e) in enumerate(zip(got, want)):
        ra, re_ = P.decode_reply(a), P.decode_reply(e)
        index = interval_index(re_.command, n_nodes) if re_.ok else None
        if index is not None and ra.command == re_.command and ra.ok:
            words = re_.words
            words[index] = ra.words[index]
            e = P.encode_reply(re_.seq, re_.command, re_.status, words)
        assert a == e, (f"reply {k}: got {P.decode_reply(a)}, expected {P.decode_reply(e)}")


async def exchange(ctx, engine, frame, max_cycles=100_000):
    """Send the request ``frame`` to ``engine`` (a :class:`ProtocolEngine` in the simulator,
    ``tx.ready`` held high by the caller) byte by byte as its ``rx.ready`` allows, and return
    the reply's bytes once a whole reply (header, payload, CRC) has been sent.

    Raises
    ------
    AssertionError
        If no complete reply comes within ``max_cycles`` after the request's last byte."""
    reply = bytearray()
    for byte in frame:
        ctx.set(engine.rx.valid, 1)
        ctx.set(engine.rx.payload, byte)
        while True:
            _, _, ready, tx_valid, tx_byte = await ctx.tick().sample(
                engine.rx.ready, engine.tx.valid, engine.tx.payload)
            if tx_valid:
                reply.append(tx_byte)
            if ready:
                break
    ctx.set(engine.rx.valid, 0)
    for _ in range(max_cycles):
        _, _, tx_valid, tx_byte = await ctx.tick().sample(engine.tx.valid, engine.tx.payload)
        if tx_valid:
            reply.append(tx_byte)
        if len(reply) >= P.REPLY_HEADER_BYTES:
            length = int.from_bytes(reply[5:7], "little")      # the header's length
            if len(reply) == P.REPLY_HEADER_BYTES + length + P.CRC_BYTES:
                return bytes(reply)
    raise AssertionError("no complete reply")
