"""The chain's torques agree with Pinocchio's float torques within the measured fixed-point bound.

The UR5 (example-robot-data ``ur_description/urdf/ur5_robot.urdf``) and the Panda
(``panda_description/urdf/panda.urdf`` up to ``panda_hand``) are loaded from their URDFs with
gravity 9.81 m/s^2 (Pinocchio's) and run on the sequential 6- and 7-node chains (cocotb on the
exported Verilog, :mod:`linkdyn.sim.chain_cocotb`); the ``tau`` words the chain returns, decoded, are
compared with ``pinocchio.rnea`` of the same URDF at the same states (Pinocchio's Panda also has
the two finger joints; they stay at zero, which is the model's hand with the fingers merged).
The bound is the golden model's measured torque error of ``docs/accuracy.md``
(:func:`linkdyn.model.accuracy.measured_bounds`, friction off: the URDFs publish none), the
largest of its random, joint-limit and external-wrench figures.
"""

import os

import numpy as np
import pytest

from support.chain import run_chain
from linkdyn.model.microprogram import microprogram
from linkdyn.sim.chain_cases import build_case

pinocchio = pytest.importorskip("pinocchio")

#: States per robot.
STATES = 500


def _bound(name):
    from linkdyn.model.accuracy import measured_bounds
    bounds = measured_bounds(robots=(name,))[name]["friction off"]
    return max(bounds["max"], bounds["limits_max"], bounds["wrench_max"])


@pytest.mark.parametrize("name, urdf, n", [("urdf:ur5", "ur5", 6), ("panda", "panda", 7)])
def test_chain_torques_agree_with_pinocchio_runner(name, urdf, n):
    from linkdyn.model.reference import example_robot_urdf
    try:
        path = example_robot_urdf(urdf)
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")
    spec = {"robot": name, "states": STATES, "seed": 981, "gravity": 9.81}
    summary = run_chain(n, "sequential", [spec], sim=os.environ.get("SIM", "verilator"),
                        tag="pinocchio")
    tau_chain = microprogram().registers.decode(
        "tau", np.array(summary["results"][0]["tau"], dtype=np.int64))
    case = build_case(spec)
    assert tau_chain.shape == (STATES, n)
    model = pinocchio.buildModelFromUrdf(str(path))
    assert np.allclose(model.gravity.linear, [0.0, 0.0, -9.81])
    data = model.createData()
    tau_float = np.empty((STATES, n))
    for s in range(STATES):
        q, v, a = (np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv))
        q[:n], v[:n], a[:n] = case.q[s], case.qd[s], case.qdd[s]
        tau_float[s] = pinocchio.rnea(model, data, q, v, a)[:n]
    error = np.abs(tau_chain - tau_float).max()
    bound = _bound("ur5" if urdf == "ur5" else "panda")
    assert error <= bound, (f"{name}: max |tau_chain - tau_pinocchio| = {error:.3e} N m > "
                            f"{bound:.3e}")
    # And the comparison is not vacuous: the torques are large against the bound.
    assert np.abs(tau_float).max() > 1e4 * bound
