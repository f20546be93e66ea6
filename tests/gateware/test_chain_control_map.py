"""The chain's RESULT_SELECT register extends the protocol's control map without taking one of
its addresses, and the bus uses the protocol's CONTROL_NODE."""

from linkdyn.gateware import bus
from linkdyn.gateware.chain import RESULT_FOLLOW, RESULT_SELECT
from linkdyn.model import protocol
from linkdyn.model.protocol import CONTROL_REGISTERS


def test_result_select_is_not_an_address_of_the_protocols_control_map():
    addresses = {reg.address for reg in CONTROL_REGISTERS}
    assert RESULT_SELECT not in addresses, f"RESULT_SELECT {RESULT_SELECT:#x} is taken"
    assert RESULT_SELECT == 0x15 and RESULT_FOLLOW == 1 << 31


def test_the_bus_selects_the_control_block_with_the_protocols_node_number():
    assert bus.CONTROL_NODE == protocol.CONTROL_NODE == 0xFF
    assert "CONTROL_NODE = " not in open(bus.__file__).read(), "defined twice"
