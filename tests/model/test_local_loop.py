"""The local loop's golden model (model/local_loop.py) against full chain updates."""

import numpy as np
import pytest

from linkdyn.model import load_robot
from linkdyn.model.local_loop import LocalLoopChain
from linkdyn.model.reference import load_reference_robot


def _robot(name):
    return load_robot("ur5") if name == "ur5" else load_reference_robot("panda")


@pytest.mark.parametrize("name", ["ur5", "panda"])
def test_local_update_on_the_chain_updates_state_gives_its_words(name):
    robot = _robot(name)
    chain = LocalLoopChain(robot)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, qd, qdd = rng.uniform(-1.5, 1.5, (3, robot.n))
        full = chain.step(q, qd, qdd).tau_words
        np.testing.assert_array_equal(chain.local_step(q, qd, qdd), full)


@pytest.mark.parametrize("name", ["ur5", "panda"])
def test_last_node_local_update_equals_a_full_update_when_only_its_joint_moved(name):
    """The last node has no distal neighbour and its proximal neighbours did not move: its
    local update is the full chain update's word; the other nodes' are not (their distal
    neighbour moved), which shows the local update does not see the neighbours' motion."""
    robot = _robot(name)
    rng = np.random.default_rng(4)
    q, qd, qdd = rng.uniform(-1.5, 1.5, (3, robot.n))
    moved = [v.copy() for v in (q, qd, qdd)]
    for v, delta in zip(moved, (0.05, 0.5, 5.0)):
        v[-1] += delta
    reference = LocalLoopChain(robot).step(*moved).tau_words
    chain = LocalLoopChain(robot)
    chain.step(q, qd, qdd)
    local = chain.local_step(*moved)
    assert local[-1] == reference[-1]
    assert np.any(local[:-1] != reference[:-1])


def test_local_update_needs_a_chain_update_first():
    chain = LocalLoopChain(load_robot("ur5"))
    with pytest.raises(RuntimeError, match="step"):
        chain.local_step(np.zeros(6), np.zeros(6), np.zeros(6))
    with pytest.raises(ValueError, match="shape"):
        chain.step(np.zeros(6), np.zeros(6), np.zeros(6))
        chain.local_step(np.zeros(5), np.zeros(6), np.zeros(6))
