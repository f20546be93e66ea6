"""The local-loop benchmark's measurement on a short trajectory."""

import numpy as np

from linkdyn.bench import local_loop
from linkdyn.model.local_loop import LocalLoopChain
from linkdyn.model.reference import load_reference_robot


def test_measure_compares_local_and_hold_with_full_updates_at_the_local_ticks():
    robot = load_reference_robot("ur5")
    from linkdyn.host.demo import demo_trajectory

    t, q, qd, qdd = demo_trajectory(robot.n, 3.0, 10_000)
    sl = slice(5000, 5030)                      # 3 ms in the middle: 3 chain updates
    result = local_loop.measure(robot, q[sl], qd[sl], qdd[sl], multiples=(2, 10))
    assert list(result[2]["ticks"]) == [5, 15, 25]
    assert len(result[10]["ticks"]) == 27
    # Hold is the chain update's torque at the previous multiple of 10 samples.
    np.testing.assert_array_equal(result[10]["hold"][0], result["full"][0])
    # The local torque at a tick is the local update after that tick's chain update.
    chain = LocalLoopChain(robot)
    chain.step(q[5010], qd[5010], qdd[5010])
    local = chain.local_step(q[5015], qd[5015], qdd[5015])
    np.testing.assert_allclose(result[2]["local"][1], local / 65536.0, atol=0)
