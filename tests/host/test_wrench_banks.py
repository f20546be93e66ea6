"""A freshly opened Board zeroes the external wrench of as many register banks as the board's
chain has (the build info's BANKS word), not always 4: one confirmed STEP on a sequential board
(the defect: 4 on every board)."""

import numpy as np
import pytest

from linkdyn.boards.core import BoardCore
from linkdyn.gateware.chain import LinkDynChain
from linkdyn.gateware.fake_chain import FakeChain
from linkdyn.host import Board
from linkdyn.model import load_robot
from linkdyn.model import protocol as P
from linkdyn.model.microprogram import BANKS

from support.host import ReferenceSerial

ROBOT = load_robot("ur5")

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


def test_the_build_info_reports_the_banks_and_refuses_other_counts():
    assert P.ProtocolSpec(2, banks=4).build_info()["BANKS"] == 4
    assert P.ProtocolSpec(2).build_info()["BANKS"] == 1
    for banks in (0, 3, 8, True):
        with pytest.raises(ValueError, match="Bank count must be one of"):
            P.ProtocolSpec(2, banks=banks)


def test_the_board_core_reports_its_chain_banks():
    def reported(chain):
        core = BoardCore(chain.n if hasattr(chain, "n") else 2, clock_hz=12_000_000, divisor=4,
                         chain=chain)
        return core.hostlink.engine.spec.build_info()["BANKS"]

    assert reported(LinkDynChain(2)) == 1
    assert reported(LinkDynChain(2, policy="pipelined")) == BANKS
    assert reported(LinkDynChain(2, policy="pipelined", banks=2)) == 2
    assert reported(FakeChain(2)) == 1


@pytest.mark.parametrize("banks", [1, 2, 4])   # sequential: one bank; pipelined: 2 or 4
def test_a_fresh_board_zeroes_the_wrench_of_each_bank_once(banks):
    port = ReferenceSerial(banks=banks)
    rng = np.random.default_rng(2)
    q, qd, qdd = (rng.uniform(-1, 1, (3, 6)) for _ in range(3))
    with Board(port, timeout=0.2, settle=0.0) as board:
        board.load_robot(ROBOT, verify=False)
        result = board.rnea(q, qd, qdd)
        assert board.info().banks == banks
        again = board.rnea(q, qd, qdd)
    wrench_step, plain_step = 9 * 6, 3 * 6
    assert port.steps == [wrench_step] * banks + [plain_step] * 6
    assert result.updates == 3 and again.updates == 3
    np.testing.assert_array_equal(result.tau_words, again.tau_words)
