"""Robot library: built-in robots from published values, robot files and URDF import.

:func:`load_robot` is the one entry point: a built-in name (``"ur5"``, ``"ur10"``,
``"puma560"``), a robot file (``.json``, see :mod:`linkdyn.model.robotfile`) or a URDF file of a
serial chain or a tree (``.urdf``, see :mod:`linkdyn.model.urdf`).

The built-in robots are robot files in the package :mod:`linkdyn.model.data`, read with
:mod:`importlib.resources`; each states in its ``source`` field where every number comes from
(:func:`robot_source`).
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from importlib import resources
from pathlib import Path

import numpy as np

from .robot import RobotDescriptionError
from .robotfile import read_robot_dict, robot_from_dict, robot_source as _source_text, save_robot

__all__ = ["BUILTIN_ROBOTS", "EXAMPLE_ROBOTS", "ROBOT_FORMATS", "load_robot", "save_robot", "robot_source",
           "truncate"]

#: Names of the built-in robots, accepted by :func:`load_robot`.
BUILTIN_ROBOTS = ("ur5", "ur10", "puma560")
#: Trees of the optional package example-robot-data known to :func:`load_robot` by name: URDF
#: paths relative to its ``robots`` folder (Baxter: two 7-joint arms, head, four prismatic
#: fingers; TIAGo: prismatic torso, arm, head, gripper, wheels).
EXAMPLE_ROBOTS = {"baxter": "baxter_description/urdf/baxter.urdf",
                  "tiago": "tiago_description/robots/tiago.urdf"}

_DATA_PACKAGE = "linkdyn.model.data"


def _builtin_dict(name):
    resource = resources.files(_DATA_PACKAGE).joinpath(f"{name}.json")
    return json.loads(resource.read_text(encoding="utf-8")), f"<built-in {name}>"


def _is_builtin(name_or_path):
    return isinstance(name_or_path, str) and name_or_path.lower() in BUILTIN_ROBOTS


def _description(name_or_path):
    """Return ``(json_object, origin)`` of a built-in robot or a robot file."""
    if _is_builtin(name_or_path):
        return _builtin_dict(name_or_path.lower())
    path = Path(name_or_path)
    return read_robot_dict(path), os.fspath(path)


def truncate(robot, tip):
    """Return the chain from the base to link ``tip``, with an identity tool transform.

    On a tree it is the path of links from the root to ``tip`` (``tip``'s ancestors and
    ``tip``); the links off the path are dropped (they are not merged as the URDF import
    merges them, so the torques of the path change unless they are massless).

    Parameters
    ----------
    robot : Robot
        The robot.
    tip : str
        Name of the last link to keep.

    Raises
    ------
    RobotDescriptionError
        If the robot has no link of that name (the message lists the names).
    """
    names = [link.name for link in robot.links]
    if tip not in names:
        raise RobotDescriptionError(
            f"robot {robot.name!r} has no link {tip!r}; its links are {names!r}")
    index = names.index(tip)
    if robot.is_chain:
        end = index + 1
        if end == robot.n:
            return robot
        path = range(end)
    else:
        path = robot.ancestors(index) + (index,)
    return replace(robot, links=tuple(robot.links[i] for i in path), tool=np.eye(4),
                   parents=tuple(range(-1, len(path) - 1)),
                   joint_names=tuple(robot.joint_names[i] for i in path))


def _load_robot_file(path, tip):
    return robot_from_dict(read_robot_dict(path), origin=os.fspath(path)), False


def _load_urdf_file(path, tip):
    from .urdf import load_urdf
    return load_urdf(path, tip=tip), True


#: Robot file formats by suffix: ``loader(path, tip) -> (robot, cut)``, ``cut`` telling whether
#: the loader already ended the chain at ``tip`` (else :func:`load_robot` truncates it). A new
#: format is one loader here.
ROBOT_FORMATS = {
    ".json": _load_robot_file,
    ".urdf": _load_urdf_file,
}


def load_robot(name_or_path, *, tip=None):
    """Load a robot by built-in name, from a robot file or from a URDF file.

    Parameters
    ----------
    name_or_path : str or os.PathLike
        One of :data:`BUILTIN_ROBOTS` (case-insensitive), one of :data:`EXAMPLE_ROBOTS` (the
        URDF of example-robot-data, when that package is installed), a path ending in
        ``.json`` (a robot file, :mod:`linkdyn.model.robotfile`) or a path ending in ``.urdf``
        (imported with :func:`linkdyn.model.urdf.load_urdf`).
    tip : str, optional
        Last link of the chain. For a URDF it is passed to ``load_urdf``; for a built-in robot
        or robot file the chain is cut after the link of that name and the tool transform
        becomes the identity (DH frame of ``tip``).

    Returns
    -------
    Robot

    Raises
    ------
    RobotDescriptionError
        If the name is neither a built-in robot nor a ``.json``/``.urdf`` path (the message
        lists the built-in robots), if the description is invalid, or if ``tip`` names no link.
    FileNotFoundError
        If the file does not exist (the message holds the path), or an
        :data:`EXAMPLE_ROBOTS` name is given without example-robot-data installed.
    """
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise TypeError(f"name_or_path must be a str or path, not {type(name_or_path).__name__}")
    if isinstance(name_or_path, str) and name_or_path.lower() in EXAMPLE_ROBOTS:
        from .reference import example_robot_urdf
        try:
            name_or_path = example_robot_urdf(EXAMPLE_ROBOTS[name_or_path.lower()])
        except FileNotFoundError as error:
            raise FileNotFoundError(f"robot {name_or_path!r} is example-robot-data's: {error} "
                                    "(pip install example-robot-data)") from None
    if _is_builtin(name_or_path):
        data, origin = _builtin_dict(name_or_path.lower())
        robot = robot_from_dict(data, origin=origin)
    else:
        path = Path(name_or_path)
        loader = ROBOT_FORMATS.get(path.suffix.lower())
        if loader is None:
            raise RobotDescriptionError(
                f"unknown robot {os.fspath(name_or_path)!r}: not a built-in robot "
                f"({', '.join(BUILTIN_ROBOTS)}), nor one of example-robot-data's "
                f"({', '.join(EXAMPLE_ROBOTS)}), nor a "
                f"{' or '.join(ROBOT_FORMATS)} file")
        if not path.is_file():
            raise FileNotFoundError(f"robot file {os.fspath(path)!r} does not exist")
        robot, cut = loader(path, tip)
        if cut:
            return robot
    if tip is not None:
        robot = truncate(robot, tip)
    return robot


def robot_source(name_or_path):
    """Return the ``source`` text of a built-in robot or a robot file: where its numbers come from.

    Parameters
    ----------
    name_or_path : str or os.PathLike
        A built-in name or the path of a ``.json`` robot file.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    RobotDescriptionError
        If the file is not valid JSON or its ``source`` is not text.
    """
    data, origin = _description(name_or_path)
    if not isinstance(data, dict):
        raise RobotDescriptionError(f"robot file {origin!r} must hold a JSON object")
    return _source_text(data, origin=origin)
