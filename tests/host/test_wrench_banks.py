"""A freshly opened Board zeroes the external wrench of as many register banks as the board's
chain has (the build info's BOARD_ID says, linkdyn.model.board_id), not always 4: one confirmed
STEP on a sequential board (the defect: 4 on every board)."""

import numpy as np
import pytest

from linkdyn.boards.core import BoardCore
from linkdyn.gateware.chain import LinkDynChain
from linkdyn.gateware.fake_chain import FakeChain
from linkdyn.sim.fake_chain_model import FakeChainModel
from linkdyn.host import Board
from linkdyn.model import load_robot
from linkdyn.model import protocol as P
from linkdyn.model.board_id import board_id_word, split_board_id
from linkdyn.model.microprogram import BANKS

ROBOT = load_robot("ur5")


class SoftwareBoard:
    """A pyserial-like port to the protocol's ReferenceEngine on the FakeChain model, with the
    given BOARD_ID word; counts the STEP frames it executes."""

    def __init__(self, board_id):
        self.spec = P.ProtocolSpec(6, clock_hz=12_000_000, baudrate=3_000_000,
                                   board_id=board_id)
        self.engine = P.ReferenceEngine(self.spec, FakeChainModel(self.spec, 96))
        self.out = bytearray()
        self.steps = []                  # payload words of every STEP received
        self.timeout = 0.001
        self.port = "software"

    def write(self, data):
        if data[3] == P.Command.STEP:
            self.steps.append((len(data) - P.REQUEST_HEADER_BYTES - P.CRC_BYTES) // 4)
        self.out += self.engine.receive(bytes(data))
        return len(data)

    @property
    def in_waiting(self):
        return len(self.out)

    def read(self, size=1):
        if not self.out:
            self.out += self.engine.idle()
        data = bytes(self.out[:size])
        del self.out[:size]
        return data

    def close(self):
        pass


def test_the_board_id_word_carries_the_board_and_the_banks():
    assert board_id_word(3, 1) == 0x1_0003
    assert split_board_id(board_id_word(3, 4)) == (3, 4)
    assert split_board_id(3) == (3, None)                 # a build that does not say
    with pytest.raises(ValueError, match="Bank count must be one of"):
        board_id_word(0, 3)
    with pytest.raises(ValueError, match="Board identifier must be an integer"):
        board_id_word(1 << 16, 1)


def test_the_board_core_reports_its_chain_banks():
    def reported(chain):
        core = BoardCore(chain.n if hasattr(chain, "n") else 2, clock_hz=12_000_000, divisor=4,
                         chain=chain)
        return split_board_id(core.hostlink.engine.spec.board_id)

    assert reported(LinkDynChain(2)) == (0, 1)
    assert reported(LinkDynChain(2, policy="pipelined")) == (0, BANKS)
    assert reported(LinkDynChain(2, policy="pipelined", banks=2)) == (0, 2)
    assert reported(FakeChain(2)) == (0, 1)


@pytest.mark.parametrize("word, zeroing", [
    (board_id_word(0, 1), 1),            # sequential: one bank
    (board_id_word(0, 2), 2),
    (board_id_word(1, 4), 4),            # pipelined: four banks
    (0, BANKS),                          # the build does not say: as many as a chain may have
])
def test_a_fresh_board_zeroes_the_wrench_of_each_bank_once(word, zeroing):
    port = SoftwareBoard(word)
    rng = np.random.default_rng(2)
    q, qd, qdd = (rng.uniform(-1, 1, (3, 6)) for _ in range(3))
    with Board(port, timeout=0.2, settle=0.0) as board:
        board.load_robot(ROBOT, verify=False)
        result = board.rnea(q, qd, qdd)
        assert board.info().banks == split_board_id(word)[1]
        again = board.rnea(q, qd, qdd)
    wrench_step, plain_step = 9 * 6, 3 * 6
    assert port.steps == [wrench_step] * zeroing + [plain_step] * 6
    assert result.updates == 3 and again.updates == 3
    np.testing.assert_array_equal(result.tau_words, again.tau_words)
