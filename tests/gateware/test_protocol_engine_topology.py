"""The gateware protocol engine reports the node topology in INFO (PARENTS_k) as the reference
engine does, byte for byte, for a chain (parents -1, 0, 1, ...) and for trees of nodes."""

import pytest

from linkdyn.gateware.protocol import ProtocolEngine
from linkdyn.model import protocol as P
from linkdyn.model.golden_tree import node_tree
from linkdyn.sim.tree_cases import two_arm_tree

from support.protocol_engine import EngineBench, assert_same_replies, expected_replies, run

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


def _info_words(data):
    (frame,) = [P.decode_reply(data)]
    return P.BuildInfo.from_payload(frame.payload).words


@pytest.mark.parametrize("n_nodes, parents", [
    (6, None),
    (14, node_tree(two_arm_tree()).parents),
    (16, node_tree(two_arm_tree(head=True)).parents),
    (32, tuple(-1 if i % 9 == 0 else i - 1 - (i % 3 == 0) for i in range(32))),
], ids=["chain6", "two_arm_tree", "two_arm_tree_head", "forest32"])
def test_engine_answers_info_with_the_topology_like_the_reference(n_nodes, parents):
    bench = EngineBench(n_nodes, parents=parents)
    script = [P.encode_request(P.Command.INFO, seq=3)]
    result = run(bench, script)
    expected, _ = expected_replies(bench, script)
    assert_same_replies(result.replies, expected, n_nodes)
    words = _info_words(result.replies)
    got = P.unpack_parents([words[f"PARENTS_{k}"] for k in range(P.PARENTS_WORDS)], n_nodes)
    assert got == (tuple(range(-1, n_nodes - 1)) if parents is None else tuple(parents))


def test_the_topology_words_pack_a_parent_plus_one_per_byte():
    assert P.pack_parents((-1, 0, 1, 2, 3))[:2] == (0x03020100, 0x04)
    assert P.pack_parents((-1, 0, 0, -1, 3, 3)) == (0x00010100, 0x0404) + (0,) * 6
    assert P.ProtocolSpec(3).build_info()["PARENTS_0"] == 0x020100
    parents = tuple(range(-1, 31))
    assert P.unpack_parents(P.pack_parents(parents), 32) == parents
    with pytest.raises(ValueError, match="Parent of node 2 must be -1"):
        P.unpack_parents((0x00030100,) + (0,) * 7, 3)
    with pytest.raises(ValueError, match="PARENTS byte of node 3 is 3, past the last node"):
        P.unpack_parents((0x03020100,) + (0,) * 7, 3)
    with pytest.raises(ValueError, match="Parent of node 1 must be -1 .* not 1"):
        P.ProtocolSpec(3, parents=(-1, 1, 0))
    with pytest.raises(ValueError, match="joint controllers are built beside a chain"):
        P.ProtocolSpec(3, parents=(-1, 0, 0), controllers=True)
    with pytest.raises(TypeError, match="Parents must be a sequence of 3 integers"):
        ProtocolEngine(3, timeout_cycles=40, parents="-1,0,0")
