"""``linkdyn certify``: the certificate files (JSON, Markdown report, PNG) and the errors a user
gets for bad input, checked against linkdyn.model.certify.certify and the golden model."""

import json

import numpy as np
import pytest

from linkdyn.host.cli import main
from linkdyn.model import load_robot
from linkdyn.model.certify import certify, sampled_error
from linkdyn.model.microprogram import NODE_FORMATS


def test_certify_writes_the_certificate_the_report_and_the_plot(tmp_path, capsys):
    out = tmp_path / "cert"
    status = main(["certify", "--robot", "ur5", "--qdd-max", "5", "--wrench-max", "20,2",
                   "--states", "300", "--out", str(out)])
    assert status == 0
    robot = load_robot("ur5")
    expected = certify(robot, qdd_max=5.0, wrench_max=(20.0, 2.0))
    data = json.loads((out / "certificate.json").read_text(encoding="utf-8"))
    assert data["bound_nm"] == list(expected.bound_nm)
    assert data["saturation_free"] is True
    assert data["box"]["qdd_max"] == [5.0] * robot.n
    assert data["box"]["wrench_max"] == [20.0, 2.0]
    assert data["box"]["qd_max"] == [link.limits.qd_max for link in robot.links]
    assert data["formats"]["word"] == NODE_FORMATS.name and data["formats"]["q"] == NODE_FORMATS.q
    report = (out / "certificate.md").read_text(encoding="utf-8")
    sampled, _ = sampled_error(robot, expected, 300)
    assert "| certified bound (N·m) | " + " | ".join(f"{v:.3e}" for v in expected.bound_nm) \
        in report
    assert "| sampled max (N·m) | " + " | ".join(f"{v:.3e}" for v in sampled) in report
    assert np.all(sampled <= np.array(expected.bound_nm))
    assert (out / "certificate.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert "certified bound per joint" in printed and "saturation free: yes" in printed


def test_certify_names_a_possible_saturation_with_status_1(tmp_path, capsys):
    status = main(["certify", "--robot", "ur5", "--qd-max", "30", "--states", "0",
                   "--out", str(tmp_path / "fast")])
    assert status == 1
    assert "saturation free: NO (first: node" in capsys.readouterr().out
    data = json.loads((tmp_path / "fast" / "certificate.json").read_text(encoding="utf-8"))
    assert data["saturation_free"] is False and data["saturations"]


@pytest.mark.parametrize("argv, message", [
    (["--robot", "no_such_robot"], "unknown robot 'no_such_robot'"),
    (["--robot", "ur5", "--qdd-max", "-1"], "qdd_max must be >= 0"),
    (["--robot", "ur5", "--qd-max", "1,2"], "qd_max must be a number or have shape (6,)"),
    (["--robot", "ur5", "--wrench-max", "10,-1"], "wrench_max must be finite and >= 0"),
    (["--robot", "ur5", "--states", "-3"], "states must be an integer >= 0"),
])
def test_bad_input_gets_a_clear_error_and_status_2(tmp_path, capsys, argv, message):
    out = tmp_path / "x"
    assert main(["certify", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("linkdyn: error: ") and message in err
    assert not out.exists()  # nothing written


@pytest.mark.parametrize("value", ["5", "a,b", "1,2,3"])
def test_malformed_wrench_bound_is_refused_by_the_parser(tmp_path, capsys, value):
    with pytest.raises(SystemExit) as exit_info:
        main(["certify", "--robot", "ur5", "--wrench-max", value, "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "expected F,M (two numbers)" in capsys.readouterr().err


def test_an_output_path_that_is_a_file_is_refused(tmp_path, capsys):
    path = tmp_path / "file"
    path.write_text("keep", encoding="utf-8")
    assert main(["certify", "--robot", "ur5", "--states", "0", "--out", str(path)]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert path.read_text(encoding="utf-8") == "keep"
