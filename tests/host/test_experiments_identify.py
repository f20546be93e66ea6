"""The identify experiment (paper Sect. 4.1) on the perturbed UR5 MuJoCo plant, golden mode.

References: MuJoCo (the perturbed plant's masses, its forward dynamics with the added friction,
its inverse dynamics) and the torques that drove the plant in the logged runs. Short version
(4.5 s runs, a 1.5 s excitation period, 15 optimiser iterations); the full one (the paper's 10 s
period) behind LINKDYN_LONG=1.
"""

import json
import os

import numpy as np
import pytest

from linkdyn.host.experiments.identify import (PERTURBATION, identify_experiment,
                                               perturb_plant, plant_torque)
from linkdyn.host.experiments.report import write_experiment
from linkdyn.model import load_robot
from linkdyn.sim.plant import Plant

pytest.importorskip("mujoco")

LONG = bool(os.environ.get("LINKDYN_LONG"))


@pytest.fixture(scope="module")
def short():
    return identify_experiment("ur5", 4.5)


def test_perturbation_is_seeded_and_within_its_bounds():
    nominal = Plant.from_reference("ur5")
    plant, truth = perturb_plant(nominal)
    again, truth_again = perturb_plant(nominal)
    assert truth == truth_again                                    # seeded
    other, truth_other = perturb_plant(nominal, seed=PERTURBATION["seed"] + 1)
    assert truth_other != truth
    changed = 0
    for link in nominal.robot.links:
        m0, c0, i0 = nominal.link_inertial(link.name)              # the URDF's, via MuJoCo
        m, c, inertia = plant.link_inertial(link.name)             # the plant's true ones
        assert abs(m / m0 - 1) <= 0.2 + 1e-12
        assert np.all(np.abs(c - c0) <= 0.2 * np.abs(c0) + 1e-12)
        np.testing.assert_allclose(inertia, i0 * m / m0, rtol=1e-9, atol=1e-12)
        changed += abs(m / m0 - 1) > 0.01
    assert changed >= 4
    for key in ("damping", "frictionloss"):
        values = np.array(truth[key])
        assert np.all(values >= 0.01 * nominal.tau_max - 1e-12)
        assert np.all(values <= 0.02 * nominal.tau_max + 1e-12)
    # The plant's dynamics differ from the nominal model's (MuJoCo against MuJoCo).
    q = np.array([0.0, -1.0, 1.2, -1.5, -1.57, 0.0])
    zero = np.zeros(6)
    gap = plant.inverse_dynamics(q, zero, zero) - nominal.inverse_dynamics(q, zero, zero)
    assert np.abs(gap).max() > 1.0                                 # N·m of gravity torque


def test_plant_torque_is_what_the_plant_needs_while_sliding():
    """MuJoCo's forward dynamics of the perturbed plant (dry friction as a constraint) under the
    plant torque of a state returns that state's acceleration, for joints that slide."""
    nominal = Plant.from_reference("ur5")
    plant, truth = perturb_plant(nominal)
    rigid, _ = perturb_plant(nominal, rigid=True)
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = rng.uniform(-2.0, 2.0, 6)
        qd = rng.choice([-1.0, 1.0], 6) * rng.uniform(0.5, 1.5, 6)
        qdd = rng.uniform(-2.0, 2.0, 6)
        tau = plant_torque(rigid, truth, q[None], qd[None], qdd[None], steepness=1e9)[0]
        np.testing.assert_allclose(plant.forward_dynamics(q, qd, tau), qdd, atol=2e-3)


def test_identified_model_beats_the_nominal_one_on_held_out_data(short):
    ident = short["identification"]
    assert ident["base_parameters"] == 54 and ident["physically_consistent"]
    identified = np.array(ident["validation_rms_identified"])
    nominal = np.array(ident["validation_rms_nominal"])
    # On the held-out 30 % of the excitation run (torques that drove the plant): at most half
    # the nominal model's error on every joint.
    assert np.all(identified <= 0.5 * nominal), identified / nominal
    figures = short["figures"]
    assert figures["identify_excitation"]["clipped_cycles"] == [0] * 6
    # High-gain tracking of the excitation with the wrong (nominal) model: millimetres.
    assert figures["identify_excitation"]["max_error"] < 0.01
    for run in ("identify_excitation", "identify_nominal", "identify_identified"):
        assert figures[run]["faults"] == [0] * 6


def test_identified_model_in_the_nodes_is_nearer_the_plant_on_the_eight(short):
    figures = short["figures"]["identify_identified"]
    # The nodes' torques for the measured motion against the plant's own dynamics (MuJoCo,
    # true parameters) on the big joints, where the 20 % perturbation is felt.
    ratio = np.array(figures["model_ratio"])
    assert np.all(ratio[:3] <= 0.5), ratio
    # Against the torques that drove the plant: better on the big joints as well.
    torque_ratio = np.array(figures["torque_ratio"])
    assert np.all(torque_ratio[:3] < 1.0), torque_ratio


def test_files_summary_robot_file_and_plots(short, tmp_path):
    entry = write_experiment("identify", short, tmp_path, "ur5")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert "Sect. 4.1" in summary["identify"]["paper"]
    for run in ("identify_excitation", "identify_nominal", "identify_identified"):
        assert (tmp_path / f"{run}.csv").exists()
    for plot in entry["plots"]:
        assert (tmp_path / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    robot = load_robot(tmp_path / "identify_robot.json")
    np.testing.assert_allclose(robot.parameters(), short["objects"]["identified"].parameters(),
                               rtol=1e-12, atol=1e-15)


def test_docs_section_says_per_joint_what_matches(short, tmp_path):
    from linkdyn.host.experiments.docs import results_section
    write_experiment("identify", short, tmp_path, "ur5")
    section = results_section(json.loads((tmp_path / "summary.json").read_text()))
    ratio = short["figures"]["identify_identified"]["torque_ratio"]
    good = [str(j + 1) for j, r in enumerate(ratio) if r <= 0.5]
    bad = [str(j + 1) for j, r in enumerate(ratio) if r > 0.5]
    matches = next(l for l in section.splitlines() if l.startswith("**Matches:**"))
    differs = next(l for l in section.splitlines() if l.startswith("**Differs:**"))
    assert ("`identify_identified`: identified error at most half the nominal on joints "
            + ", ".join(good)) in matches
    if bad:
        assert f"`identify_identified`: not on joints {', '.join(bad)}" in differs
    assert " / ".join(f"{v:.2f}" for v in ratio) in section


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="finite number >= 4.5"):
        identify_experiment("ur5", 2.0)
    with pytest.raises(ValueError, match="set up for the UR5"):
        identify_experiment("panda", 6.0)
    with pytest.raises(ValueError, match="spread must be"):
        perturb_plant(Plant.from_reference("ur5"), mass=1.5)


@pytest.mark.skipif(not LONG, reason="full run (30 s excitation, 8.5 s eights): LINKDYN_LONG=1")
def test_full_identification_on_the_plant():
    result = identify_experiment("ur5")
    ident = result["identification"]
    assert np.all(np.array(ident["validation_rms_identified"])
                  <= 0.5 * np.array(ident["validation_rms_nominal"]))
    figures = result["figures"]
    ratio = np.array(figures["identify_identified"]["model_ratio"])
    assert np.all(ratio[:4] <= 0.5), ratio
    assert figures["identify_identified"]["rms_error_eight"] \
        < 0.5 * figures["identify_nominal"]["rms_error_eight"]
