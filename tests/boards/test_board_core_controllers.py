"""BoardCore with joint controllers: the chain is a ControlledChain and the protocol has them."""

import gc
import warnings

import pytest

from linkdyn.boards.core import BoardCore
from linkdyn.gateware.chain import LinkDynChain
from linkdyn.gateware.controlled_chain import ControlledChain
from linkdyn.model import protocol as P

# The cores are built to be inspected, not elaborated.
pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


def test_core_with_controllers_builds_a_controlled_chain_and_says_so_in_info():
    core = BoardCore(2, clock_hz=12_000_000, divisor=4, controllers=True)
    assert isinstance(core.chain, ControlledChain) and core.chain.n == 2
    spec = core.hostlink.spec
    assert spec.controllers and P.Command.CONTROL in spec.commands
    assert spec.build_info()["CONTROLLERS"] == 1
    assert spec.map_check == P.ProtocolSpec(2, clock_hz=12_000_000, baudrate=3_000_000,
                                            controllers=True).map_check
    plain = BoardCore(2, clock_hz=12_000_000, divisor=4)
    assert isinstance(plain.chain, LinkDynChain)
    assert not plain.hostlink.spec.controllers
    assert P.Command.CONTROL not in plain.hostlink.spec.commands
    with warnings.catch_warnings():             # never elaborated: inspected only
        warnings.simplefilter("ignore")
        del core, plain
        gc.collect()


def test_core_refuses_a_controllers_flag_that_is_not_a_bool():
    with pytest.raises(TypeError, match="controllers must be a bool, not 1"):
        BoardCore(1, clock_hz=12_000_000, divisor=4, controllers=1)
    with warnings.catch_warnings():             # the refused core is never elaborated
        warnings.simplefilter("ignore")
        gc.collect()
