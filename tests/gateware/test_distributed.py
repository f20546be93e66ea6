"""The distributed chain (one node per board, neighbour links, line models) behind the chain's
register bus: the golden model's words through the bus (Amaranth simulator for 1 and 2 boards,
3 in the cut test; with ``LINKDYN_LONG=1`` Verilator through the chain's own cocotb testbench
for the UR5 on 6 boards, random robots on 3 .. 8 and the Panda on 7), the register-bus
answers against :class:`~linkdyn.sim.chain_model.ChainModel`, the unchanged protocol engine
against the reference engine, and the faults: bit errors on every line, a cut mid-update and
its restore, random bits into a link.

The Amaranth simulator runs a 2-board chain at about 1,000 cycles per second, a 6-board one at
about 200 (the links' CRC and 8b/10b logic), so the longer runs use Verilator; the fault tests
use 5 bits per cycle on the lines (the link's fastest setting) to shorten them.
"""

import gc
import os
import random
import warnings
from pathlib import Path

import pytest
from amaranth import Elaboratable, Module
from amaranth.hdl import UnusedElaboratable
from amaranth.lib import wiring
from amaranth.sim import Simulator

from linkdyn.gateware.actuator import ActuatorCore, LINK_DOWN, LINK_WINDOW, LINK_WINDOW_FIELDS
from linkdyn.gateware.distributed import DistributedChain, LineModel, xorshift32
from linkdyn.gateware.protocol import ProtocolEngine
from linkdyn.model.golden import microprogram
from linkdyn.model.fixedpoint import Q15_16
from linkdyn.model.protocol import (
    CONTROL_NODE, STATUS_BUSY, STATUS_DONE, Command, ProtocolSpec, ReferenceEngine,
    control_register, decode_reply, encode_request, load_robot_payload, read_payload,
    step_payload,
)
from linkdyn.sim.chain_cases import build_case
from linkdyn.sim.chain_model import TIMING_MARKS, ChainModel
from linkdyn.sim.chain_testbench import BusHost, simulate

from linkdyn.sim.distributed_runner import run_distributed

from support import LONG, REPOSITORY

REGISTERS = microprogram().registers
TAU = REGISTERS["tau"].address


def _build_root():
    if os.environ.get("LINKDYN_BUILD_DIR"):
        return Path(os.environ["LINKDYN_BUILD_DIR"]) / "sim" / "distributed"
    return REPOSITORY / "build" / "sim" / "distributed"


def _window(port, field):
    return LINK_WINDOW + 8 * port + LINK_WINDOW_FIELDS.index(field)


def _words(case, state):
    return [int(w) for w in case.tau_words[state]]


def _run(dut, bench, background=()):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    for testbench in background:
        sim.add_testbench(testbench, background=True)
    sim.run()


async def _load(ctx, host, case):
    for i, words in enumerate(case.constants):
        for name, word in words.items():
            assert await host.write(ctx, i, REGISTERS[name].address, word), (i, name)
    for name, word in case.base_motion.items():
        assert await host.write(ctx, 0, REGISTERS[name].address, word)


async def _inputs(ctx, host, case, state):
    for i, words in enumerate(case.inputs[state]):
        for name, word in words.items():
            assert await host.write(ctx, i, REGISTERS[name].address, word), (i, name)


async def _wait_done(ctx, host, limit=200_000):
    for _ in range(limit):
        status = await host.control(ctx, "STATUS")
        if not status & STATUS_BUSY:
            assert status & STATUS_DONE
            return
    raise AssertionError("the update did not end")


@pytest.mark.parametrize("n, bits", [(1, 2), (2, 2)])
def test_distributed_chain_matches_golden_model_in_the_amaranth_simulator(n, bits):
    # The last two of the 4 saturating states set overflow flags (checked below). The Q15.16
    # program: with the node's formats no input a 1- or 2-link random robot can be given
    # saturates a register (qd <= 32 rad/s, qdd <= 512 rad/s^2), and the flags' path over the
    # links is what this checks.
    case = build_case({"robot": f"random:{n}:{30 + n}", "states": 2 if n == 1 else 0,
                       "seed": 30 + n, "wrench": "random", "saturate": 4}, Q15_16)
    assert case.overflow.any()
    records = simulate(DistributedChain(n, Q15_16, bits=bits), case.constants,
                       case.base_motion, case.inputs)
    assert [r.tau for r in records] == [_words(case, s) for s in range(case.count)]
    assert [r.overflow for r in records] == [
        sum(1 << i for i in range(n) if case.overflow[s, i]) for s in range(case.count)]
    for record in records:
        assert 0 < record.last_tau_latency <= record.latency


def test_bus_answers_as_the_chain_model_does():
    """Random transactions (reads of every node word, the mailbox registers, control words;
    writes allowed and refused; starts) on 2 boards: every answer (error flag and word) equals
    ChainModel's, the executable definition of the chain's bus; LATENCY/INTERVAL excepted."""
    n = 2
    case = build_case({"robot": f"random:{n}:7", "states": 1, "seed": 7, "wrench": "random"})
    spec = ProtocolSpec(n)
    model = ChainModel(spec)
    dut = DistributedChain(n, bits=5)
    host = BusHost(dut)
    rng = random.Random(3)
    timing = {control_register(name).address for name in ("LATENCY_CYCLES", "INTERVAL_CYCLES")}
    control_addresses = [reg.address for reg in spec.control_registers] + [0x7F]
    checked = {"reads": 0, "refused": 0}

    async def both(ctx, node, addr, write=None):
        error, word = await host.access(ctx, node, addr, write, limit=20_000)
        if write is None:
            ok, want = model.read(node, addr)
        else:
            ok, want = model.write(node, addr, write), write & 0xFFFFFFFF
        assert error == (not ok), (node, addr, write, error)
        if ok and not (node == CONTROL_NODE and addr in timing):
            assert word == want, (node, addr, write, word, want)
        checked["reads" if write is None else "refused"] += error
        return error

    async def bench(ctx):
        for i, words in enumerate(case.constants):
            for name, word in words.items():
                await both(ctx, i, REGISTERS[name].address, word)
        for name, word in case.base_motion.items():
            await both(ctx, 0, REGISTERS[name].address, word)
        for state in range(case.count):
            for i, words in enumerate(case.inputs[state]):
                for name, word in words.items():
                    await both(ctx, i, REGISTERS[name].address, word)
            await both(ctx, CONTROL_NODE, control_register("CONTROL").address, 1)
            await _wait_done(ctx, host)
            # Every node word (mailbox registers: the sender's words) and the first beyond
            # the map (the link window at 0xE0 is not the chain's: left out).
            for node in range(n + 1):
                for addr in range(spec.node_map_size + 1):
                    await both(ctx, node, addr)
            for addr in control_addresses:
                await both(ctx, CONTROL_NODE, addr)
            # Writes, some refused (outputs, mailbox registers of node 1, beyond the map).
            for _ in range(12):
                node, addr = rng.randrange(n + 1), rng.randrange(spec.node_map_size + 4)
                await both(ctx, node, addr, rng.getrandbits(32) if addr >= 40 else 0)
            # RESULT_SELECT: the last update (taken), the one before (refused); CONTROL.clear.
            for word in (model.control["UPDATE_COUNT"], model.control["UPDATE_COUNT"] - 1):
                await both(ctx, CONTROL_NODE, 0x15, word)
            await both(ctx, CONTROL_NODE, control_register("CONTROL").address, 2)
        # Re-load the constants a random write may have changed: the last state again.
        for i, words in enumerate(case.constants):
            for name, word in words.items():
                await both(ctx, i, REGISTERS[name].address, word)

    _run(dut, bench)
    assert checked["reads"] > 0 and checked["refused"] > 0


def test_bit_errors_on_every_line_leave_the_results_bit_exact():
    """A bit-error rate of 2e-3 on both lines (enough errors in a short run; the link tests
    cover 1e-4 at length): every tau word equals the golden model's, and the counters the host
    reads through the link window show the errors were real (frames dropped and repeated)."""
    n = 2
    case = build_case({"robot": f"random:{n}:11", "states": 1, "seed": 11, "wrench": "random"})
    # A short acknowledge timeout (the round trip at 5 bits per cycle is ~100 cycles): a lost
    # frame that no NAK reports is repeated sooner.
    dut = DistributedChain(n, bits=5, ber=2e-3, seed=9, link_parameters={"ack_timeout": 256})
    host = BusHost(dut)
    seen = {}

    async def bench(ctx):
        await _load(ctx, host, case)
        taus = []
        for state in range(case.count):
            await _inputs(ctx, host, case, state)
            assert await host.start(ctx)
            await _wait_done(ctx, host)
            taus.append([await host.read(ctx, i, TAU) for i in range(n)])
        seen["tau"] = taus
        seen["counters"] = {
            (board, port, field): (await host.access(ctx, board, _window(port, field)))[1]
            for board, port in ((0, 1), (1, 0))
            for field in ("crc_errors", "retransmissions", "frames_received")}
        seen["flipped"] = [ctx.get(line.flipped) for line in dut.lines[0]]

    _run(dut, bench)
    assert seen["tau"] == [_words(case, s) for s in range(case.count)]
    counters = seen["counters"]
    assert min(seen["flipped"]) > 0
    assert counters[(0, 1, "crc_errors")] + counters[(1, 0, "crc_errors")] > 0
    assert counters[(0, 1, "retransmissions")] + counters[(1, 0, "retransmissions")] > 0
    assert counters[(1, 0, "frames_received")] > 0


def test_a_cut_mid_update_never_gives_a_wrong_word_and_the_chain_resumes():
    """3 boards, hop 1 (board 1 to 2) cut while an update runs: STATUS stays busy (never done
    with missing words), board 2 behind the cut is refused while board 1 still answers,
    LINK_DOWN names hop 1 and board 1's downstream link reads down; after the restore the
    update ends with the golden model's words, and the next one too, with the constants loaded
    before the cut (no board was reset), one link drop counted."""
    n = 3
    case = build_case({"robot": f"random:{n}:13", "states": 2, "seed": 13, "wrench": "random"})
    dut = DistributedChain(n, bits=5, timeout=1024)
    host = BusHost(dut)
    seen = {"busy_answers": 0}

    async def bench(ctx):
        await _load(ctx, host, case)
        await _inputs(ctx, host, case, 0)
        assert await host.start(ctx)
        await host.tick(ctx, 150)           # the forward pass is under way
        ctx.set(dut.cut, 0b10)
        await host.tick(ctx, 400)           # longer than the links' down timeout
        for _ in range(3):
            status = await host.control(ctx, "STATUS")
            assert status & STATUS_BUSY and not status & STATUS_DONE
            seen["busy_answers"] += 1
            error, _ = await host.access(ctx, 2, TAU)
            assert error, "board 2 is behind the cut"
            error, _ = await host.access(ctx, 2, REGISTERS["q"].address, 5)
            assert error
            error, _ = await host.access(ctx, 1, REGISTERS["m"].address)
            assert not error, "board 1 is before the cut"
        seen["link_down"] = (await host.access(ctx, CONTROL_NODE, LINK_DOWN))[1]
        seen["port_output"] = ctx.get(dut.link_down)
        seen["board1_down_link"] = (await host.access(ctx, 1, _window(1, "status")))[1]
        ctx.set(dut.cut, 0)
        await _wait_done(ctx, host)
        seen["tau0"] = [await host.read(ctx, i, TAU) for i in range(n)]
        seen["drops"] = (await host.access(ctx, 1, _window(1, "link_drops")))[1]
        seen["after_link_down"] = (await host.access(ctx, CONTROL_NODE, LINK_DOWN))[1]
        await _inputs(ctx, host, case, 1)
        assert await host.start(ctx)
        await _wait_done(ctx, host)
        seen["tau1"] = [await host.read(ctx, i, TAU) for i in range(n)]
        seen["count"] = await host.control(ctx, "UPDATE_COUNT")

    _run(dut, bench)
    assert seen["busy_answers"] == 3
    assert seen["link_down"] == 0b10 and seen["port_output"] == 0b10
    status = seen["board1_down_link"]
    assert status & 1 == 0, "board 1's downstream link is down"
    assert status >> 24 == 1, "board 1 knows its index"
    assert seen["tau0"] == _words(case, 0)
    assert seen["tau1"] == _words(case, 1)
    assert seen["drops"] == 1 and seen["after_link_down"] == 0
    assert seen["count"] == 2


def test_random_bits_into_a_link_change_nothing():
    """Noise on both lines of hop 0 while the chain is idle: the bus keeps answering (no hang),
    every node register reads as before, and the next update gives the golden model's words."""
    n = 2
    case = build_case({"robot": f"random:{n}:17", "states": 1, "seed": 17})
    dut = DistributedChain(n, bits=5, timeout=1024)
    host = BusHost(dut)
    seen = {}
    spec = ProtocolSpec(n)

    async def snapshot(ctx):
        # The host-written words (constants, inputs, base motion) and the results.
        addresses = list(range(spec.writable_end_node0)) + [TAU]
        return [[(await host.access(ctx, i, a))[1] for a in addresses] for i in range(n)]

    async def bench(ctx):
        await _load(ctx, host, case)
        await _inputs(ctx, host, case, 0)
        before = await snapshot(ctx)
        ctx.set(dut.noise, 1)
        answered = 0
        for _ in range(10):
            await host.access(ctx, CONTROL_NODE, control_register("STATUS").address)
            await host.access(ctx, 1, TAU)          # answered: a word or a refusal
            answered += 1
            await host.tick(ctx, 100)
        ctx.set(dut.noise, 0)
        await host.tick(ctx, 1000)                   # the link trains again
        seen["answered"] = answered
        seen["same"] = await snapshot(ctx) == before
        seen["count"] = await host.control(ctx, "UPDATE_COUNT")
        assert await host.start(ctx)
        await _wait_done(ctx, host)
        seen["tau"] = [await host.read(ctx, i, TAU) for i in range(n)]

    _run(dut, bench)
    assert seen["answered"] == 10
    assert seen["same"], "a node register changed"
    assert seen["count"] == 0, "no update started by the noise"
    assert seen["tau"] == _words(case, 0)


def test_line_model_flips_bits_as_its_xorshift_reference():
    line = LineModel(bits=2, delay=4, ber=0.05, seed=3)
    rng = random.Random(1)
    sent = [rng.getrandbits(2) for _ in range(400)]
    got = []

    async def bench(ctx):
        for value in sent + [0] * 6:
            ctx.set(line.tx, value)
            await ctx.tick()
            got.append(ctx.get(line.rx))

    sim = Simulator(line)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # Reference: after edge c the line shows the word sent 3 edges before (4 registers) and
    # lane j flips when its generator, stepped c + 1 times, is below the threshold.
    states = line.seeds
    want = []
    for cycle in range(len(got)):
        states = [xorshift32(s) for s in states]
        flips = sum((state < line.threshold) << j for j, state in enumerate(states))
        delayed = sent[cycle - 3] if 0 <= cycle - 3 < len(sent) else 0
        want.append(delayed ^ flips)
    assert got == want
    assert 10 < sum(bin(a ^ b).count("1") for a, b in zip(got, [
        sent[c - 3] if 0 <= c - 3 < len(sent) else 0 for c in range(len(got))])) < 80


def test_distributed_parts_reject_bad_parameters():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(TypeError, match="Board count must be an integer"):
            DistributedChain(2.0)
        with pytest.raises(ValueError, match="Board count must be 1"):
            DistributedChain(0)
        with pytest.raises(ValueError, match="needs the number of boards"):
            ActuatorCore(base=True, last=False)
        with pytest.raises(ValueError, match="must have last=True"):
            ActuatorCore(base=True, last=False, nodes=1)
        with pytest.raises(ValueError, match="Only the base board"):
            ActuatorCore(base=False, last=True, nodes=3)
        with pytest.raises(ValueError, match="Bit-error rate"):
            LineModel(ber=0.7)
        with pytest.raises(ValueError, match="Delay must be 1"):
            LineModel(delay=0)
        gc.collect()


def _verilator_cases():
    """(n, cases), with LINKDYN_LONG=1 only (the 6-board Verilator build takes minutes): the
    UR5 on 6 boards, random robots on 3 .. 8 boards and the Panda on 7. The normal suite checks
    1 to 3 boards in the Amaranth simulator."""
    if not LONG:
        return []
    runs = [(6, [{"robot": "ur5", "states": 100, "seed": 5, "wrench": "mixed",
                  "saturate": 4}])]
    if LONG:
        for n in range(3, 9):
            cases = [{"robot": f"random:{n}:{200 + n}", "states": 40, "seed": 20 + n,
                      "wrench": "mixed", "saturate": 4}]
            if n == 7:
                cases.append({"robot": "panda", "states": 40, "seed": 7, "wrench": "mixed",
                              "saturate": 4})
            runs.append((n, cases))
    return runs


@pytest.mark.parametrize("n, cases", _verilator_cases(),
                         ids=[f"n{n}" for n, _ in _verilator_cases()])
def test_distributed_chain_matches_golden_model_on_verilator(n, cases):
    """The chain's own cocotb testbench (bus driver, golden-model scoreboard: every tau word,
    OVERFLOW, OVERFLOW_STICKY, every tenth base wrench) on the Verilog of the distributed chain
    at the DDR link rate (2 bits per cycle): the host cannot tell it from the chain. The first
    run builds the model with Verilator (some minutes for 6 boards; reused while the Verilog is
    unchanged)."""
    if n == 7 and any(case["robot"] == "panda" for case in cases):
        try:
            from linkdyn.model.reference import example_robot_urdf
            example_robot_urdf("panda")
        except FileNotFoundError:
            cases = [case for case in cases if case["robot"] != "panda"]
    summary = run_distributed(n, cases, _build_root(), bits=2)
    assert summary["checked"] == sum(case["states"] + case["saturate"] for case in cases)
    for case, result in zip(cases, summary["cases"]):
        assert result["checked"] == case["states"] + case["saturate"]
        assert result["saturating_states"] >= 1, "the saturating states set flags"


class _EngineOnDistributedChain(Elaboratable):
    """The protocol engine with its register bus on a distributed chain."""

    def __init__(self, n, **parameters):
        self.engine = ProtocolEngine(n, timeout_cycles=1 << 16, step_timeout_cycles=1 << 18)
        self.chain = DistributedChain(n, **parameters)

    def elaborate(self, platform):
        m = Module()
        m.submodules.engine = self.engine
        m.submodules.chain = self.chain
        wiring.connect(m, self.engine.bus, self.chain.bus)
        return m


def test_protocol_engine_works_unchanged_on_the_distributed_chain():
    """LOAD_ROBOT, two STEPs (with external wrenches), a READ of every node's mailbox
    registers and a STATUS through the unchanged protocol engine on 2 boards: every reply
    equals the reference engine's on ChainModel, byte for byte except the timing words
    (LATENCY_CYCLES, INTERVAL_CYCLES) of the STEP replies, which only the board knows."""
    n = 2
    case = build_case({"robot": f"random:{n}:23", "states": 2, "seed": 23, "wrench": "random"})
    spec = ProtocolSpec(n)
    reference = ReferenceEngine(spec, ChainModel(spec))
    top = _EngineOnDistributedChain(n, bits=5)
    engine = top.engine
    wrench_names = [name for name in case.inputs[0][0] if name not in ("q", "qd", "qdd")]
    requests = [encode_request(Command.LOAD_ROBOT, load_robot_payload(
        spec, case.constants, case.base_motion), seq=1)]
    for s in range(case.count):
        words = case.inputs[s]
        requests.append(encode_request(Command.STEP, step_payload(
            spec, *([w[name] & 0xFFFFFFFF for w in words] for name in ("q", "qd", "qdd")),
            wrench=[[w[name] & 0xFFFFFFFF for name in wrench_names] for w in words]),
            seq=2 + s))
    requests.append(encode_request(Command.READ, read_payload(
        1, REGISTERS["omega_in_x"].address, 15), seq=9))
    requests.append(encode_request(Command.STATUS, seq=10))
    expected = [reference.receive(request) for request in requests]
    got = []

    async def bench(ctx):
        ctx.set(engine.tx.ready, 1)
        for request, want in zip(requests, expected):
            for byte in request:
                ctx.set(engine.rx.payload, byte)
                ctx.set(engine.rx.valid, 1)
                await ctx.tick().until(engine.rx.ready)
            ctx.set(engine.rx.valid, 0)
            reply = bytearray()
            async for _, _, valid, byte in ctx.tick().sample(engine.tx.valid,
                                                              engine.tx.payload):
                if valid:
                    reply.append(byte)
                    if len(reply) == len(want):
                        break
            got.append(bytes(reply))

    _run(top, bench)
    for request, want, reply in zip(requests, expected, got):
        want, reply = decode_reply(want), decode_reply(reply)
        assert (reply.seq, reply.command, reply.status) == (want.seq, want.command, want.status)
        assert reply.ok, reply
        marks = [k for k, word in enumerate(want.words) if word in TIMING_MARKS]
        assert [w for k, w in enumerate(reply.words) if k not in marks] == \
            [w for k, w in enumerate(want.words) if k not in marks]
    # The STEP replies begin with the golden model's tau words.
    for s in range(case.count):
        tau = decode_reply(got[1 + s]).words[:n]
        assert tau == [w & 0xFFFFFFFF for w in _words(case, s)]
