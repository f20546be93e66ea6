"""MuJoCo imported with a headless OpenGL chosen for offscreen pictures.

``MUJOCO_GL`` is read when :mod:`mujoco` is first imported. The plant modules import mujoco from
here, so that on a machine without a display the pictures of :mod:`linkdyn.sim.render` work
without setting anything: OSMesa (Debian ``libosmesa6``) or else EGL is chosen when its library
is present, unless ``MUJOCO_GL`` is set, a display is there, or mujoco was imported before.
Nothing but rendering depends on it.
"""

import ctypes.util
import os
import sys


def choose_headless_gl():
    """Pick a headless OpenGL for MuJoCo's offscreen rendering unless one is chosen already.

    ``MUJOCO_GL`` is read when :mod:`mujoco` is imported; without a display, and when mujoco is
    not imported yet, OSMesa (Debian ``libosmesa6``) or else EGL is chosen when its library is
    present. Nothing else depends on it.
    """
    if "MUJOCO_GL" in os.environ or os.environ.get("DISPLAY") or "mujoco" in sys.modules:
        return
    for backend, library in (("osmesa", "OSMesa"), ("egl", "EGL")):
        if ctypes.util.find_library(library):
            os.environ["MUJOCO_GL"] = backend
            return



choose_headless_gl()

import mujoco  # noqa: E402

__all__ = ["mujoco", "choose_headless_gl"]
