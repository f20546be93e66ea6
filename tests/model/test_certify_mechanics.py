"""The mechanics bounds of the certificate (linkdyn.model.certify, ``mechanics=True``).

The identities behind them (inertial force and moment about the previous origin, cylinder norms)
are checked on random vectors against the program-order formulas; the value ranges the
certificate proves are checked against the golden model's registers (rnea_fixed, bit-exact with
the gateware) on random and corner states of the box; and the bound, tighter than without them,
still covers the sampled error, also in narrow boxes with motion, where it is close.
"""

import os
from dataclasses import replace

import numpy as np
import pytest

from linkdyn.model.certify import (_INERTIAL, _Analysis, _formats, box_states, certify,
                                   default_box)
from linkdyn.model.fixedpoint import Q15_16
from linkdyn.model.microprogram import NODE_FORMATS, microprogram
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
    analysis = _Analysis(robot, NODE_FORMATS, _formats(NODE_FORMATS, None), "affine",
                         default_box(robot), None)
    words = encode_robot(robot)
    rmap = microprogram().registers
    bits = np.array([rmap[name].format.fraction_bits for name in _INERTIAL])
    rng = np.random.default_rng(11)
    for node, link in enumerate(robot.links):
        mech = analysis.link_mechanics(node)
        encoded, delta = analysis.encoded_parameters(node)
        assert np.array_equal(encoded * 2.0 ** bits, [words[node][name] for name in _INERTIAL])
        assert np.allclose(encoded - delta, link.parameters(), rtol=0, atol=1e-15)
        assert np.all(np.abs(delta) <= 2.0 ** -(bits + 1))
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


@pytest.mark.parametrize("alpha", [0.0, np.pi / 2, -np.pi / 2, 0.3, 2.5])
def test_cylinder_bounds_follow_the_joint_rotation(alpha):
    # w with |w_xy| <= P and |w_z| <= Z, turned by R^T = Rx(alpha)^T Rz(theta)^T: the new
    # xy-norm and z-component stay within _turn_cylinder's bounds, which are reached.
    robot = load_reference_robot("ur5")
    links = tuple(replace(link, alpha=alpha) for link in robot.links)
    analysis = _Analysis(replace(robot, links=links), Q15_16, _formats(Q15_16, None),
                         "affine", default_box(robot), None)
    rng = np.random.default_rng(17)
    for p, z in ((1.0, 0.0), (0.0, 1.0), (1.0, 2.0), (3.0, 0.5)):
        new_p, new_z = analysis._turn_cylinder(0, p, z)
        phi, rho = rng.uniform(0, 2 * np.pi, 20_000), p * np.sqrt(rng.random(20_000))
        rho[:2000] = p  # on the rim
        w = np.stack([rho * np.cos(phi), rho * np.sin(phi),
                      z * np.where(rng.random(20_000) < 0.5, -1.0, 1.0)], axis=-1)
        theta = rng.uniform(0, 2 * np.pi, 20_000)
        ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
        # R = Rz(theta) Rx(alpha); rows of R^T are the columns of R.
        rt = np.stack([np.stack([ct, st, 0 * ct], -1),
                       np.stack([-st * ca, ct * ca, sa + 0 * ct], -1),
                       np.stack([st * sa, -ct * sa, ca + 0 * ct], -1)], axis=-2)
        out = np.einsum("nij,nj->ni", rt, w)
        xy, zz = np.hypot(out[:, 0], out[:, 1]), np.abs(out[:, 2])
        assert xy.max() <= new_p + 1e-12 and zz.max() <= new_z + 1e-12
        assert xy.max() >= 0.97 * new_p and zz.max() >= 0.97 * new_z
