"""The certificate (linkdyn.model.certify) on robots with prismatic joints, against the golden model.

Soundness: on TIAGo's torso and arm (a prismatic lift under seven revolute joints) and Baxter's
right arm to its finger (seven revolute joints, a prismatic finger), both example-robot-data
URDFs, and on random mixed chains (fixed seeds), the golden model (rnea_fixed, bit-exact with
the gateware) never errs from the float model (rnea) by more than the certified bound, per
joint, on random and corner states of the box and the states of a directed worst-case search;
narrow boxes and an external wrench too (in the narrow boxes the bound comes within a few
times the sampled maximum); every register the golden model computes lies within the certified
range widened by its certified error. The
saturation check names the offset register ``r_q_z`` of a prismatic joint whose box leaves the
offset word, at a state where the golden model does saturate. The revolute certificates of
UR5, UR10 and Panda keep the figures of docs/certificate.md. LINKDYN_LONG=1 samples 10^5
random states per robot (10^4 on the random chains) and searches 40 rounds instead of 4.
"""

import warnings

import numpy as np
import pytest

from linkdyn.bench.certify_prismatic import mixed_chain    # the docs' chains
from linkdyn.model import load_robot
from linkdyn.model.certify import box_states, certify, sampled_error
from linkdyn.model.certify_prismatic import (joint_axis, largest_affine_norm,
                                             shifted_inertia, shifted_inertia_bounds)
from linkdyn.model.falsify import worst_case_search
from linkdyn.model.golden import microprogram, rnea_fixed
from linkdyn.model.reference import load_reference_robot

import support

STATES = 100_000 if support.LONG else 2_000
RANDOM_STATES = 10_000 if support.LONG else 1_000
ROUNDS = 40 if support.LONG else 4
RMAP = microprogram().registers

#: The real robots: example-robot-data URDFs cut to a chain with a prismatic joint.
REAL = {"tiago": "arm_7_link", "baxter": "r_gripper_l_finger"}
#: Random mixed chains (seeds) and their box: |qd| <= 1, |qdd| <= 5 (the default box of these
#: random arms, up to 7 kg and 0.8 m per link, is not proven saturation free even when every
#: joint is revolute).
SEEDS = (1, 2, 3, 4, 6, 7)
RANDOM_BOX = {"qd_max": 1.0, "qdd_max": 5.0}


def _real(name):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # Baxter's <mimic> fingers
            return load_robot(name, tip=REAL[name])
    except FileNotFoundError as error:
        pytest.skip(str(error))


def _sampled_and_searched(robot, certificate, states):
    sampled, overflow = sampled_error(robot, certificate, states)
    q, qd, qdd, _ = box_states(certificate, states)
    search = worst_case_search(robot, certificate.box, (q, qd, qdd), rounds=ROUNDS)
    return np.maximum(sampled, search.worst), overflow | search.overflow


@pytest.mark.parametrize("name", sorted(REAL))
def test_bound_holds_on_real_robots_with_a_prismatic_joint(name):
    robot = _real(name)
    kinds = [link.joint_type for link in robot.links]
    assert "prismatic" in kinds and "revolute" in kinds
    certificate = certify(robot)
    assert certificate.saturation_free, certificate.saturations[:3]
    assert certificate.box["joint_types"] == kinds
    sampled, overflow = _sampled_and_searched(robot, certificate, STATES)
    bound = np.array(certificate.bound_nm)
    print(f"\n{name}: joints {kinds}\n bound {bound}\n sampled {sampled}\n ratio "
          f"{' '.join(f'{b / s:.1f}' for b, s in zip(bound, sampled))}")
    assert not overflow.any()
    assert np.all(sampled > 0)
    assert np.all(sampled <= bound), (sampled, bound)


@pytest.mark.parametrize("seed", SEEDS)
def test_bound_holds_on_random_mixed_chains(seed):
    robot = mixed_chain(seed)
    certificate = certify(robot, **RANDOM_BOX)
    assert certificate.saturation_free, certificate.saturations[:3]
    sampled, overflow = sampled_error(robot, certificate, RANDOM_STATES)
    assert not overflow.any()
    assert np.all(sampled <= np.array(certificate.bound_nm)), (sampled, certificate.bound_nm)


@pytest.mark.parametrize("name, seed", [("tiago", 11), ("baxter", 12), ("mixed", 13)])
def test_bound_holds_in_narrow_boxes(name, seed):
    """Narrow boxes around random states, where the affine forms keep the state's directions and
    the bound comes within a few times the sampled and searched maximum."""
    robot = mixed_chain(2) if name == "mixed" else _real(name)
    rng = np.random.default_rng(seed)
    low, high = robot.q_limits()
    for width, qd_max, qdd_max in ((1e-3, 0.01, 0.1), (0.02, 0.1, 1.0)):
        q0 = low + rng.random(robot.n) * (high - low)
        certificate = certify(robot, q_box=(np.maximum(low, q0 - width),
                                            np.minimum(high, q0 + width)),
                              qd_max=qd_max, qdd_max=qdd_max)
        assert certificate.saturation_free
        sampled, overflow = _sampled_and_searched(robot, certificate, 1_000)
        assert not overflow.any()
        bound = np.array(certificate.bound_nm)
        assert np.all(sampled <= bound), (width, sampled, bound)
        assert np.max(bound / sampled) < 20  # not vacuous here


@pytest.mark.parametrize("name", ["tiago", "baxter", "mixed"])
def test_every_golden_register_lies_in_its_certified_range(name):
    """The certified range of every register widened by its certified error holds the words the
    golden model computes (decoded), on every node: a prismatic root (TIAGo), tip (Baxter) and
    two inner ones (a random mixed chain)."""
    robot = mixed_chain(2) if name == "mixed" else _real(name)
    certificate = certify(robot, **(RANDOM_BOX if name == "mixed" else {}))
    assert certificate.saturation_free
    q, qd, qdd, _ = box_states(certificate, 300)
    result = rnea_fixed(robot, q, qd, qdd, keep_registers=True)
    checked = 0
    for record in certificate.registers:
        words = result.registers[record["node"] - 1].get(record["register"])
        if words is None:
            continue
        value = np.asarray(RMAP.decode(record["register"], words), dtype=float)
        low, high = record["range"]
        slack = record["error"] + 1e-9 * (1 + abs(low) + abs(high))
        assert np.all(value >= low - slack) and np.all(value <= high + slack), record
        checked += 1
    assert checked > 100
    if name != "tiago":
        return
    # The prismatic root node: no joint rate (omega stays 0), r_z at q moves with the travel.
    ranges = {(r["node"], r["register"]): r["range"] for r in certificate.registers}
    assert ranges[(1, "omega_z")] == [0.0, 0.0]
    torso = robot.links[0]
    lo, hi = ranges[(1, "r_q_z")]
    assert lo == pytest.approx(torso.d + torso.limits.q_min, abs=1e-12)
    assert hi == pytest.approx(torso.d + torso.limits.q_max, abs=1e-12)


def test_a_travel_beyond_the_offset_word_names_the_register_and_a_saturating_state():
    robot = _real("tiago")
    low, high = robot.q_limits()
    low[0], high[0] = -3.0, 3.0  # m: the lift's offset r_z = q leaves Q1.30 (|r| < 2 m)
    certificate = certify(robot, q_box=(low, high))
    assert not certificate.saturation_free
    first = certificate.saturations[0]
    assert (first["node"], first["register"]) == (1, "r_q_z")
    assert first["limit"][1] == pytest.approx(2.0) and first["range"][1] > 2.9
    state = first["state"]
    assert abs(state["q"][0]) == 3.0
    fixed = rnea_fixed(robot, np.array([state["q"]]), np.array([state["qd"]]),
                       np.array([state["qdd"]]))
    assert fixed.overflow[0, 0]  # the golden model saturates node 1 there
    # Within the limits the same chain is proven saturation free (previous tests) ...
    # ... and beyond the q word itself the box is refused, naming the node.
    high[0] = 40.0
    with pytest.raises(ValueError, match="the box exceeds the word of node 1 q"):
        certify(robot, q_box=(low, high))


def test_certify_refuses_a_tree_or_a_mount_naming_the_robot():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            tree = load_robot("tiago")
    except FileNotFoundError as error:
        pytest.skip(str(error))
    with pytest.raises(NotImplementedError, match="robot 'tiago' is a tree or has a mount"):
        certify(tree)


def test_travel_bounds_hold_on_a_dense_grid():
    """The bounds over the travel (certify_prismatic) against eigenvalues on 2,001 positions."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        a = rng.normal(size=(3, 3))
        inertia = a @ a.T
        mass, mc = float(rng.uniform(0.5, 8)), rng.normal(size=3)
        r0, alpha = rng.normal(size=3), float(rng.uniform(-np.pi, np.pi))
        axis = joint_axis(alpha)
        q_min, q_max = sorted(rng.uniform(-1, 1, size=2))
        grid = np.linspace(q_min, q_max, 2001)
        eig = np.linalg.eigvalsh(shifted_inertia(inertia, mass, mc, r0 + grid[:, None] * axis))
        largest, spread = shifted_inertia_bounds(inertia, mass, mc, r0, axis, q_min, q_max)
        assert np.max(np.abs(eig)) <= largest <= np.max(np.abs(eig)) * (1 + 1e-3) + 1e-12
        half = 0.5 * (eig[:, -1] - eig[:, 0])
        assert np.max(half) <= spread <= np.max(half) * (1 + 1e-3) + 1e-3
        norms = np.linalg.norm(mass * (r0 + grid[:, None] * axis) + mc, axis=1)
        assert np.max(norms) <= largest_affine_norm(mass * r0 + mc, mass * axis, q_min, q_max)


@pytest.mark.parametrize("name, largest", [("ur5", 1.44e-4), ("ur10", 2.45e-4),
                                           ("panda", 2.75e-4)])
def test_revolute_certificates_keep_the_published_figures(name, largest):
    """docs/certificate.md: the largest bound of UR5, UR10 and Panda (to its three digits)."""
    try:
        robot = load_reference_robot(name)
    except FileNotFoundError as error:
        pytest.skip(str(error))
    assert float(f"{certify(robot).max_bound_nm:.3g}") == largest


def test_bound_holds_with_an_external_wrench_on_a_prismatic_chain():
    """f_ext, mu_ext on every link: the prismatic node's r x f_ext has r at q."""
    robot = _real("tiago")
    certificate = certify(robot, wrench_max=(20.0, 2.0))
    assert certificate.saturation_free
    sampled, overflow = sampled_error(robot, certificate, RANDOM_STATES)
    assert not overflow.any()
    bound = np.array(certificate.bound_nm)
    assert np.all(sampled <= bound), (sampled, bound)
    assert np.all(bound > np.array(certify(robot).bound_nm))  # the wrench's words cost
