"""The sine table's split into a rotation scaling (linkdyn.model.certify.sine_error_split) and
the directed worst-case search (linkdyn.model.falsify) against the golden model.

References: the table's interpolation (SineTable.evaluate, the golden model's) against numpy's
sine; the golden model (rnea_fixed, bit-exact with the gateware) against the float model (rnea)
on the searched states, below the certified bound (soundness). LINKDYN_LONG=1 searches all
three robots longer.
"""

import math
import os

import numpy as np
import pytest

from linkdyn.model.certify import (box_states, certify, sampled_error, sine_error_bound,
                                   sine_error_split)
from linkdyn.model.falsify import worst_case_search
from linkdyn.model.golden import rnea_fixed
from linkdyn.model.reference import load_reference_robot
from linkdyn.model.rnea import rnea
from linkdyn.model.tables import SINE_TABLE, SineTable

LONG = bool(os.environ.get("LINKDYN_LONG"))


def _robot(name):
    try:
        return load_reference_robot(name)
    except FileNotFoundError as error:
        pytest.skip(str(error))


@pytest.mark.parametrize("table", [SINE_TABLE, SineTable()], ids=["4096", "512"])
def test_sine_table_is_a_common_scaling_plus_a_small_residual(table):
    phi_max, residual = sine_error_split(table)
    rng = np.random.default_rng(7)
    # Random words and every quadrant's segment middles and entries, where phi is extreme.
    width = 1 << table.fraction_bits
    special = (np.arange(4 * table.size, dtype=np.int64) * width)[:, None] + [0, width // 2]
    words = np.concatenate([rng.integers(0, 1 << 32, 1 << 19, dtype=np.int64),
                            special.ravel()])
    s, c = table.evaluate(words)
    theta = words * (2 * math.pi / 2 ** 32)
    u = words & ((1 << 30) - 1)
    v = np.where((words >> 30) & 1, (1 << 30) - u, u)
    t = (v & (width - 1)) / width
    h = math.pi / 2 / table.size
    phi = t * (1 - t) * h * h / 2
    assert np.max(phi) <= phi_max
    rho = np.maximum(np.abs(s - (1 - phi) * np.sin(theta)), np.abs(c - (1 - phi) * np.cos(theta)))
    assert np.max(rho) <= residual
    # The residual is the entries' rounding, not slack: sampled within 10 % of its bound.
    assert np.max(rho) > 0.9 * residual
    # phi reaches its bound in segment middles; together they cover the global worst case
    # (the exhaustive one of sine_error_bound), within 1 %.
    assert np.max(phi) == pytest.approx(phi_max, rel=1e-9)
    assert sine_error_bound(table) <= phi_max + residual < 1.01 * sine_error_bound(table)


def test_split_table_is_tighter_and_sound_on_searched_states():
    ur5 = _robot("ur5")
    split, unsplit = certify(ur5), certify(ur5, split_table=False)
    bound = np.array(split.bound_nm)
    assert np.all(bound < np.array(unsplit.bound_nm))
    assert split.max_bound_nm < 0.85 * unsplit.max_bound_nm  # measured 0.78
    q, qd, qdd, _ = box_states(split, 2000)
    start = np.abs(rnea_fixed(ur5, q, qd, qdd).tau - rnea(ur5, q, qd, qdd)).max(axis=0)
    result = worst_case_search(ur5, split.box, (q, qd, qdd), rounds=8)
    assert result.evaluated > 5 * len(q)
    assert not result.overflow.any()
    assert np.all(result.worst >= start)  # the search keeps the best start
    assert np.any(result.worst > 1.05 * start)  # and finds larger errors
    assert np.all(result.worst <= bound)  # soundness
    box = split.box
    for j, (qs, qds, qdds) in enumerate(result.states):
        assert np.all(qs >= np.array(box["q_min"])) and np.all(qs <= np.array(box["q_max"]))
        assert np.all(np.abs(qds) <= np.array(box["qd_max"]))
        assert np.all(np.abs(qdds) <= np.array(box["qdd_max"]))
        # The reported state reproduces its error (an independent evaluation).
        error = abs(rnea_fixed(ur5, qs, qds, qdds).tau[j] - rnea(ur5, qs, qds, qdds)[j])
        assert error == pytest.approx(result.worst[j], rel=1e-12, abs=1e-15)


@pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1: a longer search on three robots")
@pytest.mark.parametrize("name", ["ur5", "ur10", "panda"])
def test_long_search_is_below_the_bound(name):
    robot = _robot(name)
    cert = certify(robot)
    sampled, _ = sampled_error(robot, cert, 20_000)
    q, qd, qdd, _ = box_states(cert, 20_000)
    result = worst_case_search(robot, cert.box, (q, qd, qdd), rounds=200)
    assert np.all(result.worst >= sampled)
    assert np.all(result.worst <= np.array(cert.bound_nm))


@pytest.mark.parametrize("kwargs, match", [
    ({"rounds": -1}, "rounds"), ({"population": 0}, "population"), ({"keep": 1.5}, "keep"),
])
def test_bad_search_arguments_are_refused(kwargs, match):
    ur5 = _robot("ur5")
    cert = certify(ur5)
    q, qd, qdd, _ = box_states(cert, 4)
    with pytest.raises(ValueError, match=match):
        worst_case_search(ur5, cert.box, (q, qd, qdd), **kwargs)
    with pytest.raises(ValueError, match="shape"):
        worst_case_search(ur5, cert.box, (q[:, :3], qd, qdd))
    with pytest.raises(ValueError, match="box"):
        worst_case_search(ur5, cert.box, (q, 2 * qd + 100, qdd))


def test_rounding_triplets_tighten_the_bound_soundly():
    ur5 = _robot("ur5")
    together, alone = certify(ur5), certify(ur5, vector_roundings=False)
    assert np.all(np.array(together.bound_nm) <= np.array(alone.bound_nm))
    assert together.bound_nm[0] < 0.92 * alone.bound_nm[0]  # measured 0.89
    # Soundness where the bound is tightest: a narrow box around one state.
    q0 = np.array([0.3, -1.2, 1.0, -0.4, 0.8, 0.1])
    narrow = certify(ur5, q_box=(q0 - 0.01, q0 + 0.01), qd_max=0.05, qdd_max=0.1)
    q, qd, qdd, _ = box_states(narrow, 3000)
    result = worst_case_search(ur5, narrow.box, (q, qd, qdd), rounds=4)
    assert np.all(result.worst <= np.array(narrow.bound_nm))
