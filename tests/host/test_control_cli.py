"""``linkdyn control`` (configure, hold, track, status, clear) against the software board with
controllers (the protocol's ReferenceEngine on ControlledChainModel) on a pseudo-terminal, the
sensor at the reference. References: the float RNEA of the references, the words the
configuration encodes to, the controller's fault table."""

import csv

import numpy as np
import pytest

from linkdyn.host.cli import main
from linkdyn.model import load_robot, rnea
from linkdyn.model.controller import ControllerConfig

from support.controlled_host import ControlledReferenceSerial, ReferencePty, sensor_at_reference
from support.host import ReferenceSerial

ROBOT = load_robot("ur5")
N = ROBOT.n
ACCURACY = 2e-3          # Q15.16 accuracy of the UR5's torques (docs/accuracy.md)


@pytest.fixture
def board():
    """A fresh software board with controllers on a pseudo-terminal: ``(pty, argv prefix)``.

    The reply timeout is wall-clock time: the board is a Python thread behind the pty, which
    a loaded machine can hold up for longer than a real board's reply takes."""
    with ReferencePty(ControlledReferenceSerial(N, sensor_at_reference)) as pty:
        yield pty, ["control", "--port", pty.port, "--timeout", "5"]


def _write_states(path, t, q, qd, qdd):
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["t"] + [f"{name}{i}" for name in ("q", "qd", "qdd")
                                 for i in range(1, N + 1)])
        for k in range(len(q)):
            writer.writerow([repr(float(t[k]))] + [repr(float(v)) for v in
                                                   np.concatenate([q[k], qd[k], qdd[k]])])


def _read(path):
    with open(path, newline="") as file:
        rows = list(csv.reader(file))
    return rows[0], np.array(rows[1:], dtype=float)


def _states(count, seed):
    rng = np.random.default_rng(seed)
    return tuple(rng.uniform(-1, 1, (count, N)) for _ in range(3))


def test_configure_writes_the_configurations_the_options_give(board, capsys):
    pty, argv = board
    assert main(argv + ["--robot", "ur5", "configure", "--kp", "300",
                        "--kd", "30,30,30,20,20,20", "--set", "qd_hard_max=3.5",
                        "--set", "watchdog_reference=1", "--period", "0.001"]) == 0
    out = capsys.readouterr().out
    assert "configured 6 joint controllers of 'ur5'" in out and "read back" in out
    assert "control period: 12000 cycles" in out
    target = pty.serial.target
    for j, link in enumerate(ROBOT.links):
        words = ControllerConfig.for_joint(link.limits, kp=300.0, kd=30.0 if j < 3 else 20.0,
                                           qd_hard_max=3.5, watchdog_reference=True).encode()
        assert {name: target.joints[j].read(name) for name in words} == \
            {name: word & 0xFFFFFFFF for name, word in words.items()}
    assert target.control_period == 12_000


def test_configure_reports_bad_input_and_writes_nothing(board, capsys):
    pty, argv = board
    target = pty.serial.target
    for options, message in (
            (["--kp", "1e6"], "joint 1: controller kp (1/s^2) = 1000000.0 does not fit Q15.16"),
            (["--kp", "1,2"], "--kp has 2 values: give one for every joint or 6"),
            (["--kd", "fast"], "--kd must be a number or 6 comma-separated numbers"),
            (["--set", "tau_max=-1"], "joint 1: controller tau_max (N m) must be >= 0"),
            (["--set", "speed=1"], "--set takes NAME=VALUE with NAME a controller field"),
            (["--set", "current_per_torque=0.1,0.1,0.1,0.1,0.1,9"],
             "joint 6: controller current_per_torque (A/(N m)) = 9.0 does not fit Q3.28")):
        assert main(argv + ["--robot", "ur5", "configure"] + options) == 2, options
        assert message in capsys.readouterr().err, options
    assert all(joint.read("kp") == 0 and joint.read("tau_max") == 0 and joint.read("mode") == 0
               for joint in target.joints), "nothing may be written"
    assert main(argv + ["configure"]) == 2
    assert "configure needs --robot" in capsys.readouterr().err


def test_info_shows_the_joint_controllers(board, capsys):
    _, argv = board
    assert main(["info", "--port", argv[2]]) == 0
    out = capsys.readouterr().out
    assert "6 nodes, LinkDyn formats" in out and ", joint controllers," in out
    assert "joint controllers: CONTROL 18 request words, 35 reply words" in out


def test_control_commands_refuse_a_board_without_controllers(capsys):
    with ReferencePty(ReferenceSerial()) as pty:
        for action in (["--robot", "ur5", "configure"], ["hold"], ["status"], ["clear"]):
            assert main(["control", "--port", pty.port, "--timeout", "5"] + action) == 2
            err = capsys.readouterr().err
            assert "has no joint controllers (INFO CONTROLLERS = 0)" in err, action


def test_hold_prints_the_gravity_torques_of_the_held_pose(board, capsys):
    _, argv = board
    assert main(argv + ["--robot", "ur5", "configure"]) == 0
    capsys.readouterr()
    assert main(argv + ["hold", "--steps", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["step", "tau_cmd1", "tau_cmd2"]
    rows = [line.split() for line in lines[1:4]]
    assert [row[0] for row in rows] == ["1", "2", "3"] and all(row[-1] == "-" for row in rows)
    gravity = rnea(ROBOT, np.zeros(N), np.zeros(N), np.zeros(N))     # the sensors start at 0
    for row in rows:
        np.testing.assert_allclose(np.array(row[1:1 + N], dtype=float), gravity,
                                   atol=ACCURACY + 5e-5)   # + the table's 4 decimals
    assert "3 control steps" in lines[4]


def test_track_streams_a_trajectory_and_writes_the_records_and_a_plot(board, tmp_path, capsys):
    _, argv = board
    q, qd, qdd = _states(25, seed=3)
    t = np.arange(25) * 1e-3
    _write_states(tmp_path / "ref.csv", t, q, qd, qdd)
    assert main(argv + ["--robot", "ur5", "configure"]) == 0
    status = main(argv + ["track", "--trajectory", str(tmp_path / "ref.csv"), "--output",
                          str(tmp_path / "rec.csv"), "--plot", str(tmp_path / "rec.png")])
    assert status == 0, capsys.readouterr().err
    assert "25 references -> " in capsys.readouterr().out
    header, data = _read(tmp_path / "rec.csv")
    assert header[:2] == ["t", "tau_cmd1"] and header[-1] == "fault6" and len(header) == 31
    np.testing.assert_array_equal(data[:, 0], t)
    np.testing.assert_allclose(data[:, 1:7], rnea(ROBOT, q, qd, qdd), atol=ACCURACY)
    np.testing.assert_allclose(data[:, 7:13], 0.1 * data[:, 1:7], atol=1e-4)
    np.testing.assert_allclose(data[:, 13:19], q, atol=2 ** -17)
    np.testing.assert_allclose(data[:, 19:25], qd, atol=2 ** -17)
    assert not data[:, 25:].any()
    assert (tmp_path / "rec.png").stat().st_size > 10_000


def test_a_fault_is_reported_then_shown_and_cleared(board, tmp_path, capsys):
    _, argv = board
    q, qd, qdd = _states(5, seed=8)
    qd[2, 3] = 4.0                        # beyond joint 4's qd_hard_max (3.46 rad/s)
    _write_states(tmp_path / "ref.csv", np.arange(5) * 1e-3, q, qd, qdd)
    assert main(argv + ["--robot", "ur5", "configure"]) == 0
    capsys.readouterr()
    status = main(argv + ["track", "--trajectory", str(tmp_path / "ref.csv"), "--output",
                          str(tmp_path / "rec.csv")])
    err = capsys.readouterr().err
    assert status == 1
    assert "3 of 5 steps report latched faults, first at step 3: joint 4 (velocity)" in err
    _, data = _read(tmp_path / "rec.csv")
    assert list(data[:, 25 + 3]) == [0, 0, 2, 2, 2] and not data[:, [25, 26, 27, 29, 30]].any()
    assert list(data[:, 7 + 3][2:]) == [0, 0, 0], "a faulted joint drives zero current"
    assert main(argv + ["status"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.split()[:1] == ["4"])
    assert row.endswith(" velocity") and "faulted joints: 4" in out
    assert main(argv + ["hold", "--steps", "1"]) == 1
    assert "4:velocity" in capsys.readouterr().out, "the fault persists"
    assert main(argv + ["clear", "--joint", "7"]) == 2
    assert "--joint must be 1 .. 6" in capsys.readouterr().err
    assert main(argv + ["clear", "--joint", "4"]) == 0
    assert "cleared the faults of joint 4; no latched faults" in capsys.readouterr().out
    assert main(argv + ["status"]) == 0
    assert "no latched faults" in capsys.readouterr().out


def test_track_reports_bad_files_before_streaming(board, tmp_path, capsys):
    pty, argv = board
    assert main(argv + ["--robot", "ur5", "configure"]) == 0
    (tmp_path / "bad.csv").write_text("t,q1,q2\n0,1,2\n")
    assert main(argv + ["track", "--trajectory", str(tmp_path / "bad.csv"), "--output",
                        str(tmp_path / "rec.csv")]) == 2
    assert "bad.csv" in capsys.readouterr().err
    q, qd, qdd = _states(3, seed=1)
    qdd[1, 2] = 1e6
    _write_states(tmp_path / "big.csv", np.arange(3) * 1e-3, q, qd, qdd)
    assert main(argv + ["track", "--trajectory", str(tmp_path / "big.csv"), "--output",
                        str(tmp_path / "rec.csv")]) == 2
    assert "state 2 (data row 2), column 'qdd3'" in capsys.readouterr().err
    assert main(argv + ["track", "--trajectory", str(tmp_path / "big.csv"), "--output",
                        str(tmp_path / "no" / "rec.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert pty.serial.controls == 0, "no control step may run"
