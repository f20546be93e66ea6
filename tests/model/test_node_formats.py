"""Formats per quantity (issue 17): one definition, its encoding, and the certificate's goals.

References: exact rational arithmetic (``fractions.Fraction``) for the encodings and the
rescaling, the float model (:func:`linkdyn.model.rnea`) for the sampled errors, the certificate
(:func:`linkdyn.model.certify.certify`) for the bounds.
"""

import os
import warnings
from fractions import Fraction

import numpy as np
import pytest

from linkdyn.model.certify import certify, sampled_error
from linkdyn.model.fixedpoint import Q15_16, FixedPointRangeError
from linkdyn.model.golden import encode_robot
from linkdyn.model.library import load_robot
from linkdyn.model.microprogram import (NODE_FORMATS, QUANTITIES, NodeFormats, microprogram,
                                        quantity_of, rescale_word)
from linkdyn.model.reference import load_reference_robot

LONG = bool(os.environ.get("LINKDYN_LONG"))
STATES = 100_000 if LONG else 2_000
RMAP = microprogram().registers


def test_every_register_has_its_quantitys_format():
    for reg in RMAP:
        quantity = quantity_of(reg.name)
        if quantity is None:
            assert reg.format.name in ("count", "phase", "rate", "entry", "fraction", "atan",
                                       "cordic"), reg.name
        else:
            assert reg.format.name == quantity
            assert reg.format.fraction_bits == getattr(NODE_FORMATS, quantity), reg.name
    assert RMAP["q"].format.fraction_bits == 26 and RMAP["tau"].format.fraction_bits == 19
    assert RMAP["k_qd"].format.fraction_bits == 16          # the CORDIC's Q15.16 input
    assert set(NODE_FORMATS.bits) == set(QUANTITIES)


def test_uniform_formats_are_the_q15_16_node():
    old = microprogram(Q15_16).registers
    for reg in old:
        if quantity_of(reg.name) not in (None, "trig", "r"):
            assert reg.format.fraction_bits == 16, reg.name
    assert NodeFormats.uniform(Q15_16).name == "Q15.16"
    with pytest.raises(ValueError, match="friction and torque"):
        NODE_FORMATS.with_bits(friction=20)
    with pytest.raises(ValueError, match="0..31"):
        NODE_FORMATS.with_bits(q=32)


@pytest.mark.parametrize("name", ["q", "qd", "qdd", "f_ext_y", "mu_ext_z", "p_ddot_in_z",
                                  "tau", "m", "I_zz"])
def test_host_encoding_is_the_register_format_rounded_half_up(name):
    bits = RMAP[name].format.fraction_bits
    rng = np.random.default_rng(len(name))
    limit = 2.0 ** (31 - bits)
    values = np.concatenate([rng.uniform(-limit, limit, 200) * 0.99,
                             (np.arange(-5, 6) + 0.5) * 2.0 ** -bits])  # ties
    words = RMAP.encode(name, values)
    for value, word in zip(values, words):
        exact = Fraction(value) * 2 ** bits
        assert int(word) == (exact + Fraction(1, 2)).__floor__(), (name, value)
    assert np.array_equal(RMAP.decode(name, words), words * 2.0 ** -bits)


def test_a_value_beyond_its_format_names_register_and_format():
    with pytest.raises(FixedPointRangeError, match=r"node 2 qdd = 600\.0 does not fit Q9\.22"):
        RMAP.encode("qdd", 600.0, "node 2 qdd")
    with pytest.raises(FixedPointRangeError, match=r"f_ext_x = .* does not fit Q11\.20"):
        RMAP.encode("f_ext_x", [0.0, 5000.0])
    with pytest.raises(ValueError, match="not a host value"):
        RMAP.qformat("phase")


@pytest.mark.parametrize("word, frm, to", [(1, 16, 26), (-3, 16, 26), (2 ** 21 - 1, 16, 26),
                                           (2 ** 21, 16, 26), (-(2 ** 21), 16, 26),
                                           (-(2 ** 21) - 1, 16, 26), (2 ** 31 - 1, 19, 16),
                                           (-(2 ** 31), 19, 16), (12, 19, 16), (-12, 19, 16),
                                           (11, 19, 16), (-13, 19, 16), (5, 16, 16)])
def test_rescale_word_saturates_left_and_rounds_half_up_right(word, frm, to):
    value = Fraction(word, 2 ** frm) * 2 ** to
    expected = (value + Fraction(1, 2)).__floor__()
    expected = max(-(2 ** 31), min(2 ** 31 - 1, expected))
    assert rescale_word(word, frm, to) == expected


def test_prismatic_lengths_fit_the_q_format():
    fmt = RMAP.qformat("q")
    for name in ("tiago", "baxter"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)   # the URDFs' <mimic> tags
                robot = load_robot(name)
        except (FileNotFoundError, KeyError, ValueError) as error:
            pytest.skip(f"{name}: {error}")
        low, high = robot.q_limits()
        prismatic = [link.joint_type == "prismatic" for link in robot.links]
        assert any(prismatic), name
        assert fmt.fits(low) and fmt.fits(high), (name, low, high)


def test_known_robots_encode_in_the_node_formats():
    for name in ("ur5", "ur10", "puma560"):
        words = encode_robot(load_robot(name))
        assert len(words) == 6


@pytest.fixture(scope="module", params=("ur5", "ur10", "panda"))
def certified(request):
    try:
        robot = load_reference_robot(request.param)
    except FileNotFoundError as error:
        pytest.skip(str(error))
    certificate = certify(robot)
    sampled, overflow = sampled_error(robot, certificate, STATES)
    return robot, certificate, sampled, overflow


def test_goals_certified_bound_and_sampled_maximum(certified):
    """Issue 17: bound <= 1e-3 N·m on every joint, saturation free in the default box;
    sampled maximum <= 5e-4 N·m and never above the bound."""
    robot, certificate, sampled, overflow = certified
    bound = np.array(certificate.bound_nm)
    assert certificate.saturation_free and not overflow.any()
    assert np.all(bound <= 1e-3), (robot.name, bound)
    assert np.all(sampled <= bound), (robot.name, sampled, bound)
    assert np.all(sampled <= 5e-4) and np.all(sampled > 0), (robot.name, sampled)
