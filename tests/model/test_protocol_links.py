"""The distributed chain's words in the protocol: LINK_DOWN, BOARDS, the link window
(``model/protocol/link_map.py``), their access rules, MAP_CHECK, and the reference engine's
answers."""

import pytest

from linkdyn.model import protocol as P
from linkdyn.model.protocol import RegisterTarget


class _Target(RegisterTarget):
    """Answers every existing word with a word made of its node and address, records writes."""

    def __init__(self, spec):
        self.spec = spec
        self.reads = []

    def read(self, node, addr):
        access = self.spec.access(node, addr)
        if not access.exists or access.owner == "engine":
            return False, 0
        self.reads.append((node, addr))
        return True, (node << 16) | addr

    def write(self, node, addr, word):
        return False


def _read(engine, node, addr, count=1, seq=1):
    reply = P.decode_reply(engine.receive(P.encode_request(
        P.Command.READ, P.read_payload(node, addr, count), seq=seq)))
    return reply


def test_link_window_addresses_and_decoding():
    assert [w.address for w in P.LINK_WORDS_MAP] == [0xE0 + 8 * p + f for p in (0, 1)
                                                     for f in range(6)]
    assert P.link_word_address("downstream", "crc_errors") == 0xEB
    assert P.link_word_address(0, "status") == 0xE0
    state = P.LinkState.from_words(2, "upstream", [1 | 2 | 4 | (1 << 8) | (1 << 16) | (2 << 24),
                                                   10, 11, 3, 4, 1])
    assert (state.up, state.hears, state.aligned, state.neighbour_index, state.board_index) == \
        (True, True, True, 1, 2)
    assert (state.frames_sent, state.crc_errors, state.link_drops) == (10, 3, 1)
    assert P.decode_link_status(0)[3] is None        # no index heard yet
    with pytest.raises(ValueError, match="port must be one of"):
        P.link_word_address("sideways", "status")
    with pytest.raises(ValueError, match="field must be one of"):
        P.link_word_address("upstream", "bits")
    with pytest.raises(ValueError, match="6 words, not 5"):
        P.LinkState.from_words(0, "upstream", [0] * 5)


def test_spec_boards_parameter_checks():
    with pytest.raises(ValueError, match="3 nodes need boards=3, not 2"):
        P.ProtocolSpec(3, boards=2)
    with pytest.raises(TypeError, match="Board count must be an integer or None"):
        P.ProtocolSpec(3, boards="3")
    assert not P.ProtocolSpec(3).distributed and P.ProtocolSpec(3, boards=3).distributed


def test_distributed_map_adds_link_words_only_there():
    single, dist = P.ProtocolSpec(3), P.ProtocolSpec(3, boards=3)
    link_down = P.control_register("LINK_DOWN").address
    boards = P.control_register("BOARDS").address
    assert (link_down, boards) == (0x34, 0x35)
    for addr, owner in ((link_down, "chain"), (boards, "engine")):
        assert not single.access(P.CONTROL_NODE, addr).exists
        assert dist.access(P.CONTROL_NODE, addr) == P.Access(True, False, owner)
    window = {w.address for w in P.LINK_WORDS_MAP}
    for node in range(3):
        for addr in range(0x100):
            a, b = single.access(node, addr), dist.access(node, addr)
            if addr in window:
                assert not a.exists and b == P.Access(True, False, "node"), hex(addr)
            else:
                assert a == b, hex(addr)
    assert not dist.access(3, 0xE0).exists
    # A host tells them apart by MAP_CHECK; the INFO words are otherwise the same.
    assert single.map_check != dist.map_check
    assert {k: v for k, v in single.build_info().items() if k != "MAP_CHECK"} == \
        {k: v for k, v in dist.build_info().items() if k != "MAP_CHECK"}
    assert dist.engine_words()["BOARDS"] == 3


def test_reference_engine_answers_boards_and_passes_link_words_to_the_chain():
    spec = P.ProtocolSpec(4, boards=4)
    target = _Target(spec)
    engine = P.ReferenceEngine(spec, target)
    reply = _read(engine, P.CONTROL_NODE, 0x34, 2)
    assert reply.ok and reply.words == [(P.CONTROL_NODE << 16) | 0x34, 4]
    assert target.reads == [(P.CONTROL_NODE, 0x34)]      # BOARDS never reached the chain
    reply = _read(engine, 2, 0xE8, 6, seq=2)
    assert reply.ok and reply.words == [(2 << 16) | a for a in range(0xE8, 0xEE)]
    # the gap between the ports and words past the window do not exist; nothing is read
    for addr, count in ((0xE6, 1), (0xE0, 7), (0xED, 2)):
        before = list(target.reads)
        assert P.ErrorCode(_read(engine, 1, addr, count, seq=3).status) is \
            P.ErrorCode.BAD_ADDRESS
        assert target.reads == before
    # the link words are read-only
    reply = P.decode_reply(engine.receive(P.encode_request(
        P.Command.WRITE, P.write_payload(1, 0xE1, [5]), seq=4)))
    assert P.ErrorCode(reply.status) is P.ErrorCode.READ_ONLY
    # on a single-FPGA board they do not exist
    single = P.ReferenceEngine(P.ProtocolSpec(4), _Target(P.ProtocolSpec(4)))
    assert P.ErrorCode(_read(single, P.CONTROL_NODE, 0x35).status) is P.ErrorCode.BAD_ADDRESS
    assert P.ErrorCode(_read(single, 1, 0xE0).status) is P.ErrorCode.BAD_ADDRESS
