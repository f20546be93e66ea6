"""Closed-loop experiments of the source paper (Sect. 4.1-4.5) on the MuJoCo plant.

Two controller modes (:mod:`.modes`): ``golden``, the joint controllers
(:mod:`linkdyn.model.controller`) and the node chain (:func:`linkdyn.model.golden.rnea_fixed`) as
golden models in the loop with :class:`linkdyn.sim.plant.Plant`; ``gateware``, the controller and
chain gateware in Verilator (:mod:`.gateware`). See docs/experiments.md.
"""

from .gateware import GatewareController, GatewareSession
from .identify import identify_experiment, perturb_plant
from .loop import GainSet, GoldenController, LoopLog, csv_columns, payload_wrench, \
    run_closed_loop, write_csv
from .modes import CONTROLLER_MODES, controller_factory
from .runs import EXPERIMENTS, NOT_BUILT, contact_experiment, contact_wrench, \
    payload_experiment, point_experiment
from .track import track_experiment

__all__ = ["GainSet", "GoldenController", "LoopLog", "csv_columns", "payload_wrench",
           "run_closed_loop", "write_csv", "EXPERIMENTS", "NOT_BUILT", "point_experiment",
           "payload_experiment", "contact_experiment", "contact_wrench", "track_experiment",
           "identify_experiment", "perturb_plant", "GatewareController", "GatewareSession",
           "CONTROLLER_MODES", "controller_factory"]
