"""Robot files: a versioned JSON description of a :class:`~linkdyn.model.Robot`.

A robot file is one JSON object::

    {
      "format": "linkdyn-robot",
      "version": 1,
      "name": "ur5",
      "source": "where every number comes from (free text, or a list of lines)",
      "gravity": [0.0, 0.0, -9.81],
      "base": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
      "tool": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
      "links": [
        {
          "name": "shoulder_link",
          "joint_type": "revolute",
          "a": 0.0, "d": 0.089159, "alpha": 1.5707963267948966, "offset": 0.0,
          "mass": 3.7,
          "com": [0.0, -0.02561, 0.00193],
          "inertia": {"ixx": 0.0102, "ixy": 0.0, "ixz": 0.0,
                      "iyy": 0.00666, "iyz": 0.0, "izz": 0.0102},
          "friction": {"coulomb": 0.0, "viscous": 0.0, "offset": 0.0, "steepness": 100.0},
          "limits": {"q_min": -6.283, "q_max": 6.283, "qd_max": 3.14,
                     "qdd_max": null, "tau_max": 150.0}
        }
      ]
    }

Units are SI (m, rad, kg, kg·m^2, N·m, N·m·s/rad, s/rad). Links run from the base to the tip; the
DH convention, the frames and the meaning of every field are those of
:class:`~linkdyn.model.Link` (standard DH, centre of mass and inertia in DH frame ``i``).

Fields that may be left out: ``source`` (empty), ``gravity`` (``(0, 0, -9.80665)``), ``base`` and
``tool`` (identity), per link ``joint_type`` (revolute), ``offset`` (0), ``com`` (zero),
``inertia`` (zero), ``friction`` (none, steepness 100), ``limits`` (none) and every single friction
or limit entry.

Trees (docs/trees.md): a link may give ``parent``, the 0-based index of its parent link in the
``links`` list (``-1``: the base; every parent before its children), default the previous link
(a chain); ``mount``, the ``[a, d, alpha, theta]`` of the constant DH step from the parent's DH
frame to the frame on this joint's axis (:attr:`~linkdyn.model.Link.mount`), default zero; and
``joint_name``, default the link name. ``joint_type`` ``"prismatic"`` makes ``d`` the offset of
the joint variable (``d = q + d``) and ``offset`` the constant joint angle. :func:`save_robot`
writes these three fields only where they differ from the default, so a chain's file is
unchanged.

Instead of ``mass``, ``com`` and ``inertia`` a link may give ``parameters``: the source paper's 10
inertial parameters of eq. (11), ``(m, m c_x, m c_y, m c_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz)``
with the inertia about the *origin* of DH frame ``i``, either as a list in that order or as an
object keyed by :data:`~linkdyn.model.PARAMETER_NAMES`. ``inertia`` is the inertia about the
*centre of mass*; it may also be a 3x3 nested list.

:func:`save_robot` always writes ``mass``, ``com`` and ``inertia`` (the values a
:class:`~linkdyn.model.Link` holds) with Python's shortest round-trip float representation, so
``read_robot_file(save_robot(robot, path))`` reproduces every number of ``robot`` bit for bit.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

from .robot import PARAMETER_NAMES, Friction, JointLimits, Link, Robot, RobotDescriptionError

__all__ = [
    "FORMAT", "VERSION", "robot_to_dict", "robot_from_dict", "save_robot", "read_robot_file",
    "read_robot_dict", "robot_source", "dumps_robot_dict",
]

#: Value of the ``"format"`` field of every robot file.
FORMAT = "linkdyn-robot"

#: Version of the robot file format written by :func:`save_robot`; the newest one read.
VERSION = 1

_ROBOT_KEYS = ("format", "version", "name", "source", "gravity", "base", "tool", "links")
_LINK_KEYS = ("name", "joint_type", "a", "d", "alpha", "offset", "mass", "com", "inertia",
              "parameters", "friction", "limits", "parent", "mount", "joint_name")
_FRICTION_KEYS = ("coulomb", "viscous", "offset", "steepness")
_LIMIT_KEYS = ("q_min", "q_max", "qd_max", "qdd_max", "tau_max")
_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def _where(origin):
    return f"robot file {str(origin)!r}" if origin is not None else "robot description"


def _check_keys(mapping, allowed, what):
    if not isinstance(mapping, dict):
        raise RobotDescriptionError(f"{what} must be a JSON object, not {mapping!r}")
    unknown = [key for key in mapping if key not in allowed]
    if unknown:
        raise RobotDescriptionError(
            f"{what} has unknown field(s) {unknown!r}; allowed are {list(allowed)!r}")


def _number(value, what):
    # bool is an int in Python; a JSON true/false is never a valid number here.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RobotDescriptionError(f"{what} must be a number, not {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise RobotDescriptionError(f"{what} must be finite, not {value!r}")
    return number


def _numbers(value, shape, what):
    array = np.array(value, dtype=object)
    if array.shape != shape:
        raise RobotDescriptionError(
            f"{what} must be {_shape_text(shape)}, not {value!r}")
    return np.array([_number(v, what) for v in array.ravel()], dtype=float).reshape(shape)


def _shape_text(shape):
    if len(shape) == 1:
        return f"a list of {shape[0]} numbers"
    return f"a {shape[0]}x{shape[1]} nested list of numbers"


def _inertia(value, what):
    if isinstance(value, dict):
        _check_keys(value, _INERTIA_KEYS, what)
        missing = [key for key in _INERTIA_KEYS if key not in value]
        if missing:
            raise RobotDescriptionError(f"{what} is missing {missing!r}")
        ixx, ixy, ixz, iyy, iyz, izz = (_number(value[k], f"{what} {k}") for k in _INERTIA_KEYS)
        return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    return _numbers(value, (3, 3), what)


def _parameters(value, what):
    if isinstance(value, dict):
        _check_keys(value, PARAMETER_NAMES, what)
        missing = [key for key in PARAMETER_NAMES if key not in value]
        if missing:
            raise RobotDescriptionError(f"{what} is missing {missing!r}")
        return np.array([_number(value[k], f"{what} {k}") for k in PARAMETER_NAMES])
    return _numbers(value, (10,), what)


def _transform(value, what):
    return _numbers(value, (4, 4), what)


def _friction(value, what):
    _check_keys(value, _FRICTION_KEYS, what)
    values = {key: _number(value[key], f"{what} {key}") for key in _FRICTION_KEYS if key in value}
    try:
        return Friction(**values)
    except RobotDescriptionError as error:
        raise RobotDescriptionError(f"{what}: {error}") from None


def _limits(value, what):
    _check_keys(value, _LIMIT_KEYS, what)
    values = {key: None if value[key] is None else _number(value[key], f"{what} {key}")
              for key in _LIMIT_KEYS if key in value}
    try:
        return JointLimits(**values)
    except RobotDescriptionError as error:
        raise RobotDescriptionError(f"{what}: {error}") from None


def _link_from_dict(entry, index, where):
    if not isinstance(entry, dict):
        raise RobotDescriptionError(f"{where}: link {index} must be a JSON object, not {entry!r}")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise RobotDescriptionError(
            f"{where}: link {index} field 'name' must be a non-empty string, not {name!r}")
    label = f"{where}: link {name!r} (index {index})"
    _check_keys(entry, _LINK_KEYS, label)
    for key in ("a", "d", "alpha"):
        if key not in entry:
            raise RobotDescriptionError(f"{label} is missing the field {key!r}")
    kwargs = {key: _number(entry[key], f"{label} field {key!r}")
              for key in ("a", "d", "alpha", "offset") if key in entry}
    if "joint_type" in entry:
        kwargs["joint_type"] = entry["joint_type"]
    if "mount" in entry:
        kwargs["mount"] = _numbers(entry["mount"], (4,), f"{label} field 'mount'")
    try:
        if "friction" in entry:
            kwargs["friction"] = _friction(entry["friction"], f"{label} field 'friction'")
        if "limits" in entry:
            kwargs["limits"] = _limits(entry["limits"], f"{label} field 'limits'")
        if "parameters" in entry:
            both = [key for key in ("mass", "com", "inertia") if key in entry]
            if both:
                raise RobotDescriptionError(
                    f"{label} gives both 'parameters' and {both!r}; give one or the other")
            parameters = _parameters(entry["parameters"], f"{label} field 'parameters'")
            return Link.from_parameters(name, parameters, **kwargs)
        if "mass" not in entry:
            raise RobotDescriptionError(
                f"{label} is missing the field 'mass' (or 'parameters')")
        kwargs["mass"] = _number(entry["mass"], f"{label} field 'mass'")
        if "com" in entry:
            kwargs["com"] = _numbers(entry["com"], (3,), f"{label} field 'com'")
        if "inertia" in entry:
            kwargs["inertia"] = _inertia(entry["inertia"], f"{label} field 'inertia'")
        return Link(name, **kwargs)
    except RobotDescriptionError as error:
        # Our own messages carry the label already; those of Link name the link and the field.
        message = str(error)
        if not message.startswith(where):
            message = f"{where}: {message} (link index {index})"
        raise RobotDescriptionError(message) from None


def robot_from_dict(data, *, origin=None):
    """Build a robot from the parsed JSON object of a robot file.

    Parameters
    ----------
    data : dict
        The robot file's content (see the module docstring).
    origin : str or os.PathLike, optional
        Where ``data`` came from; named in error messages.

    Returns
    -------
    Robot
        The robot; the ``source`` text is not part of it (see :func:`robot_source`).

    Raises
    ------
    RobotDescriptionError
        If the format or version is not supported, a field is missing, unknown, of the wrong type
        or shape, or a value is not physically valid. The message names the file, the link (name
        and 0-based index) and the field.
    """
    where = _where(origin)
    if not isinstance(data, dict):
        raise RobotDescriptionError(f"{where} must hold a JSON object, not {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise RobotDescriptionError(
            f"{where}: field 'format' must be {FORMAT!r}, not {data.get('format')!r}")
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise RobotDescriptionError(
            f"{where}: field 'version' must be a positive integer, not {version!r}")
    if version > VERSION:
        raise RobotDescriptionError(
            f"{where} has format version {version}; this linkdyn reads versions up to {VERSION}")
    _check_keys(data, _ROBOT_KEYS, where)
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise RobotDescriptionError(
            f"{where}: field 'name' must be a non-empty string, not {name!r}")
    robot_source(data, origin=origin)  # type check only
    links = data.get("links")
    if not isinstance(links, list) or not links:
        raise RobotDescriptionError(
            f"{where}: field 'links' must be a non-empty list, not {links!r}")
    kwargs = {}
    if "gravity" in data:
        kwargs["gravity"] = _numbers(data["gravity"], (3,), f"{where}: field 'gravity'")
    for key in ("base", "tool"):
        if key in data:
            kwargs[key] = _transform(data[key], f"{where}: field {key!r}")
    parsed = tuple(_link_from_dict(entry, index, where) for index, entry in enumerate(links))
    parents, joint_names = [], []
    for index, entry in enumerate(links):
        parent = entry.get("parent", index - 1)
        if isinstance(parent, bool) or not isinstance(parent, int):
            raise RobotDescriptionError(
                f"{where}: link {entry['name']!r} (index {index}) field 'parent' must be an "
                f"integer link index (-1 for the base), not {parent!r}")
        parents.append(parent)
        joint_name = entry.get("joint_name", entry["name"])
        if not isinstance(joint_name, str) or not joint_name:
            raise RobotDescriptionError(
                f"{where}: link {entry['name']!r} (index {index}) field 'joint_name' must be a "
                f"non-empty string, not {joint_name!r}")
        joint_names.append(joint_name)
    # Left out (None) when no link gives them: the Robot's defaults, which follow its links.
    if any("parent" in entry for entry in links):
        kwargs["parents"] = tuple(parents)
    if any("joint_name" in entry for entry in links):
        kwargs["joint_names"] = tuple(joint_names)
    try:
        return Robot(name, parsed, **kwargs)
    except RobotDescriptionError as error:
        raise RobotDescriptionError(f"{where}: {error}") from None
    except NotImplementedError as error:
        raise NotImplementedError(f"{where}: {error}") from None


def robot_source(data, *, origin=None):
    """Return the ``source`` text of a robot file's JSON object (empty if there is none).

    A list of strings (one per line, for readability in the file) is joined with newlines.

    Raises
    ------
    RobotDescriptionError
        If ``source`` is neither a string nor a list of strings.
    """
    source = data.get("source", "")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "\n".join(source)
    if not isinstance(source, str):
        raise RobotDescriptionError(
            f"{_where(origin)}: field 'source' must be a string or a list of strings, "
            f"not {source!r}")
    return source


def _float(value):
    return float(value)


def _matrix(array):
    return [[_float(v) for v in row] for row in np.asarray(array)]


def _limits_dict(limits):
    return {key: getattr(limits, key) for key in _LIMIT_KEYS if getattr(limits, key) is not None}


def robot_to_dict(robot, *, source=""):
    """Return the JSON object of a robot file describing ``robot``.

    Parameters
    ----------
    robot : Robot
        The robot.
    source : str or list of str
        Where the numbers come from (free text; a list is written as one line per item).

    Returns
    -------
    dict
        Only JSON types; :func:`robot_from_dict` turns it back into an identical robot. Inertial
        data is written as ``mass``, ``com`` and ``inertia`` (about the centre of mass), the
        values the :class:`~linkdyn.model.Link` objects hold. Limits that are ``None`` are left
        out.

    Raises
    ------
    TypeError
        If ``robot`` is not a :class:`~linkdyn.model.Robot` or ``source`` is not text.
    """
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    if not (isinstance(source, str)
            or (isinstance(source, list) and all(isinstance(s, str) for s in source))):
        raise TypeError(f"source must be a string or a list of strings, not {source!r}")
    links = []
    for link in robot.links:
        inertia = link.inertia
        links.append({
            "name": link.name,
            "joint_type": link.joint_type,
            "a": link.a, "d": link.d, "alpha": link.alpha, "offset": link.offset,
            "mass": link.mass,
            "com": [_float(v) for v in link.com],
            "inertia": {"ixx": _float(inertia[0, 0]), "ixy": _float(inertia[0, 1]),
                        "ixz": _float(inertia[0, 2]), "iyy": _float(inertia[1, 1]),
                        "iyz": _float(inertia[1, 2]), "izz": _float(inertia[2, 2])},
            "friction": {key: getattr(link.friction, key) for key in _FRICTION_KEYS},
            "limits": _limits_dict(link.limits),
        })
        index = len(links) - 1
        if robot.parents[index] != index - 1:
            links[-1]["parent"] = robot.parents[index]
        if link.has_mount:
            links[-1]["mount"] = [_float(v) for v in link.mount]
        if robot.joint_names[index] != link.name:
            links[-1]["joint_name"] = robot.joint_names[index]
    return {
        "format": FORMAT,
        "version": VERSION,
        "name": robot.name,
        "source": source,
        "gravity": [_float(v) for v in robot.gravity],
        "base": _matrix(robot.base),
        "tool": _matrix(robot.tool),
        "links": links,
    }


def save_robot(robot, path, *, source=""):
    """Write ``robot`` to a robot file (JSON, UTF-8, format version :data:`VERSION`).

    Parameters
    ----------
    robot : Robot
        The robot.
    path : str or os.PathLike
        File to write; it is replaced if it exists.
    source : str or list of str
        Where the numbers come from, written to the ``source`` field.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    path.write_text(dumps_robot_dict(robot_to_dict(robot, source=source)), encoding="utf-8")
    return path


def dumps_robot_dict(data):
    """Return the text of a robot file: JSON, two-space indent, one line per list of numbers.

    Raises
    ------
    ValueError
        If a number is not finite (JSON has no ``NaN`` or ``Infinity``).
    """
    return _dumps(data, 0) + "\n"


def _is_flat(value):
    # A list of numbers (or nulls) goes on one line; matrices get one row per line, and the
    # lines of a ``source`` text one per line.
    return all(not isinstance(v, (list, dict, str)) for v in value)


def _dumps(value, level):
    pad = "  " * (level + 1)
    if isinstance(value, dict) and value:
        if all(not isinstance(v, (list, dict)) for v in value.values()):
            return json.dumps(value, allow_nan=False)
        items = [f"{pad}{json.dumps(k)}: {_dumps(v, level + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * level + "}"
    if isinstance(value, list) and value and not _is_flat(value):
        items = [f"{pad}{_dumps(v, level + 1)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + "  " * level + "]"
    return json.dumps(value, allow_nan=False)


def _reject_constant(token):
    raise ValueError(f"{token} is not a valid JSON number")


def read_robot_dict(path):
    """Read a robot file's JSON object without building the robot.

    Parameters
    ----------
    path : str or os.PathLike
        The robot file.

    Raises
    ------
    FileNotFoundError
        If the file does not exist (the message holds the path).
    RobotDescriptionError
        If the file is not valid JSON (``NaN`` and ``Infinity`` are not JSON), naming the file,
        line and column.
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file, parse_constant=_reject_constant)
    except FileNotFoundError:
        raise FileNotFoundError(f"robot file {path!r} does not exist") from None
    except json.JSONDecodeError as error:
        raise RobotDescriptionError(
            f"robot file {path!r} is not valid JSON: {error.msg} at line {error.lineno} "
            f"column {error.colno}") from None
    except ValueError as error:  # a NaN or Infinity constant, or bad UTF-8
        raise RobotDescriptionError(f"robot file {path!r} is not valid JSON: {error}") from None


def read_robot_file(path):
    """Read a robot from a robot file.

    Parameters
    ----------
    path : str or os.PathLike
        The robot file (JSON, see the module docstring).

    Returns
    -------
    Robot

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    RobotDescriptionError
        If the file is not valid JSON or not a valid robot description; the message names the
        file, the link and the field.
    """
    return robot_from_dict(read_robot_dict(path), origin=os.fspath(path))
