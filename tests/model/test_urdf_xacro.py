"""A URDF that still holds xacro expressions (``${...}``, ``$(arg ...)``) is reported as an
unexpanded xacro template with the command that expands it, not as "must have 3 numbers"."""

import pytest

from linkdyn.model import RobotDescriptionError
from linkdyn.model.urdf import load_urdf

INERTIAL = ('<inertial><mass value="{mass}"/><origin xyz="0 0 0.1" rpy="0 0 0"/>'
            '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>')


def _urdf(tmp_path, *, xyz="0 0 0.3", mass="1.5", effort="150"):
    text = f"""<?xml version="1.0"?>
<robot name="arm" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <link name="base"/>
  <link name="l1">{INERTIAL.format(mass=mass)}</link>
  <link name="l2">{INERTIAL.format(mass=1.0)}</link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="{xyz}" rpy="0 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="{effort}" velocity="3"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="0.4 0 0" rpy="0 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="28" velocity="3"/></joint>
</robot>
"""
    path = tmp_path / "arm.urdf"
    path.write_text(text)
    return path


def test_the_plain_file_loads(tmp_path):
    robot = load_urdf(_urdf(tmp_path))
    assert robot.n == 2


@pytest.mark.parametrize("field, value, what", [
    ("xyz", "0 0 ${shoulder_height}", "joint 'j1' origin xyz"),
    ("xyz", "${-pi/2} 0 0", "joint 'j1' origin xyz"),
    ("mass", "${upper_arm_mass}", "link 'l1' mass 'value'"),
    ("effort", "$(arg max_effort)", "effort"),
])
def test_an_unexpanded_xacro_expression_says_so_and_how_to_expand_it(tmp_path, field, value,
                                                                      what):
    path = _urdf(tmp_path, **{field: value})
    with pytest.raises(RobotDescriptionError) as caught:
        load_urdf(path)
    message = str(caught.value)
    assert "unexpanded xacro expression" in message
    assert value in message and what in message
    assert "xacro file.urdf.xacro > file.urdf" in message
    assert "must have" not in message and "numeric" not in message
