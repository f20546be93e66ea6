"""The plant's MuJoCo model: a URDF arm with actuators, tool, wrist sensor, payload and plate.

:func:`build_model` turns a :class:`PlantConfig` into an ``mujoco.MjModel``; what it does with
the URDF is described in :mod:`linkdyn.sim.plant`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..model.robot import Robot
from .mujoco_gl import mujoco
from .plant_scene import Plate, quaternion_of

__all__ = [
    "PlantError", "PlantConfig", "build_model", "DEFAULT_ENCODER_COUNTS", "TOOL_BODY",
    "TOOL_SITE", "WRIST_SITE", "OFFSCREEN_SIZE", "INTEGRATORS", "VELOCITY_MODES",
    "PAYLOAD_BODY", "PAYLOAD_GEOM", "PLATE_GEOM", "FORCE_SENSOR", "TORQUE_SENSOR",
]

#: Default encoder resolution, counts per joint revolution (a 17-bit absolute encoder).
DEFAULT_ENCODER_COUNTS = 2 ** 17

#: Name of the massless tool body (child of the tip link, carries the contact sphere).
TOOL_BODY = "linkdyn_tool"

#: Name of the site at the tool point (the tool frame origin: tip link frame + ``tool_offset``).
TOOL_SITE = "linkdyn_tool_site"

#: Name of the wrist force/torque sensor's site (the tip link frame origin, the flange).
WRIST_SITE = "linkdyn_wrist_site"

#: Largest picture :func:`linkdyn.sim.render.render` can make, (width, height) pixels.
OFFSCREEN_SIZE = (1280, 960)

#: MuJoCo names of the plant's other elements (payload body and its picture, plate, sensors).
PAYLOAD_BODY = "linkdyn_payload"
PAYLOAD_GEOM = "linkdyn_payload_geom"
PLATE_GEOM = "linkdyn_plate"
FORCE_SENSOR = "linkdyn_wrist_force"
TORQUE_SENSOR = "linkdyn_wrist_torque"
_MOVABLE = ("revolute", "continuous", "prismatic")

#: How :meth:`linkdyn.sim.plant.Plant.measure` obtains the velocity.
VELOCITY_MODES = ("difference", "exact")

#: MuJoCo integrators by name.
INTEGRATORS = {
    "euler": mujoco.mjtIntegrator.mjINT_EULER,
    "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
    "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
    "rk4": mujoco.mjtIntegrator.mjINT_RK4,
}
# Contact bits: only the tool sphere and the plate collide.
_TOOL_CONTYPE, _PLATE_CONAFFINITY = 2, 2


class PlantError(ValueError):
    """A plant cannot be built from the description given (the message says why)."""


# --------------------------------------------------------------------------------------------
# URDF -> MuJoCo
# --------------------------------------------------------------------------------------------

def _resolve_package(filename, urdf_path, package_dirs):
    """Resolve ``package://<package>/<rest>`` to a file, or raise FileNotFoundError."""
    if not filename.startswith("package://"):
        path = Path(filename)
        path = path if path.is_absolute() else urdf_path.parent / path
        if not path.is_file():
            raise FileNotFoundError(f"URDF {str(urdf_path)!r}: mesh {filename!r} not found")
        return path
    package, _, rest = filename[len("package://"):].partition("/")
    # Folders that may hold the package: the ones given, then every folder above the URDF (a
    # URDF usually lies inside its package, as example-robot-data's do).
    candidates = [Path(d) for d in package_dirs] + list(urdf_path.resolve().parents)
    for folder in candidates:
        path = folder / package / rest
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"URDF {str(urdf_path)!r}: mesh {filename!r} not found: no folder {package!r} holding "
        f"{rest!r} in package_dirs {[str(d) for d in package_dirs]!r} or above the URDF")


def _plant_urdf(urdf_path, chain_links, meshes, package_dirs):
    """The URDF text MuJoCo is given: meshes resolved or removed, off-chain joints fixed."""
    root = ET.parse(urdf_path).getroot()
    for element in root.findall("mujoco"):
        root.remove(element)
    for link in root.findall("link"):
        for visual in link.findall("visual"):
            link.remove(visual)
        for collision in link.findall("collision"):
            mesh = collision.find("geometry/mesh")
            if not meshes or (mesh is not None and not mesh.get("filename", "").lower()
                              .endswith((".stl", ".obj", ".msh"))):
                link.remove(collision)
            elif mesh is not None:
                mesh.set("filename", str(_resolve_package(mesh.get("filename", ""), urdf_path,
                                                          package_dirs)))
    for joint in root.findall("joint"):
        child = joint.find("child")
        if joint.get("type") in _MOVABLE and child is not None \
                and child.get("link") not in chain_links:
            joint.set("type", "fixed")
    extension = ET.SubElement(root, "mujoco")
    # discardvisual would also drop the plant's own visual-only geometry (the URDF <visual>
    # elements are removed above).
    ET.SubElement(extension, "compiler", fusestatic="false", discardvisual="false",
                  strippath="false")
    return ET.tostring(root, encoding="unicode")


@dataclass(frozen=True)
class PlantConfig:
    """Everything a plant is built from (so that ``with_plate`` can rebuild it)."""

    urdf_path: Path
    tip: str | None
    robot: Robot
    control_period: float
    substeps: int
    encoder_counts: int | None
    noise: np.ndarray
    velocity_noise: np.ndarray
    velocity: str
    seed: int | None
    friction: bool
    damping: np.ndarray | None
    frictionloss: np.ndarray | None
    integrator: str
    meshes: bool
    package_dirs: tuple
    tool_radius: float
    tool_offset: np.ndarray
    plate: Plate | None
    contact_timeconst: float


def build_model(config):
    """Compile the MuJoCo model of a configuration; return (model, chain joint names, tip)."""
    robot = config.robot
    chain_links = [link.name for link in robot.links]
    tip = config.tip or chain_links[-1]
    text = _plant_urdf(config.urdf_path, set(chain_links), config.meshes, config.package_dirs)
    try:
        spec = mujoco.MjSpec.from_string(text)
    except ValueError as error:
        raise PlantError(f"MuJoCo cannot read URDF {str(config.urdf_path)!r}: {error}") from None
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.option.gravity = robot.gravity
    spec.option.timestep = config.control_period / config.substeps
    spec.option.integrator = INTEGRATORS[config.integrator]
    spec.visual.global_.offwidth, spec.visual.global_.offheight = OFFSCREEN_SIZE

    # The chain joints, in linkdyn's order: joint i moves link i (the URDF child link).
    joints = []
    for i, name in enumerate(chain_links):
        body = spec.body(name)
        body_joints = [] if body is None else list(body.joints)
        if len(body_joints) != 1:
            raise PlantError(f"URDF {str(config.urdf_path)!r}: link {name!r} (joint {i + 1}) "
                             f"has {len(body_joints)} MuJoCo joints, expected 1")
        joints.append(body_joints[0])
    moving = [j for j in spec.joints if j.name not in {j.name for j in joints}]
    if moving:
        raise PlantError(f"URDF {str(config.urdf_path)!r}: joints "
                         f"{[j.name for j in moving]!r} are not on the chain")
    for i, joint in enumerate(joints):
        if not config.friction:
            joint.damping = np.zeros_like(joint.damping)
            joint.frictionloss = 0.0
        if config.damping is not None:
            damping = np.zeros_like(joint.damping)
            damping[0] = config.damping[i]
            joint.damping = damping
        if config.frictionloss is not None:
            joint.frictionloss = float(config.frictionloss[i])
        tau_max = robot.links[i].limits.tau_max
        actuator = spec.add_actuator(name=f"linkdyn_motor_{i + 1}", target=joint.name,
                                     trntype=mujoco.mjtTrn.mjTRN_JOINT)
        if tau_max is not None:
            actuator.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
            actuator.ctrlrange = [-tau_max, tau_max]
            joint.actfrcrange = [-tau_max, tau_max]
            joint.actfrclimited = mujoco.mjtLimited.mjLIMITED_TRUE
        else:
            actuator.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
            joint.actfrclimited = mujoco.mjtLimited.mjLIMITED_FALSE

    # No robot geometry collides (a model of rigid-body dynamics, not of self-collision).
    for geom in spec.geoms:
        geom.contype = 0
        geom.conaffinity = 0
        geom.group = 1
        geom.rgba = [0.70, 0.72, 0.75, 1.0]
    if not config.meshes:
        _add_skeleton(spec, config)

    tip_body = spec.body(tip)
    if tip_body is None:
        raise PlantError(f"URDF {str(config.urdf_path)!r} has no link {tip!r}")
    # The tool: a massless body at the tip link frame (the wrist flange), the wrist sensor's
    # site at its origin, a stick out to the tool point with the contact sphere there.
    offset = config.tool_offset
    tool = tip_body.add_body(name=TOOL_BODY)
    tool.add_site(name=WRIST_SITE, size=[0.004, 0, 0], rgba=[0.2, 0.2, 0.9, 1], group=2)
    tool.add_site(name=TOOL_SITE, pos=offset, size=[0.004, 0, 0], rgba=[1, 0.2, 0.2, 1],
                  group=2)
    if np.linalg.norm(offset) > 1e-4:
        tool.add_geom(name="linkdyn_tool_stick", type=mujoco.mjtGeom.mjGEOM_CAPSULE,
                      fromto=[0, 0, 0, *offset], size=[0.5 * config.tool_radius, 0, 0],
                      contype=0, conaffinity=0, mass=0, group=1, rgba=[0.25, 0.25, 0.28, 1])
    tool.add_geom(name="linkdyn_tool_sphere", type=mujoco.mjtGeom.mjGEOM_SPHERE,
                  pos=offset, size=[config.tool_radius, 0, 0], contype=_TOOL_CONTYPE,
                  conaffinity=0, condim=3, rgba=[0.9, 0.3, 0.2, 1], mass=0, group=1)
    spec.add_sensor(name=FORCE_SENSOR, type=mujoco.mjtSensor.mjSENS_FORCE,
                    objtype=mujoco.mjtObj.mjOBJ_SITE, objname=WRIST_SITE)
    spec.add_sensor(name=TORQUE_SENSOR, type=mujoco.mjtSensor.mjSENS_TORQUE,
                    objtype=mujoco.mjtObj.mjOBJ_SITE, objname=WRIST_SITE)
    # The payload body: compiled massless with an inertial frame apart from its body frame, so
    # that MuJoCo's same-frame shortcut cannot skip a centre of mass set at run time.
    payload = tip_body.add_body(name=PAYLOAD_BODY, mass=0.0, ipos=[1e-3, 0, 0],
                                iquat=[0.5, 0.5, 0.5, 0.5], inertia=[0, 0, 0])
    payload.add_geom(name=PAYLOAD_GEOM, type=mujoco.mjtGeom.mjGEOM_SPHERE,
                     size=[0.04, 0, 0], pos=[1e-3, 0, 0], contype=0, conaffinity=0,
                     rgba=[0.95, 0.75, 0.1, 0.0], mass=0, group=2)
    # For pictures only: a floor at the base height (no contacts) and a light above.
    spec.worldbody.add_geom(name="linkdyn_floor", type=mujoco.mjtGeom.mjGEOM_PLANE,
                            size=[2.0, 2.0, 0.05], pos=robot.base[:3, 3] * [1, 1, 0],
                            contype=0, conaffinity=0, group=0, rgba=[0.82, 0.83, 0.85, 1.0])
    spec.worldbody.add_light(name="linkdyn_light", pos=[0.5, -0.5, 3.0], dir=[0, 0, -1],
                             diffuse=[0.7, 0.7, 0.7], castshadow=True)
    spec.visual.headlight.ambient = [0.35, 0.35, 0.35]
    spec.visual.headlight.diffuse = [0.5, 0.5, 0.5]
    if config.plate is not None:
        plate = config.plate
        spec.worldbody.add_geom(name=PLATE_GEOM, type=mujoco.mjtGeom.mjGEOM_BOX,
                                size=plate.size, pos=plate.position,
                                quat=quaternion_of(plate.rotation), contype=0,
                                conaffinity=_PLATE_CONAFFINITY, condim=3,
                                friction=[plate.friction, 0.005, 0.0001],
                                solref=[config.contact_timeconst, 1.0],
                                rgba=[0.35, 0.55, 0.75, 1.0])
    try:
        model = spec.compile()
    except ValueError as error:
        raise PlantError(f"MuJoCo cannot compile the plant of {str(config.urdf_path)!r}: "
                         f"{error}") from None
    model.body_sameframe[model.body(PAYLOAD_BODY).id] = 0
    model.geom_sameframe[model.geom(PAYLOAD_GEOM).id] = 0
    ids = np.array([model.joint(j.name).id for j in joints])
    if not np.array_equal(model.jnt_dofadr[ids], np.arange(robot.n)) \
            or not np.array_equal(model.jnt_qposadr[ids], np.arange(robot.n)):
        raise PlantError(f"URDF {str(config.urdf_path)!r}: MuJoCo orders the joints "
                         f"{[model.joint(i).name for i in range(model.njnt)]!r} differently "
                         f"from the chain")
    return model, [j.name for j in joints], tip


def _add_skeleton(spec, config):
    """Massless capsules from each link origin to its children's origins (for pictures)."""
    for body in spec.bodies:
        if body.name == "world":
            continue
        for child in body.bodies:
            end = np.array(child.pos, dtype=float)
            if np.linalg.norm(end) < 1e-4:
                continue
            body.add_geom(type=mujoco.mjtGeom.mjGEOM_CAPSULE, fromto=[0, 0, 0, *end],
                          size=[0.035, 0, 0], contype=0, conaffinity=0, mass=0, group=1,
                          rgba=[0.70, 0.72, 0.75, 1.0])

