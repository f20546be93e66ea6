"""URDF import without Pinocchio: error messages, merging, limits, DH construction, kinematics.

The kinematics are checked against a direct evaluation of the URDF joint chain (numpy); the
dynamics against Pinocchio are in ``test_urdf_pinocchio.py``.
"""

import math
import re
import warnings

import numpy as np
import pytest

from linkdyn.model import Robot, RobotDescriptionError, rnea
from linkdyn.model.kinematics import link_frames, tool_pose
from linkdyn.model.urdf import load_urdf

INERTIA = (0.031, 0.004, -0.006, 0.042, 0.003, 0.027)


def link(name, mass=None, xyz="0 0 0", rpy="0 0 0", inertia=INERTIA):
    if mass is None:
        return f'<link name="{name}"/>'
    ixx, ixy, ixz, iyy, iyz, izz = inertia
    return (f'<link name="{name}"><inertial><origin xyz="{xyz}" rpy="{rpy}"/>'
            f'<mass value="{mass}"/><inertia ixx="{ixx}" ixy="{ixy}" ixz="{ixz}" iyy="{iyy}" '
            f'iyz="{iyz}" izz="{izz}"/></inertial></link>')


def joint(name, parent, child, kind="revolute", xyz="0 0 0", rpy="0 0 0", axis="0 0 1",
          limit='<limit lower="-2.5" upper="2.5" velocity="3" effort="50"/>', extra=""):
    axis_tag = f'<axis xyz="{axis}"/>' if axis is not None else ""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{xyz}" rpy="{rpy}"/>{axis_tag}{limit}{extra}'
            f'</joint>')


def write(tmp_path, *elements, name="arm"):
    path = tmp_path / f"{name}.urdf"
    path.write_text(f'<?xml version="1.0"?>\n<robot name="{name}">\n' + "\n".join(elements)
                    + "\n</robot>\n")
    return path


def two_link(tmp_path, **kwargs):
    """A small valid arm; keyword arguments replace its elements for error cases."""
    elements = {
        "base": link("base", 1.0),
        "l1": link("l1", 2.0, "0.05 0 0.1", "0.2 0 0"),
        "l2": link("l2", 1.0, "0.2 0 0"),
        "j1": joint("j1", "base", "l1", xyz="0 0 0.2"),
        "j2": joint("j2", "l1", "l2", xyz="0 0.1 0.3", rpy="1.5707963267948966 0 0"),
    }
    elements.update(kwargs)
    return write(tmp_path, *[e for e in elements.values() if e])


# ----------------------------------------------------------------------------------------------
# A direct evaluation of the URDF chain, independent of the DH conversion
# ----------------------------------------------------------------------------------------------

def rpy(roll, pitch, yaw):
    def rx(a):
        return np.array([[1, 0, 0], [0, math.cos(a), -math.sin(a)], [0, math.sin(a), math.cos(a)]])

    def ry(a):
        return np.array([[math.cos(a), 0, math.sin(a)], [0, 1, 0], [-math.sin(a), 0, math.cos(a)]])

    def rz(a):
        return np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
    return rz(yaw) @ ry(pitch) @ rx(roll)


def axis_angle(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k


def urdf_chain_pose(steps, q):
    """Pose of the last link of a list of (xyz, rpy, axis or None) joints at angles q."""
    pose = np.eye(4)
    angles = iter(q)
    for xyz, angles_rpy, axis in steps:
        step = np.eye(4)
        step[:3, :3] = rpy(*angles_rpy)
        step[:3, 3] = xyz
        pose = pose @ step
        if axis is not None:
            turn = np.eye(4)
            turn[:3, :3] = axis_angle(axis, next(angles))
            pose = pose @ turn
    return pose


def chain_urdf(tmp_path, steps, name="chain"):
    """A URDF of the (xyz, rpy, axis) steps; axis None is a fixed joint."""
    elements = [link("l0", 1.0)]
    for k, (xyz, angles, axis) in enumerate(steps, start=1):
        elements.append(link(f"l{k}", 0.5 + 0.1 * k, "0.02 0.01 0.03", "0.1 0.2 0.3"))
        kind = "fixed" if axis is None else "revolute"
        elements.append(joint(f"j{k}", f"l{k - 1}", f"l{k}", kind, xyz=" ".join(map(str, xyz)),
                              rpy=" ".join(map(str, angles)),
                              axis=None if axis is None else " ".join(map(str, axis)),
                              limit="" if axis is None else
                              '<limit lower="-3" upper="3" velocity="2" effort="10"/>'))
    return write(tmp_path, *elements, name=name)


DEGENERATE = [
    ((0.02, 0.03, 0.1), (0.2, 0.1, 0.0), (0, 0, 1)),
    ((0, 0, 0.15), (0, 0, 0.7), (0, 0, 1)),                   # coincident
    ((0, 0, 0.1), (0, 0, -0.3), (0, 0, -1)),                  # antiparallel, coincident
    ((0.1, 0, 0.05), (0.3, 0, 0), None),                      # fixed
    ((0.2, 0.1, 0), (-0.3, 0, 0), (0, 0, 1)),                 # parallel, offset
    ((0, 0, 0.1), (0, math.pi / 2, 0), (0, 0, -1)),           # intersecting
    ((0.05, 0.1, 0), (0.4, 0, 0), (1, 0, 0)),                 # skew
    ((0, 0.1, 0.2), (0, 0, 0), (0, 0.6, 0.8)),                # skew, oblique axis
    ((0, 0, 0.1), (0.1, 0.2, 0.3), None),                     # fixed tool
]


@pytest.mark.parametrize("steps", [
    DEGENERATE,
    [((0.1, 0.2, 0.3), (0.4, -0.2, 1.0), (1, 1, 0))],        # one joint
    [((0, 0, 0.1), (0, 0, 0), (0, 0, 1)), ((0, 0, 0.2), (0, 0, 0), (0, 0, -1)),
     ((0, 0, 0.3), (0, 0, 0), (0, 0, 1))],                      # all axes coincident
    [((0.3, 0, 0), (0, 0, 0), (0, 1, 0)), ((0.4, 0, 0), (0, 0, 0), (0, 1, 0)),
     ((0.3, 0.1, 0), (0, 0, 0), (0, -1, 0))],                   # planar arm, axis along y
    [((0, 0, 0.1), (0, 0, 0), (0, 0, 1)), ((0, 0.3, 0.1), (1e-3, 0, 0), (0, 0, 1)),
     ((0, 0.3, 0.1), (0, 0, 0), (1, 0, 0))],                    # ill-conditioned, still exact
], ids=["degenerate", "one-joint", "coincident", "planar", "nearly-parallel"])
@pytest.mark.filterwarnings("ignore:URDF .* ill-conditioned:UserWarning")
def test_kinematics_match_the_urdf(tmp_path, steps):
    robot = load_urdf(chain_urdf(tmp_path, steps), tip=f"l{len(steps)}")
    movable = [s for s in steps if s[2] is not None]
    assert robot.n == len(movable)
    # Rounding grows with the DH lengths (300 m for the nearly parallel axes).
    atol = 1e-12 * max(1.0, np.max(np.abs(robot.dh[:, :2])))
    rng = np.random.default_rng(11)
    for q in rng.uniform(-3, 3, (50, robot.n)):
        frames = link_frames(robot, q)
        assert np.allclose(frames[-1] @ robot.tool, urdf_chain_pose(steps, q), rtol=0,
                           atol=atol)
        # z_{i-1} is joint i's axis with the URDF sign.
        pose = np.eye(4)
        angles = iter(q)
        i = 0
        for xyz, angles_rpy, axis in steps:
            step = np.eye(4)
            step[:3, :3] = rpy(*angles_rpy)
            step[:3, 3] = xyz
            pose = pose @ step
            if axis is not None:
                direction = pose[:3, :3] @ (np.array(axis, float) / np.linalg.norm(axis))
                assert np.allclose(frames[i][:3, 2], direction, rtol=0, atol=1e-12)
                offset = pose[:3, 3] - frames[i][:3, 3]
                assert np.linalg.norm(offset - (offset @ direction) * direction) < atol
                turn = np.eye(4)
                turn[:3, :3] = axis_angle(axis, next(angles))
                pose = pose @ turn
                i += 1
    assert robot.dh[0, 3] == 0.0                     # offset_1 = 0: x_0 = x_1 at q = 0
    assert tuple(robot.dh[-1, [0, 2, 3]]) == (0.0, 0.0, 0.0)


def test_zero_configuration_is_the_urdf_zero(tmp_path):
    robot = load_urdf(chain_urdf(tmp_path, DEGENERATE), tip=f"l{len(DEGENERATE)}")
    assert np.allclose(tool_pose(robot, np.zeros(robot.n)),
                       urdf_chain_pose(DEGENERATE, np.zeros(robot.n)), atol=1e-14)


# ----------------------------------------------------------------------------------------------
# Inertial data
# ----------------------------------------------------------------------------------------------

def test_rotated_inertial_origin_analytic(tmp_path):
    """rpy = (0, 0, pi/2) on the inertial origin swaps Ixx and Iyy (DH frame 1 = URDF frame)."""
    path = write(tmp_path, link("base"),
                 link("l1", 2.0, "0.1 0.2 0.3", "0 0 1.5707963267948966", (1, 0, 0, 2, 0, 3)),
                 joint("j1", "base", "l1"))
    robot = load_urdf(path)
    assert np.allclose(robot.base, np.eye(4), atol=1e-15)
    (l1,) = robot.links
    assert (l1.a, l1.d, l1.alpha, l1.offset) == (0.0, 0.0, 0.0, 0.0)
    assert l1.mass == 2.0
    assert np.allclose(l1.com, [0.1, 0.2, 0.3], atol=1e-15)
    assert np.allclose(l1.inertia, np.diag([2.0, 1.0, 3.0]), atol=1e-15)


def test_rotated_inertial_origin_general(tmp_path):
    """A general rpy: I_link = R I R^T with R = Rz(y) Ry(p) Rx(r)."""
    angles = (0.7, -0.4, 1.2)
    path = write(tmp_path, link("base"),
                 link("l1", 2.0, "0.1 0.2 0.3", " ".join(map(str, angles)), INERTIA),
                 joint("j1", "base", "l1"))
    ixx, ixy, ixz, iyy, iyz, izz = INERTIA
    inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    rotation = rpy(*angles)
    assert np.allclose(load_urdf(path).links[0].inertia, rotation @ inertia @ rotation.T,
                       rtol=0, atol=1e-15)


def test_fixed_joint_merge(tmp_path):
    """Two bodies joined by a rotated fixed joint merge into one: mass, com, inertia."""
    i_a = (0.01, 0.0, 0.0, 0.02, 0.0, 0.03)
    i_b = (0.004, 0.0, 0.0, 0.005, 0.0, 0.006)
    merged = write(tmp_path, link("base"),
                   link("l1", 2.0, "0.1 0 0", "0 0 0", i_a),
                   link("l1b", 1.0, "0 0 0.2", "0 0 0", i_b),
                   joint("j1", "base", "l1"),
                   joint("f", "l1", "l1b", "fixed", xyz="0.3 0 0", rpy="0 0 1.5707963267948966",
                         axis=None, limit=""), name="merged")
    robot = load_urdf(merged)
    (l1,) = robot.links
    # l1b's com in l1: (0.3, 0, 0.2); its axes turned by pi/2 about z: Ixx <-> Iyy.
    c_a, c_b = np.array([0.1, 0, 0]), np.array([0.3, 0, 0.2])
    com = (2.0 * c_a + 1.0 * c_b) / 3.0
    expected = np.diag([0.01, 0.02, 0.03]) + np.diag([0.005, 0.004, 0.006])
    for m, c in ((2.0, c_a), (1.0, c_b)):
        r = c - com
        expected = expected + m * (r @ r * np.eye(3) - np.outer(r, r))
    assert l1.mass == 3.0
    assert np.allclose(l1.com, com, rtol=0, atol=1e-15)
    assert np.allclose(l1.inertia, expected, rtol=0, atol=1e-15)
    # The same body written as one link gives the same robot.
    single = write(tmp_path, link("base"),
                   link("l1", 3.0, " ".join(map(str, com)), "0 0 0",
                        (expected[0, 0], expected[0, 1], expected[0, 2], expected[1, 1],
                         expected[1, 2], expected[2, 2])),
                   joint("j1", "base", "l1"), name="single")
    assert np.allclose(load_urdf(single).parameters(), robot.parameters(), rtol=0, atol=1e-14)


def test_movable_side_branch_is_locked_at_zero(tmp_path):
    """With tip=, links hanging off the chain through movable joints are merged at q = 0."""
    path = two_link(tmp_path,
                    finger=link("finger", 0.5, "0 0 0.01"),
                    jf=joint("jf", "l2", "finger", "prismatic", xyz="0.1 0 0", axis="0 1 0"),
                    finger2=link("finger2", 0.5, "0 0 0.01"),
                    jf2=joint("jf2", "l2", "finger2", "continuous", xyz="0.2 0 0"))
    robot = load_urdf(path, tip="l2")
    assert robot.n == 2 and robot.links[1].mass == 2.0
    rigid = two_link(tmp_path,
                     finger=link("finger", 0.5, "0 0 0.01"),
                     jf=joint("jf", "l2", "finger", "fixed", xyz="0.1 0 0", limit=""),
                     finger2=link("finger2", 0.5, "0 0 0.01"),
                     jf2=joint("jf2", "l2", "finger2", "fixed", xyz="0.2 0 0", limit=""))
    assert np.allclose(load_urdf(rigid).parameters(), robot.parameters(), rtol=0, atol=1e-15)


def test_joints_beyond_the_tip_are_locked_at_zero(tmp_path):
    robot = load_urdf(two_link(tmp_path), tip="l1")
    assert robot.n == 1 and robot.links[0].mass == 3.0
    assert robot.name == "arm" and robot.links[0].name == "l1"


def test_base_links_are_dropped_and_massless_links_allowed(tmp_path):
    path = two_link(tmp_path, base=link("base", 100.0), l2=link("l2"))
    robot = load_urdf(path)
    assert robot.links[1].mass == 0.0 and not robot.links[1].inertia.any()
    heavy_base = rnea(robot, [0.3, 0.2], [0.1, 0.2], [0.3, 0.4])
    light_base = rnea(load_urdf(two_link(tmp_path, base=link("base"), l2=link("l2"))),
                      [0.3, 0.2], [0.1, 0.2], [0.3, 0.4])
    assert np.array_equal(heavy_base, light_base)
    # A dropped base link's inertia is not validated (many URDFs carry placeholders there).
    load_urdf(two_link(tmp_path, base=link("base", 1.0, inertia=(0, 0, 0, 0, 0, 1e-6))))


# ----------------------------------------------------------------------------------------------
# Chain selection, limits, names, gravity
# ----------------------------------------------------------------------------------------------

def test_default_tip_is_the_last_movable_joints_child(tmp_path):
    path = two_link(tmp_path, tool=link("tool"),
                    jt=joint("jt", "l2", "tool", "fixed", xyz="0 0 0.1", axis=None, limit=""))
    robot = load_urdf(path)
    assert [l.name for l in robot.links] == ["l1", "l2"]
    assert np.allclose(robot.tool, np.eye(4), atol=1e-15)
    with_tool = load_urdf(path, tip="tool")
    assert np.allclose(with_tool.dh[:, :3], robot.dh[:, :3] + [[0, 0, 0], [0, 0.1, 0]],
                       atol=1e-15)
    shift = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0.1], [0, 0, 0, 1]])
    assert np.allclose(tool_pose(with_tool, np.zeros(with_tool.n)),
                       link_frames(robot, np.zeros(robot.n))[-1] @ shift, atol=1e-15)


def test_limits_names_gravity_friction(tmp_path):
    path = two_link(tmp_path, j2=joint("j2", "l1", "l2", "continuous", xyz="0 0.1 0.3",
                                       rpy="1.5707963267948966 0 0",
                                       limit='<limit lower="-1" upper="1" velocity="0" '
                                             'effort="20"/>',
                                       extra='<dynamics damping="0.5" friction="1.2"/>'))
    robot = load_urdf(path)
    assert isinstance(robot, Robot) and robot.name == "arm"
    first, second = robot.links
    assert (first.limits.q_min, first.limits.q_max) == (-2.5, 2.5)
    assert (first.limits.qd_max, first.limits.tau_max, first.limits.qdd_max) == (3.0, 50.0, None)
    assert (second.limits.q_min, second.limits.q_max) == (None, None)   # continuous
    assert second.limits.qd_max is None and second.limits.tau_max == 20.0  # 0 = not given
    assert not robot.has_friction                                         # dynamics ignored
    assert np.array_equal(robot.gravity, Robot("x", robot.links).gravity)
    other = load_urdf(path, name="renamed", gravity=(0, 0, -9.81))
    assert other.name == "renamed" and np.array_equal(other.gravity, [0, 0, -9.81])


def test_robot_name_defaults_to_file_stem(tmp_path):
    path = tmp_path / "nameless.urdf"
    path.write_text('<robot><link name="a"/><link name="b"/>'
                    '<joint name="j" type="continuous"><parent link="a"/><child link="b"/>'
                    '</joint></robot>')
    robot = load_urdf(path)
    assert robot.name == "nameless" and robot.n == 1
    # No <axis>: URDF's default (1, 0, 0); no <origin>: identity.
    assert np.allclose(robot.base[:3, 2], [1, 0, 0])


def test_snap_tolerance(tmp_path):
    path = two_link(tmp_path, j2=joint("j2", "l1", "l2", xyz="0 0.1 0.3",
                                       rpy="1.57079632679 0 0"))
    assert load_urdf(path).dh[0, 2] == math.pi / 2
    exact = load_urdf(path, snap_tolerance=0).dh[0, 2]
    assert exact != math.pi / 2 and abs(exact - 1.57079632679) < 1e-15
    with pytest.raises(ValueError, match="snap_tolerance"):
        load_urdf(path, snap_tolerance=-1)


def test_nearly_parallel_axes_warn(tmp_path):
    def urdf(angle):
        return two_link(tmp_path, j2=joint("j2", "l1", "l2", xyz="0 0.3 0.1",
                                           rpy=f"{angle} 0 0"))
    with pytest.warns(UserWarning, match=r"axes of joints 'j1' and 'j2' are parallel to "
                                         r"within 1e-08 rad and are treated as parallel"):
        load_urdf(urdf(1e-8))
    with pytest.warns(UserWarning, match=r"common normal of the axes of joints 'j1' and 'j2' "
                                         r"\(at 0.001 rad, nearly parallel\) lies .* m away"):
        robot = load_urdf(urdf(1e-3))
    assert abs(robot.dh[0, 1]) > 10
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_urdf(urdf(1e-12))
        load_urdf(urdf(0.5))


def test_mimic_joint_warns(tmp_path):
    path = two_link(tmp_path, j2=joint("j2", "l1", "l2", xyz="0 0.1 0.3",
                                       extra='<mimic joint="j1" multiplier="1"/>'))
    with pytest.warns(UserWarning, match="joint 'j2' has a <mimic> tag, which is ignored"):
        load_urdf(path)


# ----------------------------------------------------------------------------------------------
# Errors: each with a clear message
# ----------------------------------------------------------------------------------------------

def raises(path, pattern, error=RobotDescriptionError, **kwargs):
    with pytest.raises(error, match=pattern) as info:
        load_urdf(path, **kwargs)
    return str(info.value)


def test_error_is_a_value_error():
    assert issubclass(RobotDescriptionError, ValueError)


def test_missing_file(tmp_path):
    message = raises(tmp_path / "nope.urdf", "file does not exist")
    assert "nope.urdf" in message
    raises(tmp_path, "is not a file")


def test_not_xml(tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text("<robot name='x'><link name='a'></robot>")
    raises(path, "is not valid XML: mismatched tag")
    path.write_text("<sdf><model/></sdf>")
    raises(path, r"root element must be <robot>, not <sdf>")


def test_no_joints(tmp_path):
    raises(write(tmp_path, link("a", 1.0)), "has no joints")
    raises(write(tmp_path, link("a"), link("b"),
                 joint("f", "a", "b", "fixed", axis=None, limit="")),
           "has no revolute, continuous or prismatic joint")
    raises(two_link(tmp_path), "no revolute or continuous joint between root link 'base' and "
                               "tip link 'base'", tip="base")


def test_two_parents(tmp_path):
    path = two_link(tmp_path, j3=joint("j3", "base", "l2"))
    raises(path, "link 'l2' has two parents: joints 'j2' and 'j3'")


def test_cycles(tmp_path):
    raises(write(tmp_path, link("a"), link("b"), joint("j1", "a", "b"), joint("j2", "b", "a")),
           "has no root link .* kinematic cycle")
    raises(two_link(tmp_path, c=link("c"), d=link("d"), jc=joint("jc", "c", "d"),
                    jd=joint("jd", "d", "c")),
           r"joints 'jd', 'jc' form \(or hang off\) a kinematic cycle \(links 'c', 'd' are not "
           r"reachable")
    raises(write(tmp_path, link("a"), joint("j", "a", "a")), "connects link 'a' to itself")


def test_several_roots_and_undefined_links(tmp_path):
    raises(two_link(tmp_path, c=link("c"), d=link("d"), jc=joint("jc", "c", "d")),
           "several root links 'base', 'c'")
    raises(two_link(tmp_path, j2=joint("j2", "l1", "l3")), "joint 'j2' refers to undefined "
                                                           "link 'l3'")
    raises(two_link(tmp_path, l2b=link("l2")), "link 'l2' is defined twice")


def test_branched_without_tip_gives_the_tree(tmp_path):
    path = two_link(tmp_path,
                    left=link("left", 0.1), right=link("right", 0.1), tcp=link("tcp"),
                    jl=joint("jl", "l2", "left", "prismatic", axis="0 1 0"),
                    jr=joint("jr", "l2", "right", "prismatic", axis="0 -1 0"),
                    jt=joint("jt", "l2", "tcp", "fixed", axis=None, limit=""))
    tree = load_urdf(path)
    assert tree.parents == (-1, 0, 1, 1)
    assert tree.joint_names == ("j1", "j2", "jl", "jr")
    assert [link.joint_type for link in tree.links] == ["revolute", "revolute", "prismatic",
                                                        "prismatic"]
    assert load_urdf(path, tip="l2").n == 2
    assert load_urdf(path, tip="tcp").n == 2
    chain = load_urdf(path, tip="left")
    assert chain.parents == (-1, 0, 1) and chain.links[2].joint_type == "prismatic"


def test_unknown_tip(tmp_path):
    raises(two_link(tmp_path), r"tip link 'hand' is not a link of this URDF; links are 'base', "
                               r"'l1', 'l2'", tip="hand")


def test_prismatic_on_chain(tmp_path):
    path = two_link(tmp_path, j2=joint("j2", "l1", "l2", "prismatic", axis="1 0 0"))
    robot = load_urdf(path)
    assert [link.joint_type for link in robot.links] == ["revolute", "prismatic"]


@pytest.mark.parametrize("kind", ["floating", "planar"])
def test_floating_and_planar(tmp_path, kind):
    path = two_link(tmp_path, j1=joint("j1", "base", "l1", kind))
    raises(path, f"joint 'j1' is {kind}; only fixed-base trees")


def test_unknown_joint_type(tmp_path):
    raises(two_link(tmp_path, j1=joint("j1", "base", "l1", "ball")),
           "joint 'j1' has unknown type 'ball'")


@pytest.mark.parametrize("xyz, pattern", [
    ("0 nan 0.2", r"joint 'j1' origin xyz must be finite, not '0 nan 0.2'"),
    ("0 inf 0.2", r"joint 'j1' origin xyz must be finite"),
    ("0 x 0.2", r"joint 'j1' origin xyz must be numeric, not '0 x 0.2'"),
    ("0 0.2", r"joint 'j1' origin xyz must have 3 numbers, not '0 0.2'"),
])
def test_bad_numbers_in_joints(tmp_path, xyz, pattern):
    raises(two_link(tmp_path, j1=joint("j1", "base", "l1", xyz=xyz)), pattern)


def test_bad_numbers_in_links(tmp_path):
    raises(two_link(tmp_path, l1=link("l1", "nan")), "link 'l1' mass 'value' must be finite")
    raises(two_link(tmp_path, l1=link("l1", "heavy")), "link 'l1' mass 'value' must be numeric")
    raises(two_link(tmp_path, l1=link("l1", 1.0, xyz="0 0 nan")),
           "link 'l1' inertial origin xyz must be finite")
    raises(two_link(tmp_path, l1=link("l1", 1.0, inertia=(0.1, 0, 0, "nan", 0, 0.1))),
           "link 'l1' inertia 'iyy' must be finite")
    raises(two_link(tmp_path, l1='<link name="l1"><inertial><mass value="1"/></inertial>'
                                 '</link>'), r"link 'l1' <inertial> has no <inertia>")
    raises(two_link(tmp_path, l1='<link name="l1"><inertial><inertia ixx="1" ixy="0" ixz="0" '
                                 'iyy="1" iyz="0" izz="1"/></inertial></link>'),
           r"link 'l1' <inertial> has no <mass>")


def test_negative_mass(tmp_path):
    raises(two_link(tmp_path, l2=link("l2", -1.0)), r"link 'l2' mass must be >= 0, not -1.0")


def test_non_physical_inertia(tmp_path):
    raises(two_link(tmp_path, l2=link("l2", 1.0, inertia=(0.1, 0, 0, -0.1, 0, 0.1))),
           r"link 'l2' inertia must be positive semi-definite")
    raises(two_link(tmp_path, l2=link("l2", 1.0, inertia=(0.1, 0, 0, 0.1, 0, 0.5))),
           r"link 'l2' inertia violates the triangle inequality")


def test_bad_joint_data(tmp_path):
    raises(two_link(tmp_path, j1=joint("j1", "base", "l1", axis="0 0 0")),
           "joint 'j1' axis must not be zero")
    raises(two_link(tmp_path, j1=joint("j1", "base", "l1",
                                       limit='<limit lower="1" upper="-1" velocity="1" '
                                             'effort="1"/>')),
           "joint 'j1' limit lower 1.0 is above upper -1.0")
    raises(two_link(tmp_path, j1=joint("j1", "base", "l1",
                                       limit='<limit velocity="-1" effort="1"/>')),
           "joint 'j1' limit 'velocity' must be >= 0, not -1.0")
    raises(two_link(tmp_path, j1='<joint name="j1" type="revolute"><child link="l1"/></joint>'),
           re.escape("joint 'j1' has no <parent link=...>"))


def test_messages_name_the_file(tmp_path):
    message = raises(two_link(tmp_path, l2=link("l2", -1.0)), "mass")
    assert message.startswith(f"URDF {str(tmp_path / 'arm.urdf')!r}: ")
