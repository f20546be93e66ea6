"""The mechanics bounds of the certificate (linkdyn.model.certify, ``mechanics=True``).

The identities behind them (inertial force and moment about the previous origin, cylinder norms)
are checked on random vectors against the program-order formulas; the value ranges the
certificate proves are checked against the golden model's registers (rnea_fixed, bit-exact with
the gateware) on random and corner states of the box; and the bound, tighter than without them,
still covers the sampled error, also in narrow boxes with motion, where it is close.
"""

import os

import numpy as np
import pytest

from linkdyn.model.certify import (_INERTIAL, _Analysis, _formats, box_states, certify,
                                   default_box)
from linkdyn.model.fixedpoint import Q15_16
from linkdyn.model.certify import sampled_error
from linkdyn.model.golden import encode_robot, rnea_fixed
from linkdyn.model.reference import load_reference_robot
from linkdyn.model.rnea import link_offset_vector

LONG = bool(os.environ.get("LINKDYN_LONG"))
ROBOTS = ("ur5", "ur10", "panda")


@pytest.fixture(scope="module", params=ROBOTS)
def robot(request):
    try:
        return load_reference_robot(request.param)
    except FileNotFoundError as error:
        pytest.skip(str(error))


def test_inertial_wrench_about_the_previous_origin_is_bounded_by_the_link_constants(robot):
    # The program computes f = m p + wd x mc + w x (w x mc), mu = r x f + mc x p + I wd +
    # w x I w with p = R^T p_in + wd x r + w x (w x r); the bounds use |c'|, ||I'|| and the
    # eigenvalue spread of I' about origin i-1 (link_mechanics) of the parameters the node's
    # words encode, which are the golden model's words.
    analysis = _Analysis(robot, Q15_16, _formats(Q15_16, None), "affine", default_box(robot),
                         None)
    words = encode_robot(robot)
    rng = np.random.default_rng(11)
    for node, link in enumerate(robot.links):
        mech = analysis.link_mechanics(node)
        encoded, delta = analysis.encoded_parameters(node)
        assert np.array_equal(encoded * 2.0 ** 16, [words[node][name] for name in _INERTIAL])
        assert np.allclose(encoded - delta, link.parameters(), rtol=0, atol=1e-15)
        assert np.all(np.abs(delta) <= 2.0 ** -17)
        r = link_offset_vector(link)
        m, mc = encoded[0], encoded[1:4]
        xx, xy, xz, yy, yz, zz = encoded[4:10]
        inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        for _ in range(200):
            w, wd, a = rng.normal(size=(3, 3)) * rng.uniform(0.1, 20, size=(3, 1))
            p = a + np.cross(wd, r) + np.cross(w, np.cross(w, r))
            f = m * p + np.cross(wd, mc) + np.cross(w, np.cross(w, mc))
            mu = np.cross(r, f) + np.cross(mc, p) + inertia @ wd + np.cross(w, inertia @ w)
            nw, nwd, na = (np.linalg.norm(v) for v in (w, wd, a))
            assert np.linalg.norm(f) <= (mech["m"] * na + mech["c1"] * (nwd + nw * nw)) \
                * (1 + 1e-12) + 1e-12
            assert np.linalg.norm(mu) <= (mech["I1"] * nwd + mech["I1_spread"] * nw * nw
                                          + mech["c1"] * na) * (1 + 1e-12) + 1e-12
        # The spread bound is attained in direction: some omega reaches half of it.
        assert mech["I1_spread"] <= mech["I1"] + 1e-15


def test_certified_ranges_hold_on_the_golden_model_registers(robot):
    certificate = certify(robot)
    q, qd, qdd, _ = box_states(certificate, 4000 if not LONG else 40_000, seed=5)
    fixed = rnea_fixed(robot, q, qd, qdd, keep_registers=True)
    assert not fixed.overflow.any()
    checked = 0
    for record in certificate.registers:
        words = fixed.registers[record["node"] - 1].get(record["register"])
        if words is None or record["limit"][1] < 1.0:
            continue
        # Every value register of the word format: fixed value within range +- error bound.
        fraction = round(np.log2((2.0 ** 31 - 1) / record["limit"][1]))
        values = np.asarray(words, dtype=float) * 2.0 ** -fraction
        low, high = record["range"]
        assert values.min() >= low - record["error"] - 1e-9, record
        assert values.max() <= high + record["error"] + 1e-9, record
        checked += 1
    assert checked > 60 * robot.n


def test_mechanics_tighten_the_bound_on_every_joint(robot):
    before = certify(robot, mechanics=False)
    after = certify(robot)
    assert after.saturation_free and before.saturation_free
    assert all(a < b for a, b in zip(after.bound_nm, before.bound_nm))
    assert after.max_bound_nm < before.max_bound_nm / 1.2


def test_bound_holds_in_narrow_boxes_with_motion(robot):
    # q within 0.01 rad, |qd| <= 0.5, |qdd| <= 2: the mechanics error bounds are active and
    # the bound is close to the sampled error (3x to 55x per joint, measured: the roundings
    # add in magnitude in the bound), so a wrong term would show.
    rng = np.random.default_rng(13)
    low, high = robot.q_limits()
    for _ in range(2 if not LONG else 8):
        centre = low + 0.005 + rng.random(robot.n) * (high - low - 0.01)
        certificate = certify(robot, q_box=(centre - 0.005, centre + 0.005), qd_max=0.5,
                              qdd_max=2.0)
        sampled, overflow = sampled_error(robot, certificate, 2000 if not LONG else 20_000)
        bound = np.array(certificate.bound_nm)
        assert not overflow.any()
        assert np.all(sampled <= bound), (centre, sampled, bound)
        assert np.all(bound < 100 * sampled), (centre, bound / sampled)
