"""The controller modes of the closed-loop experiments: ``golden`` and ``gateware``.

Every experiment takes ``controller``: a mode name or a factory
``make(robot, gains, *, guard=False, model=None, **overrides) -> controller`` (an object with
the :class:`~linkdyn.host.experiments.loop.GoldenController` interface: ``robot``, ``step``,
``fault_codes``). :func:`controller_factory` turns a mode into a factory for the duration of an
experiment: ``golden`` builds :class:`~linkdyn.host.experiments.loop.GoldenController`,
``gateware`` starts one simulated board with controllers
(:class:`~linkdyn.host.experiments.gateware.GatewareSession`) that every run of the experiment
reuses, and stops it at the end.
"""

from __future__ import annotations

import contextlib
import functools

from .loop import GoldenController

__all__ = ["CONTROLLER_MODES", "controller_factory", "golden_controller", "with_controller_mode"]

#: The controller modes, in the order the command line lists them.
CONTROLLER_MODES = ("golden", "gateware")


def golden_controller(robot, gains, *, guard=False, model=None, **overrides):
    """Return a :class:`GoldenController`; with ``model``, its chain has that model's constants
    (the controllers' limits stay those of ``robot``)."""
    from linkdyn.model.golden import GoldenChain
    controller = GoldenController(robot, gains, guard=guard, **overrides)
    if model is not None:
        controller.chain = GoldenChain(model)
    return controller


class _GatewareFactory:
    """Gateware controllers on one simulated board, started at the first controller (with the
    robot's node count; restarted for another count) and stopped by :meth:`close`."""

    def __init__(self):
        self.session = None

    def __call__(self, robot, gains, *, guard=False, model=None, **overrides):
        from .gateware import GatewareSession
        if self.session is not None and self.session.nodes != robot.n:
            self.close()
        if self.session is None:
            self.session = GatewareSession(robot.n).start()
        return self.session.controller(robot, gains, guard=guard, model=model, **overrides)

    def close(self):
        if self.session is not None:
            self.session.stop()
            self.session = None


@contextlib.contextmanager
def controller_factory(controller):
    """Yield the controller factory of a mode for one experiment.

    Parameters
    ----------
    controller : str or callable
        ``"golden"``, ``"gateware"``, or a factory (yielded as it is).

    Raises
    ------
    ValueError
        If ``controller`` is neither a mode nor callable.
    SimulatedBoardError, SimulatorMissing
        ``gateware``: if the simulated board cannot be built or started (at the first
        controller).
    """
    if callable(controller):
        yield controller
    elif controller == "golden":
        yield golden_controller
    elif controller == "gateware":
        factory = _GatewareFactory()
        try:
            yield factory
        finally:
            factory.close()
    else:
        raise ValueError(f"controller must be one of {CONTROLLER_MODES} or a factory, not "
                         f"{controller!r}")


def with_controller_mode(function):
    """Decorate an experiment whose ``controller`` argument is a factory so that it takes a
    mode name as well (default ``"golden"``); the result dict gets ``"controller"``, the mode
    (``"custom"`` for a factory)."""
    @functools.wraps(function)
    def experiment(*args, controller="golden", **kwargs):
        with controller_factory(controller) as make:
            result = function(*args, controller=make, **kwargs)
        result["controller"] = controller if isinstance(controller, str) else "custom"
        return result
    return experiment
