"""Robot files: exact round trip, the ``parameters`` alternative, and clear errors on bad files."""

import copy
import json
import math
from importlib import resources

import numpy as np
import pytest

from linkdyn.model import (BUILTIN_ROBOTS, Friction, JointLimits, Link, Robot,
                           RobotDescriptionError, load_robot, read_robot_file, rnea, save_robot)
from linkdyn.model.robotfile import (FORMAT, VERSION, robot_from_dict, robot_source,
                                     robot_to_dict)


def assert_same_robot(a, b):
    """Every number of two robots is equal, bit for bit."""
    assert a.name == b.name and a.n == b.n
    for attribute in ("gravity", "base", "tool"):
        assert np.array_equal(getattr(a, attribute), getattr(b, attribute)), attribute
    for x, y in zip(a.links, b.links):
        assert (x.name, x.joint_type, x.a, x.d, x.alpha, x.offset, x.mass) == (
            y.name, y.joint_type, y.a, y.d, y.alpha, y.offset, y.mass)
        assert np.array_equal(x.com, y.com) and np.array_equal(x.inertia, y.inertia)
        assert x.friction == y.friction and x.limits == y.limits


def random_robot(seed, n=5):
    """A robot with awkward floats everywhere (full inertias, rotations, limits, friction)."""
    rng = np.random.default_rng(seed)
    links = []
    for i in range(n):
        a = rng.normal(size=(3, 3))
        second_moment = a @ a.T * 0.01  # any PSD second moment gives a realisable inertia
        inertia = np.trace(second_moment) * np.eye(3) - second_moment
        links.append(Link(
            f"link {i} ü", a=rng.normal(), d=rng.normal(), alpha=rng.uniform(-3, 3),
            offset=rng.uniform(-1, 1), mass=rng.uniform(0.1, 10), com=rng.normal(size=3) / 10,
            inertia=inertia,
            friction=Friction(coulomb=rng.uniform(), viscous=rng.uniform(), offset=rng.normal(),
                              steepness=rng.uniform(10, 200)),
            limits=JointLimits(q_min=-rng.uniform(1, 3), q_max=rng.uniform(1, 3),
                               qd_max=rng.uniform(1, 5), tau_max=rng.uniform(10, 100))))
    c, s = math.cos(0.7), math.sin(0.7)
    base = np.array([[c, -s, 0, 0.1], [s, c, 0, -0.2], [0, 0, 1, 0.3], [0, 0, 0, 1]])
    tool = np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0.05], [0, 0, 0, 1.0]])
    return Robot(f"random{seed}", tuple(links), gravity=rng.normal(size=3), base=base, tool=tool)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_robot_round_trips_through_a_file_bit_for_bit(tmp_path, seed):
    robot = random_robot(seed)
    path = save_robot(robot, tmp_path / "robot.json", source="made up")
    assert_same_robot(read_robot_file(path), robot)
    assert_same_robot(load_robot(path), robot)
    assert robot_source(json.loads(path.read_text(encoding="utf-8"))) == "made up"


@pytest.mark.parametrize("name", BUILTIN_ROBOTS)
def test_builtin_files_round_trip_exactly(tmp_path, name):
    text = resources.files("linkdyn.model.data").joinpath(f"{name}.json").read_text("utf-8")
    data = json.loads(text)
    robot = robot_from_dict(data)
    # dict -> robot -> dict gives the file's object back, and save_robot its text.
    assert robot_to_dict(robot, source=data["source"]) == data
    path = save_robot(robot, tmp_path / f"{name}.json", source=data["source"])
    assert path.read_text(encoding="utf-8") == text
    assert_same_robot(read_robot_file(path), load_robot(name))


def test_parameters_are_an_alternative_to_mass_com_inertia(tmp_path):
    robot = load_robot("puma560")
    data = robot_to_dict(robot)
    for entry, link in zip(data["links"], robot.links):
        for key in ("mass", "com", "inertia"):
            del entry[key]
        entry["parameters"] = link.parameters().tolist()
    data["links"][1]["parameters"] = dict(zip(
        ["m", "mc_x", "mc_y", "mc_z", "I_xx", "I_xy", "I_xz", "I_yy", "I_yz", "I_zz"],
        robot.links[1].parameters().tolist()))
    again = robot_from_dict(data)
    np.testing.assert_allclose(again.parameters(), robot.parameters(), rtol=1e-13, atol=1e-15)
    rng = np.random.default_rng(3)
    q, qd, qdd = (rng.uniform(-1, 1, (20, 6)) for _ in range(3))
    np.testing.assert_allclose(rnea(again, q, qd, qdd), rnea(robot, q, qd, qdd),
                               rtol=1e-12, atol=1e-12)


def test_inertia_may_be_a_matrix_and_optional_fields_have_defaults():
    data = {"format": FORMAT, "version": VERSION, "name": "two",
            "links": [{"name": "a", "a": 0.5, "d": 0, "alpha": 0, "mass": 1.0,
                       "com": [0.25, 0, 0], "inertia": [[0.01, 0, 0], [0, 0.02, 0], [0, 0, 0.02]]},
                      {"name": "b", "a": 0.5, "d": 0, "alpha": 0, "mass": 0}]}
    robot = robot_from_dict(data)
    assert robot.links[0].inertia[1, 1] == 0.02 and robot.links[1].mass == 0
    assert robot.gravity.tolist() == [0, 0, -9.80665]
    assert np.array_equal(robot.base, np.eye(4)) and not robot.has_friction
    assert robot.links[0].limits == JointLimits()


# --- bad files ------------------------------------------------------------------------------

def _write(tmp_path, data, name="bad.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _ur5():
    return robot_to_dict(load_robot("ur5"))


def _expect_error(tmp_path, data, *fragments, error=RobotDescriptionError):
    path = _write(tmp_path, data)
    with pytest.raises(error) as raised:
        read_robot_file(path)
    message = str(raised.value)
    assert "bad.json" in message, message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


def test_missing_file_raises_file_not_found_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.json"):
        read_robot_file(tmp_path / "nothing.json")


def test_invalid_json_names_file_line_and_column(tmp_path):
    _expect_error(tmp_path, '{"format": "linkdyn-robot",\n  "version": 1,,\n}', "line 2")


def test_nan_in_a_file_is_rejected(tmp_path):
    text = json.dumps(_ur5(), indent=1).replace('"mass": 8.393', '"mass": NaN')
    _expect_error(tmp_path, text, "NaN")


@pytest.mark.parametrize("change, fragments", [
    (lambda d: d.update(format="urdf"), ["'format'", "'urdf'"]),
    (lambda d: d.update(version=2), ["version 2"]),
    (lambda d: d.update(version="1"), ["'version'"]),
    (lambda d: d.update(colour="red"), ["unknown field", "'colour'"]),
    (lambda d: d.pop("name"), ["'name'"]),
    (lambda d: d.update(links=[]), ["'links'"]),
    (lambda d: d.update(gravity=[0, 0]), ["'gravity'"]),
    (lambda d: d.update(source=5), ["'source'"]),
    (lambda d: d["base"][0].__setitem__(0, 2.0), ["base transform must be a rigid transform"]),
    (lambda d: d["links"][1].update(name="shoulder_link"), ["repeated link names"]),
])
def test_bad_robot_fields_are_named(tmp_path, change, fragments):
    data = _ur5()
    change(data)
    _expect_error(tmp_path, data, *fragments)


@pytest.mark.parametrize("change, fragments", [
    (lambda e: e.pop("a"), ["field 'a'"]),
    (lambda e: e.update(mas=1.0), ["unknown field", "'mas'"]),
    (lambda e: e.update(d="0.1"), ["field 'd'", "'0.1'"]),
    (lambda e: e.update(alpha=True), ["field 'alpha'", "True"]),
    (lambda e: e.update(mass=-2.33), ["mass", "-2.33"]),
    (lambda e: e.pop("mass"), ["'mass'"]),
    (lambda e: e.update(com=[0.1, 0.2]), ["field 'com'"]),
    (lambda e: e.update(inertia={"ixx": 1}), ["field 'inertia'", "missing"]),
    (lambda e: e.update(inertia=[[0.1, 0.01, 0], [0, 0.1, 0], [0, 0, 0.1]]),
     ["inertia must be symmetric", "0.01"]),
    (lambda e: e["inertia"].update(ixx=-0.1), ["inertia must be positive semi-definite"]),
    (lambda e: e["inertia"].update(izz=1.0), ["triangle inequality"]),
    (lambda e: e.update(parameters=[0] * 10), ["both 'parameters' and"]),
    (lambda e: e["friction"].update(steepness=-5), ["field 'friction'", "steepness", "-5"]),
    (lambda e: e["friction"].update(stiction=1), ["field 'friction'", "'stiction'"]),
    (lambda e: e["limits"].update(q_min=7.0), ["field 'limits'", "q_min 7.0"]),
    (lambda e: e.update(joint_type="spherical"), ["joint type", "'spherical'"]),
])
def test_bad_link_fields_name_file_link_and_field(tmp_path, change, fragments):
    data = _ur5()
    change(data["links"][2])
    _expect_error(tmp_path, data, "'forearm_link'", *fragments)


def test_zero_mass_with_first_moment_in_parameters_is_rejected(tmp_path):
    data = _ur5()
    entry = data["links"][3]
    for key in ("mass", "com", "inertia"):
        del entry[key]
    entry["parameters"] = [0, 0.1, 0, 0, 0.01, 0, 0, 0.01, 0, 0.01]
    _expect_error(tmp_path, data, "'wrist_1_link'", "zero mass", "first moment")


def test_prismatic_joint_in_a_file_is_read(tmp_path):
    data = _ur5()
    data["links"][4]["joint_type"] = "prismatic"
    robot = read_robot_file(_write(tmp_path, data))
    assert robot.links[4].joint_type == "prismatic"


def test_a_link_that_is_not_an_object_is_named_by_index(tmp_path):
    data = _ur5()
    data["links"][5] = [1, 2, 3]
    _expect_error(tmp_path, data, "link 5")


def test_save_robot_refuses_what_json_cannot_hold(tmp_path):
    with pytest.raises(TypeError, match="source"):
        save_robot(load_robot("ur5"), tmp_path / "x.json", source=3)
    with pytest.raises(TypeError, match="Robot"):
        robot_to_dict(copy.copy(_ur5()))
