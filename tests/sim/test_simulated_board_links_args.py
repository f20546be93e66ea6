"""SimulatedBoard's distributed-chain parameters: their checks, and the testbench's link
controls (the runs are in tests/host/test_sim_board_distributed.py)."""

import pytest

from linkdyn.sim import board as sim_board
from linkdyn.sim.board import SimulatedBoard


def test_link_parameters_are_checked():
    with pytest.raises(ValueError, match="3 nodes need boards=3, not 2"):
        SimulatedBoard(3, boards=2)
    for rate in (36_000_000, 120_000_000):        # 3 and 10 bits per cycle
        with pytest.raises(ValueError, match="link_bitrate must be 1, 2 or 5 times the clock"):
            SimulatedBoard(2, boards=2, link_bitrate=rate)
    with pytest.raises(ValueError, match="link_ber must be a number in 0 .. 0.5"):
        SimulatedBoard(2, boards=2, link_ber=0.7)
    with pytest.raises(ValueError, match="0 <= hop < 1"):
        SimulatedBoard(2, boards=2, link_cuts=[(1, 10, 20)])
    with pytest.raises(ValueError, match="cut_cycle < restore_cycle"):
        SimulatedBoard(3, boards=3, link_cuts=[(1, 20, 20)])
    with pytest.raises(TypeError, match="link_cuts must be a sequence"):
        SimulatedBoard(2, boards=2, link_cuts=5)
    with pytest.raises(ValueError, match="three integers"):
        SimulatedBoard(2, boards=2, link_cuts=[(0, 10.5, 20)])
    with pytest.raises(ValueError, match=r"\(0, 10, 20\) and \(0, 15, 30\) of hop 0 overlap"):
        SimulatedBoard(2, boards=2, link_cuts=[(0, 10, 20), (0, 15, 30)])
    assert SimulatedBoard(2, boards=2, link_cuts=[(0, 10, 20), (0, 20, 30)]).link_cuts == \
        ((0, 10, 20), (0, 20, 30))
    with pytest.raises(ValueError, match="a single board has no neighbour link"):
        SimulatedBoard(1, boards=1, link_cuts=[(0, 10, 20)])
    for boards in (0, 33, -1):
        with pytest.raises(ValueError, match="boards must be an integer in 1..32"):
            SimulatedBoard(boards=boards)
    assert SimulatedBoard(boards=3).nodes == 3            # one node per board
    assert SimulatedBoard(robot="ur5").nodes == 6         # a robot's name, as the CLI takes
    with pytest.raises(TypeError, match="robot must be a Robot or a robot's name"):
        SimulatedBoard(robot=3.5)
    with pytest.raises(ValueError, match="need boards=n"):
        SimulatedBoard(2, link_ber=1e-4)
    with pytest.raises(ValueError, match="do not pass chain as well"):
        SimulatedBoard(2, boards=2, chain=object())
    assert SimulatedBoard(2, boards=2, controllers=True).controllers
    with pytest.raises(ValueError, match="not distributed"):
        SimulatedBoard(2).cut_link(0)
    with pytest.raises(ValueError, match="hop must be 0 .. 1"):
        SimulatedBoard(3, boards=3).cut_link(2)
    board = SimulatedBoard(3, boards=3, link_bitrate=5 * 12_000_000, link_ber=1e-4)
    assert (board.link_bits, board.link_ber, board.hops) == (5, 1e-4, 2)


def test_testbench_cuts_the_scheduled_hops():
    text = sim_board.testbench_verilog(4, 80, hops=3, link_cuts=[(0, 100, 200), (2, 5, 9)])
    assert ("wire [2:0] scheduled_cut = ((cycle >= 64'd100) && (cycle < 64'd200) ? 3'd1 : "
            "3'd0) | ((cycle >= 64'd5) && (cycle < 64'd9) ? 3'd4 : 3'd0);") in text
    assert ".link_cut(tb_link_cut | scheduled_cut), .link_noise(tb_link_noise)" in text
    assert "tb_link_cut" not in sim_board.testbench_verilog(4, 80)


def test_every_board_is_its_own_module():
    import re

    from linkdyn.sim.board_modules import distributed_board_verilog, module_ports
    text = distributed_board_verilog(4, clock_hz=12_000_000, divisor=4)
    definitions = re.findall(r"^module (linkdyn_\w+)\s*\(", text, re.M)
    assert definitions.count("linkdyn_actuator_middle") == 1     # one module, two boards
    for module in ("linkdyn_host", "linkdyn_actuator_base", "linkdyn_actuator_last",
                   "linkdyn_line_2_up", "linkdyn_board"):
        assert module in definitions
    instances = re.findall(r"^  (linkdyn_\w+) (\w+) \(", text, re.M)
    assert instances[:5] == [("linkdyn_host", "host"), ("linkdyn_actuator_base", "board0"),
                             ("linkdyn_actuator_middle", "board1"),
                             ("linkdyn_actuator_middle", "board2"),
                             ("linkdyn_actuator_last", "board3")]
    assert len(instances) == 5 + 6                                 # and the six lines
    ports = dict((p, (d, w)) for d, w, p in module_ports(text, "linkdyn_line_0_down"))
    assert ports["tx"] == ("input", 2) and ports["rx"] == ("output", 2)
    assert ports["flipped"] == ("output", 32)
    # board 1's upstream receiver hears board 0 through line 0 downstream
    assert ".rx(board1_up_rx)" in text and ".tx(board0_down_tx)" in text
