"""The chain's Verilog equals the fixed-point golden model, word for word, under both policies.

Each test exports ``LinkDynChain(n, policy=...)`` (``python -m linkdyn.gateware.chain``), builds
it once per node count and policy, and runs the cocotb testbench :mod:`linkdyn.sim.chain_cocotb`:
the driver loads each robot's constants over the register bus and feeds joint states as the
host does (one update at a time, or a pipelined stream with up to four updates in flight); the
monitor reads every update's ``tau`` words, OVERFLOW, OVERFLOW_STICKY and (every tenth update)
the base wrench; they must equal :func:`linkdyn.model.golden.rnea_fixed` for every state.

Robots: UR5 and Puma 560 (6 joints), Panda (7, example-robot-data's URDF up to ``panda_hand``),
and random robots with 1 .. 8 joints (:func:`linkdyn.sim.chain_cases.random_robot`; 4 and 5
joints with ``LINKDYN_LONG=1``). Every robot
gets :data:`support.chain.STATES` random states inside its joint limits (500; 5,000 with
``LINKDYN_LONG=1``), a quarter of them with an external wrench on the last link, a quarter on the
middle link, a quarter on both, and 4 more states that saturate (the flags and clamped words are
the golden model's). Fixed seeds.

Simulator: these long runs use Verilator unless ``SIM`` says otherwise (Icarus runs a 6-node
chain at about 3,000 cycles per second on this machine, too slow for some 4 million cycles);
:func:`test_chain_on_icarus_runner` runs a smaller set on Icarus.
"""

import os

import pytest

from support import long_param
from support.chain import STATES, run_chain

POLICIES = ("sequential", "pipelined")

#: Node counts of the suite; 4 and 5 (random robots between the small chains and the 6- to
#: 8-node arms) run with ``LINKDYN_LONG=1``.
NODE_COUNTS = [1, 2, 3] + [long_param(n, reason="LINKDYN_LONG=1: 4 and 5 nodes") for n in (4, 5)] + [6, 7, 8]

#: Extra states at the end of each robot's states that saturate some result.
SATURATING = 4


def _cases(n):
    cases = [{"robot": f"random:{n}:{100 + n}", "states": STATES, "seed": 10 + n,
              "wrench": "mixed", "saturate": SATURATING}]
    if n == 6:
        cases += [{"robot": "ur5", "states": STATES, "seed": 5, "wrench": "mixed",
                   "saturate": SATURATING},
                  {"robot": "puma560", "states": STATES, "seed": 560, "wrench": "mixed",
                   "saturate": SATURATING}]
    if n == 7:
        cases.append({"robot": "panda", "states": STATES, "seed": 7, "wrench": "mixed",
                      "saturate": SATURATING})
    return cases


def _panda_available():
    try:
        from linkdyn.model.reference import example_robot_urdf
        example_robot_urdf("panda")
    except FileNotFoundError:
        return False
    return True


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("n", NODE_COUNTS)
def test_chain_matches_golden_model_runner(n, policy):
    cases = _cases(n)
    if n == 7 and not _panda_available():
        pytest.skip("example-robot-data (Panda URDF) is not installed")
    summary = run_chain(n, policy, cases, sim=os.environ.get("SIM", "verilator"))
    expected = sum(case["states"] + case["saturate"] for case in cases)
    assert summary["checked"] == expected
    for case, result in zip(cases, summary["cases"]):
        assert result["checked"] == case["states"] + case["saturate"]
        if n >= 3:
            # (a random robot of one or two links saturates no register with inputs within
            # the node's formats, e.g. qd <= 32 rad/s, qdd <= 512 rad/s^2: its saturating
            # states are then ordinary ones, still checked word for word)
            assert result["saturating_states"] >= 1, "the saturating states set flags"
    assert summary["base_wrenches_checked"] >= expected // 10
    if policy == "pipelined" and n > 1:
        # Updates overlapped: the interval is shorter than one update's latency.
        for result in summary["cases"]:
            assert result["interval_median"] < result["latency_min"]


@pytest.mark.parametrize("policy", POLICIES)
def test_chain_on_icarus_runner(policy):
    """A smaller run on Icarus Verilog: UR5 on the 6-node chain, 20 states and the saturating
    ones, and a random 2-joint robot."""
    summary = run_chain(6, policy, [{"robot": "ur5", "states": 20, "seed": 99,
                                     "wrench": "mixed", "saturate": SATURATING}], sim="icarus",
                        tag="icarus")
    assert summary["checked"] == 20 + SATURATING
    summary = run_chain(2, policy, [{"robot": "random:2:77", "states": 40, "seed": 77,
                                     "wrench": "mixed", "saturate": SATURATING}], sim="icarus",
                        tag="icarus")
    assert summary["checked"] == 40 + SATURATING
