"""Identification of a real Franka Emika Panda from measured joint torques (panda-gaz2019).

The run is split in time: the first 70 % identify, the last 30 % validate. The identified,
physically consistent model must predict the validation torques better than the URDF's
nominal parameters on every joint.
"""

import json

import numpy as np
import pytest

from linkdyn.model import load_robot, rnea
from linkdyn.host.identification.data import load_measurements
from linkdyn.host.identification.estimation import pseudo_inertia_eigenvalues
from linkdyn.host.identification.pipeline import IdentificationOptions, identify, write_outputs

from support.identification import panda_dataset, panda_robot


@pytest.fixture(scope="module")
def identified(tmp_path_factory):
    robot = panda_robot()
    measurements = load_measurements(panda_dataset())
    result = identify(robot, measurements, IdentificationOptions(train_fraction=0.7))
    folder = tmp_path_factory.mktemp("panda")
    return robot, result, write_outputs(result, folder)


def test_identified_panda_beats_the_urdf_on_every_joint(identified):
    _, result, _ = identified
    identified_rms = result.errors["identified"].rms
    nominal_rms = result.errors["nominal"].rms
    assert np.all(identified_rms < nominal_rms), (identified_rms, nominal_rms)
    # Not by a hair: at least three times better on every joint.
    assert np.all(identified_rms < nominal_rms / 3)
    # Also against the torques as measured (not low-passed; their noise, ~0.1-0.3 N·m, is in
    # both errors).
    assert np.all(result.errors_unfiltered["identified"].rms
                  < result.errors_unfiltered["nominal"].rms)
    # The validation part is the last 30 % of the run, never seen by the fit.
    assert result.validation.t[0] > result.train.t[-1]
    assert result.validation.count == pytest.approx(0.3 * (result.train.count
                                                           + result.validation.count), rel=0.01)


def test_identified_panda_is_physically_consistent(identified):
    robot, result, _ = identified
    assert result.physically_consistent
    assert result.base.count == 64  # 43 inertial + 21 friction
    eigenvalues = pseudo_inertia_eigenvalues(result.sdp.parameters, robot.n)
    assert np.all(eigenvalues > 0)
    for link in result.identified.links:
        assert link.mass > 0
        assert link.friction.coulomb >= 0 and link.friction.viscous >= 0


def test_identified_panda_robot_file_loads_and_predicts_the_same(identified):
    robot, result, paths = identified
    loaded = load_robot(paths["robot"])
    part = result.validation
    np.testing.assert_allclose(rnea(loaded, part.q, part.qd, part.qdd),
                               result.predictions["identified"], rtol=0, atol=1e-9)
    assert [link.name for link in loaded.links] == [link.name for link in robot.links]
    np.testing.assert_allclose(loaded.dh, robot.dh)


def test_panda_summary_and_plots(identified):
    robot, result, paths = identified
    summary = json.loads(paths["summary"].read_text())
    assert summary["joints"] == [link.name for link in robot.links]
    for key in ("validation_rms_nm", "nominal_rms_nm"):
        assert len(summary[key]) == robot.n
    assert summary["base_parameter_count"] == 64
    assert summary["physically_consistent"] is True
    assert summary["samples"]["acceleration_source"] == "trajectory"
    assert paths["validation_plot"].stat().st_size > 10_000


def test_panda_identification_takes_seconds(identified):
    _, result, _ = identified
    # About 14,700 training samples (regressor 14,700 x 7 x 91), least squares and the SDP.
    assert result.train.count > 14_000
    assert result.seconds < 30.0, result.timings
