"""Closed-loop experiments in golden mode (linkdyn.host.experiments) on the UR5 MuJoCo plant.

References: MuJoCo's inverse dynamics (``mj_inverse``) for the torque that holds a pose and for
the payload's weight; the linear error dynamics ``e'' + K_d e' + K_p e = u`` the gains are
designed for (the overshoot and settling the design predicts); issue 15's acceptance ratios.
Short runs (0.5 s); the CLI's defaults run 2-3 s.
"""

import csv
import json

import numpy as np
import pytest

from linkdyn.host.cli import main
from linkdyn.host.experiments import (GainSet, GoldenController, csv_columns, payload_experiment,
                                      payload_wrench, point_experiment, run_closed_loop,
                                      write_csv)
from linkdyn.host.experiments.report import run_experiment, write_experiment
from linkdyn.host.experiments.runs import POINT_GAINS, reference_pose
from linkdyn.model.rnea import rnea
from linkdyn.sim.plant import Plant

pytest.importorskip("mujoco")


@pytest.fixture(scope="module")
def point():
    return point_experiment("ur5", 0.5)


@pytest.fixture(scope="module")
def payload():
    return payload_experiment("ur5", 0.5)


def test_golden_loop_holds_a_static_pose_against_gravity():
    plant = Plant.from_reference("ur5")
    q0 = reference_pose(plant)
    plant.reset(q0)
    controller = GoldenController(plant.robot, POINT_GAINS["medium"])
    zero = np.zeros(plant.n)
    log = run_closed_loop(plant, controller, lambda t: (q0, zero, zero), 200)
    reach = np.linalg.norm(log.x_ref[0])
    # Within two encoder counts at the arm's reach, although gravity (up to 39 N·m) pulls.
    assert np.linalg.norm(log.error, axis=1).max() < 2 * plant.encoder_step * reach
    gravity = plant.inverse_dynamics(plant.state.q, zero, zero)           # MuJoCo, independent
    assert np.abs(gravity).max() > 30.0
    # The mean commanded torque is MuJoCo's gravity torque up to what one count of position
    # error commands (K_p s M); the velocity difference's count chatter averages out.
    q = plant.state.q       # M(q) from linkdyn's float RNEA (columns: unit accelerations)
    mass = (rnea(plant.robot, np.tile(q, (6, 1)), np.zeros((6, 6)), np.eye(6))
            - rnea(plant.robot, q, zero, zero)).T
    one_count = POINT_GAINS["medium"].kp * plant.encoder_step * np.abs(mass).sum(axis=1)
    np.testing.assert_array_less(np.abs(log.tau[-100:].mean(axis=0) - gravity), one_count)
    assert controller.fault_codes == [0] * plant.n


def test_point_gain_sets_order_their_overshoot_as_designed(point):
    figures = point["figures"]
    measured = {s: figures[f"point_{s}"]["measured"]["overshoot"] for s in POINT_GAINS}
    designed = {s: figures[f"point_{s}"]["designed"]["overshoot"] for s in POINT_GAINS}
    assert measured["low"] > measured["medium"] > measured["high"]
    assert measured["low"] > 0.4 and measured["high"] < 0.005
    # The design (zeta 0.2: 54 %, 0.7: 4.6 %, 1.5: 0) within 1.5 percentage points.
    for s in POINT_GAINS:
        assert abs(measured[s] - designed[s]) < 0.015, (s, measured[s], designed[s])
    for s in POINT_GAINS:
        assert figures[f"point_{s}"]["faults"] == [0] * 6
        assert 0.005 < figures[f"point_{s}"]["measured"]["peak"] < 0.05   # a 20 N pulse: mm


def test_payload_modelled_returns_to_the_no_payload_error(payload):
    figures = payload["figures"]
    none = figures["payload_none"]["rms_error"]
    assert figures["payload_modelled"]["rms_error"] <= 1.2 * none
    assert figures["payload_unmodelled"]["rms_error"] >= 5 * none
    # Unmodelled: the arm sags (height error grows), the model cannot hold the weight.
    assert figures["payload_unmodelled"]["max_sag_z"] > 5 * figures["payload_none"]["max_sag_z"]


def test_payload_wrench_is_the_payload_weight_mujoco_sees():
    plant = Plant.from_reference("ur5", friction=False)
    q = reference_pose(plant) + np.array([0.3, -0.2, 0.1, 0.4, -0.5, 0.6])
    zero = np.zeros(plant.n)
    mass, com = 0.8, np.array([0.01, -0.02, 0.05])
    without = plant.inverse_dynamics(q, zero, zero)
    plant.set_payload(mass, com)
    with_payload = plant.inverse_dynamics(q, zero, zero)
    transform = plant.tip_in_dh
    com_n = transform[:3, :3] @ com + transform[:3, 3]
    wrench = payload_wrench(plant.robot, q, mass, com_n)
    told = rnea(plant.robot, q, zero, zero, f_ext=wrench) - rnea(plant.robot, q, zero, zero)
    np.testing.assert_allclose(told, with_payload - without, rtol=0, atol=1e-9)
    assert np.abs(told).max() > 1.0


def test_csv_has_the_issue_columns_and_the_log(point, tmp_path):
    log = point["runs"]["point_low"]
    path = tmp_path / "point_low.csv"
    write_csv(log, path)
    with open(path, newline="") as stream:
        rows = list(csv.reader(stream))
    expected = (["t", "q1", "q2", "q3", "q4", "q5", "q6", "qd1", "qd2", "qd3", "qd4", "qd5",
                 "qd6", "tau1", "tau2", "tau3", "tau4", "tau5", "tau6", "x_ee", "y_ee", "z_ee",
                 "x_ref", "y_ref", "z_ref", "fx", "fy", "fz", "fcx", "fcy", "fcz", "dx", "dy",
                 "dz"])
    assert rows[0] == expected == csv_columns(6)
    table = np.array(rows[1:], dtype=float)
    assert table.shape == (500, len(expected))
    np.testing.assert_array_equal(table[:, 0], log.t)
    np.testing.assert_array_equal(table[:, 13:19], log.tau)
    dz = table[:, expected.index("dz")]
    assert set(np.unique(dz)) == {0.0, -20.0}                  # the pulse, logged
    assert np.count_nonzero(dz) == 200                          # 0.2 s at 1 kHz
    # The wrist sensor reads what the tool exerts: the reaction to the pulse, +20 N in z.
    fz = table[:, expected.index("fz")]
    assert abs(fz[dz != 0].mean() - 20.0) < 0.5


def test_written_files_and_summary(point, payload, tmp_path):
    write_experiment("point", point, tmp_path, "ur5")
    write_experiment("payload", payload, tmp_path, "ur5")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary) == {"point", "payload"}
    for name in ("point_high", "point_medium", "point_low", "payload_none",
                 "payload_unmodelled", "payload_modelled"):
        assert (tmp_path / f"{name}.csv").exists()
    for entry in summary.values():
        assert "Sect. 4." in entry["paper"] and entry["ours"]
        assert entry["real_time_factor"] > 0
        for plot in entry["plots"]:
            assert (tmp_path / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert payload["figures"]["payload_modelled"]["rms_error"] \
        == summary["payload"]["figures"]["payload_modelled"]["rms_error"]


def test_payload_log_has_the_told_force(payload):
    log = payload["runs"]["payload_modelled"]
    # The weight told to the last node, world axes: +m g up (the link holds the payload).
    np.testing.assert_allclose(log.f_cmd, np.tile([0.0, 0.0, 0.8 * 9.80665], (len(log.t), 1)),
                               atol=1e-9)
    assert not payload["runs"]["payload_unmodelled"].f_cmd.any()


@pytest.mark.parametrize("argv, message", [
    (["experiment", "bogus", "--out", "X"], "unknown experiment 'bogus'"),
    (["experiment", "identify", "--out", "X", "--seconds", "2"], "finite number >= 4.5"),
    (["experiment", "point", "--out", "X", "--seconds", "-1"], "--seconds must be > 0"),
    (["experiment", "point", "--out", "X", "--controller", "fpga"], "--controller must be"),
])
def test_cli_refuses_bad_input(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "X").exists()                       # nothing written


def test_library_refuses_bad_input(tmp_path):
    with pytest.raises(ValueError, match="experiment must be one of"):
        run_experiment("bogus", tmp_path)
    with pytest.raises(ValueError, match="controller must be 'golden' or 'gateware'"):
        run_experiment("point", tmp_path, controller="fpga")
    with pytest.raises(ValueError, match="seconds must be a finite number > 0"):
        point_experiment("ur5", -0.5)
    with pytest.raises(ValueError, match="pulse ends at"):
        point_experiment("ur5", 0.2)
    with pytest.raises(ValueError, match="zeta must be"):
        GainSet(20.0, 0.0)
    plant = Plant.from_reference("ur5")
    other = Plant.from_reference("ur5").robot
    zero = np.zeros(6)
    with pytest.raises(ValueError, match="plant's own robot"):
        run_closed_loop(plant, GoldenController(other, POINT_GAINS["high"]),
                        lambda t: (zero, zero, zero), 10)
    with pytest.raises(ValueError, match="cycles must be"):
        run_closed_loop(plant, GoldenController(plant.robot, POINT_GAINS["high"]),
                        lambda t: (zero, zero, zero), 0)
    assert list(tmp_path.iterdir()) == []
