"""``linkdyn trajectory eight`` and ``linkdyn trajectory retime`` end to end.

The files written are read back and checked independently (finite differences of the CSV and
our rnea); bad input gives exit status 2 and a message naming the problem.
"""

import json

import numpy as np
import pytest

from linkdyn.host.cli import main
from linkdyn.host.trajectory.export import csv_header, read_csv
from linkdyn.host.trajectory.verify import check_csv
from linkdyn.model import load_robot


@pytest.fixture(scope="module")
def eight_csv(tmp_path_factory):
    out = tmp_path_factory.mktemp("eight") / "eight.csv"
    status = main(["trajectory", "eight", "--robot", "ur10", "--ik", "fd", "--gamma", "500",
                   "--size", "0.2", "--period", "2", "--rate", "250", "--out", str(out)])
    assert status == 0
    return out


def test_eight_writes_csv_summary_and_plots(eight_csv, capsys):
    t, q, qd, qdd = read_csv(eight_csv, n=6)
    assert eight_csv.read_text().splitlines()[0] == ",".join(csv_header(6))
    assert np.allclose(np.diff(t), 1 / 250) and t[-1] == pytest.approx(4.0)
    summary = json.loads(eight_csv.with_suffix(".json").read_text())
    assert summary["robot"] == "ur10" and summary["ik"] == "fd"
    assert summary["parameters"]["gamma"] == 500.0
    assert summary["duration_s"] == pytest.approx(4.0)
    assert 0 < summary["max_cartesian_error_m"] < 1e-3
    assert summary["limits_used"]["velocity_rad_s"][0] == pytest.approx(2.0944, abs=1e-4)
    assert summary["check"]["ok"]
    for name in ("eight_path.png", "eight_joints.png"):
        assert (eight_csv.parent / name).stat().st_size > 10_000
    robot = load_robot("ur10")
    report = check_csv(robot, eight_csv,
                       velocity=[link.limits.qd_max for link in robot.links])
    assert report.ok


def test_retime_time_optimal_and_jerk_limited(eight_csv, tmp_path):
    robot = load_robot("ur10")
    fast = tmp_path / "fast.csv"
    assert main(["trajectory", "retime", "--robot", "ur10", "--path", str(eight_csv),
                 "--qdd-max", "3", "--out", str(fast), "--no-plots"]) == 0
    summary = json.loads(fast.with_suffix(".json").read_text())
    optimal = summary["time_optimal_duration_s"]
    assert optimal["relative_difference"] < 0.01
    assert summary["duration_s"] == pytest.approx(optimal["toppra"], abs=2e-3)
    assert summary["duration_s"] < summary["source_duration_s"]
    assert summary["max_cartesian_error_m"] < 1e-5       # same geometric path
    limits = dict(velocity=[l.limits.qd_max for l in robot.links], acceleration=3.0,
                  torque=[l.limits.tau_max for l in robot.links])
    assert check_csv(robot, fast, **limits).ok

    smooth = tmp_path / "smooth.csv"
    assert main(["trajectory", "retime", "--robot", "ur10", "--path", str(eight_csv),
                 "--qdd-max", "3", "--jerk-limit", "100", "--out", str(smooth)]) == 0
    summary = json.loads(smooth.with_suffix(".json").read_text())
    assert summary["duration_s"] > optimal["toppra"]
    report = check_csv(robot, smooth, jerk=100.0, **limits)
    assert report.ok, report.as_dict()
    assert report.checks["jerk"].ratio > 0.9
    assert (tmp_path / "smooth_joints.png").is_file()


@pytest.mark.parametrize("arguments, message", [
    (["eight", "--robot", "r2d2", "--ik", "fd"], "cannot load robot 'r2d2'"),
    (["eight", "--robot", "ur10", "--ik", "fd", "--size", "-0.1"], "--size must be a positive"),
    (["eight", "--robot", "ur10", "--ik", "dls", "--alpha", "-1"], "--alpha must be a number"),
    (["eight", "--robot", "ur10", "--ik", "fd", "--q0", "0", "1"], "--q0 needs 6 joint angles"),
    (["eight", "--robot", "puma560", "--ik", "fd", "--q0", "0", "0", "0", "0", "3", "0"],
     "outside the joint range of joint(s) [5]"),
    (["eight", "--robot", "ur10", "--ik", "fd", "--size", "5"], "leaves the workspace"),
    (["retime", "--robot", "ur10", "--path", "missing.csv"], "does not exist"),
    (["retime", "--robot", "ur10", "--path", "BAD", "--jerk-limit", "0"],
     "--jerk-limit must be a positive"),
])
def test_bad_input_exits_2_with_a_clear_message(arguments, message, tmp_path, capsys):
    arguments = [a if a != "BAD" else str(tmp_path / "bad.csv") for a in arguments]
    out = ["--out", str(tmp_path / "out.csv")]
    assert main(["trajectory", *arguments, *out]) == 2
    assert message in capsys.readouterr().err


def test_retime_rejects_a_malformed_csv(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("time,a,b\n0,1,2\n")
    assert main(["trajectory", "retime", "--robot", "ur10", "--path", str(bad),
                 "--out", str(tmp_path / "out.csv")]) == 2
    assert "must have the header 't,q1..qn,qd1..qdn,qdd1..qddn'" in capsys.readouterr().err
    wrong = tmp_path / "wrong.csv"
    wrong.write_text(",".join(csv_header(2)) + "\n0,0,0,0,0,0,0\n0.1,0,0,0,0,0,0\n")
    assert main(["trajectory", "retime", "--robot", "ur10", "--path", str(wrong),
                 "--out", str(tmp_path / "out.csv")]) == 2
    assert "has 2 joints, the robot has 6" in capsys.readouterr().err
    cell = tmp_path / "cell.csv"
    rows = ["0," + ",".join(["0"] * 18), "0.1," + ",".join(["0"] * 17 + ["abc"])]
    cell.write_text(",".join(csv_header(6)) + "\n" + "\n".join(rows) + "\n")
    assert main(["trajectory", "retime", "--robot", "ur10", "--path", str(cell),
                 "--out", str(tmp_path / "out.csv")]) == 2
    assert "line 3 column 'qdd6': 'abc' is not a number" in capsys.readouterr().err
    assert main(["trajectory", "eight", "--robot", "ur10", "--ik", "fd",
                 "--out", str(tmp_path / "out.txt")]) == 2
    assert "--out must name a .csv file" in capsys.readouterr().err
