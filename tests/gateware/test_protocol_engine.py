"""The gateware protocol engine against its reference (model/protocol.py), on a fake chain.

Every reply of :class:`linkdyn.gateware.protocol.ProtocolEngine` must equal, byte for byte,
the reply of :class:`linkdyn.model.protocol.ReferenceEngine` (the host codec's own encoder),
and the chain's registers must end up the same; malformed frames must change nothing.
"""

import gc
import random
import warnings

import pytest

from linkdyn.gateware.bus import CONTROL_NODE
from linkdyn.gateware.fake_chain import FakeChain
from linkdyn.gateware.protocol import ProtocolEngine
from linkdyn.model import load_robot
from linkdyn.model import protocol as P
from linkdyn.model.golden import encode_base_motion, encode_robot
from linkdyn.sim.protocol_fuzz import fuzz_script

from support.protocol_engine import (IDLE, EngineBench, Set, Snapshot, Wait, assert_same_replies,
                            expected_replies, run, split_replies)

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

C = P.Command
E = P.ErrorCode


def req(command, payload=b"", seq=0, **kw):
    return P.encode_request(command, payload, seq=seq, **kw)


def statuses(data):
    return [(P.decode_reply(f).seq, E(P.decode_reply(f).status)) for f in split_replies(data)]


def signed(word):
    return word - (1 << 32) if word & 0x80000000 else word


# -- every command -------------------------------------------------------------------------------

def test_engine_executes_every_command_like_the_reference_on_puma560():
    robot = load_robot("puma560")
    bench = EngineBench(robot.n)
    spec = bench.spec
    rng = random.Random(1)
    constants = encode_robot(robot)
    base = encode_base_motion(robot)
    q = [rng.randrange(-(1 << 17), 1 << 17) for _ in range(robot.n)]
    qd = [rng.randrange(-(1 << 18), 1 << 18) for _ in range(robot.n)]
    qdd = [rng.randrange(-(1 << 19), 1 << 19) for _ in range(robot.n)]
    wrench = [[rng.randrange(-(1 << 20), 1 << 20) for _ in range(6)] for _ in range(robot.n)]
    script = [
        req(C.INFO, seq=1),
        req(C.LOAD_ROBOT, P.load_robot_payload(spec, constants, base), seq=2),
        req(C.READ, P.read_payload(3, 0, spec.constant_count), seq=3),
        req(C.READ, P.read_payload(0, spec.base_motion_address, spec.base_motion_count), seq=4),
        req(C.STEP, P.step_payload(spec, q, qd, qdd), seq=5),
        req(C.STEP, P.step_payload(spec, q, qd, qdd, wrench), seq=6),
        req(C.WRITE, P.write_payload(4, spec.input_address, [7, 8, 9]), seq=7),
        req(C.READ, P.read_payload(4, spec.input_address, spec.input_count), seq=8),
        req(C.READ, P.read_payload(CONTROL_NODE, 0, 5), seq=9),
        req(C.STATUS, seq=10),
        req(C.CLEAR, seq=11),
        req(C.STATUS, seq=12),
        req(C.WRITE, P.write_payload(CONTROL_NODE, 0, [0]), seq=13),
        # A whole node map in one READ, and one WRITE of every writable word of node 0.
        req(C.READ, P.read_payload(5, 0, spec.node_map_size), seq=14),
        req(C.WRITE, P.write_payload(0, 0, list(range(spec.writable_end_node0))), seq=15),
        req(C.READ, P.read_payload(CONTROL_NODE, 6, 0x15 - 6), seq=16),
        Snapshot("end"),
    ]
    result = run(bench, script)
    expected, model = expected_replies(bench, script)
    assert_same_replies(result.replies, expected, spec.n_nodes)
    assert result.snapshots["end"] == [row[:spec.node_map_size] for row in model.memory]

    replies = [P.decode_reply(f) for f in split_replies(result.replies)]
    assert [r.seq for r in replies] == list(range(1, 17))
    assert all(r.ok for r in replies)
    info = P.BuildInfo.from_payload(replies[0].payload)
    assert info.magic == P.MAGIC and info.nodes == 6 and info.map_check == spec.map_check
    assert replies[2].words == [constants[3][reg.name] & 0xFFFFFFFF
                                for reg in spec.registers.of_kind("constant")]
    assert replies[3].words == [base[reg.name] & 0xFFFFFFFF
                                for reg in spec.registers.of_kind("forward_in")]
    step = P.StepResult.from_payload(replies[5].payload, robot.n)
    p_ddot_z = signed(base["p_ddot_in_z"] & 0xFFFFFFFF)
    for i in range(robot.n):
        total = q[i] + qd[i] + qdd[i] + sum(wrench[i]) + signed(constants[i]["m"] & 0xFFFFFFFF)
        total += p_ddot_z if i == 0 else 0
        assert step.tau_words[i] == total
    assert step.latency_cycles == bench.chain.latency and step.update_count == 2
    assert step.interval_cycles > bench.chain.latency
    assert replies[7].words[:3] == [7, 8, 9]
    assert replies[7].words[3:] == [w & 0xFFFFFFFF for w in wrench[4]]
    status = P.ChainStatus.from_payload(replies[9].payload)
    assert status.done and not status.busy and status.words["FRAME_COUNT"] == 9
    assert replies[8].words == [0] + replies[9].words[:4]
    assert replies[15].words[:2] == [2, 15]     # UPDATE_COUNT, FRAME_COUNT (seq 1 .. 15)


def test_host_codec_round_trips_with_the_engine_byte_for_byte():
    bench = EngineBench(2)
    spec = bench.spec
    requests = [
        P.encode_request(C.INFO, seq=200),
        P.encode_request(C.WRITE, P.write_payload(1, 3, [0xDEADBEEF, 7]), seq=201),
        P.encode_request(C.READ, P.read_payload(1, 3, 2), seq=202),
        P.encode_request(C.STEP, P.step_payload(spec, [-1, 2], [3, -4], [5, 6]), seq=203),
        P.encode_request(C.WRITE, P.write_payload(1, spec.tau_address, [1]), seq=204),
    ]
    result = run(bench, requests)
    frames = split_replies(result.replies)
    assert len(frames) == len(requests)
    for request, frame in zip(requests, frames):
        decoded_request = P.decode_request(request)
        reply = P.decode_reply(frame)
        assert (reply.seq, reply.command) == (decoded_request.seq, decoded_request.command)
        assert P.encode_reply(reply.seq, reply.command, reply.status, reply.payload) == frame
    replies = [P.decode_reply(f) for f in frames]
    assert replies[2].words == [0xDEADBEEF, 7]
    assert P.StepResult.from_payload(replies[3].payload, 2).tau_words == [7, 4]
    assert replies[4].status == E.READ_ONLY


def test_engine_reports_saturation_in_the_step_reply_and_clears_it():
    bench = EngineBench(3)
    spec = bench.spec
    big = (1 << 31) - 1
    script = [
        req(C.STEP, P.step_payload(spec, [big, 0, -big - 1], [big, 0, -1], [0, 0, 0]), seq=1),
        req(C.STEP, P.step_payload(spec, [0, 0, 0], [0, 0, 0], [0, 0, 0]), seq=2),
        req(C.CLEAR, seq=3),
        req(C.STATUS, seq=4),
    ]
    result = run(bench, script)
    assert_same_replies(result.replies, expected_replies(bench, script)[0], 3)
    replies = [P.decode_reply(f) for f in split_replies(result.replies)]
    first = P.StepResult.from_payload(replies[0].payload, 3)
    assert first.tau_words == [big, 0, -big - 1]
    assert first.overflow == 0b101 and first.overflow_sticky == 0b101
    second = P.StepResult.from_payload(replies[1].payload, 3)
    assert second.overflow == 0 and second.overflow_sticky == 0b101
    status = P.ChainStatus.from_payload(replies[3].payload)
    assert status.words["OVERFLOW_STICKY"] == 0 and not status.words["STATUS"] & P.STATUS_OVERFLOW


# -- every error case ----------------------------------------------------------------------------

def _corrupt_last(frame):
    return frame[:-1] + bytes([frame[-1] ^ 0x01])


def test_engine_answers_every_malformed_frame_with_its_error_and_changes_nothing():
    bench = EngineBench(6)
    spec = bench.spec
    n = spec.n_nodes
    ctl = CONTROL_NODE
    write = req(C.WRITE, P.write_payload(1, 0, [0x11, 0x22, 0x33]), seq=1)
    payload_flip = bytearray(write)
    payload_flip[12] ^= 0x40
    cases = [
        (_corrupt_last(write), E.BAD_CRC),
        (bytes(payload_flip), E.BAD_CRC),
        (write[:9], E.TRUNCATED),
        (write[:3], E.TRUNCATED),
        (req(C.WRITE, P.write_payload(1, 0, [1]), seq=3, version=P.PROTOCOL_VERSION + 1),
         E.BAD_VERSION),
        (req(0x42, seq=4), E.UNKNOWN_COMMAND),
        (req(0x85, seq=5), E.UNKNOWN_COMMAND),
        (req(C.STEP, P.words_to_bytes([1] * (3 * n + 1)), seq=6), E.BAD_LENGTH),
        (req(C.LOAD_ROBOT, P.words_to_bytes([1] * (spec.load_robot_words - 1)), seq=7),
         E.BAD_LENGTH),
        (req(C.READ, P.read_payload(0, 0, 0), seq=8), E.BAD_LENGTH),
        (req(C.READ, P.read_payload(0, 0, spec.buffer_words + 1), seq=9), E.BAD_LENGTH),
        (req(C.WRITE, P.words_to_bytes([P.block_word(1, 0, 3), 5, 6]), seq=10), E.BAD_LENGTH),
        (req(C.WRITE, P.write_payload(1, 0, [5]) + b"\x00", seq=11), E.BAD_LENGTH),
        (req(C.WRITE, P.words_to_bytes([P.block_word(1, 0, 0)]), seq=12), E.BAD_LENGTH),
        (req(C.INFO, b"\x00\x00\x00\x00", seq=13), E.BAD_LENGTH),
        (req(C.READ, P.read_payload(n, 0, 1), seq=14), E.BAD_NODE),
        (req(C.WRITE, P.write_payload(0x80, 0, [1]), seq=15), E.BAD_NODE),
        (req(C.READ, P.read_payload(0, spec.node_map_size, 1), seq=16), E.BAD_ADDRESS),
        (req(C.WRITE, P.write_payload(2, 0xF0, [1] * 20), seq=17), E.BAD_ADDRESS),
        (req(C.READ, P.read_payload(ctl, 0x16, 1), seq=18), E.BAD_ADDRESS),
        (req(C.READ, P.read_payload(ctl, 0x12, 8), seq=19), E.BAD_ADDRESS),
        (req(C.WRITE, P.write_payload(1, spec.tau_address, [1]), seq=20), E.READ_ONLY),
        (req(C.WRITE, P.write_payload(1, spec.base_motion_address, [1]), seq=21), E.READ_ONLY),
        (req(C.WRITE, P.write_payload(1, spec.writable_end - 2, [1, 2, 3]), seq=22),
         E.READ_ONLY),
        (req(C.WRITE, P.write_payload(ctl, 1, [1]), seq=23), E.READ_ONLY),
        (req(C.WRITE, P.write_payload(ctl, 7, [1]), seq=24), E.READ_ONLY),
        (req(C.WRITE, P.write_payload(0, spec.writable_end_node0 - 1, [1, 2]), seq=25),
         E.READ_ONLY),
    ]
    oversize = P.encode_request(C.WRITE, bytes(spec.max_payload_bytes + 4), seq=26)
    script = [req(C.WRITE, P.write_payload(1, 0, [9, 9, 9]), seq=99), IDLE, Snapshot("before")]
    for frame, _ in cases:
        script += [frame, IDLE]
    script += [oversize[:6], IDLE, Snapshot("after"), req(C.STATUS, seq=100)]
    result = run(bench, script)
    assert_same_replies(result.replies, expected_replies(bench, script)[0], n)

    got = statuses(result.replies)
    assert got[0] == (99, E.OK)
    assert got[1:-2] == [(frame[2], code) for frame, code in cases]
    assert got[-2] == (26, E.BAD_LENGTH)
    assert result.snapshots["before"] == result.snapshots["after"]
    counts = P.ChainStatus.from_payload(P.decode_reply(split_replies(result.replies)[-1])
                                        .payload).errors
    expected_counts = {code: 0 for code in E if code is not E.OK}
    for _, code in cases:
        expected_counts[code] += 1
    expected_counts[E.BAD_LENGTH] += 1
    assert counts == expected_counts


def test_engine_refuses_state_changes_while_the_chain_is_busy():
    bench = EngineBench(2, latency=3000)
    spec = bench.spec
    start = req(C.WRITE, P.write_payload(CONTROL_NODE, 0, [P.CONTROL_START]), seq=1)
    script = [
        Snapshot("before"),
        start,
        req(C.STEP, P.step_payload(spec, [1, 2], [3, 4], [5, 6]), seq=2),
        req(C.WRITE, P.write_payload(0, 0, [1]), seq=3),
        req(C.LOAD_ROBOT, P.words_to_bytes([1] * spec.load_robot_words), seq=4),
        req(C.CLEAR, seq=5),
        req(C.STATUS, seq=6),
        req(C.INFO, seq=7),
        IDLE,
        Snapshot("busy"),
        Wait(3000),
        req(C.STATUS, seq=8),
        req(C.STEP, P.step_payload(spec, [1, 2], [3, 4], [5, 6]), seq=9),
    ]
    result = run(bench, script)
    got = statuses(result.replies)
    assert got == [(1, E.OK), (2, E.BUSY), (3, E.BUSY), (4, E.BUSY), (5, E.BUSY), (6, E.OK),
                   (7, E.OK), (8, E.OK), (9, E.OK)]
    assert result.snapshots["before"] == result.snapshots["busy"]
    replies = [P.decode_reply(f) for f in split_replies(result.replies)]
    assert P.ChainStatus.from_payload(replies[5].payload).busy
    assert P.ChainStatus.from_payload(replies[5].payload).errors[E.BUSY] == 4
    assert not P.ChainStatus.from_payload(replies[7].payload).busy
    step = P.StepResult.from_payload(replies[8].payload, 2)
    assert step.tau_words == [9, 12] and step.update_count == 2


def test_engine_reports_a_bus_error_when_the_chain_refuses_and_writes_nothing():
    bench = EngineBench(2)
    spec = bench.spec
    script = [
        Snapshot("before"),
        Set("force_error", 1),
        req(C.WRITE, P.write_payload(0, 0, [1, 2]), seq=1),
        req(C.STEP, P.step_payload(spec, [1, 2], [3, 4], [5, 6]), seq=2),
        req(C.READ, P.read_payload(1, 0, 2), seq=3),
        req(C.STATUS, seq=4),
        req(C.INFO, seq=5),                      # engine-owned words: no bus access
        req(C.READ, P.read_payload(CONTROL_NODE, 7, 14), seq=6),
        IDLE,
        Set("force_error", 0),
        Snapshot("after"),
        req(C.READ, P.read_payload(CONTROL_NODE,
                                   P.control_register("ERRORS_BUS_ERROR").address, 1), seq=7),
    ]
    result = run(bench, script)
    got = statuses(result.replies)
    assert got == [(1, E.BUS_ERROR), (2, E.BUS_ERROR), (3, E.BUS_ERROR), (4, E.BUS_ERROR),
                   (5, E.OK), (6, E.OK), (7, E.OK)]
    assert result.snapshots["before"] == result.snapshots["after"]
    last = P.decode_reply(split_replies(result.replies)[-1])
    assert last.words == [4]    # ERRORS_BUS_ERROR


def test_engine_times_out_a_step_that_does_not_finish_and_recovers():
    bench = EngineBench(2, step_timeout_cycles=400)
    spec = bench.spec
    step = req(C.STEP, P.step_payload(spec, [1, 2], [3, 4], [5, 6]), seq=1)
    script = [
        Set("hang", 1), step, IDLE,
        req(C.STATUS, seq=2), req(C.WRITE, P.write_payload(0, 22, [1]), seq=3), IDLE,
        Set("hang", 0), Wait(10),
        req(C.STEP, P.step_payload(spec, [1, 1], [1, 1], [1, 1]), seq=4),
    ]
    result = run(bench, script)
    got = statuses(result.replies)
    assert got == [(1, E.TIMEOUT), (2, E.OK), (3, E.BUSY), (4, E.OK)]
    replies = [P.decode_reply(f) for f in split_replies(result.replies)]
    assert P.ChainStatus.from_payload(replies[1].payload).busy
    assert P.StepResult.from_payload(replies[3].payload, 2).tau_words == [3, 3]


# -- resynchronisation and random corruption -------------------------------------------------------

def test_engine_resynchronises_after_garbage():
    bench = EngineBench(2)
    rng = random.Random(7)
    no_sync = bytes(b for b in rng.randbytes(300) if b != P.REQUEST_SYNC)
    with_sync = rng.randbytes(200) + bytes([P.REQUEST_SYNC, 1, 2, 3])
    info = req(C.INFO, seq=42)
    script = [no_sync, info,                       # garbage without a sync byte: no reply
              with_sync, IDLE, info,               # a false start, resolved by the timeout
              bytes([P.REQUEST_SYNC]) + info[:-1], IDLE, info]
    result = run(bench, script)
    assert_same_replies(result.replies, expected_replies(bench, script)[0], 2)
    got = statuses(result.replies)
    assert got[0] == (42, E.OK) and got[-1] == (42, E.OK)
    assert [s for _, s in got].count(E.OK) == 3


def test_engine_equals_reference_on_random_corrupted_and_valid_frames():
    bench = EngineBench(2, timeout_cycles=16)
    spec = bench.spec
    rng = random.Random(2024)
    script = fuzz_script(rng, spec, 800, malformed_only=False) + [Snapshot("end")]
    result = run(bench, script, tx_ready="3/4")
    expected, model = expected_replies(bench, script)
    assert_same_replies(result.replies, expected, spec.n_nodes)
    assert result.snapshots["end"] == [row[:spec.node_map_size] for row in model.memory]
    got = [status for _, status in statuses(result.replies)]
    assert len(got) > 600
    assert {E.OK, E.BAD_CRC, E.TRUNCATED, E.BAD_LENGTH, E.BAD_ADDRESS, E.READ_ONLY,
            E.BAD_NODE, E.BAD_VERSION, E.UNKNOWN_COMMAND} <= set(got)


def test_engine_changes_nothing_on_thousands_of_malformed_frames():
    bench = EngineBench(1, timeout_cycles=16)
    spec = bench.spec
    rng = random.Random(99)
    setup = [req(C.LOAD_ROBOT, P.words_to_bytes(
        [rng.getrandbits(32) for _ in range(spec.load_robot_words)])),
        req(C.STEP, P.words_to_bytes([rng.getrandbits(16) for _ in range(spec.step_words())])),
        IDLE, Snapshot("before")]
    script = setup + fuzz_script(rng, spec, 2000, malformed_only=True) + [IDLE, Snapshot("after")]
    expected, model = expected_replies(bench, script)
    result = run(bench, script)
    assert_same_replies(result.replies, expected, spec.n_nodes)
    assert result.snapshots["before"] == result.snapshots["after"]
    got = statuses(result.replies)
    assert sum(status == E.OK for _, status in got) == 2   # the two setup frames


def test_engine_answers_back_to_back_steps_in_order_under_back_pressure():
    bench = EngineBench(4)
    spec = bench.spec
    rng = random.Random(3)
    script = [req(C.STEP, P.words_to_bytes([rng.getrandbits(24) for _ in range(12)]), seq=k)
              for k in range(30)]
    result = run(bench, script, tx_ready="1/4")
    assert_same_replies(result.replies, expected_replies(bench, script)[0], spec.n_nodes)
    assert [seq for seq, _ in statuses(result.replies)] == list(range(30))


# -- construction ------------------------------------------------------------------------------

def test_engine_checks_its_parameters():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # these components are never elaborated
        with pytest.raises(ValueError, match="Node count"):
            ProtocolEngine(0, timeout_cycles=10)
        with pytest.raises(ValueError, match="Node count"):
            ProtocolEngine(33, timeout_cycles=10)
        with pytest.raises(TypeError, match="Node count"):
            ProtocolEngine(2.0, timeout_cycles=10)
        with pytest.raises(ValueError, match="timeout_cycles must be given"):
            ProtocolEngine(2)
        with pytest.raises(ValueError, match="Inter-byte timeout"):
            ProtocolEngine(2, timeout_cycles=1)
        with pytest.raises(TypeError, match="Step timeout"):
            ProtocolEngine(2, timeout_cycles=10, step_timeout_cycles=1.5)
        engine = ProtocolEngine(6, clock_hz=100_000_000, baudrate=3_000_000)
        assert engine.timeout_cycles == 500_000 and engine.step_timeout_cycles == 1_000_000
        assert engine.spec.build_info()["BAUDRATE"] == 3_000_000
        with pytest.raises(ValueError, match="Latency"):
            FakeChain(6, latency=10)
        del engine
        gc.collect()
