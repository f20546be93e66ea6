"""The board commands take what the nodes compute -- chains and trees of revolute and prismatic
joints (Baxter whole, its fingers included) -- and refuse, before opening any port, a robot of
more nodes than a board has (the message says to choose a part with --tip)."""


import pytest

from linkdyn.host.cli import main
from linkdyn.model import load_robot, save_robot
from linkdyn.model.protocol import MAX_NODES
from linkdyn.model.reference import example_robot_data_dir

BAXTER = "baxter_description/urdf/baxter.urdf"

pytestmark = pytest.mark.filterwarnings("ignore:.*has a <mimic> tag")


def _urdf(relative):
    try:
        return str(example_robot_data_dir() / relative)
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")


def _goes_to_the_port(capsys, argv):
    status = main(argv)
    err = capsys.readouterr().err
    # The robot was accepted: the command got as far as opening the (missing) port.
    assert status == 2 and "/nonexistent/port" in err, err
    return err


def test_load_takes_the_whole_baxter_tree_with_its_prismatic_fingers(capsys):
    tree = load_robot(_urdf(BAXTER))
    assert not tree.is_chain and tree.has_prismatic and tree.n == 19
    err = _goes_to_the_port(capsys, ["load", "--port", "/nonexistent/port",
                                     "--robot", _urdf(BAXTER)])
    assert "is a tree" not in err and "prismatic" not in err


def test_load_takes_a_chain_that_ends_in_a_prismatic_joint(capsys):
    # Baxter's right-arm chain to a finger ends in a prismatic finger joint.
    tree = load_robot(_urdf(BAXTER))
    prismatic = [link.name for link in tree.links if link.joint_type == "prismatic"]
    chain = load_robot(_urdf(BAXTER), tip=prismatic[0])
    assert chain.links[-1].joint_type == "prismatic"
    _goes_to_the_port(capsys, ["load", "--port", "/nonexistent/port", "--robot",
                               _urdf(BAXTER), "--tip", prismatic[0]])


def test_load_goes_on_to_the_port_with_a_revolute_chain(capsys):
    tree = load_robot(_urdf(BAXTER))
    revolute_tip = next(link.name for link, children in zip(tree.links, tree.children)
                        if not children and link.joint_type == "revolute")
    err = _goes_to_the_port(capsys, ["load", "--port", "/nonexistent/port", "--robot",
                                     _urdf(BAXTER), "--tip", revolute_tip])
    assert "is a tree" not in err and "prismatic" not in err


def test_load_refuses_a_robot_of_more_nodes_than_a_board_has(tmp_path, capsys):
    ur5 = load_robot("ur5")
    from dataclasses import replace
    links = [replace(link, name=f"{link.name}_{k}") for k in range(6) for link in ur5.links]
    long = replace(ur5, name="long", links=tuple(links))        # a 36-joint chain
    assert long.n == 36 > MAX_NODES
    path = tmp_path / "long.json"
    save_robot(long, path)
    status = main(["load", "--port", "/nonexistent/port", "--robot", str(path)])
    err = capsys.readouterr().err
    assert status == 2 and "needs 36 nodes" in err and f"at most {MAX_NODES}" in err
    assert "--tip" in err and "/nonexistent/port" not in err


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
