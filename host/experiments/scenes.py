"""Pictures of each experiment's scene (MuJoCo offscreen, :func:`linkdyn.sim.render.render`).

Each picture shows the plant as the experiment built it, at a telling moment of a run, with
what MuJoCo's abstract scene (mjvScene) can draw beside the model: the reference point or path
(green), the measured path (blue), the disturbance or commanded force as an arrow from its
point of application (red; length :data:`ARROW_M_PER_N` m per N, at least :data:`ARROW_MIN_M`):

- ``contact``: the arm pressed against the plate at the largest commanded force, the force
  the tool is commanded to exert (arrow);
- ``point``: ``point_low`` at its largest deflection during the pulse, the reference point and
  the pulse on the tool, close up with the links drawn transparent;
- ``payload``: ``payload_unmodelled`` with the payload body (yellow) at its largest sag, the
  reference point and the tool's path down to it;
- ``track``: ``track_disturbed`` at its largest deviation from ``track`` during the push on the
  tool, the reference eight, the measured path and the push;
- ``identify``: the arm in the middle of the excitation, the tool's path through it.

When no OpenGL context can be made (:class:`linkdyn.sim.render.RenderError`) no picture is
written; the rest of the experiment does not need one.
"""

from __future__ import annotations

import numpy as np

__all__ = ["render_scene", "ARROW_M_PER_N", "ARROW_MIN_M"]

#: Arrow length per newton of force, m/N.
ARROW_M_PER_N = 0.01
#: Shortest arrow, m (longer than the wrist, inside which the tool point lies).
ARROW_MIN_M = 0.15

GREEN = (0.1, 0.75, 0.2, 1.0)
BLUE = (0.15, 0.35, 0.95, 1.0)
RED = (0.9, 0.1, 0.1, 1.0)


def _arrow(tail, force, reverse=False):
    force = np.asarray(force, dtype=float)
    norm = float(np.linalg.norm(force))
    if norm == 0:
        return []
    length = max(ARROW_MIN_M, ARROW_M_PER_N * norm)
    vector = force / norm * length
    # A push is drawn ending at the point it acts on (reverse), a pull/command starting there.
    tail = np.asarray(tail, dtype=float)
    return [("arrow", tail - vector if reverse else tail, vector, RED)]


def _path(points, width, rgba, count=240):
    points = np.asarray(points, dtype=float)
    index = np.unique(np.linspace(0, len(points) - 1, min(count, len(points))).astype(int))
    return [("path", points[index], width, rgba)] if len(index) >= 2 else []


def _scene(name, result):
    """Return (plant at the moment shown, markers, camera keywords)."""
    from linkdyn.sim.plant import Plant
    robot = result.get("robot", "ur5")
    runs = result["runs"]
    if name == "contact":
        log = runs["contact"]
        figures = result["figures"]["contact"]
        d = np.asarray(figures["direction"])
        k = int(np.argmax(log.f_cmd @ d))
        base = Plant.from_reference(robot, meshes=True)
        base.reset(np.asarray(result["pose"]))
        plant = base.with_plate_at_tool(d)
        plant.reset(log.q[k])
        return plant, _arrow(log.x_ee[k], log.f_cmd[k]), {}
    if name in ("point", "payload"):
        log = runs["point_low" if name == "point" else "payload_unmodelled"]
        plant = Plant.from_reference(robot, meshes=True)
        if name == "payload":
            plant.set_payload(result["mass"], result["com_tip"])
        magnitude = np.linalg.norm(log.error, axis=1)
        k = int(np.argmax(magnitude))
        plant.reset(log.q[k])
        markers = [("point", log.x_ref[k], 0.012, GREEN)]
        pushed = np.nonzero(np.linalg.norm(log.d, axis=1) > 0)[0]
        if len(pushed):
            at = k if np.any(log.d[k]) else int(pushed[0])
            markers += _arrow(log.x_ee[k], log.d[at], reverse=True)
        markers += _path(log.x_ee[:k + 1], 0.003, BLUE)
        # point: close up, the links see-through (the reference lies inside the wrist).
        camera = {"lookat": log.x_ee[k], "distance": 0.7, "transparent": True} \
            if name == "point" else {}
        return plant, markers, camera
    if name == "track":
        log = runs["track_disturbed"]
        deviation = np.linalg.norm(log.x_ee - runs["track"].x_ee, axis=1)
        # The largest deviation while the push on the tool acts in the eight.
        on_tool = np.zeros(len(log.t), dtype=bool)
        for push in result["schedule"]:
            if push["body"] == "tool" and push["start"] >= result["hold"]:
                on_tool |= (log.t >= push["start"]) & (log.t < push["until"])
        k = int(np.argmax(np.where(on_tool, deviation, -1.0)))
        plant = Plant.from_reference(robot, meshes=True)
        plant.reset(log.q[k])
        hold = log.t >= result["hold"]
        markers = _path(log.x_ref[hold], 0.004, GREEN) + _path(log.x_ee[hold], 0.003, BLUE)
        if on_tool[k]:
            markers += _arrow(log.x_ee[k], log.d[k], reverse=True)
        return plant, markers, {}
    log = runs["identify_excitation"]
    k = len(log.t) // 2
    plant = Plant.from_reference(robot, meshes=True)
    plant.reset(log.q[k])
    return plant, _path(log.x_ee, 0.003, BLUE) + [("point", log.x_ee[k], 0.012, GREEN)], {}


def render_scene(name, result, path, *, width=640, height=480):
    """Render an experiment's scene into a PNG; return the file's name, or None without GL.

    Parameters
    ----------
    name : str
        Experiment (``"contact"``, ``"point"``, ``"payload"``, ``"track"``, ``"identify"``).
    result : dict
        The experiment function's result (its ``runs``, ``pose``, ... ; ``robot`` defaults to
        ``"ur5"``).
    path : pathlib.Path
        PNG to write.
    width, height : int
        Image size, pixels.

    Returns
    -------
    str or None
        ``path.name``, or None when no OpenGL context can be made.

    Raises
    ------
    ValueError
        If ``name`` is not an experiment.
    """
    from linkdyn.sim.render import RenderError, render
    if name not in ("contact", "point", "payload", "track", "identify"):
        raise ValueError(f"no scene for experiment {name!r}")
    plant, markers, camera = _scene(name, result)
    try:
        render(plant, path, width=width, height=height, markers=markers,
               **{"azimuth": 150.0, "elevation": -20.0, **camera})
    except RenderError:
        return None
    return path.name
