"""``python -m linkdyn.model``: torques of a CSV of states equal rnea; bad input exits with 2."""

import csv
import subprocess
import sys

import numpy as np
import pytest

from linkdyn.model import load_robot, rnea, save_robot


def run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "linkdyn.model", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def write_states(path, q, qd, qdd, t=None, header=None):
    n = q.shape[1]
    names = ([f"q{i}" for i in range(1, n + 1)] + [f"qd{i}" for i in range(1, n + 1)]
             + [f"qdd{i}" for i in range(1, n + 1)])
    rows = np.hstack([q, qd, qdd])
    if t is not None:
        names = ["t"] + names
        rows = np.column_stack([t, rows])
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(header or names)
        writer.writerows([[repr(float(v)) for v in row] for row in rows])
    return path


def read_torques(path):
    with open(path, newline="") as file:
        rows = list(csv.reader(file))
    return rows[0], np.array(rows[1:], dtype=float)


def random_states(n, count=25, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.uniform(-2, 2, (count, n)) for _ in range(3))


def test_torques_of_a_csv_equal_rnea(tmp_path):
    q, qd, qdd = random_states(6)
    t = np.arange(len(q)) * 1e-3
    write_states(tmp_path / "states.csv", q, qd, qdd, t=t)
    result = run("torques", "--robot", "puma560", "--input", "states.csv",
                 "--output", "tau.csv", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    header, values = read_torques(tmp_path / "tau.csv")
    assert header == ["t", "tau1", "tau2", "tau3", "tau4", "tau5", "tau6"]
    np.testing.assert_array_equal(values[:, 0], t)
    expected = rnea(load_robot("puma560"), q, qd, qdd)
    assert np.abs(expected).max() > 1.0     # friction and dynamics, not only zeros
    np.testing.assert_allclose(values[:, 1:], expected, rtol=1e-15, atol=1e-12)


def test_no_friction_tip_and_no_time_column(tmp_path):
    q, qd, qdd = random_states(4, seed=1)
    write_states(tmp_path / "states.csv", q, qd, qdd)
    result = run("torques", "--robot", "puma560", "--tip", "link4", "--no-friction",
                 "--input", "states.csv", "--output", "tau.csv", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    header, values = read_torques(tmp_path / "tau.csv")
    assert header == ["tau1", "tau2", "tau3", "tau4"]
    robot = load_robot("puma560", tip="link4").without_friction()
    np.testing.assert_allclose(values, rnea(robot, q, qd, qdd), rtol=1e-15, atol=1e-12)


def test_robot_file_is_accepted(tmp_path):
    save_robot(load_robot("ur10"), tmp_path / "arm.json")
    q, qd, qdd = random_states(6, count=3, seed=2)
    write_states(tmp_path / "states.csv", q, qd, qdd)
    result = run("torques", "--robot", "arm.json", "--input", "states.csv",
                 "--output", "tau.csv", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    _, values = read_torques(tmp_path / "tau.csv")
    np.testing.assert_allclose(values, rnea(load_robot("ur10"), q, qd, qdd), atol=1e-12)


def test_urdf_is_accepted(tmp_path):
    from linkdyn.model.reference import example_robot_data_dir
    from linkdyn.model.urdf import load_urdf
    try:
        urdf = example_robot_data_dir() / "panda_description" / "urdf" / "panda.urdf"
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")
    q, qd, qdd = random_states(7, count=3, seed=3)
    write_states(tmp_path / "states.csv", q, qd, qdd)
    result = run("torques", "--robot", urdf, "--tip", "panda_hand", "--input", "states.csv",
                 "--output", "tau.csv", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    _, values = read_torques(tmp_path / "tau.csv")
    robot = load_urdf(urdf, tip="panda_hand")
    np.testing.assert_allclose(values, rnea(robot, q, qd, qdd), atol=1e-12)


def assert_input_error(result, *fragments):
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert "error:" in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def test_wrong_number_of_columns_for_the_robot_exits_with_2(tmp_path):
    q, qd, qdd = random_states(7, count=2)      # a 7-joint CSV for the 6-joint UR5
    write_states(tmp_path / "states.csv", q, qd, qdd, t=[0.0, 0.1])
    result = run("torques", "--robot", "ur5", "--input", "states.csv", "--output", "tau.csv",
                 cwd=tmp_path)
    assert_input_error(result, "21 state columns", "6 joints", "18 columns")
    assert not (tmp_path / "tau.csv").exists()


def test_wrong_header_exits_with_2(tmp_path):
    q, qd, qdd = random_states(6, count=2)
    header = ["q1", "q2", "q3", "q4", "q5", "q6"] + [f"v{i}" for i in range(1, 7)] + [
        f"qdd{i}" for i in range(1, 7)]
    write_states(tmp_path / "states.csv", q, qd, qdd, header=header)
    result = run("torques", "--robot", "ur5", "--input", "states.csv", "--output", "tau.csv",
                 cwd=tmp_path)
    assert_input_error(result, "header", "qd1")


def test_non_numeric_value_exits_with_2_naming_line_and_column(tmp_path):
    q, qd, qdd = random_states(6, count=3)
    path = write_states(tmp_path / "states.csv", q, qd, qdd)
    lines = path.read_text().splitlines()
    cells = lines[2].split(",")
    cells[7] = "fast"                           # qd2 of the second state, file line 3
    lines[2] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    result = run("torques", "--robot", "ur5", "--input", "states.csv", "--output", "tau.csv",
                 cwd=tmp_path)
    assert_input_error(result, "line 3", "'qd2'", "'fast'")


@pytest.mark.parametrize("cell", ["nan", "inf"])
def test_non_finite_value_exits_with_2(tmp_path, cell):
    q, qd, qdd = random_states(6, count=1)
    path = write_states(tmp_path / "states.csv", q, qd, qdd)
    lines = path.read_text().splitlines()
    lines[1] = cell + lines[1][lines[1].index(","):]
    path.write_text("\n".join(lines) + "\n")
    result = run("torques", "--robot", "ur5", "--input", "states.csv", "--output", "tau.csv",
                 cwd=tmp_path)
    assert_input_error(result, "line 2", "'q1'", "not finite")


def test_ragged_row_exits_with_2(tmp_path):
    q, qd, qdd = random_states(6, count=2)
    path = write_states(tmp_path / "states.csv", q, qd, qdd)
    path.write_text(path.read_text() + "1,2,3\n")
    result = run("torques", "--robot", "ur5", "--input", "states.csv", "--output", "tau.csv",
                 cwd=tmp_path)
    assert_input_error(result, "line 4", "3 fields")


def test_empty_input_exits_with_2(tmp_path):
    (tmp_path / "states.csv").write_text("")
    result = run("torques", "--robot", "ur5", "--input", "states.csv", "--output", "tau.csv",
                 cwd=tmp_path)
    assert_input_error(result, "empty", "header")


def test_header_only_input_exits_with_2(tmp_path):
    q, qd, qdd = random_states(6, count=1)
    path = write_states(tmp_path / "states.csv", q, qd, qdd)
    path.write_text(path.read_text().splitlines()[0] + "\n")
    result = run("torques", "--robot", "ur5", "--input", "states.csv", "--output", "tau.csv",
                 cwd=tmp_path)
    assert_input_error(result, "has no states")
    assert not (tmp_path / "tau.csv").exists()


def test_missing_input_file_exits_with_2_naming_it(tmp_path):
    result = run("torques", "--robot", "ur5", "--input", "nowhere.csv", "--output", "tau.csv",
                 cwd=tmp_path)
    assert_input_error(result, "nowhere.csv")


def test_unknown_robot_and_missing_robot_file_exit_with_2(tmp_path):
    write_states(tmp_path / "states.csv", *random_states(6, count=1))
    result = run("torques", "--robot", "ur3", "--input", "states.csv", "--output", "tau.csv",
                 cwd=tmp_path)
    assert_input_error(result, "'ur3'", "ur5", "ur10", "puma560")
    result = run("torques", "--robot", "gone.json", "--input", "states.csv",
                 "--output", "tau.csv", cwd=tmp_path)
    assert_input_error(result, "gone.json")
    result = run("torques", "--robot", "ur5", "--tip", "hand", "--input", "states.csv",
                 "--output", "tau.csv", cwd=tmp_path)
    assert_input_error(result, "'hand'")


def test_missing_arguments_exit_with_2(tmp_path):
    assert_input_error(run("torques", "--robot", "ur5", cwd=tmp_path), "--input")


def test_info_prints_the_dh_table_and_parameters(tmp_path):
    result = run("info", "--robot", "ur5", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "DH table" in out and "universal-robots.com" in out
    for text in ("shoulder_link", "wrist_3_link", "0.089159", "-0.39225", "1.5708", "8.393",
                 "0.11336", "I_zz", "F_c"):
        assert text in out, text
