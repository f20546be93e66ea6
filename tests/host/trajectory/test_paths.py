"""Cartesian paths: shape, rest-to-rest time laws, derivatives consistent with the poses."""

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from linkdyn.host.trajectory import paths


def _derivative_errors(path):
    """Largest differences between the path's derivatives and central differences of it."""
    dt = 1 / path.rate
    v = np.gradient(path.position, dt, axis=0)
    a = np.gradient(path.velocity, dt, axis=0)
    spin = np.gradient(path.rotation, dt, axis=0) @ np.swapaxes(path.rotation, 1, 2)
    w = np.stack([spin[:, 2, 1], spin[:, 0, 2], spin[:, 1, 0]], axis=1)
    inner = slice(2, -2)
    return (np.max(np.abs(v - path.velocity[:, :3])[inner]),
            np.max(np.abs(w - path.velocity[:, 3:])[inner]),
            np.max(np.abs(a - path.acceleration)[inner]))


def test_figure_eight_shape_and_time_law():
    orientation = Rotation.from_euler("xyz", [0.4, -0.3, 1.0]).as_matrix()
    centre = np.array([0.5, -0.2, 0.4])
    path = paths.figure_eight(centre, orientation, size=0.3, period=2.0, cycles=2, rate=1000)
    assert path.duration == pytest.approx(2 * 2.0 + 2.0)        # cycles * period + fade
    assert len(path) == 6001 and path.rate == pytest.approx(1000)
    # Starts and ends at rest at the centre, with zero acceleration.
    for k in (0, -1):
        assert np.allclose(path.position[k], centre, atol=1e-12)
        assert np.allclose(path.velocity[k], 0, atol=1e-12)
        assert np.allclose(path.acceleration[k], 0, atol=1e-12)
    # In the x-y plane of the orientation: width 0.3 along x_o, height 0.15 along y_o.
    local = (path.position - centre) @ orientation
    assert np.max(np.abs(local[:, 2])) < 1e-12
    assert np.max(local[:, 0]) - np.min(local[:, 0]) == pytest.approx(0.3, abs=1e-6)
    assert np.max(local[:, 1]) - np.min(local[:, 1]) == pytest.approx(0.15, abs=1e-6)
    assert np.allclose(path.rotation, orientation)
    # Full speed in the middle: one eight per period (phase rate 2 pi / period).
    speed = np.linalg.norm(path.velocity[:, :3], axis=1)
    assert np.max(speed) == pytest.approx(math.hypot(0.15, 0.15) * math.pi, rel=1e-3)
    dv, dw, da = _derivative_errors(path)
    assert dv < 1e-5 and dw < 1e-12 and da < 1e-4


def test_line_and_waypoints_are_consistent_rest_to_rest_paths():
    r0 = Rotation.from_euler("xyz", [0.1, 0.2, 0.3]).as_matrix()
    r1 = Rotation.from_euler("xyz", [0.5, -0.4, 1.1]).as_matrix()
    line = paths.line([0, 0, 0], [0.3, 0.1, -0.2], 1.5, r0, r1, rate=1000)
    assert np.allclose(line.position[-1], [0.3, 0.1, -0.2]) and np.allclose(line.rotation[-1], r1)
    rotations = Rotation.from_euler("xyz", [[0, 0, 0], [0.3, 0.2, 0.1], [0.5, -0.4, 0.9],
                                           [0.1, 0.1, 0.1]]).as_matrix()
    points = [[0, 0, 0], [0.1, 0.2, 0], [0.3, 0.1, 0.1], [0.2, 0, 0]]
    through = paths.waypoints(points, [0, 1, 2, 3.5], rotations, rate=1000)
    for k, time in enumerate([0, 1, 2, 3.5]):
        i = int(round(time * 1000))
        assert np.allclose(through.position[i], points[k], atol=1e-12)
        assert np.allclose(through.rotation[i], rotations[k], atol=1e-9)
    for path in (line, through):
        for k in (0, -1):
            assert np.allclose(path.velocity[k], 0, atol=1e-12)
            assert np.allclose(path.acceleration[k], 0, atol=1e-9)
        dv, dw, da = _derivative_errors(path)
        assert dv < 1e-5 and dw < 1e-5 and da < 1e-4, (path.name, dv, dw, da)


def test_paths_reject_bad_parameters():
    with pytest.raises(ValueError, match="size must be a positive number of m"):
        paths.figure_eight([0, 0, 0], size=-1)
    with pytest.raises(ValueError, match="period"):
        paths.figure_eight([0, 0, 0], period=0)
    with pytest.raises(ValueError, match="rotation matrix"):
        paths.figure_eight([0, 0, 0], np.ones((3, 3)))
    with pytest.raises(ValueError, match="ramp"):
        paths.figure_eight([0, 0, 0], period=1.0, ramp=2.0)
    with pytest.raises(ValueError, match="cycles"):
        paths.figure_eight([0, 0, 0], cycles=0)
    with pytest.raises(ValueError, match="centre must be 3"):
        paths.figure_eight([0, 0])
    with pytest.raises(ValueError, match="strictly increasing"):
        paths.waypoints([[0, 0, 0], [1, 0, 0]], [0, 0])
    with pytest.raises(ValueError, match="less than pi"):
        paths.waypoints([[0, 0, 0], [1, 0, 0]], [0, 1],
                        [np.eye(3), Rotation.from_rotvec([0, 0, math.pi]).as_matrix()])
