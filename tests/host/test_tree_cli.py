"""The board commands take branched robots (docs/trees.md) without --tip: a URDF tree of
revolute joints goes on to the board, ``--robot baxter`` names example-robot-data's Baxter, and
``sim-board`` sizes the board from the robot's nodes or refuses a robot that does not fit, before
building anything. (Loading and computing a tree through the commands on a simulated board:
tests/host/test_tree_board.py.)"""

import pytest

from linkdyn.host.cli import main
from linkdyn.model import load_robot
from linkdyn.model.golden_tree import node_tree
from linkdyn.model.reference import example_robot_data_dir

pytestmark = pytest.mark.filterwarnings("ignore:.*has a <mimic> tag")


@pytest.fixture
def revolute_baxter(tmp_path):
    """Baxter's URDF with its four prismatic finger joints made fixed: a branched URDF of 15
    revolute joints (3 roots, 2 mounts: 17 nodes)."""
    try:
        source = example_robot_data_dir() / "baxter_description/urdf/baxter.urdf"
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")
    text = source.read_text().replace('type="prismatic"', 'type="fixed"')
    path = tmp_path / "baxter_revolute.urdf"
    path.write_text(text)
    return path


def test_load_takes_a_branched_urdf_without_tip_and_goes_on_to_the_port(revolute_baxter,
                                                                         capsys):
    robot = load_robot(str(revolute_baxter))
    assert not robot.is_chain and robot.n == 15 and node_tree(robot).n == 17
    status = main(["load", "--port", "/nonexistent/port", "--robot", str(revolute_baxter)])
    err = capsys.readouterr().err
    assert status == 2 and "is a tree" not in err and "/nonexistent/port" in err


def test_sim_board_refuses_a_tree_that_does_not_fit_before_building(revolute_baxter, capsys):
    status = main(["sim-board", "--robot", str(revolute_baxter), "--nodes", "15"])
    err = capsys.readouterr().err
    assert status == 2
    assert "has 15 joints on 17 nodes, the board 15 nodes (--nodes)" in err
    status = main(["sim-board", "--robot", str(revolute_baxter), "--controllers"])
    err = capsys.readouterr().err
    assert status == 2 and "is a tree of nodes" in err and "--controllers" in err
    status = main(["sim-board", "--robot", str(revolute_baxter), "--boards", "3"])
    err = capsys.readouterr().err
    assert status == 2 and "is a tree of nodes; --boards builds a chain of boards" in err
    assert "building the simulated board" not in err


def test_robot_baxter_names_example_robot_datas_baxter(capsys):
    try:
        example_robot_data_dir()
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")
    # `--robot baxter` is example-robot-data's whole Baxter (19 joints, prismatic fingers
    # included), which the nodes compute: the command goes on to the (missing) port.
    status = main(["load", "--port", "/nonexistent/port", "--robot", "baxter"])
    err = capsys.readouterr().err
    assert status == 2 and "/nonexistent/port" in err
    assert "unknown robot" not in err and "is a tree" not in err
