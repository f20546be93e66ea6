"""The robot as a plant: a MuJoCo model of a URDF arm, stepped at the control rate.

:class:`Plant` builds a MuJoCo model from the same URDF file that
:func:`linkdyn.model.urdf.load_urdf` turns into the controller's :class:`~linkdyn.model.Robot`,
so that model and plant are one robot: the same joints in the same order, the same sign and zero
of ``q``, the same inertial parameters and the same gravity (``robot.gravity``, standard gravity
9.80665 m/s^2, not MuJoCo's default 9.81). What the plant adds around the URDF:

* a torque actuator (``motor``) per joint, ``ctrlrange`` the URDF ``<limit effort>``; the torque
  given to :meth:`Plant.step` is clipped there and the clipping is reported;
* joint damping and dry friction from the URDF ``<dynamics damping friction>`` (see below);
* encoder quantisation (``encoder_counts`` per joint revolution) and optional Gaussian noise with
  a fixed seed on what :meth:`Plant.measure` returns; :attr:`Plant.state` is the true state;
* disturbance forces at a point of a body (``xfrc_applied``), :meth:`Plant.apply_disturbance`;
* a massless tool body on the tip link (a stick out to the tool point, ``tool_offset``, with a
  contact sphere there), a site at the tool point (:meth:`Plant.end_effector_position`) and a
  force/torque sensor at the flange between the tip link and the tool (the wrist sensor,
  :meth:`Plant.wrist_wrench`);
* a rigid plate (a fixed box, :class:`Plate`) the tool can push against, :meth:`Plant.with_plate`;
* a payload body on the tip link whose mass, centre of mass and inertia are set and removed at
  run time, :meth:`Plant.set_payload`.

What MuJoCo does with the URDF
------------------------------
MuJoCo's URDF reader (checked in its ``xml_urdf.cc``) maps ``<limit lower upper>`` to the joint
``range`` (a soft constraint, active only beyond the range), ``<limit effort>`` to the joint's
``actuatorfrcrange`` (the total actuator torque on the joint is clamped there), and
``<dynamics damping friction>`` to the joint ``damping`` (a viscous torque ``-damping * qd``,
N·m·s/rad, integrated implicitly) and ``frictionloss`` (dry friction: a soft constraint, solved
with the contacts, that pulls the joint velocity to zero with a torque of at most ``friction``
N·m). ``<limit velocity>`` has no MuJoCo counterpart and is ignored. Checked in the tests: on a
moving joint the dry friction is exactly ``-friction * sign(qd)`` as long as the torque does not
decelerate the joint faster than the constraint's own reference (about ``qd / 0.01 s``; beyond
that MuJoCo's friction even pushes along the motion), and a joint at rest is held below the
level up to a slow creep (UR5 joint 1 at 75 % of a 2 N·m level: 0.4 mrad in 1 s). Compared with
the paper's friction model, eq. (20) (:class:`linkdyn.model.Friction`): ``F_v = damping``,
and ``F_c * pi / 2 = friction`` for the asymptotic Coulomb level (MuJoCo's dry friction has no
``atan`` shape). The plant keeps them as the file
gives them (``friction=True``) or sets both to zero (``friction=False``, used where the plant is
compared with rigid-body dynamics), or takes ``damping``/``frictionloss`` arrays that override
the file. (The UR5 file of example-robot-data gives zeros, the Panda's ``damping=0.003``.)

``<visual>`` meshes are discarded (MuJoCo cannot read the ``.dae`` files) and so are
``<collision>`` meshes unless ``meshes=True``, which resolves their ``package://`` paths (not
resolvable as example-robot-data writes them: they name the package, not a folder) and keeps
them as visual geometry only. No robot geometry takes part in contacts: the only contacts are
the tool sphere against the plate. Without meshes the links are drawn as thin capsules between
joint origins (massless, no contacts). Every added geometry is massless: inertias come from the
URDF ``<inertial>`` alone (``inertiafromgeom="false"``). Movable joints that are not on the
root-to-tip chain (the Panda's fingers, joints beyond the tip) are locked at zero, as
:func:`~linkdyn.model.urdf.load_urdf` merges those links. Static links are kept as separate
bodies (``fusestatic="false"``) so that the tip link keeps its frame.

The model is built by :mod:`linkdyn.sim.plant_model`; the plate, payload and disturbance records
are in :mod:`linkdyn.sim.plant_scene`; pictures by :mod:`linkdyn.sim.render`; speed by
:mod:`linkdyn.bench.plant`. Documentation with figures: ``docs/plant.md``.

Units SI (m, kg, s, rad, N, N·m); world frame = the URDF root frame = the frame of
``robot.base``; the tool frame is the tip link frame moved by ``tool_offset`` (= the
``linkdyn.model.kinematics.tool_pose`` of :attr:`Plant.robot`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..model.reference import REFERENCE_URDFS, example_robot_urdf
from ..model.urdf import load_urdf
from .mujoco_gl import mujoco
from .plant_model import (DEFAULT_ENCODER_COUNTS, INTEGRATORS, OFFSCREEN_SIZE, TOOL_BODY,
                          TOOL_SITE, VELOCITY_MODES, WRIST_SITE, PlantConfig, PlantError,
                          FORCE_SENSOR, PAYLOAD_BODY, PAYLOAD_GEOM, PLATE_GEOM,
                          TORQUE_SENSOR, build_model)
from .plant_scene import (Disturbance, Payload, PlantState, Plate, check_number, check_per_joint,
                          quaternion_of, check_vector)

__all__ = [
    "Plant", "PlantError", "PlantInstabilityError", "MAX_TORQUE", "Plate", "Payload", "Disturbance", "PlantState",
    "DEFAULT_ENCODER_COUNTS", "TOOL_BODY", "TOOL_SITE", "WRIST_SITE", "OFFSCREEN_SIZE",
]

# --------------------------------------------------------------------------------------------
# The plant
# --------------------------------------------------------------------------------------------

#: Largest torque a joint without effort limit takes, N·m (MuJoCo's ``mjMAXVAL``: it zeroes
#: larger controls).
MAX_TORQUE = 1e10


class PlantInstabilityError(RuntimeError):
    """The simulation diverged (the message says when and under which torque)."""


class Plant:
    """A robot arm simulated by MuJoCo, stepped one control period at a time.

    Build one with :meth:`from_urdf` or :meth:`from_reference`. The plant holds the linkdyn
    :class:`~linkdyn.model.Robot` of the same file (:attr:`robot`) and a MuJoCo model and data
    (:attr:`model`, :attr:`data`; reading them is fine, changing them is at the caller's risk).

    Time advances only in :meth:`step`: the torque is held for one control period
    (:attr:`control_period`, s) over :attr:`substeps` MuJoCo steps of :attr:`timestep`. After
    :meth:`reset` and :meth:`step` the MuJoCo data is forwarded at the current state (positions,
    contact forces and sensors belong to ``state.time``, under the last torque and the
    disturbances active at that time).

    Measurement: :meth:`measure` returns the sample taken at the last control instant:
    ``q_meas = quantise(q + noise_q)``, with ``quantise(x) = s * round(x / s)``,
    ``s = 2 pi / encoder_counts`` (rad), ``noise_q ~ N(0, noise^2)``; the velocity is the
    backward difference of two consecutive samples over the control period
    (``velocity="difference"``, what a drive computes from its encoder) or the true velocity
    (``velocity="exact"``), plus ``N(0, velocity_noise^2)`` in both cases. The noise comes
    from one ``numpy.random.Generator`` seeded with ``seed``; :meth:`reset` does not reseed it.

    Attributes
    ----------
    robot : linkdyn.model.Robot
        The controller's model of the same URDF (``tool`` moved by ``tool_offset``).
    n : int
        Number of joints.
    joint_names : list of str
        URDF names of the chain joints, in linkdyn's (and MuJoCo's) order.
    tip : str
        URDF name of the tip link (carries the tool and the payload).
    tau_max : numpy.ndarray, shape (n,)
        Effort limits, N·m (``inf`` where the URDF gives none).
    clip_count : numpy.ndarray of int, shape (n,)
        Control periods in which each joint's torque was clipped.
    model, data : mujoco.MjModel, mujoco.MjData
        The MuJoCo model and its state.
    """

    def __init__(self, config):
        if not isinstance(config, PlantConfig):
            raise TypeError("build a Plant with Plant.from_urdf(...) or Plant.from_reference(...)")
        self._config = config
        self.robot = config.robot
        self.n = config.robot.n
        self.model, self.joint_names, self.tip = build_model(config)
        self.data = mujoco.MjData(self.model)
        self._scratch = mujoco.MjData(self.model)
        self._rng = np.random.default_rng(config.seed)
        self._tool_site = self.model.site(TOOL_SITE).id
        self._wrist_site = self.model.site(WRIST_SITE).id
        self._tool_body = self.model.body(TOOL_BODY).id
        self._payload_body = self.model.body(PAYLOAD_BODY).id
        self._payload_geom = self.model.geom(PAYLOAD_GEOM).id
        self._force_adr = self.model.sensor_adr[self.model.sensor(FORCE_SENSOR).id]
        self._torque_adr = self.model.sensor_adr[self.model.sensor(TORQUE_SENSOR).id]
        limits = [link.limits.tau_max for link in self.robot.links]
        self.tau_max = np.array([np.inf if t is None else t for t in limits])
        self.tau_max.setflags(write=False)
        self._payload = None
        self._link_inertials = {}
        self._disturbances = []
        self._torque = np.zeros(self.n)
        self.clip_count = np.zeros(self.n, dtype=int)
        # Measurement and stepping constants, looked up once (the loop runs at 1 kHz or more).
        self._encoder_step = self.encoder_step
        self._position_noise = config.noise if np.any(config.noise) else None
        self._velocity_noise = config.velocity_noise if np.any(config.velocity_noise) else None
        self._difference_velocity = config.velocity == "difference"
        self._rate = 1.0 / config.control_period
        self._warnings = [self.data.warning[int(kind)] for kind in (
            mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQVEL,
            mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADCTRL)]
        self.reset()

    # ---- construction ------------------------------------------------------------------------

    @classmethod
    def from_urdf(cls, path, tip=None, *, control_period=1e-3, substeps=2,
                  encoder_counts=DEFAULT_ENCODER_COUNTS, noise=0.0, velocity_noise=0.0,
                  velocity="difference", seed=0, friction=True, damping=None,
                  frictionloss=None, gravity=None, integrator="implicitfast", meshes=False,
                  package_dirs=(), tool_offset=(0.0, 0.0, 0.0), tool_radius=0.01, plate=None,
                  contact_timeconst=0.005):
        """Build the plant of a URDF arm.

        Parameters
        ----------
        path : str or os.PathLike
            The URDF file (the one the controller's model comes from).
        tip : str, optional
            Tip link of the chain, as in :func:`linkdyn.model.urdf.load_urdf` (required for
            branched files such as the Panda's: ``"panda_hand"``).
        control_period : float
            Control period, s (default 1 ms, the paper's 1 kHz); :meth:`step` advances this much.
        substeps : int
            MuJoCo steps per control period, >= 1 (default 2: a 0.5 ms timestep).
        encoder_counts : int or None
            Encoder counts per joint revolution (default :data:`DEFAULT_ENCODER_COUNTS`);
            ``None``: no quantisation.
        noise : float or array_like, shape (n,)
            Standard deviation of the position noise before quantisation, rad (default 0).
        velocity_noise : float or array_like, shape (n,)
            Standard deviation of the noise added to the measured velocity, rad/s (default 0).
        velocity : {"difference", "exact"}
            How :meth:`measure` obtains the velocity (see the class notes).
        seed : int or None
            Seed of the measurement noise (default 0).
        friction : bool
            Keep the URDF ``<dynamics damping friction>`` (default) or set both to zero.
        damping, frictionloss : array_like, shape (n,), optional
            Joint viscous damping (N·m·s/rad) and dry friction (N·m) replacing the file's.
        gravity : array_like, shape (3,), optional
            Gravity in the world frame, m/s^2, passed to ``load_urdf``; default the Robot
            default ``(0, 0, -9.80665)``. The plant's gravity is always ``robot.gravity``.
        integrator : {"implicitfast", "implicit", "euler", "rk4"}
            MuJoCo integrator. Default ``"implicitfast"`` (first order, stable with contacts
            and damping: a feed-forward torque along a trajectory drifts ~3 mrad in 0.5 s at
            0.5 ms, half that at 0.25 ms); ``"rk4"`` (fourth order: within the torque's
            zero-order hold, ~1.5e-5 rad, already with one 1 ms substep, at ~60 % of the
            speed of the default).
        meshes : bool
            Keep the URDF's collision meshes (STL/OBJ) as visual geometry, resolving
            ``package://`` paths (default False: links drawn as capsules).
        package_dirs : sequence of path
            Folders that hold ROS packages named by ``package://`` (searched before the folders
            above the URDF).
        tool_offset : array_like, shape (3,)
            Tool point in the tip link frame, m (default the tip link origin): a massless stick
            from the flange to it carries the contact sphere. :attr:`robot` gets the matching
            ``tool`` transform (``robot.tool`` translated by it), so that its ``tool_pose`` is
            the tool point; with the default it equals ``load_urdf(path, tip)``.
        tool_radius : float
            Radius of the contact sphere at the tool point, m (default 0.01).
        plate : Plate, optional
            A plate to push against (see also :meth:`with_plate`).
        contact_timeconst : float
            Time constant of the plate contact (MuJoCo ``solref``), s, >= 2 timesteps
            (default 5 ms: a stiff plate).

        Returns
        -------
        Plant
            At rest at ``q = 0`` (or the middle of the joint range where 0 is outside it),
            time 0.

        Raises
        ------
        linkdyn.model.RobotDescriptionError
            If linkdyn cannot load the URDF (see :func:`~linkdyn.model.urdf.load_urdf`).
        PlantError
            If MuJoCo cannot read or compile it, or its joints do not match the chain.
        FileNotFoundError
            If ``meshes=True`` and a mesh file cannot be found.
        TypeError, ValueError
            If an argument has the wrong type or value (the message says what came).
        """
        path = Path(path)
        robot = load_urdf(path, tip=tip, gravity=gravity)
        tool_offset = check_vector(tool_offset, (3,), "tool_offset (m)")
        if np.any(tool_offset):
            translation = np.eye(4)
            translation[:3, 3] = tool_offset
            robot = replace(robot, tool=robot.tool @ translation)
        n = robot.n
        control_period = check_number(control_period, "control_period (s)", minimum=0,
                                 strictly=True)
        if isinstance(substeps, bool) or not isinstance(substeps, (int, np.integer)):
            raise TypeError(f"substeps must be an int, not {substeps!r}")
        if substeps < 1:
            raise ValueError(f"substeps must be >= 1, not {substeps!r}")
        if encoder_counts is not None:
            if isinstance(encoder_counts, bool) or not isinstance(encoder_counts,
                                                                  (int, np.integer)):
                raise TypeError(f"encoder_counts must be an int or None, not "
                                f"{encoder_counts!r}")
            if encoder_counts < 2:
                raise ValueError(f"encoder_counts must be >= 2, not {encoder_counts!r}")
        if seed is not None and (isinstance(seed, bool)
                                 or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise ValueError(f"seed must be a non-negative int or None, not {seed!r}")
        if velocity not in VELOCITY_MODES:
            raise ValueError(f"velocity must be one of {VELOCITY_MODES}, not {velocity!r}")
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator must be one of {tuple(INTEGRATORS)}, not "
                             f"{integrator!r}")
        if plate is not None and not isinstance(plate, Plate):
            raise TypeError(f"plate must be a Plate or None, not {plate!r}")
        tool_radius = check_number(tool_radius, "tool_radius (m)", minimum=0, strictly=True)
        contact_timeconst = check_number(contact_timeconst, "contact_timeconst (s)")
        if contact_timeconst < 2 * control_period / substeps:
            raise ValueError(f"contact_timeconst must be >= 2 timesteps "
                             f"({2 * control_period / substeps:g} s), not {contact_timeconst!r}")
        config = PlantConfig(
            urdf_path=path, tip=tip, robot=robot, control_period=control_period,
            substeps=int(substeps),
            encoder_counts=None if encoder_counts is None else int(encoder_counts),
            noise=check_per_joint(noise, n, "noise (rad)"),
            velocity_noise=check_per_joint(velocity_noise, n, "velocity_noise (rad/s)"),
            velocity=velocity, seed=seed, friction=bool(friction),
            damping=None if damping is None else check_per_joint(damping, n, "damping"),
            frictionloss=None if frictionloss is None else check_per_joint(frictionloss, n,
                                                                      "frictionloss"),
            integrator=integrator, meshes=bool(meshes),
            package_dirs=tuple(Path(d) for d in package_dirs), tool_radius=tool_radius,
            tool_offset=tool_offset,
            plate=plate, contact_timeconst=contact_timeconst)
        return cls(config)

    @classmethod
    def from_reference(cls, name, **kwargs):
        """Build the plant of a reference arm of example-robot-data (``"ur5"``, ``"panda"``, ...).

        The URDF and tip link are those of :data:`linkdyn.model.reference.REFERENCE_URDFS`, so
        :attr:`robot` equals :func:`linkdyn.model.reference.load_reference_robot`; keyword
        arguments go to :meth:`from_urdf`.

        Raises
        ------
        ValueError
            If ``name`` is not a reference arm.
        FileNotFoundError
            If example-robot-data is not installed.
        """
        if name not in REFERENCE_URDFS:
            raise ValueError(f"reference robot must be one of {tuple(REFERENCE_URDFS)}, not "
                             f"{name!r}")
        return cls.from_urdf(example_robot_urdf(name), REFERENCE_URDFS[name][1], **kwargs)

    def with_plate(self, position, size=(0.2, 0.2, 0.01), rotation=None, *, friction=1.0):
        """Return a new plant, the same but with a rigid plate (a fixed box) in the world.

        Parameters
        ----------
        position, size, rotation, friction
            As :class:`Plate` (world frame, m; half-extents; rotation matrix or quaternion).

        Returns
        -------
        Plant
            A new plant at this plant's current state, with its payload and link parameters
            (time reset to 0, no disturbances); this plant is unchanged.
        """
        plate = Plate(position, size, np.eye(3) if rotation is None else rotation, friction)
        payload = self._payload
        return self._copy(replace(self._config, plate=plate),
                          None if payload is None else (payload.mass, payload.com,
                                                        payload.inertia))

    def with_plate_at_tool(self, direction, size=(0.2, 0.2), thickness=0.02, *, gap=0.0,
                           friction=1.0):
        """Return a new plant with a plate whose face touches the tool sphere now.

        Parameters
        ----------
        direction : array_like, shape (3,)
            Direction from the tool point to the plate, world frame (normalised here); the
            plate's face is normal to it, the box's z axis points along it.
        size : array_like, shape (2,)
            Half-extents of the face, m.
        thickness : float
            Plate thickness, m.
        gap : float
            Distance between the tool sphere and the face, m (default 0: touching, zero
            contact force at rest).
        friction : float
            Sliding friction coefficient.

        Returns
        -------
        Plant
            As :meth:`with_plate`.

        Raises
        ------
        TypeError, ValueError
            If ``direction`` is not a non-zero finite 3-vector or a size is not positive.
        """
        direction = check_vector(direction, (3,), "plate direction")
        norm = float(np.linalg.norm(direction))
        if norm < 1e-9:
            raise ValueError(f"plate direction must not be zero, not {direction.tolist()!r}")
        z = direction / norm
        size = check_vector(size, (2,), "plate size (half-extents, m)")
        thickness = check_number(thickness, "plate thickness (m)", minimum=0, strictly=True)
        gap = check_number(gap, "plate gap (m)", minimum=0)
        helper = np.eye(3)[int(np.argmin(np.abs(z)))]
        x = np.cross(helper, z)
        x /= np.linalg.norm(x)
        rotation = np.column_stack([x, np.cross(z, x), z])
        centre = (self.end_effector_position()
                  + z * (self._config.tool_radius + gap + 0.5 * thickness))
        return self.with_plate(centre, [size[0], size[1], 0.5 * thickness], rotation,
                               friction=friction)

    def with_payload(self, mass, com=(0.0, 0.0, 0.0), inertia=None):
        """Return a new plant, the same (plate included) with a payload; see :meth:`set_payload`.

        This plant is unchanged; the new one is at its current state (time reset to 0).
        """
        return self._copy(self._config, (mass, com, inertia))

    def _copy(self, config, payload):
        """A new plant of ``config`` with this plant's state, link parameters and ``payload``."""
        other = Plant(config)
        for link, inertial in self._link_inertials.items():
            other.set_link_inertial(link, inertial.mass, inertial.com, inertial.inertia)
        if payload is not None:
            other.set_payload(*payload)
        other.reset(self.data.qpos, self.data.qvel)
        return other

    # ---- properties --------------------------------------------------------------------------

    @property
    def urdf_path(self):
        """pathlib.Path: the URDF file the plant (and :attr:`robot`) was built from."""
        return self._config.urdf_path

    @property
    def control_period(self):
        """float: control period, s."""
        return self._config.control_period

    @property
    def substeps(self):
        """int: MuJoCo steps per control period."""
        return self._config.substeps

    @property
    def timestep(self):
        """float: MuJoCo timestep, s (``control_period / substeps``)."""
        return float(self.model.opt.timestep)

    @property
    def gravity(self):
        """numpy.ndarray, shape (3,): gravity in the world frame, m/s^2 (= ``robot.gravity``)."""
        return self.model.opt.gravity.copy()

    @property
    def encoder_step(self):
        """float or None: one encoder count, rad (``2 pi / encoder_counts``)."""
        counts = self._config.encoder_counts
        return None if counts is None else 2 * math.pi / counts

    @property
    def plate(self):
        """Plate or None: the plate of this plant."""
        return self._config.plate

    @property
    def payload(self):
        """Payload or None: the payload now held by the last link."""
        return self._payload

    @property
    def state(self):
        """PlantState: the true state (time, q, qd), linkdyn's joint order."""
        return PlantState(float(self.data.time), self.data.qpos.copy(), self.data.qvel.copy())

    @property
    def torque(self):
        """numpy.ndarray, shape (n,): the torque applied in the last step (after clipping), N·m."""
        return self._torque.copy()

    @property
    def disturbances(self):
        """tuple of Disturbance: the disturbances registered (active or not yet/no longer)."""
        return tuple(self._disturbances)

    # ---- state ------------------------------------------------------------------------------

    def _joint_vector(self, value, what):
        return check_vector(value, (self.n,), what)

    def default_configuration(self):
        """Return ``q = 0``, or the middle of a joint's range where 0 is outside it; (n,), rad."""
        low, high = self.robot.q_limits(default=math.pi)   # unlimited joints contain 0
        inside = (low <= 0) & (0 <= high)
        return np.where(inside, 0.0, 0.5 * (low + high))

    def reset(self, q=None, qd=None):
        """Put the plant at a state at time 0 and take a first measurement sample.

        Parameters
        ----------
        q : array_like, shape (n,), optional
            Joint angles, rad (default :meth:`default_configuration`).
        qd : array_like, shape (n,), optional
            Joint velocities, rad/s (default zero).

        The torque is set to zero; disturbances, the payload and the clip counters stay
        (call :meth:`clear_disturbances` to remove disturbances).

        Raises
        ------
        TypeError, ValueError
            If ``q`` or ``qd`` is not numeric, not of shape (n,) or not finite.
        """
        q = self.default_configuration() if q is None else self._joint_vector(q, "q (rad)")
        qd = np.zeros(self.n) if qd is None else self._joint_vector(qd, "qd (rad/s)")
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[:] = q
        self.data.qvel[:] = qd
        self._torque = np.zeros(self.n)
        self.data.ctrl[:] = 0.0
        self._apply_disturbances()
        mujoco.mj_forward(self.model, self.data)
        previous = self._sample_position(q - qd * self.control_period)
        self._sample(previous)

    # ---- measurement ---------------------------------------------------------------------------

    def _sample_position(self, q):
        """Quantised, noisy reading of the joint angles ``q`` (a new array)."""
        if self._position_noise is not None:
            q = q + self._position_noise * self._rng.standard_normal(self.n)
        if self._encoder_step is None:
            return np.array(q, dtype=float)
        return self._encoder_step * np.round(q / self._encoder_step)

    def _sample(self, previous=None):
        """Take the measurement sample of the current control instant."""
        q = self._sample_position(self.data.qpos)
        if self._difference_velocity:
            before = self._q_measured if previous is None else previous
            qd = (q - before) * self._rate
        else:
            qd = self.data.qvel.copy()
        if self._velocity_noise is not None:
            qd += self._velocity_noise * self._rng.standard_normal(self.n)
        self._q_measured, self._qd_measured = q, qd

    def measure(self):
        """Return the joint sensor sample of the current control instant.

        Returns
        -------
        q : numpy.ndarray, shape (n,)
            Measured joint angles, rad: quantised to :attr:`encoder_step`, with noise if set.
        qd : numpy.ndarray, shape (n,)
            Measured joint velocities, rad/s (see the class notes).

        Calling it twice without a :meth:`step` returns the same sample.
        """
        return self._q_measured.copy(), self._qd_measured.copy()

    # ---- stepping -----------------------------------------------------------------------------

    def step(self, tau):
        """Apply a joint torque for one control period.

        Parameters
        ----------
        tau : array_like, shape (n,)
            Commanded joint torques, N·m, linkdyn's joint order. Each is clipped to
            ``[-tau_max, tau_max]`` (the URDF effort limit, :attr:`tau_max`) and held
            constant (zero-order hold) over the period.

        Returns
        -------
        numpy.ndarray of bool, shape (n,)
            Which joints were clipped in this step (also counted in :attr:`clip_count`; the
            applied torque is :attr:`torque`).

        Raises
        ------
        TypeError
            If ``tau`` is not numeric.
        ValueError
            If ``tau`` does not have shape (n,), holds NaN or infinity, or exceeds
            :data:`MAX_TORQUE` on a joint without effort limit (the plant is not stepped).
        PlantInstabilityError
            If the simulation diverged in this period (MuJoCo then resets its state; the
            plant must be :meth:`reset` before it is stepped again).
        """
        tau = self._joint_vector(tau, "tau (N·m)")
        applied = np.minimum(np.maximum(tau, -self.tau_max), self.tau_max)
        if (np.abs(applied) > MAX_TORQUE).any():
            raise ValueError(f"tau (N·m) of a joint without effort limit must be within "
                             f"+-{MAX_TORQUE:g} (MuJoCo ignores larger controls), not "
                             f"{tau.tolist()!r}")
        clipped = applied != tau
        self.clip_count += clipped
        self._torque = applied
        model, data = self.model, self.data
        data.ctrl[:] = applied
        warnings = self._instability_count()
        time = float(data.time)
        if self._config.integrator == "rk4":
            # mj_step runs the whole Runge-Kutta step; the disturbances' moments are taken at
            # the start of each substep (kinematics of the new state first).
            for k in range(self._config.substeps):
                if k:
                    mujoco.mj_kinematics(model, data)
                self._apply_disturbances()
                mujoco.mj_step(model, data)
        else:
            # The data is forwarded at the current state: the first substep integrates at once.
            for k in range(self._config.substeps):
                if k:
                    mujoco.mj_step1(model, data)
                self._apply_disturbances()
                mujoco.mj_step2(model, data)
        if self._instability_count() != warnings:
            # MuJoCo has reset the data to the model's default state: say so, do not go on.
            raise PlantInstabilityError(
                f"the simulation became unstable in the control period from t = {time:.6f} s "
                f"(MuJoCo found NaN or huge positions, velocities or accelerations and reset "
                f"its state) with torque {applied.tolist()!r} N·m; reset() the plant")
        self._apply_disturbances()
        mujoco.mj_forward(model, data)
        self._sample()
        return clipped

    def _instability_count(self):
        """Sum of MuJoCo's counts of bad accelerations, velocities, positions and controls."""
        return sum(warning.number for warning in self._warnings)

    def run(self, tau, periods):
        """Apply the same torque for ``periods`` control periods (see :meth:`step`).

        Returns
        -------
        numpy.ndarray of bool, shape (n,)
            Which joints were clipped in any of the periods.

        Raises
        ------
        TypeError, ValueError
            If ``periods`` is not an int >= 1, or as :meth:`step`.
        """
        if isinstance(periods, bool) or not isinstance(periods, (int, np.integer)):
            raise TypeError(f"periods must be an int, not {periods!r}")
        if periods < 1:
            raise ValueError(f"periods must be >= 1, not {periods!r}")
        clipped = np.zeros(self.n, dtype=bool)
        for _ in range(int(periods)):
            clipped |= self.step(tau)
        return clipped

    # ---- disturbances -------------------------------------------------------------------------

    def body_names(self):
        """Return the names of the bodies a disturbance can act on (URDF links and the tool)."""
        return [self.model.body(i).name for i in range(1, self.model.nbody)
                if self.model.body(i).name != PAYLOAD_BODY]

    def apply_disturbance(self, force, body=TOOL_BODY, point=None, *,
                          torque=(0.0, 0.0, 0.0), start=None, until=math.inf, duration=None):
        """Apply an external force at a point of a body (MuJoCo ``xfrc_applied``).

        Parameters
        ----------
        force : array_like, shape (3,)
            Force the environment applies to the body, world axes, N; constant over its
            interval (the point moves with the body: the plant recomputes its moment every
            MuJoCo step).
        body : str
            Body name: a URDF link name of the chain or a link welded to it, or
            :data:`TOOL_BODY` (default), the tool beyond the wrist sensor (which then reads
            the force).
        point : array_like, shape (3,), optional
            Point of application in the body's frame (URDF link frame; for the tool the tip
            link frame, so the tool point is ``tool_offset``), m. Default: the tool point for
            the tool, the link frame origin for a link.
        torque : array_like, shape (3,)
            Additional pure moment on the body, world axes, N·m (default zero).
        start : float, optional
            Plant time from which it acts, s (default now).
        until : float
            Plant time until which it acts, s (default forever). ``duration`` (s), if given,
            sets ``until = start + duration``.

        Returns
        -------
        Disturbance
            The registered disturbance (its generalized force is ``J(point)^T force`` plus
            ``J_omega^T torque``).

        Raises
        ------
        TypeError, ValueError
            If a vector is not numeric, of shape (3,) or finite, the body is unknown (the
            message lists the bodies), or the interval is empty.
        """
        force = check_vector(force, (3,), "disturbance force (N)")
        torque = check_vector(torque, (3,), "disturbance torque (N·m)")
        if point is None:
            point = self._config.tool_offset if body == TOOL_BODY else np.zeros(3)
        point = check_vector(point, (3,), "disturbance point (m)")
        names = self.body_names()
        if not isinstance(body, str) or body not in names:
            raise ValueError(f"disturbance body must be one of {names!r}, not {body!r}")
        now = float(self.data.time)
        start = now if start is None else check_number(start, "disturbance start (s)")
        if duration is not None:
            until = start + check_number(duration, "disturbance duration (s)", minimum=0,
                                    strictly=True)
        until = float(until)
        if math.isnan(until) or until <= start:
            raise ValueError(f"disturbance until must be after start {start!r}, not {until!r}")
        disturbance = Disturbance(body, point, force, torque, start, until)
        self._disturbances.append(disturbance)
        self._apply_disturbances()
        mujoco.mj_forward(self.model, self.data)
        return disturbance

    def clear_disturbances(self):
        """Remove every disturbance."""
        self._disturbances.clear()
        self._apply_disturbances()
        mujoco.mj_forward(self.model, self.data)

    def disturbance_force(self):
        """Return the sum of the disturbance forces active now, world axes, N, shape (3,)."""
        total = np.zeros(3)
        for disturbance in self._disturbances:
            if disturbance.active(self.data.time):
                total += disturbance.force
        return total

    def _apply_disturbances(self):
        """Write the active disturbances into ``xfrc_applied`` at the current kinematics."""
        data = self.data
        data.xfrc_applied[:] = 0.0
        time = data.time
        for disturbance in self._disturbances:
            if not disturbance.active(time):
                continue
            body = self.model.body(disturbance.body).id
            point = data.xpos[body] + data.xmat[body].reshape(3, 3) @ disturbance.point
            data.xfrc_applied[body, :3] += disturbance.force
            data.xfrc_applied[body, 3:] += disturbance.torque + np.cross(
                point - data.xipos[body], disturbance.force)

    # ---- payload -------------------------------------------------------------------------------

    def set_payload(self, mass, com=(0.0, 0.0, 0.0), inertia=None):
        """Attach a payload to the last link (or replace the one there), keeping the state.

        Parameters
        ----------
        mass : float
            Mass, kg, ``>= 0`` (0 is the same as :meth:`remove_payload`).
        com : array_like, shape (3,)
            Centre of mass in the tip link frame, m.
        inertia : array_like, shape (3, 3), optional
            Inertia about the centre of mass, tip link axes, kg·m^2 (default zero: a point
            mass).

        Returns
        -------
        Payload
            The payload now held.

        Raises
        ------
        TypeError, ValueError
            If the mass is negative or a value is malformed (see :class:`Payload`).
        """
        payload = Payload(mass, com, np.zeros((3, 3)) if inertia is None else inertia)
        model = self.model
        geom = self._payload_geom
        model.geom_pos[geom] = payload.com
        # Drawn as a steel sphere of its mass (radius from 7850 kg/m^3, at least 1 cm).
        model.geom_size[geom, 0] = max(0.01, (3 * payload.mass / (4 * math.pi * 7850)) ** (1 / 3))
        model.geom_rgba[geom, 3] = 1.0 if payload.mass > 0 else 0.0
        self._payload = payload if payload.mass > 0 else None
        self._write_inertial(self._payload_body, payload)
        return payload

    def remove_payload(self):
        """Remove the payload (mass 0), keeping the state."""
        self.set_payload(0.0)

    @property
    def tip_in_dh(self):
        """numpy.ndarray, shape (4, 4): pose of the tip link frame in DH frame ``n``.

        The payload's centre of mass is given in the tip link frame; this maps it into the
        frame of linkdyn's last link (``robot.tool`` without the ``tool_offset``).
        """
        translation = np.eye(4)
        translation[:3, 3] = -self._config.tool_offset
        return self.robot.tool @ translation

    def payload_parameters(self):
        """Return the payload's inertial parameters in DH frame ``n`` (paper eq. 11).

        Returns
        -------
        numpy.ndarray, shape (10,)
            ``(m, m c_x, m c_y, m c_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz)`` with the inertia
            about the origin of DH frame ``n`` (kg, kg·m, kg·m^2): what is added to the last
            link's :meth:`linkdyn.model.Link.parameters` to model the payload exactly. Zeros
            without a payload.
        """
        if self._payload is None:
            return np.zeros(10)
        mass, transform = self._payload.mass, self.tip_in_dh
        rotation = transform[:3, :3]
        com = rotation @ self._payload.com + transform[:3, 3]
        inertia = (rotation @ self._payload.inertia @ rotation.T
                   + mass * (float(com @ com) * np.eye(3) - np.outer(com, com)))
        return np.array([mass, *(mass * com), inertia[0, 0], inertia[0, 1], inertia[0, 2],
                         inertia[1, 1], inertia[1, 2], inertia[2, 2]])

    # ---- true parameters -----------------------------------------------------------------------

    def _link_body(self, link):
        names = [name for name in self.body_names() if name != TOOL_BODY]
        if not isinstance(link, str) or link not in names:
            raise ValueError(f"link must be one of {names!r}, not {link!r}")
        return self.model.body(link).id

    def link_inertial(self, link):
        """Return the plant's (true) inertial parameters of one URDF link.

        Parameters
        ----------
        link : str
            URDF link name (a body of :meth:`body_names` other than the tool).

        Returns
        -------
        mass : float
            kg.
        com : numpy.ndarray, shape (3,)
            Centre of mass in the link frame, m.
        inertia : numpy.ndarray, shape (3, 3)
            Inertia about the centre of mass, link-frame axes, kg·m^2.

        Raises
        ------
        ValueError
            If there is no such link.
        """
        body = self._link_body(link)
        model = self.model
        axes = np.zeros(9)
        mujoco.mju_quat2Mat(axes, model.body_iquat[body])
        axes = axes.reshape(3, 3)
        inertia = axes @ np.diag(model.body_inertia[body]) @ axes.T
        return float(model.body_mass[body]), model.body_ipos[body].copy(), inertia

    def set_link_inertial(self, link, mass=None, com=None, inertia=None):
        """Change the plant's (true) inertial parameters of one URDF link, keeping the state.

        For a plant whose parameters differ from the model's (identification experiments): the
        controller's :attr:`robot` is not changed.

        Parameters
        ----------
        link : str
            URDF link name.
        mass : float, optional
            Mass, kg, > 0 for a link that moves (default: unchanged).
        com : array_like, shape (3,), optional
            Centre of mass in the URDF link frame, m (default: unchanged).
        inertia : array_like, shape (3, 3), optional
            Inertia about the centre of mass, link-frame axes, kg·m^2 (default: unchanged);
            must be physically realisable (positive semi-definite, triangle inequality).

        Raises
        ------
        TypeError, ValueError
            If the link is unknown or a value is malformed or not physical.
        """
        body = self._link_body(link)
        old_mass, old_com, old_inertia = self.link_inertial(link)
        mass = old_mass if mass is None else check_number(mass, f"link {link!r} mass (kg)",
                                                     minimum=0)
        if mass == 0 and self.model.body_dofnum[body] > 0:
            raise ValueError(f"link {link!r} moves: its mass must be > 0, not 0.0")
        payload = Payload(mass, old_com if com is None else com,
                          old_inertia if inertia is None else inertia)
        moments = np.linalg.eigvalsh(payload.inertia)
        scale = max(float(moments.max()), 1e-12)
        if moments[0] + moments[1] < moments[2] - 1e-9 * scale:
            raise ValueError(f"link {link!r} inertia violates the triangle inequality: "
                             f"principal moments {moments.tolist()!r}")
        self._write_inertial(body, payload)
        self._link_inertials[link] = payload

    def _write_inertial(self, body, inertial):
        """Write mass, centre of mass and inertia into a body and refresh derived constants."""
        model = self.model
        moments, axes = np.linalg.eigh(inertial.inertia)
        if np.linalg.det(axes) < 0:
            axes[:, 0] = -axes[:, 0]
        # MuJoCo skips the inertial frame of bodies compiled with it on the body frame.
        model.body_sameframe[body] = 0
        model.body_mass[body] = inertial.mass
        model.body_ipos[body] = inertial.com
        model.body_iquat[body] = quaternion_of(axes)
        model.body_inertia[body] = np.maximum(moments, 0.0)
        # Constants derived from masses (subtree masses, the constraint solver's inverse
        # weights) at qpos0, computed on scratch data so that the state is untouched.
        mujoco.mj_setConst(model, self._scratch)
        mujoco.mj_forward(model, self.data)

    # ---- readings -----------------------------------------------------------------------------

    def end_effector_position(self):
        """Return the tool point (tool frame origin) in the world frame, m, shape (3,).

        Equals ``linkdyn.model.kinematics.tool_pose(robot, q)[:3, 3]`` at the true ``q``.
        """
        return self.data.site_xpos[self._tool_site].copy()

    def end_effector_pose(self):
        """Return the tool frame pose in the world frame, shape (4, 4) (homogeneous, m)."""
        pose = np.eye(4)
        pose[:3, :3] = self.data.site_xmat[self._tool_site].reshape(3, 3)
        pose[:3, 3] = self.data.site_xpos[self._tool_site]
        return pose

    def wrist_wrench(self, frame="world"):
        """Return the wrist force/torque sensor reading: the wrench the tool exerts.

        The sensor sits between the tip link and the massless tool body, so it reads what the
        tool exerts on its environment (contact with the plate, the reaction to disturbances
        applied to :data:`TOOL_BODY`), not the payload's weight (the payload hangs on the tip
        link). Sign: pressing the tool down onto a plate reads ``f_z < 0`` in the world frame
        -- the convention of linkdyn's ``f_ext`` ("the wrench a link exerts on its
        environment", :func:`linkdyn.model.rnea`).

        Parameters
        ----------
        frame : {"world", "tool"}
            Axes of the result: world or tool (= tip link) frame.

        Returns
        -------
        numpy.ndarray, shape (6,)
            ``(f_x, f_y, f_z, mu_x, mu_y, mu_z)``: force (N) and moment about the wrist (the
            tip link frame origin, :data:`WRIST_SITE`) (N·m) at the current state.

        Raises
        ------
        ValueError
            If ``frame`` is not ``"world"`` or ``"tool"``.
        """
        if frame not in ("world", "tool"):
            raise ValueError(f"frame must be 'world' or 'tool', not {frame!r}")
        sensordata = self.data.sensordata
        # MuJoCo's force/torque sensors read, in the site frame, the interaction between the
        # site's body (the tool) and its parent with the sign of the wrench the tool and its
        # subtree pass on (checked: a tool pressed down onto the plate reads f_z < 0).
        force = sensordata[self._force_adr:self._force_adr + 3].copy()
        torque = sensordata[self._torque_adr:self._torque_adr + 3].copy()
        wrench = np.concatenate([force, torque])
        if frame == "world":
            rotation = self.data.site_xmat[self._wrist_site].reshape(3, 3)
            wrench = np.concatenate([rotation @ force, rotation @ torque])
        return wrench

    def contact_force(self):
        """Return the total force the tool exerts on the plate, world axes, N, shape (3,)."""
        total = np.zeros(3)
        if self._config.plate is None:
            return total
        plate = self.model.geom(PLATE_GEOM).id
        wrench = np.zeros(6)
        for i in range(self.data.ncon):
            contact = self.data.contact[i]
            if plate not in (contact.geom1, contact.geom2):
                continue
            mujoco.mj_contactForce(self.model, self.data, i, wrench)
            # Contact frame rows are world axes; the force acts on geom2, from geom1.
            force = contact.frame.reshape(3, 3).T @ wrench[:3]
            total += force if contact.geom2 == plate else -force
        return total

    # ---- model functions (pure: the state is not touched) --------------------------------------

    def _scratch_state(self, q, qd):
        scratch = self._scratch
        scratch.qpos[:] = self._joint_vector(q, "q (rad)")
        scratch.qvel[:] = self._joint_vector(qd, "qd (rad/s)")
        scratch.xfrc_applied[:] = 0.0
        scratch.qfrc_applied[:] = 0.0
        return scratch

    def forward_dynamics(self, q, qd, tau):
        """Return MuJoCo's joint accelerations at a state, rad/s^2, shape (n,).

        ``tau`` (N·m, shape (n,)) is applied as actuator controls (clipped at :attr:`tau_max`);
        friction, damping, the payload and contacts are included as the plant has them,
        disturbances are not. The plant's state is not changed.
        """
        scratch = self._scratch_state(q, qd)
        scratch.ctrl[:] = self._joint_vector(tau, "tau (N·m)")
        mujoco.mj_forward(self.model, scratch)
        return scratch.qacc.copy()

    def inverse_dynamics(self, q, qd, qdd):
        """Return MuJoCo's inverse dynamics (``mj_inverse``), N·m, shape (n,).

        The joint torque that gives ``qdd`` (rad/s^2) at ``(q, qd)`` (rad, rad/s), with the
        payload and without disturbances; passive forces (damping) are subtracted by MuJoCo,
        so compare rigid-body dynamics with ``friction=False``. The state is not changed.
        """
        scratch = self._scratch_state(q, qd)
        scratch.qacc[:] = self._joint_vector(qdd, "qdd (rad/s^2)")
        mujoco.mj_inverse(self.model, scratch)
        return scratch.qfrc_inverse.copy()

    def mass_matrix(self, q):
        """Return the joint-space inertia matrix ``M(q)``, kg·m^2, shape (n, n)."""
        scratch = self._scratch_state(q, np.zeros(self.n))
        mujoco.mj_forward(self.model, scratch)
        matrix = np.zeros((self.n, self.n))
        mujoco.mj_fullM(self.model, scratch, matrix)     # MuJoCo 4: (model, data, dst)
        return matrix

    def tool_jacobian(self, q):
        """Return MuJoCo's Jacobian of the tool point, world axes, shape (6, n).

        Rows ``(v, omega)`` (m/rad, dimensionless) as :func:`linkdyn.model.kinematics.jacobian`
        of :attr:`robot`. The state is not changed.
        """
        scratch = self._scratch_state(q, np.zeros(self.n))
        mujoco.mj_kinematics(self.model, scratch)
        mujoco.mj_comPos(self.model, scratch)
        jac = np.zeros((6, self.model.nv))
        mujoco.mj_jacSite(self.model, scratch, jac[:3], jac[3:], self._tool_site)
        return jac

    def static_force_limit(self, direction, q=None):
        """Return the largest force the tool can exert along a direction, held still.

        The torque limits bound ``g(q) + J(q)^T d f`` (the plant's gravity torque, payload
        included, plus the force ``f d`` the tool exerts): ``|g_i + (J^T d)_i f| <= tau_max_i``
        on every joint. This is the saturation of the contact experiment (paper Sect. 4.2: the
        commanded 40 N saturate at about 30 N on the COMPI arm).

        Parameters
        ----------
        direction : array_like, shape (3,)
            Direction of the force the tool exerts, world frame (normalised here).
        q : array_like, shape (n,), optional
            Joint angles, rad (default the current true ones).

        Returns
        -------
        force : float
            The largest ``f >= 0``, N (``inf`` if no limited joint takes load).
        joint : int or None
            Index (0-based) of the joint that limits it.

        Raises
        ------
        TypeError, ValueError
            If ``direction`` is not a non-zero finite 3-vector or ``q`` is malformed.
        ValueError
            If the arm cannot even hold itself at ``q`` (``|g_i| > tau_max_i``).
        """
        direction = check_vector(direction, (3,), "force direction")
        norm = float(np.linalg.norm(direction))
        if norm < 1e-9:
            raise ValueError(f"force direction must not be zero, not {direction.tolist()!r}")
        q = self.data.qpos.copy() if q is None else self._joint_vector(q, "q (rad)")
        zero = np.zeros(self.n)
        gravity = self.inverse_dynamics(q, zero, zero)
        if np.any(np.abs(gravity) > self.tau_max):
            raise ValueError(f"the arm cannot hold itself at q = {q.tolist()!r}: gravity "
                             f"torques {gravity.tolist()!r} exceed the limits")
        lever = self.tool_jacobian(q)[:3].T @ (direction / norm)
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = np.where(lever > 0, (self.tau_max - gravity) / lever,
                             np.where(lever < 0, (self.tau_max + gravity) / -lever, np.inf))
        bound[~np.isfinite(self.tau_max)] = np.inf
        joint = int(np.argmin(bound))
        return (float(bound[joint]), joint) if np.isfinite(bound[joint]) else (math.inf, None)

    def __repr__(self):
        return (f"Plant({self.robot.name!r}, n={self.n}, control_period={self.control_period}, "
                f"substeps={self.substeps}, time={self.data.time:.6f})")
