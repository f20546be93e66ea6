"""The contact experiment (paper Sect. 4.2, Fig. 12) in golden mode on the UR5 MuJoCo plant.

References: the plant's own static force limit (torque limits against ``g(q) + J^T f``, from
MuJoCo's inverse dynamics and Jacobian, :meth:`linkdyn.sim.plant.Plant.static_force_limit`);
the force the tool exerts as MuJoCo's wrist force sensor measures it; the tolerance is derived
from what the compliant feedback adds to the commanded force (below). Short runs (2 s each).
"""

import csv
import json

import numpy as np
import pytest

from linkdyn.host.cli import main
from linkdyn.host.experiments import contact_experiment, contact_wrench, csv_columns
from linkdyn.host.experiments.runs import PAYLOAD_GAINS, reference_pose
from linkdyn.model.rnea import rnea
from linkdyn.sim.plant import Plant

pytest.importorskip("mujoco")

X = np.array([1.0, 0.0, 0.0])


@pytest.fixture(scope="module")
def reference():
    """The UR5 plant at the contact pose: predicted limit and the tolerance of the tracking."""
    plant = Plant.from_reference("ur5")
    q0 = reference_pose(plant)
    plant.reset(q0)
    limit, joint = plant.static_force_limit(X, q0)
    # What the feedback adds to the commanded force, at the tool (wrench = J^-T tau):
    # the velocity is the backward difference of encoder samples, so one count s on joint j
    # reads s / T rad/s for one cycle; the controller turns it into qdd = K_d s / T and the
    # model into tau = M[:, j] K_d s / T. Every joint at once is the worst case (the arm is
    # held by the plate, at rest up to such counts). The position error one count commands
    # (K_p s) and the one-cycle lag of the logged force behind the command (2 pi A / P * T /
    # 2 at most for A sin^2(pi t / P)) are added.
    wrench = np.linalg.solve(plant.tool_jacobian(q0).T, plant.mass_matrix(q0))
    per_joint = np.linalg.norm(wrench[:3], axis=0)          # N per rad/s^2 of each joint
    s, period = plant.encoder_step, plant.control_period
    chatter = per_joint.sum() * (PAYLOAD_GAINS.kd * s / period + PAYLOAD_GAINS.kp * s)
    return {"plant": plant, "q0": q0, "limit": limit, "joint": joint, "chatter": chatter}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("contact")
    assert main(["experiment", "contact", "--robot", "ur5", "--out", str(out),
                 "--seconds", "2"]) == 0
    return out


@pytest.fixture(scope="module")
def saturated(reference):
    return contact_experiment("ur5", 2.0, amplitude=1.5 * reference["limit"], period=4.0)


@pytest.mark.parametrize("tool_offset", [(0.0, 0.0, 0.0), (0.0, 0.0, 0.1)])
def test_contact_wrench_is_the_tool_force_through_the_jacobian(tool_offset):
    # With a 0.1 m tool the tool point is off the origin of DH frame n: the moment p x f counts.
    plant = Plant.from_reference("ur5", tool_offset=tool_offset)
    q = reference_pose(plant) + np.array([0.2, -0.1, 0.3, 0.1, 0.4, -0.2])
    force = np.array([12.0, -5.0, 30.0])
    zero = np.zeros(plant.n)
    told = (rnea(plant.robot, q, zero, zero,
                 f_ext=contact_wrench(plant.robot, q, force, plant.robot.tool[:3, 3]))
            - rnea(plant.robot, q, zero, zero))
    # The torques that exert the force at the tool point: J^T f with MuJoCo's Jacobian.
    np.testing.assert_allclose(told, plant.tool_jacobian(q)[:3].T @ force, atol=1e-9)


def test_measured_force_follows_the_command_below_saturation(written, reference):
    summary = json.loads((written / "summary.json").read_text())["contact"]
    c = summary["figures"]["contact"]
    # 2 s: up to the peak (last row at 1.999 s)
    assert c["commanded_max"] == pytest.approx(40.0 * np.sin(np.pi * 1.999 / 4.0) ** 2,
                                               rel=1e-12)
    assert c["predicted_saturation"] == pytest.approx(reference["limit"], rel=1e-12)
    assert c["limiting_joint"] == reference["joint"] + 1 == 2
    assert not c["saturated"] and c["faults"] == [0] * 6
    with open(written / "contact.csv", newline="") as stream:
        rows = list(csv.reader(stream))
    columns = rows[0]
    table = np.array(rows[1:], dtype=float)
    fx, fcx = table[:, columns.index("fx")], table[:, columns.index("fcx")]
    lag = 2 * np.pi * 40.0 / 4.0 * 1e-3 / 2
    tolerance = reference["chatter"] + lag                   # ~3.7 N: every joint one count
    assert 1.0 < tolerance < 5.0
    assert np.abs(fx - fcx).max() < tolerance
    # Systematic error: the compliant position feedback against the plate's penetration
    # (0.1 mm at 40 N; stiffness ~ K_p |J^-T M| ~ 80 N/m: 0.01 N) -- gain within 0.5 %.
    assert summary["figures"]["contact"]["gain"] == pytest.approx(1.0, abs=5e-3)
    assert np.sqrt(np.mean((fx - fcx) ** 2)) < 0.1 * tolerance
    # Across the commanded direction only the count chatter.
    for axis in ("fy", "fz"):
        assert np.abs(table[:, columns.index(axis)]).max() < tolerance
    assert (written / summary["plots"][0]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Sect. 4.2" in summary["paper"] and "30 N" in summary["paper"]


def test_csv_has_the_issue_columns(written):
    with open(written / "contact.csv", newline="") as stream:
        rows = list(csv.reader(stream))
    assert rows[0] == csv_columns(6)
    table = np.array(rows[1:], dtype=float)
    assert table.shape == (2000, len(rows[0]))
    fcx = table[:, rows[0].index("fcx")]
    t = table[:, 0]
    np.testing.assert_allclose(fcx, 40.0 * np.sin(np.pi * t / 4.0) ** 2, atol=1e-9)
    for axis in ("fcy", "fcz"):                               # along x only (rounding)
        assert np.abs(table[:, rows[0].index(axis)]).max() < 1e-9


def test_command_above_the_limit_is_clipped_at_the_predicted_level(saturated, reference):
    c = saturated["figures"]["contact"]
    log = saturated["runs"]["contact"]
    limit = reference["limit"]
    assert c["saturated"]
    # The first joint at its torque limit is the predicted one, when the measured force is the
    # predicted saturation (within the tracking tolerance: ~3.7 N of 743 N).
    plant = reference["plant"]
    at_limit = np.abs(log.tau) >= plant.tau_max * (1 - 1e-9)
    first = np.nonzero(at_limit.any(axis=1))[0][0]
    assert np.nonzero(at_limit[first])[0].tolist() == [reference["joint"]]
    assert abs(c["force_at_first_clip"] - limit) < 2 * reference["chatter"]
    # Below the limit the force follows the command as in the 40 N run.
    below = log.f_cmd[:, 0] < limit - 10.0
    assert np.abs(log.f[below, 0] - log.f_cmd[below, 0]).max() < 2 * reference["chatter"]
    # Beyond it the measured force falls behind: the limiting joint adds nothing, only the
    # plate's friction lets the other joints press further (the tool slides) -- less than half
    # of the commanded increase arrives.
    assert c["commanded_max"] > 1.45 * limit
    assert limit < c["measured_max"] < limit + 0.5 * (c["commanded_max"] - limit)
    assert c["commanded_max"] - c["measured_max"] > 150.0


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(seconds=-1.0), ValueError, "seconds must be a finite number > 0"),
    (dict(amplitude=0.0), ValueError, "amplitude must be a finite number > 0"),
    (dict(period=float("nan")), ValueError, "period must be a finite number > 0"),
    (dict(direction=(0.0, 0.0, 0.0)), ValueError, "plate direction must not be zero"),
    (dict(direction=(1.0, 0.0)), ValueError, "plate direction"),
    (dict(robot=5), TypeError, "robot must be a reference arm name"),
])
def test_library_refuses_bad_input(kwargs, error, message):
    with pytest.raises(error, match=message):
        contact_experiment(**kwargs)


def test_cli_refuses_bad_input(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["experiment", "contact", "--out", "X", "--seconds", "0"]) == 2
    assert "--seconds must be > 0" in capsys.readouterr().err
    assert main(["experiment", "contact", "--out", "X", "--robot", "kuka"]) == 2
    assert "reference robot must be one of" in capsys.readouterr().err
    assert not (tmp_path / "X").exists()
