"""The node's and the MAC's ports are interfaces sized from the register map and the
microprogram (one source for the message sizes)."""

import gc
import warnings

from amaranth.hdl import Shape, UnusedElaboratable

from linkdyn.gateware.mac import MultiplyAccumulate
from linkdyn.gateware.node import LinkDynNode
from linkdyn.model.microprogram import microprogram

REGISTERS = microprogram().registers


def test_inbox_port_is_sized_from_the_register_maps_messages():
    forward, backward = len(REGISTERS.forward_message), len(REGISTERS.backward_message)
    assert (forward, backward) == (9, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        node = LinkDynNode(inbox=("forward_in", "backward_in"), banks=4)
        members = node.signature.members
        inbox = members["inbox"].signature.members
        assert Shape.cast(inbox["present_words"].shape).width == forward + backward
        assert inbox["present_words"].init == (1 << (forward + backward)) - 1
        assert Shape.cast(inbox["word"].shape).width == (max(forward, backward) - 1).bit_length()
        assert node.inbox_kinds == ("forward_in", "backward_in")
        # Requests, register port and result snoop port are one interface each.
        assert set(members["forward"].signature.members) == {"start", "bank", "ack"}
        assert set(members["ext"].signature.members) == {
            "addr", "bank", "write_data", "write_enable", "write_ready", "read_data"}
        assert set(members["result"].signature.members) == {
            "valid", "addr", "data", "overflow", "bank"}
        plain = LinkDynNode()
        assert "inbox" not in plain.signature.members
        assert set(plain.signature.members["forward"].signature.members) == {"start", "ack"}
        del node, plain
        gc.collect()


def test_mac_term_and_result_payloads_carry_every_field():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        mac = MultiplyAccumulate(tag_width=9)
        term = mac.signature.members["term"].signature.members["payload"].shape
        result = mac.signature.members["result"].signature.members["payload"].shape
        assert list(dict(term.members)) == ["a", "b", "add", "negate", "align", "first",
                                            "last", "shift", "wraps", "tag"]
        assert list(dict(result.members)) == ["data", "tag", "overflow"]
        assert Shape.cast(result.members["tag"]).width == 9
        assert Shape.cast(result.members["data"]).signed
        del mac
        gc.collect()
