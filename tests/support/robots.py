"""The robots of the accuracy report (linkdyn.model.accuracy.ROBOTS), loaded once, with their
friction cases, for the golden-model tests."""

import pytest

from linkdyn.model.accuracy import ROBOTS, load_accuracy_robot, with_friction

__all__ = ["accuracy_robots", "robot_case"]


def accuracy_robots():
    """Return ``{name: Robot}`` of the accuracy robots that can be loaded here (the URDF ones
    need example-robot-data)."""
    loaded = {}
    for name in ROBOTS:
        try:
            loaded[name] = load_accuracy_robot(name)
        except FileNotFoundError:
            pass
    return loaded


def robot_case(robots, name, case):
    """Return robot ``name`` with friction ``case`` ("off" / "on"), or skip without it."""
    if name not in robots:
        pytest.skip(f"{name} needs example-robot-data")
    return with_friction(robots[name], case)[0]
