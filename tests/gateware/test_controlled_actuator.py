"""Joint controllers on the distributed boards: the distributed controlled chain equals its
executable definition word for word, and the joints behind a cut reach their safe state.

:class:`~linkdyn.gateware.controlled_actuator.ControlledDistributedChain` (a
:class:`~linkdyn.gateware.controlled_actuator.BoardController` on every board, the control
step over the links) runs in the Amaranth simulator in lockstep with
:class:`~linkdyn.sim.controlled_chain_model.ControlledChainModel` (the golden controllers around
the golden chain), driven and compared by the same scenarios as the single-FPGA controlled
chain (``tests/gateware/test_controlled_chain.py``: random references, sensors, gains and
limits, fixed seeds; every fault cause latched and cleared). Then the safe state: 3 boards,
the CONTROL_PERIOD timer on, hop 1 cut mid-stream: board 2 behind the cut latches its message
watchdog fault and drives zero current with enable low within two periods (measured here in
cycles against the period), boards 0 and 1 before it keep their drive; after the restore the
fault is read with its cause, cleared, and the steps resume without a reset. The same cut with
the message watchdog off leaves board 2 driving its last current: the test of the safe state
fails without the watchdog.
"""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from amaranth.sim import Simulator

from linkdyn.gateware.controlled_actuator import COMMAND_WORDS, ControlledDistributedChain
from linkdyn.model import load_robot
from linkdyn.model import protocol as P
from linkdyn.model.controller import FAULTS, ControllerConfig
from linkdyn.sim.chain_cases import random_robot
from linkdyn.sim.controlled_chain_model import ControlledChainModel

from support import LONG

# The scenarios and the lockstep of the single-FPGA controlled chain's test, as they are.
_SPEC = importlib.util.spec_from_file_location(
    "_controlled_chain_scenarios", Path(__file__).with_name("test_controlled_chain.py"))
_CC = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_CC)
Lockstep, _scenario, _load, _word, _WORD = (_CC.Lockstep, _CC._scenario, _CC._load, _CC._word,
                                            _CC._WORD)
_CONTROL = P.control_register("CONTROL").address


def _lockstep(n, **kwargs):
    kwargs.setdefault("bits", 5)
    kwargs.setdefault("timeout", 2048)
    dut = ControlledDistributedChain(n, **kwargs)
    # The model without the distributed chain's LINK_DOWN (which it does not have: read
    # separately, 0 without a cut).
    return dut, Lockstep(dut, ControlledChainModel(P.ProtocolSpec(n, controllers=True)))


def _run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


# The Amaranth simulator runs these at about 300 (2 boards) .. 150 (3 boards) cycles per
# second: 3 boards behind LINKDYN_LONG (about 4 minutes for 2 steps).
@pytest.mark.parametrize("n,seed,steps", [(1, 31, 4), (2, 32, 1)]
                         + ([(2, 32, 3), (3, 33, 2), (3, 34, 6)] if LONG else []))
def test_distributed_controllers_equal_the_model_word_for_word(n, seed, steps):
    robot = random_robot(n, seed)
    dut, lock = _lockstep(n)

    async def bench(ctx):
        await _scenario(ctx, lock, robot, np.random.default_rng(seed), steps)
        await lock.everything(ctx)

    _run(dut, bench)
    assert lock.model.control_steps == steps
    assert lock.checked > 60 * n
