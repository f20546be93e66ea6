"""The gateware protocol engine's validation order and RESULT_SELECT, against the reference.

Requests go into :class:`linkdyn.gateware.protocol.ProtocolEngine` on a
:class:`~linkdyn.gateware.fake_chain.FakeChain` (the engine's testbench of
``support.protocol_engine``), and the replies must equal, byte for byte, those of
:class:`linkdyn.model.protocol.ReferenceEngine` on a
:class:`~linkdyn.sim.fake_chain_model.FakeChainModel`, and carry the status the error table's
order gives (BAD_ADDRESS before READ_ONLY, whatever the order of the block's words).
"""

import random

import pytest

from linkdyn.gateware import bus, chain
from linkdyn.model import protocol as P

from support.protocol_engine import EngineBench, expected_replies, run

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

C = P.Command
E = P.ErrorCode


def _run_engine(n_nodes, frames):
    """Send ``frames`` back to back into the engine on a FakeChain; return the reply bytes and
    the reference's replies to the same frames."""
    bench = EngineBench(n_nodes)
    expected, _ = expected_replies(bench, list(frames))
    return run(bench, list(frames)).replies, expected


def _assert_same_replies(got, expected, timing_words):
    """Assert the replies equal; ``timing_words`` maps a seq to the index of its
    INTERVAL_CYCLES word (the gateware's timing, which the model reads as 0)."""
    got_replies, expected_replies = P.ReplyDecoder().feed(got), P.ReplyDecoder().feed(expected)
    assert len(got_replies) == len(expected_replies)
    for mine, reference in zip(got_replies, expected_replies):
        words = reference.words
        if mine.seq in timing_words and reference.ok:
            index = timing_words[mine.seq]
            assert words[index] == 0 and mine.words[index] > 0
            words[index] = mine.words[index]
        assert (mine.seq, mine.command, mine.status, mine.words) == (
            reference.seq, reference.command, reference.status, words)


def _statuses(data):
    out = []
    decoder = P.ReplyDecoder()
    for reply in decoder.feed(data):
        out.append((reply.seq, E(reply.status)))
    assert decoder.pending == 0 and decoder.discarded == 0
    return out


def test_gateware_engine_reports_bad_address_before_read_only():
    n = 2
    spec = P.ProtocolSpec(n)
    size = spec.node_map_size
    cases = [
        (1, size - 2, 4, E.BAD_ADDRESS),            # read-only words, then beyond the map
        (0, spec.writable_end_node0 - 1, size - spec.writable_end_node0 + 2, E.BAD_ADDRESS),
        (P.CONTROL_NODE, P.RESULT_SELECT - 2, 4, E.BAD_ADDRESS),   # counters, then a hole
        (P.CONTROL_NODE, P.STATUS_FIRST, P.RESULT_SELECT - P.STATUS_FIRST + 2, E.BAD_ADDRESS),
        (1, size - 2, 2, E.READ_ONLY),               # every word exists
        (P.CONTROL_NODE, P.RESULT_SELECT - 1, 2, E.READ_ONLY),
        (1, 0, 3, E.OK),
    ]
    frames = [P.encode_request(C.WRITE, P.write_payload(node, addr, [seq + 1] * count), seq=seq)
              for seq, (node, addr, count, _) in enumerate(cases)]
    frames.append(P.encode_request(C.READ, P.read_payload(1, 0, 3), seq=len(cases)))
    got, expected = _run_engine(n, frames)
    assert got == expected
    statuses = _statuses(got)
    assert statuses[:-1] == [(seq, code) for seq, (*_, code) in enumerate(cases)]
    last = P.decode_reply(P.encode_reply(len(cases), C.READ, E.OK, [len(cases)] * 3))
    assert P.ReplyDecoder().feed(got)[-1] == last      # only the valid WRITE wrote


def test_gateware_engine_equals_reference_on_random_write_blocks():
    n = 3
    spec = P.ProtocolSpec(n)
    rng = random.Random(5)
    frames = []
    for seq in range(120):
        node = rng.choice([0, 1, 2, P.CONTROL_NODE])
        addr = rng.randrange(0x30) if node == P.CONTROL_NODE else rng.randrange(
            spec.node_map_size - 6, spec.node_map_size + 2)
        count = rng.randrange(1, 10)
        frames.append(P.encode_request(C.WRITE, P.write_payload(node, addr, [0] * count),
                                       seq=seq))
    got, expected = _run_engine(n, frames)
    assert got == expected
    codes = {status for _, status in _statuses(got)}
    assert {E.BAD_ADDRESS, E.READ_ONLY} <= codes


def test_result_select_is_taken_from_the_protocol():
    assert chain.RESULT_SELECT is P.RESULT_SELECT and chain.RESULT_FOLLOW is P.RESULT_FOLLOW
    assert bus.CONTROL_NODE is P.CONTROL_NODE


def test_gateware_engine_and_fake_chain_handle_result_select_as_the_reference():
    n = 2
    spec = P.ProtocolSpec(n)
    sel = P.RESULT_SELECT

    def write(word, seq):
        return P.encode_request(C.WRITE, P.write_payload(P.CONTROL_NODE, sel, [word]), seq=seq)

    def read(seq):
        return P.encode_request(C.READ, P.read_payload(P.CONTROL_NODE, sel, 1), seq=seq)

    step = P.encode_request(C.STEP, P.step_payload(spec, [1, 2], [3, 4], [5, 6]), seq=3)
    frames = [read(0), write(1, 1), write(0, 2), step, write(2, 4), write(1, 5), read(6),
              P.encode_request(C.STEP, P.step_payload(spec, [1, 1], [1, 1], [1, 1]), seq=7),
              read(8), write(P.RESULT_FOLLOW | 3, 9), read(10),
              P.encode_request(C.READ, P.read_payload(P.CONTROL_NODE, 0, sel + 1), seq=11)]
    got, expected = _run_engine(n, frames)
    interval = P.control_register("INTERVAL_CYCLES").address
    step_interval = n + interval - P.STEP_CONTROL_FIRST
    _assert_same_replies(got, expected, {3: step_interval, 7: step_interval, 11: interval})
    replies = P.ReplyDecoder().feed(got)
    assert [E(r.status) for r in replies] == [
        E.OK, E.BUS_ERROR, E.BUS_ERROR, E.OK, E.BUS_ERROR, E.OK, E.OK, E.OK, E.OK, E.OK, E.OK,
        E.OK]
    assert replies[0].words == [P.RESULT_FOLLOW]
    assert replies[6].words == [1]
    assert replies[8].words == [1]          # kept after the next update (written value)
    assert replies[10].words == [P.RESULT_FOLLOW]
    assert replies[11].words[sel] == P.RESULT_FOLLOW
    # The second STEP shows its own update whatever was selected (one update kept).
    assert P.StepResult.from_payload(replies[7].payload, n).tau_words == [3, 3]
