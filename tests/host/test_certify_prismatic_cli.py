"""``linkdyn certify`` on a robot with a prismatic joint (TIAGo's lift and arm, example-robot-data
URDF cut with --tip): the files against linkdyn.model.certify.certify and the golden model, and
the errors for a tree without --tip and for a travel beyond the q word."""

import json
import warnings

import numpy as np
import pytest

from linkdyn.host.cli import main
from linkdyn.model import load_robot
from linkdyn.model.certify import certify, sampled_error


@pytest.fixture(scope="module")
def tiago():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return load_robot("tiago", tip="arm_7_link")
    except FileNotFoundError as error:
        pytest.skip(str(error))


def test_certify_a_chain_with_a_prismatic_lift(tmp_path, capsys, tiago):
    out = tmp_path / "cert"
    assert main(["certify", "--robot", "tiago", "--tip", "arm_7_link", "--states", "300",
                 "--out", str(out)]) == 0
    expected = certify(tiago)
    data = json.loads((out / "certificate.json").read_text(encoding="utf-8"))
    assert data["bound_nm"] == list(expected.bound_nm)
    assert data["saturation_free"] is True
    assert data["box"]["joint_types"] == ["prismatic"] + ["revolute"] * 7
    assert data["box"]["q_min"][0] == 0.0 and data["box"]["q_max"][0] == 0.35  # the URDF's m
    sampled, overflow = sampled_error(tiago, expected, 300)
    assert not overflow.any() and np.all(sampled <= np.array(expected.bound_nm))
    report = (out / "certificate.md").read_text(encoding="utf-8")
    assert "bound in N for the prismatic joint 1)" in report
    assert "| sampled max (N·m) | " + " | ".join(f"{v:.3e}" for v in sampled) in report
    assert "saturation free: yes" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--robot", "tiago"], "robot 'tiago' is a tree or has a mount: choose a chain with tip"),
    (["--robot", "tiago", "--tip", "arm_7_link", "--qd-max", "1,2"],
     "qd_max must be a number or have shape (8,)"),
    (["--robot", "tiago", "--tip", "no_link"], "tip link 'no_link' is not a link"),
])
def test_bad_input_gets_a_clear_error_and_status_2(tmp_path, capsys, tiago, argv, message):
    assert main(["certify", *argv, "--states", "0", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("linkdyn: error: ") and message in err
