"""Pictures of a plant scene by MuJoCo's offscreen renderer.

On a machine without a display MuJoCo needs a software or headless OpenGL, chosen by the
environment variable ``MUJOCO_GL`` *before* :mod:`mujoco` is imported: ``osmesa`` (Debian
package ``libosmesa6``) or ``egl``. :mod:`linkdyn.sim.mujoco_gl` (imported by the plant) sets it to one whose
library is present when there is no display, it is not set already and mujoco is not imported
yet (import the plant before anything that imports mujoco, or set ``MUJOCO_GL``).
:func:`render` raises :class:`RenderError` when no OpenGL context can be made.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .mujoco_gl import mujoco
from .plant import Plant

__all__ = ["render", "render_image", "scene", "RenderError", "MARKER_KINDS"]

#: Kinds of the extra geoms :func:`render_image` draws (MuJoCo's abstract scene, mjvScene):
#: ``("point", position (3,) m, radius m, rgba)``, ``("path", points (k, 3) m, width m, rgba)``
#: (a strip of capsules), ``("arrow", tail (3,) m, vector (3,) m, rgba)`` (a force drawn as an
#: arrow from its point of application).
MARKER_KINDS = ("point", "path", "arrow")


class RenderError(RuntimeError):
    """No OpenGL context for offscreen rendering (the message says what to install or set)."""


def _check_size(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 16:
        raise ValueError(f"{what} must be an int >= 16 pixels, not {value!r}")
    return int(value)


def _finite3(value, what):
    array = np.asarray(value, dtype=float)
    if array.shape != (3,) or not np.all(np.isfinite(array)):
        raise ValueError(f"{what} must be 3 finite numbers, not {value!r}")
    return array


def _add_geom(scene, kind, size, rgba, *, pos=None, ends=None):
    if scene.ngeom >= scene.maxgeom:
        raise ValueError(f"too many markers: the scene holds {scene.maxgeom} geoms")
    geom = scene.geoms[scene.ngeom]
    mujoco.mjv_initGeom(geom, kind, np.array(size, dtype=float),
                        np.zeros(3) if pos is None else np.asarray(pos, dtype=float),
                        np.eye(3).ravel(), np.asarray(rgba, dtype=np.float32))
    if ends is not None:
        mujoco.mjv_connector(geom, kind, float(size[0]), np.asarray(ends[0], dtype=float),
                             np.asarray(ends[1], dtype=float))
    scene.ngeom += 1


def _add_markers(scene, markers):
    for marker in markers:
        if not isinstance(marker, (tuple, list)) or len(marker) != 4 \
                or marker[0] not in MARKER_KINDS:
            raise ValueError(f"a marker must be (kind, ..., rgba) with kind one of "
                             f"{MARKER_KINDS}, not {marker!r}")
        kind, a, b, rgba = marker
        rgba = np.asarray(rgba, dtype=float)
        if rgba.shape != (4,):
            raise ValueError(f"a marker's rgba must be 4 numbers, not {marker[3]!r}")
        if kind == "point":
            _add_geom(scene, mujoco.mjtGeom.mjGEOM_SPHERE, (float(b),) * 3, rgba,
                      pos=_finite3(a, "a point marker's position (m)"))
        elif kind == "path":
            points = np.asarray(a, dtype=float)
            if points.ndim != 2 or points.shape[1] != 3 or len(points) < 2 \
                    or not np.all(np.isfinite(points)):
                raise ValueError(f"a path marker needs (k >= 2, 3) finite points, not shape "
                                 f"{points.shape}")
            for start, end in zip(points[:-1], points[1:]):
                if np.linalg.norm(end - start) > 0:
                    _add_geom(scene, mujoco.mjtGeom.mjGEOM_CAPSULE, (float(b), 0, 0), rgba,
                              ends=(start, end))
        else:
            tail = _finite3(a, "an arrow marker's tail (m)")
            vector = _finite3(b, "an arrow marker's vector (m)")
            length = float(np.linalg.norm(vector))
            if length > 0:
                # MuJoCo draws an arrow geom half as long as the size mjv_connector gives it
                # (its size[2] = |to - from|): aim at twice the vector for the tip to land at
                # tail + vector (checked against point markers at both ends).
                _add_geom(scene, mujoco.mjtGeom.mjGEOM_ARROW, (0.02 * max(length, 0.1) ** 0.5,
                                                              0, 0), rgba,
                          ends=(tail, tail + 2.0 * vector))


def render_image(plant, *, width=800, height=600, lookat=None, distance=None, azimuth=135.0,
                 elevation=-25.0, markers=(), transparent=False):
    """Render the plant's current state; return the RGB image.

    Parameters
    ----------
    plant : Plant
        The plant (its current state, payload and plate are drawn).
    width, height : int
        Image size, pixels (at most the model's offscreen buffer, 1280 x 960 here).
    lookat : array_like, shape (3,), optional
        Point the camera looks at, world frame, m (default: between the base and the tool).
    distance : float, optional
        Camera distance from ``lookat``, m (default: from the robot's reach).
    azimuth, elevation : float
        Camera azimuth and elevation, degrees.
    markers : sequence of tuple
        Extra geoms drawn into the scene, world frame (:data:`MARKER_KINDS`): reference points,
        paths, force arrows. They are not part of the model (no contact, no mass).
    transparent : bool
        Draw the model's geoms half transparent (MuJoCo's ``mjVIS_TRANSPARENT``), so that
        markers inside the links show.

    Returns
    -------
    numpy.ndarray, shape (height, width, 3), dtype uint8

    Raises
    ------
    TypeError
        If ``plant`` is not a :class:`Plant`.
    ValueError
        If a size is not an int >= 16 or larger than the offscreen buffer, or a marker is
        malformed.
    RenderError
        If no OpenGL context can be created (no display and neither OSMesa nor EGL).
    """
    if not isinstance(plant, Plant):
        raise TypeError(f"plant must be a Plant, not {plant!r}")
    width, height = _check_size(width, "width"), _check_size(height, "height")
    model, data = plant.model, plant.data
    if width > model.vis.global_.offwidth or height > model.vis.global_.offheight:
        raise ValueError(f"image size {width} x {height} exceeds the offscreen buffer "
                         f"{model.vis.global_.offwidth} x {model.vis.global_.offheight}")
    # Default framing: the box around the bodies, the tool point and the plate.
    points = [data.xpos[1:], plant.end_effector_position()[None]]
    if plant.plate is not None:
        points.append(plant.plate.position[None])
    points = np.concatenate(points)
    low, high = points.min(axis=0), points.max(axis=0)
    camera = mujoco.MjvCamera()
    camera.type = mujoco.mjtCamera.mjCAMERA_FREE
    camera.lookat[:] = (0.5 * (low + high) if lookat is None
                        else _finite3(lookat, "lookat (m)"))
    camera.distance = (max(0.5, 2.2 * float(np.linalg.norm(high - low))) if distance is None
                       else float(distance))
    camera.azimuth, camera.elevation = float(azimuth), float(elevation)
    try:
        renderer = mujoco.Renderer(model, height, width)
    except Exception as error:  # the GL backends raise several kinds of errors
        backend = getattr(getattr(mujoco, "GLContext", None), "__module__", "none")
        raise RenderError(
            f"no OpenGL context for offscreen rendering (MUJOCO_GL="
            f"{os.environ.get('MUJOCO_GL', '(not set)')}, backend {backend}): {error}. "
            f"On a headless Debian machine install libosmesa6 and set MUJOCO_GL=osmesa before "
            f"importing mujoco (or use MUJOCO_GL=egl)") from error
    try:
        options = mujoco.MjvOption()
        options.geomgroup[:] = 1
        options.sitegroup[:] = 1
        options.flags[mujoco.mjtVisFlag.mjVIS_TRANSPARENT] = bool(transparent)
        renderer.update_scene(data, camera, options)
        _add_markers(renderer.scene, markers)
        return renderer.render().copy()
    finally:
        renderer.close()


def render(plant, path, **kwargs):
    """Render the plant's current state into a PNG file.

    Parameters
    ----------
    plant : Plant
        The plant.
    path : str or os.PathLike
        The PNG file to write (its folder must exist).
    **kwargs
        Camera and size, as :func:`render_image`.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    RenderError, TypeError, ValueError
        As :func:`render_image`; ``FileNotFoundError`` if the folder does not exist.
    """
    import matplotlib.image

    path = Path(path)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"folder {str(path.parent)!r} does not exist")
    image = render_image(plant, **kwargs)
    matplotlib.image.imsave(path, image)
    return path


#: The scene of the contact and payload experiments: the UR5 with its flange (tip link y axis)
#: pointing down, a 0.2 m tool, the plate 1 cm under the tool sphere, a 0.8 kg payload (paper
#: Sect. 4.5) on the tool stick.
#: The Panda in its "ready" pose, the hand's z axis pointing down.
SCENE_POSE = {"ur5": (0.3, -1.9, 1.9, -1.5, -1.5, 0.0),
              "panda": (0.0, -np.pi / 4, 0.0, -3 * np.pi / 4, 0.0, np.pi / 2, np.pi / 4)}
SCENE_TOOL_OFFSET = {"ur5": (0.0, 0.2, 0.0), "panda": (0.0, 0.0, 0.2)}
#: Payload mass (kg) and centre of mass (tip link frame, m).
SCENE_PAYLOAD = {"ur5": (0.8, (0.0, 0.13, 0.0)), "panda": (0.8, (0.0, 0.0, 0.13))}


def scene(robot_name="ur5", *, meshes=True):
    """Return the plant of the experiments' scene: arm, tool, plate under the tool, payload.

    Parameters
    ----------
    robot_name : str
        A reference arm (:data:`linkdyn.model.reference.REFERENCE_URDFS`); arms without a
        scene pose here stand at their default configuration with a 0.1 m tool along z.
    meshes : bool
        Draw the URDF's collision meshes (default) or capsules.
    """
    plant = Plant.from_reference(robot_name, meshes=meshes,
                                 tool_offset=SCENE_TOOL_OFFSET.get(robot_name, (0, 0, 0.1)))
    q = np.array(SCENE_POSE.get(robot_name, plant.default_configuration()), dtype=float)
    plant.reset(q)
    plant = plant.with_plate_at_tool([0.0, 0.0, -1.0], size=(0.25, 0.25), gap=0.01)
    plant.set_payload(*SCENE_PAYLOAD.get(robot_name, (0.8, (0.0, 0.0, 0.05))))
    return plant


def main(argv=None):
    """``python -m linkdyn.sim.render --out scene.png``: a picture of :func:`scene`."""
    import argparse

    parser = argparse.ArgumentParser(description="Picture of the plant scene (MuJoCo offscreen)")
    parser.add_argument("--robot", default="ur5")
    parser.add_argument("--out", required=True, help="PNG file to write")
    parser.add_argument("--width", type=int, default=800)
    parser.add_argument("--height", type=int, default=600)
    parser.add_argument("--azimuth", type=float, default=150.0)
    parser.add_argument("--elevation", type=float, default=-20.0)
    args = parser.parse_args(argv)
    try:
        path = render(scene(args.robot), args.out, width=args.width, height=args.height,
                      azimuth=args.azimuth, elevation=args.elevation)
    except (RenderError, ValueError, FileNotFoundError) as error:
        parser.exit(1, f"error: {error}\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
