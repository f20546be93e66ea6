"""The reference engine's validation order and RESULT_SELECT in the protocol definition.

The error table of ``docs/protocol.md`` is the order of the checks: the first failing one is
reported. A WRITE block is BAD_ADDRESS when any of its words does not exist, wherever its
read-only words are (the defect was: read-only words before non-existent ones gave READ_ONLY).
RESULT_SELECT is a control register of the protocol (read/write, owned by the chain), with the
chain's semantics in the chain model of the tests (:class:`FakeChainModel`).
"""

import random

from linkdyn.sim.fake_chain_model import FakeChainModel
from linkdyn.model import protocol as P

C = P.Command
E = P.ErrorCode


def _engine(n_nodes=2):
    spec = P.ProtocolSpec(n_nodes)
    chain = FakeChainModel(spec, 77)
    return spec, chain, P.ReferenceEngine(spec, chain)


def _send(engine, command, payload=b"", seq=0):
    return P.decode_reply(engine.receive(P.encode_request(command, payload, seq=seq)))


def _rule(spec, node, addr, count):
    """The document's rule, word by word: existence of every word first, then write access."""
    accesses = [spec.access(node, a) if a < 256 else P.Access(False)
                for a in range(addr, addr + count)]
    if not all(a.exists for a in accesses):
        return E.BAD_ADDRESS
    if not all(a.writable for a in accesses):
        return E.READ_ONLY
    return E.OK


def test_bad_address_is_reported_before_read_only_whatever_the_word_order():
    spec, chain, engine = _engine()
    size = spec.node_map_size
    first_hole = min(set(range(256)) - {reg.address for reg in P.CONTROL_REGISTERS})
    cases = [
        # node 1: two computed (read-only) words, then two beyond the map
        (1, size - 2, 4, E.BAD_ADDRESS),
        # node 1: writable, then every read-only word, then one beyond the map
        (1, spec.writable_end - 1, size - spec.writable_end + 2, E.BAD_ADDRESS),
        # control block: read-only error counters, RESULT_SELECT, then a hole
        (P.CONTROL_NODE, P.RESULT_SELECT - 2, 4, E.BAD_ADDRESS),
        (P.CONTROL_NODE, P.STATUS_FIRST, first_hole - P.STATUS_FIRST + 1, E.BAD_ADDRESS),
        # every word exists: READ_ONLY as before
        (1, size - 2, 2, E.READ_ONLY),
        (P.CONTROL_NODE, P.RESULT_SELECT - 1, 2, E.READ_ONLY),
    ]
    for seq, (node, addr, count, code) in enumerate(cases):
        reply = _send(engine, C.WRITE, P.write_payload(node, addr, [1] * count), seq)
        assert (node, addr, count, E(reply.status)) == (node, addr, count, code)
        assert _rule(spec, node, addr, count) == code
    assert all(word == 0 for row in chain.memory for word in row)   # nothing written


def test_reference_engine_follows_the_documented_order_on_random_write_blocks():
    spec, chain, engine = _engine(3)
    rng = random.Random(13)
    seen = set()
    for seq in range(400):
        node = rng.choice([0, 1, 2, P.CONTROL_NODE])
        if node == P.CONTROL_NODE:
            addr = rng.randrange(0x30)
        else:
            addr = rng.randrange(spec.node_map_size + 4)
        count = rng.randrange(1, 12)
        words = [0] * count          # no CONTROL.start, no valid RESULT_SELECT number
        reply = _send(engine, C.WRITE, P.write_payload(node, addr, words), seq & 0xFF)
        expected = _rule(spec, node, addr, count)
        if expected is E.OK and node == P.CONTROL_NODE and addr <= P.RESULT_SELECT < addr + count:
            expected = E.BUS_ERROR   # RESULT_SELECT refuses 0 (no update selected)
        assert E(reply.status) == expected, (node, addr, count)
        seen.add(expected)
    assert {E.OK, E.BAD_ADDRESS, E.READ_ONLY, E.BUS_ERROR} <= seen


def test_result_select_is_a_control_register_of_the_protocol():
    reg = P.control_register("RESULT_SELECT")
    assert (reg.address, reg.access, reg.owner) == (P.RESULT_SELECT, "rw", "chain")
    assert reg.writable and reg.address == 0x15
    fields = {f.name: f for f in reg.fields}
    assert (fields["number"].offset, fields["number"].width) == (0, 31)
    assert P.RESULT_FOLLOW == 1 << fields["follow"].offset == 0x80000000
    spec = P.ProtocolSpec(4)
    assert spec.access(P.CONTROL_NODE, P.RESULT_SELECT) == P.Access(True, True, "chain")
    # Outside the words STATUS and STEP read, so their replies are unchanged.
    assert not P.STATUS_FIRST <= P.RESULT_SELECT < P.STATUS_FIRST + P.STATUS_COUNT
    assert not (P.STEP_CONTROL_FIRST <= P.RESULT_SELECT
                < P.STEP_CONTROL_FIRST + P.STEP_CONTROL_COUNT)
    text = P.generate_markdown()
    assert "| `0x15` | RESULT_SELECT | rw | chain |" in text
    assert "RESULT_SELECT bits:" in text and "| 31 | follow |" in text
    assert "| 0 .. 30 | number |" in text


def test_result_select_through_the_reference_engine_has_the_chain_semantics():
    spec, chain, engine = _engine()
    sel = P.RESULT_SELECT

    def read():
        reply = _send(engine, C.READ, P.read_payload(P.CONTROL_NODE, sel, 1))
        assert reply.ok
        return reply.words[0]

    def write(word):
        return E(_send(engine, C.WRITE, P.write_payload(P.CONTROL_NODE, sel, [word])).status)

    assert read() == P.RESULT_FOLLOW                 # reset value
    assert write(1) == E.BUS_ERROR                   # no update has finished
    assert write(0) == E.BUS_ERROR
    step = _send(engine, C.STEP, P.step_payload(spec, [1, 2], [3, 4], [5, 6]))
    assert P.StepResult.from_payload(step.payload, 2).update_count == 1
    assert write(2) == E.BUS_ERROR                   # not finished
    assert read() == P.RESULT_FOLLOW                 # a refused write changes nothing
    assert write(1) == E.OK and read() == 1          # the last update, read back
    # A number is not a CONTROL word: bit 0 does not start an update.
    assert P.ChainStatus.from_payload(_send(engine, C.STATUS).payload).words[
        "UPDATE_COUNT"] == 1
    assert write(P.RESULT_FOLLOW | 5) == E.OK and read() == P.RESULT_FOLLOW
    status = P.ChainStatus.from_payload(_send(engine, C.STATUS).payload)
    assert status.errors[E.BUS_ERROR] == 3 and status.words["UPDATE_COUNT"] == 1
