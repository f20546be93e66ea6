"""The board commands refuse, before opening any port, a robot the board cannot compute: a tree
(the message lists the branch ends to pass as --tip) or a chain with a prismatic joint."""

import re

import pytest

from linkdyn.host.cli import main
from linkdyn.model.reference import example_robot_data_dir

BAXTER = "baxter_description/urdf/baxter.urdf"

pytestmark = pytest.mark.filterwarnings("ignore:.*has a <mimic> tag")


def _urdf(relative):
    try:
        return str(example_robot_data_dir() / relative)
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")


def test_load_refuses_a_tree_and_names_tips_that_give_revolute_chains(capsys):
    # The port does not exist: the robot is refused before the port is opened.
    status = main(["load", "--port", "/nonexistent/port", "--robot", _urdf(BAXTER)])
    err = capsys.readouterr().err
    assert status == 2
    assert "is a tree (19 joints)" in err and "choose its last link with --tip, e.g." in err
    suggested = re.findall(r"(\w+) \((\d+) joints?\)", err.split("e.g.")[1])
    assert suggested[0] == ("right_wrist", "7") or suggested[0] == ("left_wrist", "7")
    from linkdyn.model import load_robot
    for tip, joints in suggested:
        chain = load_robot(_urdf(BAXTER), tip=tip)
        assert chain.is_chain and not chain.has_prismatic and chain.n == int(joints)


def test_load_refuses_a_chain_with_a_prismatic_joint(capsys):
    # Baxter's right-arm chain to a finger ends in a prismatic finger joint.
    from linkdyn.model import load_robot
    tree = load_robot(_urdf(BAXTER))
    prismatic = [link.name for link in tree.links if link.joint_type == "prismatic"]
    status = main(["load", "--port", "/nonexistent/port", "--robot", _urdf(BAXTER),
                   "--tip", prismatic[0]])
    err = capsys.readouterr().err
    assert status == 2 and "has prismatic joints" in err and prismatic[0] in err


def test_load_goes_on_to_the_port_with_a_revolute_chain(capsys):
    from linkdyn.model import load_robot
    tree = load_robot(_urdf(BAXTER))
    revolute_tip = next(link.name for link, children in zip(tree.links, tree.children)
                        if not children and link.joint_type == "revolute")
    status = main(["load", "--port", "/nonexistent/port", "--robot", _urdf(BAXTER),
                   "--tip", revolute_tip])
    err = capsys.readouterr().err
    assert status == 2 and "is a tree" not in err and "prismatic" not in err
    assert "/nonexistent/port" in err


def test_python_m_host_cli_reports_errors_without_a_traceback():
    import subprocess
    import sys
    process = subprocess.run([sys.executable, "-m", "linkdyn.host.cli", "load", "--port",
                              "/nonexistent/port", "--robot", "nosuch"],
                             capture_output=True, text=True)
    assert process.returncode == 2
    assert "unknown robot 'nosuch'" in process.stderr and "Traceback" not in process.stderr


def test_sim_board_refuses_a_link_in_a_missing_folder_before_building(capsys, tmp_path):
    status = main(["sim-board", "--nodes", "1", "--port", str(tmp_path / "no" / "board")])
    err = capsys.readouterr().err
    assert status == 2 and "its folder" in err and "does not exist" in err
    assert "building the simulated board" not in err
    taken = tmp_path / "file"
    taken.write_text("not a link")
    assert main(["sim-board", "--nodes", "1", "--port", str(taken)]) == 2
    assert "a file of that name exists" in capsys.readouterr().err
    assert taken.read_text() == "not a link"
