"""The certificate of the fixed-point torque error (linkdyn.model.certify) against the golden model.

Soundness: the golden model (rnea_fixed, bit-exact with the gateware) against the float model
(rnea) on random and corner states of the box never errs by more than the certified bound, on
UR5, UR10 and Panda (URDF). LINKDYN_LONG=1 samples 10^5 random states per robot instead of 10^4.
"""

import json
import math
import os
from dataclasses import replace

import numpy as np
import pytest

from linkdyn.model.accuracy import TYPICAL_FRICTION, cordic_worst_case
from linkdyn.model.certify import (Certificate, box_states, certify, cordic_error_bound, main,
                                   range_formats, sampled_error, sine_error_bound)
from linkdyn.model.golden import microprogram, rnea_fixed
from linkdyn.model.microprogram import NODE_FORMATS
from linkdyn.model.reference import load_reference_robot
from linkdyn.model.tables import SINE_TABLE, SineTable

LONG = bool(os.environ.get("LINKDYN_LONG"))
STATES = 100_000 if LONG else 10_000
ROBOTS = ("ur5", "ur10", "panda")


@pytest.fixture(scope="module", params=ROBOTS)
def robot(request):
    try:
        return load_reference_robot(request.param)
    except FileNotFoundError as error:
        pytest.skip(str(error))


@pytest.fixture(scope="module")
def ur5():
    try:
        return load_reference_robot("ur5")
    except FileNotFoundError as error:
        pytest.skip(str(error))


def _ratio_text(bound, sampled):
    return " ".join(f"{b / s:.1f}" for b, s in zip(bound, sampled))


def test_bound_holds_on_random_and_corner_states_of_the_default_box(robot):
    certificate = certify(robot)
    sampled, overflow = sampled_error(robot, certificate, STATES)
    assert certificate.saturation_free
    assert not overflow.any()
    bound = np.array(certificate.bound_nm)
    print(f"\n{robot.name}: bound {bound}, sampled {sampled}, ratio "
          f"{_ratio_text(bound, sampled)}")
    assert np.all(sampled <= bound), (sampled, bound)
    assert np.all(sampled > 0)


@pytest.mark.parametrize("domain", ["affine", "interval"])
def test_bound_holds_in_small_boxes_where_it_is_tight(ur5, domain):
    # A narrow q box and qd = 0: the bound is within a small factor of the sampled maximum,
    # so a missed error source or a wrong rounding bound would show here.
    rng = np.random.default_rng(7)
    low, high = ur5.q_limits()
    for _ in range(4):
        centre = low + rng.random(ur5.n) * (high - low)
        certificate = certify(ur5, q_box=(centre - 0.005, centre + 0.005), qd_max=0.0,
                              domain=domain)
        sampled, _ = sampled_error(ur5, certificate, 3000)
        bound = np.array(certificate.bound_nm)
        assert np.all(sampled <= bound), (centre, sampled, bound)
        assert np.all(bound < 20 * sampled), (centre, _ratio_text(bound, sampled))


def test_bound_holds_with_friction_and_external_wrench(ur5):
    links = tuple(replace(link, friction=TYPICAL_FRICTION) for link in ur5.links)
    robot = replace(ur5, links=links)
    certificate = certify(robot, wrench_max=(50.0, 5.0))
    assert certificate.saturation_free
    assert certificate.sources["cordic"][0] > 0  # F_c != 0: the CORDIC error counts
    q, qd, qdd, f_ext = box_states(certificate, 10)
    assert f_ext.shape == (12, robot.n, 6) and np.all(np.abs(f_ext[..., :3]) <= 50.0)
    sampled, overflow = sampled_error(robot, certificate, STATES // 2)
    assert not overflow.any()
    assert np.all(sampled <= np.array(certificate.bound_nm))
    # With friction on, qd near 0 makes atan(k qd) steep: the Coulomb term's sensitivity to
    # the qd rounding (F_c k times half an LSB of qd's format) is in the bound.
    half = 2.0 ** -(microprogram().registers["qd"].format.fraction_bits + 1)
    assert certificate.sources["input qd"][-1] > 2.0 * 100.0 * half * 0.99


def test_saturation_is_named_and_the_golden_model_saturates_there(ur5):
    # 30 rad/s on every joint fits the qd word (Q5.26) but not omega's (Q6.25, 64 rad/s)
    certificate = certify(ur5, qd_max=30.0)
    assert not certificate.saturation_free
    first = certificate.saturations[0]
    assert first["register"] in {r.name for r in microprogram().registers}
    nodes = {s["node"] for s in certificate.saturations}
    _, overflow = sampled_error(ur5, certificate, 2000)
    # The golden model's sticky overflow flag is set on a node the certificate names, and on
    # none it has proven free of saturation.
    assert overflow.any()
    assert set(np.flatnonzero(overflow) + 1) <= nodes
    state = first["state"]
    fixed = rnea_fixed(ur5, state["q"], state["qd"], state["qdd"])
    assert fixed.overflow.any()
    assert math.isfinite(certificate.max_bound_nm)


def test_a_box_within_the_limits_is_saturation_free_and_a_smaller_box_has_a_smaller_bound(ur5):
    full = certify(ur5)
    half = certify(ur5, qd_max=1.0, qdd_max=2.0)
    assert half.saturation_free
    assert all(h <= f for h, f in zip(half.bound_nm, full.bound_nm))


def test_formats_what_if_is_computed(ur5):
    base = certify(ur5)
    coarser = certify(ur5, formats={"q": 22})
    # The q rounding enters linearly: 4 fewer bits multiply its part by 16.
    ratio = np.array(coarser.sources["input q"]) / np.array(base.sources["input q"])
    assert np.allclose(ratio, 16.0, rtol=1e-6)
    assert coarser.formats["q"] == 22 and base.formats["q"] == NODE_FORMATS.q == 26
    assert all(b < c for b, c in zip(base.bound_nm, coarser.bound_nm))


def test_proven_table_and_cordic_bounds_cover_their_exhaustive_maxima():
    assert sine_error_bound() >= SINE_TABLE.worst_case_error()
    worst, _ = cordic_worst_case(limit=1 << 16)
    assert worst <= cordic_error_bound() < 2.5e-7


def test_certificate_json(ur5, tmp_path):
    certificate = certify(ur5)
    assert isinstance(certificate, Certificate)
    data = json.loads(certificate.to_json())
    assert data["bound_nm"] == list(certificate.bound_nm)
    assert data["saturation_free"] is True
    assert data["box"]["qdd_max"] == [10.0] * ur5.n
    assert data["box"]["wrench_max"] is None
    assert data["formats"]["q"] == 26 and data["formats"]["word"] == NODE_FORMATS.name
    assert len(data["hot_registers"]) == 10


@pytest.mark.parametrize("kwargs, match", [
    ({"q_box": ([0.0] * 6, [-1.0] * 6)}, "empty"),
    ({"q_box": ([0.0] * 6, [math.nan] * 6)}, "finite"),
    ({"qd_max": math.nan}, "finite"),
    ({"qdd_max": -1.0}, ">= 0"),
    ({"qd_max": [1.0, 2.0]}, "shape"),
    ({"q_box": (0.0, 1e5)}, "exceeds the word"),
    ({"wrench_max": (1.0,)}, "pair"),
    ({"wrench_max": (-1.0, 1.0)}, ">= 0"),
    ({"formats": {"angle": 20}}, "unknown quantity"),
    ({"formats": {"q": 40}}, "0..31"),
    ({"domain": "zonotope"}, "domain"),
])
def test_bad_input_is_refused(ur5, kwargs, match):
    with pytest.raises(ValueError, match=match):
        certify(ur5, **kwargs)


def test_not_a_robot_is_refused():
    with pytest.raises(TypeError, match="Robot"):
        certify("ur5")


def test_command_line_writes_certificate_and_report(tmp_path, capsys):
    out = tmp_path / "cert"
    status = main(["--robot", "ur5", "--qdd-max", "5", "--states", "500", "--out", str(out)])
    assert status == 0
    data = json.loads((out / "certificate.json").read_text())
    assert len(data["bound_nm"]) == 6 and data["box"]["qdd_max"] == [5.0] * 6
    assert "certified bound" in (out / "certificate.md").read_text()
    assert (out / "certificate.png").stat().st_size > 1000


def test_command_line_reports_errors(tmp_path, capsys):
    assert main(["--robot", "no_such_robot", "--out", str(tmp_path / "x")]) == 2
    assert "error" in capsys.readouterr().err
    assert main(["--robot", "ur5", "--qdd-max", "-1", "--out", str(tmp_path / "x")]) == 2
    assert ">= 0" in capsys.readouterr().err
    assert main(["--robot", "ur5", "--qd-max", "30", "--states", "0",
                 "--out", str(tmp_path / "y")]) == 1  # saturation possible: status 1


def test_range_formats_are_proven_saturation_free_and_shrink_the_bound(ur5):
    base = certify(ur5)
    formats = range_formats(base)
    # q spans +-2 pi: 3 integer bits + 1 of headroom leave 27 fractional bits.
    assert formats["q"] == 27
    assert all(formats[k] >= base.formats[k] for k in formats)
    finer = certify(ur5, formats=formats)
    assert finer.saturation_free
    # The node's formats are already one or two bits short of the ranges: the rest gains
    # 1.90x on the worst joint (it was 5x from Q15.16).
    assert finer.max_bound_nm < base.max_bound_nm / 1.5
    # The sine table is a large part of the rest: a finer table lowers the bound further
    # (1.68x measured with the table's error as one rotation scaling per joint).
    table = SineTable(index_bits=14, fraction_bits=16, entry_bits=36)
    assert certify(ur5, formats=formats, table=table).max_bound_nm < finer.max_bound_nm / 1.5
