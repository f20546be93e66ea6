"""BATCH on a pipelined chain: the gateware protocol engine against its reference, byte for byte.

:class:`linkdyn.gateware.protocol.ProtocolEngine` drives the real
``LinkDynChain(2, policy="pipelined", banks=2)`` in the Amaranth simulator;
:class:`linkdyn.model.protocol.ReferenceEngine` runs the same requests on
:class:`linkdyn.sim.pipelined_chain_model.PipelinedChainModel` (the golden model's words, the
pipelined bus semantics of ``docs/chain.md``). Every reply must be equal byte for byte, except
the chain's timing words (LATENCY_CYCLES, INTERVAL_CYCLES), which the model marks and the
comparison takes from the chain; those show the updates of a batch overlapping. Bad BATCH
requests get an error reply and change nothing; a BATCH that times out leaves its updates
to finish, and one sent meanwhile is BUSY and starts nothing.
"""

import os
import random

import pytest
from amaranth import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from linkdyn.gateware.chain import LinkDynChain
from linkdyn.gateware.protocol import ProtocolEngine
from linkdyn.model import protocol as P
from linkdyn.model.golden import encode_base_motion, encode_robot
from linkdyn.sim.chain_cases import random_robot
from linkdyn.sim.chain_model import TIMING_MARKS, ChainModel
from linkdyn.sim.pipelined_chain_model import PipelinedChainModel

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

C = P.Command
E = P.ErrorCode
N = 2
ROBOT = random_robot(N, 11)
_LATENCY = P.control_register("LATENCY_CYCLES").address - P.STEP_CONTROL_FIRST
_INTERVAL = P.control_register("INTERVAL_CYCLES").address - P.STEP_CONTROL_FIRST


def _state_words(spec, seed, wrench):
    """One state's STEP payload: joint words within a few rad (-ish), wrench words if asked."""
    rng = random.Random(seed)
    q = [rng.randrange(-(1 << 17), 1 << 17) for _ in range(N)]
    qd = [rng.randrange(-(1 << 17), 1 << 17) for _ in range(N)]
    qdd = [rng.randrange(-(1 << 18), 1 << 18) for _ in range(N)]
    f = [[rng.randrange(-(1 << 20), 1 << 20) for _ in range(6)] for _ in range(N)] \
        if wrench else None
    return P.step_payload(spec, q, qd, qdd, f)


def _run_gateware(requests, banks, *, step_timeout_cycles=20_000):
    """Send every request to the engine on the pipelined chain (an int: that many idle cycles
    instead); return the reply frames and, per request, the cycles from its first byte to its
    reply's last."""
    engine = ProtocolEngine(N, banks=banks, timeout_cycles=64,
                            step_timeout_cycles=step_timeout_cycles)
    chain = LinkDynChain(N, policy="pipelined", banks=banks)
    m = Module()
    m.submodules.engine = engine
    m.submodules.chain = chain
    wiring.connect(m, engine.bus, chain.bus)
    replies, cycles = [], []

    async def bench(ctx):
        ctx.set(engine.tx.ready, 1)
        for request in requests:
            if isinstance(request, int):
                await ctx.tick().repeat(request)
                continue
            start = 0
            for byte in request:
                ctx.set(engine.rx.valid, 1)
                ctx.set(engine.rx.payload, byte)
                while True:
                    _, _, ready = await ctx.tick().sample(engine.rx.ready)
                    start += 1
                    if ready:
                        break
            ctx.set(engine.rx.valid, 0)
            frame = bytearray()
            length = None
            while length is None or len(frame) < P.REPLY_HEADER_BYTES + length + P.CRC_BYTES:
                _, _, valid, payload = await ctx.tick().sample(engine.tx.valid,
                                                               engine.tx.payload)
                start += 1
                assert start < 200_000, "the engine does not answer"
                if valid:
                    frame.append(payload)
                    if len(frame) == P.REPLY_HEADER_BYTES:
                        length = int.from_bytes(frame[-2:], "little")
            replies.append(bytes(frame))
            cycles.append(start)

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return replies, cycles


def _reference(spec, requests):
    engine = P.ReferenceEngine(spec, PipelinedChainModel(spec))
    return [engine.receive(request) for request in requests]


def _with_timing_of(expected, actual):
    """Return ``expected`` with the marked timing words replaced by ``actual``'s (the CRC
    recomputed), if the two frames have the same layout."""
    exp, act = P.decode_reply(expected), P.decode_reply(actual)
    if not exp.ok or len(exp.payload) != len(act.payload):
        return expected
    words = [a if e in TIMING_MARKS else e for e, a in zip(exp.words, act.words)]
    return P.encode_reply(exp.seq, exp.command, exp.status, words)


def _requests(spec):
    constants = encode_robot(ROBOT)
    base = encode_base_motion(ROBOT)
    batch2 = P.batch_payload(spec, [_state_words(spec, s, True) for s in (1, 2)])
    batch1 = P.batch_payload(spec, [_state_words(spec, 3, False)])
    plain = P.batch_payload(spec, [_state_words(spec, s, False) for s in (4, 5)])
    over = spec.max_batch + 1
    too_many = P.words_to_bytes([over]) + b"".join(_state_words(spec, s, False)
                                                   for s in range(6, 6 + over))
    zero = P.words_to_bytes([0]) + _state_words(spec, 9, False)
    short = batch2[:-4]
    mismatched = P.words_to_bytes([1]) + plain[4:]         # K = 1, two samples' words
    return [
        P.encode_request(C.LOAD_ROBOT, P.load_robot_payload(spec, constants, base), seq=1),
        P.encode_request(C.BATCH, batch2, seq=2),
        P.encode_request(C.BATCH, batch1, seq=3),
        P.encode_request(C.BATCH, plain, seq=4),
        P.encode_request(C.BATCH, too_many, seq=5),
        P.encode_request(C.BATCH, zero, seq=6),
        P.encode_request(C.BATCH, short, seq=7),
        P.encode_request(C.BATCH, mismatched, seq=8),
        P.encode_request(C.STATUS, seq=9),
        P.encode_request(C.READ, P.read_payload(P.CONTROL_NODE, P.RESULT_SELECT, 1), seq=10),
        P.encode_request(C.STEP, _state_words(spec, 10, True), seq=11),
        P.encode_request(C.BATCH, batch2, seq=12),
    ] + ([] if spec.max_batch < 4 else [
        # 4 banks, 2 nodes: K = 1 with the wrench and K = 3 without have the same length;
        # word 0 tells them apart. Then a full batch of 4.
        P.encode_request(C.BATCH, P.batch_payload(spec, [_state_words(spec, 20, True)]),
                         seq=13),
        P.encode_request(C.BATCH, P.batch_payload(
            spec, [_state_words(spec, s, False) for s in (21, 22, 23)]), seq=14),
        P.encode_request(C.BATCH, P.batch_payload(
            spec, [_state_words(spec, s, True) for s in (24, 25, 26, 27)]), seq=15),
    ]) + _long_requests(spec)


def _long_requests(spec, count=12):
    """With LINKDYN_LONG=1: random batches (K, wrench or not, states) after the others."""
    if not os.environ.get("LINKDYN_LONG"):
        return []
    rng = random.Random(spec.banks)
    out = []
    for k in range(count):
        wrench = rng.random() < 0.5
        states = [_state_words(spec, rng.randrange(1 << 30), wrench)
                  for _ in range(rng.randint(1, spec.max_batch))]
        out.append(P.encode_request(C.BATCH, P.batch_payload(spec, states), seq=100 + k))
    return out


@pytest.mark.parametrize("banks", [2, 4])
def test_batch_on_the_pipelined_chain_is_the_reference_byte_for_byte_and_overlaps(banks):
    spec = P.ProtocolSpec(N, banks=banks)
    requests = _requests(spec)
    actual, cycles = _run_gateware(requests, banks)
    expected = _reference(spec, requests)
    assert len(actual) == len(expected) == len(requests)
    for index, (exp, act) in enumerate(zip(expected, actual)):
        assert _with_timing_of(exp, act) == act, f"request {index}"
    statuses = [E(P.decode_reply(frame).status) for frame in actual]
    assert statuses == [E.OK] * 4 + [E.BAD_LENGTH] * 4 + [E.OK] * (len(requests) - 8)
    # The bad requests changed nothing: the STATUS frame counters aside, the next BATCH gives
    # the update numbers that follow the good ones (2 + 1 + 2, then STEP 6, then 7 and 8).
    first = P.BatchResult.from_payload(P.decode_reply(actual[1]).payload, N)
    assert first.update_numbers == [1, 2]
    last = P.BatchResult.from_payload(P.decode_reply(actual[11]).payload, N)
    assert last.update_numbers == [7, 8] and last.last.update_count == 8
    assert P.decode_reply(actual[9]).words == [P.RESULT_FOLLOW]    # follow restored
    # The engine started sample 2 while sample 1 ran: the chain counted fewer cycles between
    # the two starts than the last update took.
    words = P.decode_reply(actual[1]).words[-P.STEP_CONTROL_COUNT:]
    assert 0 < words[_INTERVAL] < words[_LATENCY], words
    if banks == 4:
        assert len(P.decode_reply(actual[12]).words) == spec.batch_reply_words(1)
        assert len(P.decode_reply(actual[13]).words) == spec.batch_reply_words(3)
        full = P.BatchResult.from_payload(P.decode_reply(actual[14]).payload, N)
        assert full.update_numbers == [13, 14, 15, 16]


def test_a_sequential_build_answers_batch_with_unknown_command_and_counts_it():
    spec = P.ProtocolSpec(N)
    assert C.BATCH not in spec.commands and spec.max_batch == 0
    payload = P.words_to_bytes([1]) + _state_words(spec, 1, False)
    engine = P.ReferenceEngine(spec, ChainModel(spec))
    reply = P.decode_reply(engine.receive(P.encode_request(C.BATCH, payload, seq=3)))
    assert E(reply.status) is E.UNKNOWN_COMMAND and reply.payload == b""
    assert engine.counters["ERRORS_UNKNOWN_COMMAND"] == 1


def test_a_batch_that_times_out_leaves_the_chain_to_finish_and_the_next_one_busy():
    spec = P.ProtocolSpec(N, banks=2)
    batch = P.batch_payload(spec, [_state_words(spec, s, False) for s in (1, 2)])
    constants = encode_robot(ROBOT)
    base = encode_base_motion(ROBOT)
    load = P.encode_request(C.LOAD_ROBOT, P.load_robot_payload(spec, constants, base), seq=1)
    update_count = P.control_register("UPDATE_COUNT").address
    requests = [
        load,
        P.encode_request(C.BATCH, batch, seq=2),     # the poll gives up before the updates end
        P.encode_request(C.BATCH, batch, seq=3),     # they still run: BUSY, nothing written
        2_000,
        P.encode_request(C.READ, P.read_payload(P.CONTROL_NODE, P.RESULT_SELECT, 1), seq=4),
        P.encode_request(C.READ, P.read_payload(P.CONTROL_NODE, update_count, 1), seq=5),
        P.encode_request(C.READ, P.read_payload(0, spec.tau_address, 1), seq=6),
        P.encode_request(C.READ, P.read_payload(1, spec.tau_address, 1), seq=7),
    ]
    actual, _ = _run_gateware(requests, 2, step_timeout_cycles=40)
    statuses = [E(P.decode_reply(frame).status) for frame in actual]
    assert statuses == [E.OK, E.TIMEOUT, E.BUSY, E.OK, E.OK, E.OK, E.OK]
    words = [P.decode_reply(frame).words for frame in actual[3:]]
    # RESULT_SELECT untouched (the timeout comes before any select); the timed-out batch's
    # two updates ran to the end, the BUSY one started none; the torques are the second
    # state's, as the reference computes them.
    assert words[0] == [P.RESULT_FOLLOW] and words[1] == [2]
    reference = _reference(spec, [load, P.encode_request(C.BATCH, batch, seq=2)])[1]
    assert [w[0] for w in words[2:]] == P.decode_reply(reference).words[N + 2:2 * N + 2]
