"""The experiment command's checks before a run: output folder, run length, contact amplitude.

Every bad input is refused before any experiment runs (the experiment functions are replaced
by one that fails the test if called), with one ``linkdyn: error: ...`` line naming the path or
the minimum, exit status 2. References: the output folder's state as the file system reports
it; the minimum run lengths against the design's pulse response computed independently (the
transfer function ``1 / (s^2 + K_d s + K_p)`` by ``scipy.signal.lsim``); the wrench register's
range from its Q format.
"""

import runpy
import sys

import numpy as np
import pytest
import scipy.signal

from linkdyn.host.cli import main
from linkdyn.host.experiments import report
from linkdyn.host.experiments.report import OutputError, prepare_output, run_experiment
from linkdyn.host.experiments.runs import PAYLOAD_GAINS, POINT_GAINS, check_contact_amplitude, \
    contact_wrench, minimum_seconds, reference_pose
from linkdyn.model import FixedPointRangeError
from linkdyn.model.microprogram import microprogram


@pytest.fixture
def no_run(monkeypatch):
    """Replace every experiment function of the report module by one that must not be called."""
    def boom(*args, **kwargs):
        raise AssertionError("the experiment ran although its input was bad")
    for name in ("point_experiment", "payload_experiment", "contact_experiment",
                 "track_experiment", "identify_experiment"):
        monkeypatch.setattr(report, name, boom)


def _refused(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("linkdyn: error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_out_naming_a_file_or_below_a_file_is_refused_before_the_run(no_run, tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    err = _refused(["experiment", "point", "--out", str(afile)], capsys)
    assert f"{afile} exists and is not a directory" in err
    err = _refused(["experiment", "point", "--out", str(afile / "sub")], capsys)
    assert f"{afile / 'sub'}" in err and "Not a directory" in err
    assert afile.read_text() == "keep me"


def test_unwritable_out_is_refused_before_the_run(no_run, tmp_path, capsys, monkeypatch):
    out = tmp_path / "ro"
    out.mkdir()
    real = type(out).write_text

    def write_text(self, *args, **kwargs):      # the file system's answer in a read-only folder
        if self.parent == out:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)
    monkeypatch.setattr(type(out), "write_text", write_text)
    err = _refused(["experiment", "payload", "--out", str(out)], capsys)
    assert "cannot write into the output directory" in err and str(out) in err
    assert "Permission denied" in err


def test_corrupt_summary_is_named_before_the_run(no_run, tmp_path, capsys):
    (tmp_path / "summary.json").write_text("{bad")
    err = _refused(["experiment", "contact", "--out", str(tmp_path)], capsys)
    assert f"{tmp_path / 'summary.json'} is not a summary" in err
    (tmp_path / "summary.json").write_text("[1, 2]")
    with pytest.raises(OutputError, match="JSON object of experiments expected, found list"):
        prepare_output(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]   # nothing written


def test_a_write_failing_after_the_run_is_one_line_naming_the_file(tmp_path, capsys,
                                                                   monkeypatch):
    monkeypatch.setattr(report, "point_experiment",
                        lambda *a, **k: {"runs": {"point_high": None}})

    def write_csv(log, path):
        raise OSError(28, "No space left on device", str(path))
    monkeypatch.setattr(report, "write_csv", write_csv)
    err = _refused(["experiment", "point", "--out", str(tmp_path)], capsys)
    assert f"cannot write {tmp_path / 'point_high.csv'}: No space left on device" in err


def _settling(gains, duration, band=0.05):
    """The 5 % settling after a unit pulse of ``duration`` ends, by scipy.signal.lsim."""
    t = np.arange(0.0, duration + 2.5, 2e-4)
    u = (t < duration).astype(float)
    _, y, _ = scipy.signal.lsim(([1.0], [1.0, gains.kd, gains.kp]), u, t)
    after = t >= duration
    outside = np.nonzero(np.abs(y[after]) > band * np.abs(y[~after]).max())[0]
    return t[after][outside[-1] + 1] - duration


def test_minimum_run_lengths_are_the_pulse_and_the_designed_settling():
    point = max(_settling(g, 0.2) for g in POINT_GAINS.values())
    assert minimum_seconds("point") == pytest.approx(0.05 + 0.2 + point, abs=0.0101)
    assert minimum_seconds("point") >= 0.05 + 0.2 + point - 1e-3          # rounded up
    payload = _settling(PAYLOAD_GAINS, 0.2)
    assert minimum_seconds("payload") == pytest.approx(0.1 + 0.2 + payload, abs=0.0101)
    assert minimum_seconds("contact") == 2.0                    # half the 4 s period: the peak
    assert minimum_seconds("contact", period=1.0) == 0.5
    assert minimum_seconds("track") is None                     # checked by track itself


@pytest.mark.parametrize("name, seconds, minimum", [
    ("point", "0.3", "0.93"), ("point", "0.1", "0.93"), ("payload", "0.05", "1.78"),
    ("contact", "0.01", "2"),
])
def test_too_short_runs_are_refused_before_the_run(name, seconds, minimum, no_run, tmp_path,
                                                   capsys):
    out = tmp_path / "X"
    err = _refused(["experiment", name, "--out", str(out), "--seconds", seconds], capsys)
    assert f"--seconds must be >= {minimum} for {name}" in err
    with pytest.raises(ValueError, match=f"seconds must be >= {minimum} for {name}"):
        run_experiment(name, out, seconds=float(seconds))
    assert not out.exists()


def test_python_dash_m_linkdyn_runs_the_command_line(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["linkdyn", "experiment", "bogus", "--out", "X"])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("linkdyn", run_name="__main__", alter_sys=True)
    assert exit_.value.code == 2
    assert "linkdyn: error: unknown experiment 'bogus'" in capsys.readouterr().err


def test_contact_amplitude_option_reaches_the_experiment(tmp_path, capsys, monkeypatch):
    seen = {}

    def contact(robot, seconds, **kwargs):
        seen.update(kwargs, seconds=seconds)
        raise ValueError("stop here")
    monkeypatch.setattr(report, "contact_experiment", contact)
    _refused(["experiment", "contact", "--out", str(tmp_path / "X"), "--amplitude", "1114.6"],
             capsys)
    assert seen == {"amplitude": 1114.6, "controller": "golden", "seconds": 4.0}
    assert not (tmp_path / "X").exists()                    # the empty folder is removed
    err = _refused(["experiment", "point", "--out", "X", "--amplitude", "3"], capsys)
    assert "--amplitude is an option of contact" in err
    err = _refused(["experiment", "contact", "--out", "X", "--amplitude", "nan"], capsys)
    assert "--amplitude must be a finite force > 0 N" in err


def test_contact_amplitude_must_fit_the_wrench_registers(tmp_path, capsys):
    from linkdyn.sim.plant import Plant
    pytest.importorskip("mujoco")
    plant = Plant.from_reference("ur5")
    q0 = reference_pose(plant)
    point_n = plant.robot.tool[:3, 3]
    rmap = microprogram().registers
    names = [reg.name for reg in rmap.of_kind("input")[3:]]
    limits = np.array([rmap.qformat(name).max_value for name in names])
    x = np.array([1.0, 0.0, 0.0])
    unit = np.abs(contact_wrench(plant.robot, q0, x, point_n)[-1])     # per N of command
    largest = float(np.min(limits / np.where(unit > 0, unit, np.inf)))
    check_contact_amplitude(plant.robot, q0, 0.99 * largest * x, point_n)     # fits
    check_contact_amplitude(plant.robot, q0, 1114.6 * x, point_n)       # the saturation case
    with pytest.raises(FixedPointRangeError, match=r"f_ext_\w on node 6 .* does not fit Q"):
        check_contact_amplitude(plant.robot, q0, 1.01 * largest * x, point_n)
    err = _refused(["experiment", "contact", "--out", str(tmp_path / "X"), "--seconds", "2",
                    "--amplitude", str(1.01 * largest)], capsys)
    assert "does not fit Q" in err and "f_ext_" in err
    assert not (tmp_path / "X").exists()
