"""``linkdyn identify`` and ``linkdyn excite``: outputs, and clear errors on bad input."""

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from linkdyn.host.cli import main
from linkdyn.model import load_robot, save_robot
from linkdyn.host.identification.data import write_csv

from support.identification import synthetic_measurements, ur5_with_friction


@pytest.fixture(scope="module")
def ur5_csv(tmp_path_factory):
    """10 s of synthetic UR5 measurements at 250 Hz (float model, friction, 0.2 % noise)."""
    measurements, _ = synthetic_measurements(ur5_with_friction(), seed=7, noise=0.002,
                                             duration=10.0, rate=250.0)
    path = tmp_path_factory.mktemp("data") / "ur5_run.csv"
    write_csv(path, measurements.t, measurements.q, measurements.qd, tau=measurements.tau)
    return path


def test_identify_writes_summary_plots_and_a_loadable_robot_file(ur5_csv, tmp_path, capsys):
    out = tmp_path / "ur5"
    status = main(["identify", "--robot", "ur5", "--data", str(ur5_csv), "--out", str(out),
                   "--train-fraction", "0.7"])
    assert status == 0
    summary = json.loads((out / "summary.json").read_text())
    robot = load_robot("ur5")
    assert summary["joints"] == [link.name for link in robot.links]
    assert len(summary["validation_rms_nm"]) == len(summary["nominal_rms_nm"]) == 6
    assert summary["base_parameter_count"] == 54
    assert summary["physically_consistent"] is True
    assert summary["seconds"] > 0
    # The nominal UR5 has no friction; the identified model has, and fits to the noise.
    assert all(v < n for v, n in zip(summary["validation_rms_nm"], summary["nominal_rms_nm"]))
    assert summary["samples"]["acceleration_source"] == "differentiated"
    identified = load_robot(out / summary["files"]["robot"])
    assert identified.links[1].friction.coulomb == pytest.approx(4.0, rel=0.05)
    assert (out / "validation_torques.png").stat().st_size > 10_000
    assert "validation RMS" in capsys.readouterr().err


def test_identify_with_fixed_steepness_and_no_plots(ur5_csv, tmp_path):
    out = tmp_path / "fixed"
    assert main(["identify", "--robot", "ur5", "--data", str(ur5_csv), "--out", str(out),
                 "--steepness", "50", "--no-plots", "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["friction_steepness"] == 50.0
    assert summary["friction_steepness_searched"] is False
    assert not list(out.glob("*.png"))


def test_identify_accepts_a_robot_file(ur5_csv, tmp_path):
    robot_file = save_robot(load_robot("ur5"), tmp_path / "ur5.json")
    assert main(["identify", "--robot", str(robot_file), "--data", str(ur5_csv), "--out",
                 str(tmp_path / "out"), "--no-plots", "--quiet", "--decimate", "2"]) == 0


@pytest.mark.parametrize("arguments, message", [
    (["--robot", "nosuch"], "cannot load robot 'nosuch'"),
    (["--data", "missing.csv"], "does not exist"),
    (["--train-fraction", "1.2"], "--train-fraction"),
    (["--cutoff", "-1"], "--cutoff"),
    (["--cutoff", "200"], "cutoff must be in (0, 125)"),
])
def test_identify_reports_bad_input(ur5_csv, tmp_path, capsys, arguments, message):
    base = {"--robot": "ur5", "--data": str(ur5_csv), "--out": str(tmp_path / "out")}
    for key, value in zip(arguments[::2], arguments[1::2]):
        base[key] = value
    argv = ["identify", "--quiet"] + [item for pair in base.items() for item in pair]
    status = main(argv)
    error = capsys.readouterr().err
    assert status == 2
    assert error.startswith("linkdyn: error: ") and message in error


def test_identify_reports_a_joint_count_mismatch(tmp_path, capsys):
    path = tmp_path / "two_joints.csv"
    write_csv(path, np.arange(10.0), np.zeros((10, 2)), np.zeros((10, 2)),
              tau=np.zeros((10, 2)))
    assert main(["identify", "--robot", "ur5", "--data", str(path), "--out",
                 str(tmp_path / "o")]) == 2
    assert "2 joints, the robot has 6" in capsys.readouterr().err


def test_identify_reports_an_output_that_is_a_file(ur5_csv, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["identify", "--robot", "ur5", "--data", str(ur5_csv), "--out",
                 str(blocker)]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_excite_writes_a_trajectory_and_its_summary(tmp_path):
    out = tmp_path / "ur5_excitation.csv"
    status = main(["excite", "--robot", "ur5", "--harmonics", "3", "--period", "10",
                   "--samples", "30", "--max-iterations", "4", "--out", str(out), "--quiet",
                   "--center", "0,-1.5708,0,-1.5708,0,0", "--box", "6:z:0.25:inf",
                   "--box", "5:z:0.25:", "--sample-step", "0.01"])
    assert status == 0
    with out.open() as handle:
        rows = list(csv.reader(handle))
    assert rows[0][:2] == ["t", "q1"] and len(rows[0]) == 1 + 3 * 6
    assert float(rows[-1][0]) == pytest.approx(30.0)
    summary = json.loads(out.with_suffix(".json").read_text())
    assert summary["criterion_final"] < summary["criterion_initial"]
    assert summary["check"]["ok"] is True
    assert summary["harmonics"] == 3 and summary["period_s"] == pytest.approx(10.0)
    assert [box["frame"] for box in summary["limits"]["boxes"]] == [6, 5]
    assert out.with_suffix(".png").is_file()


@pytest.mark.parametrize("arguments, message", [
    (["--box", "6:w:0:1"], "axis must be x, y or z"),
    (["--box", "9:z:0:inf"], "frame must be 1..6"),
    (["--box", "6-z-0"], "FRAME:AXIS:LOW:HIGH"),
    (["--center", "1,2"], "--center must be 6"),
    (["--out", "trajectory.txt"], "must name a .csv file"),
    (["--robot", "nosuch.json"], "does not exist"),
    (["--box", "6:z:5:inf", "--center", "0,-1.5708,0,-1.5708,0,0"], "outside its box"),
])
def test_excite_reports_bad_input(tmp_path, capsys, arguments, message):
    base = {"--robot": "ur5", "--out": str(tmp_path / "e.csv")}
    extra = []
    for key, value in zip(arguments[::2], arguments[1::2]):
        if key in base:
            base[key] = value if key != "--out" else str(tmp_path / value)
        else:
            extra += [key, value]
    argv = ["excite", "--quiet", "--max-iterations", "1"] + \
        [item for pair in base.items() for item in pair] + extra
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.startswith("linkdyn: error: ") and message in error, error


def test_linkdyn_command_exits_with_status_2_on_bad_input(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "linkdyn.host", "identify", "--robot", "ur5", "--data",
         str(tmp_path / "none.csv"), "--out", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "linkdyn: error: data file" in result.stderr
    assert "Traceback" not in result.stderr


def test_argparse_rejects_a_non_positive_steepness(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["identify", "--robot", "ur5", "--data", "x.csv", "--out", "o",
              "--steepness", "-3"])
    assert exit_info.value.code == 2
    assert "positive number" in capsys.readouterr().err
