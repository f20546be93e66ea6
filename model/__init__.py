"""Robot models: robot descriptions, the float inverse dynamics in the source paper's per-link
form and its regressor, and the fixed-point golden model that the gateware matches bit for bit."""

from .robot import (Robot, Link, Friction, JointLimits, RobotDescriptionError, STANDARD_GRAVITY,
                    PARAMETER_NAMES, FRICTION_PARAMETER_NAMES)
from .rnea import rnea, regressor, forward_recursion, link_regressor
from .robotfile import save_robot, read_robot_file
from .library import BUILTIN_ROBOTS, load_robot
from .fixedpoint import QFormat, Q15_16, FixedPointRangeError
from .tables import SINE_TABLE, CORDIC, SineTable, Cordic
from .microprogram import build_microprogram, MAC_TIMING
from .golden import rnea_fixed, encode_robot, encode_base_motion, FixedResult, GoldenChain

__all__ = [
    "Robot", "Link", "Friction", "JointLimits", "RobotDescriptionError", "STANDARD_GRAVITY",
    "PARAMETER_NAMES", "FRICTION_PARAMETER_NAMES", "rnea", "regressor", "forward_recursion",
    "link_regressor", "load_robot", "save_robot", "read_robot_file", "BUILTIN_ROBOTS",
    "QFormat", "Q15_16", "FixedPointRangeError", "SINE_TABLE", "CORDIC", "SineTable", "Cordic",
    "build_microprogram", "MAC_TIMING", "rnea_fixed", "encode_robot", "encode_base_motion",
    "FixedResult", "GoldenChain",
]
