"""Scene pictures of the experiments (linkdyn.host.experiments.scenes, linkdyn.sim.render).

References: the experiment's own setup (the plate where ``with_plate_at_tool`` puts it, the
payload's mass and centre of mass, the tool point MuJoCo reports at the pose shown, the force
logged); the pixels MuJoCo's offscreen renderer draws with and without a marker. The runs are
stand-ins built from the logged quantities the scenes read (no closed loop here).
"""

from types import SimpleNamespace

import numpy as np
import pytest

from linkdyn.host.experiments.runs import reference_pose
from linkdyn.host.experiments.scenes import ARROW_M_PER_N, _scene, render_scene

pytest.importorskip("mujoco")
from linkdyn.sim import render as render_module           # noqa: E402 (after the skip)
from linkdyn.sim.plant import Plant                       # noqa: E402


def _log(plant, q, force=None, d=None, k=5):
    """A stand-in log of ``k`` samples at pose ``q`` (the tool point MuJoCo reports there)."""
    plant.reset(q)
    x = plant.end_effector_position()
    zeros = np.zeros((k, 3))
    f_cmd = zeros if force is None else np.outer(np.linspace(0, 1, k), force)
    return SimpleNamespace(t=np.arange(k) * 1e-3, q=np.tile(q, (k, 1)), x_ee=np.tile(x, (k, 1)),
                           x_ref=np.tile(x, (k, 1)) + [0, 0, 0.01], f_cmd=f_cmd,
                           f=f_cmd, error=np.tile([0, 0, -0.01], (k, 1)) * np.arange(k)[:, None],
                           d=zeros if d is None else np.tile(d, (k, 1)))


@pytest.fixture(scope="module")
def pose():
    plant = Plant.from_reference("ur5")
    return plant, reference_pose(plant)


def test_contact_scene_has_the_plate_and_the_commanded_force(pose):
    plant, q0 = pose
    force = np.array([40.0, 0.0, 0.0])
    result = {"runs": {"contact": _log(plant, q0, force)}, "pose": q0.tolist(),
              "figures": {"contact": {"direction": [1.0, 0.0, 0.0]}}}
    shown, markers, _ = _scene("contact", result)
    reference = Plant.from_reference("ur5")
    reference.reset(q0)
    plate = reference.with_plate_at_tool([1.0, 0.0, 0.0]).plate
    assert shown.plate is not None
    np.testing.assert_allclose(shown.plate.position, plate.position, atol=1e-12)
    (arrow,) = markers
    assert arrow[0] == "arrow"
    np.testing.assert_allclose(arrow[1], reference.end_effector_position(), atol=1e-9)
    np.testing.assert_allclose(arrow[2], ARROW_M_PER_N * force, atol=1e-12)   # at its peak


def test_payload_scene_holds_the_payload_and_point_scene_the_pushed_reference(pose):
    plant, q0 = pose
    result = {"runs": {"payload_unmodelled": _log(plant, q0, d=[0, 0, -2.0])}, "mass": 0.8,
              "com_tip": [0.0, 0.0, 0.05]}
    shown, markers, _ = _scene("payload", result)
    assert shown.payload.mass == 0.8
    np.testing.assert_allclose(shown.payload.com, [0.0, 0.0, 0.05])
    kinds = [m[0] for m in markers]
    assert kinds == ["point", "arrow", "path"]
    log = result["runs"]["payload_unmodelled"]
    np.testing.assert_allclose(markers[0][1], log.x_ref[-1])        # at the largest error
    # A push drawn ending at the tool, 15 cm long at least (2 N x 1 cm/N is less).
    np.testing.assert_allclose(markers[1][1] + markers[1][2], log.x_ee[-1])
    np.testing.assert_allclose(markers[1][2], [0, 0, -0.15])
    shown, markers, camera = _scene("point", {"runs": {"point_low": log}})
    assert shown.payload is None and shown.plate is None
    np.testing.assert_allclose(camera["lookat"], log.x_ee[-1])


def test_markers_are_drawn_into_the_picture(pose):
    plant, q0 = pose
    plant.reset(q0)
    x = plant.end_effector_position()
    camera = dict(width=160, height=120, lookat=x, distance=1.0)
    try:
        bare = render_module.render_image(plant, **camera).astype(int)
    except render_module.RenderError as error:
        pytest.skip(f"no OpenGL here: {error}")
    red = render_module.render_image(plant, markers=[("arrow", x, [0, 0, 0.3], (1, 0, 0, 1))],
                                     **camera).astype(int)
    changed = np.abs(red - bare).sum(axis=2) > 60
    assert changed.sum() > 30                           # the arrow is there ...
    reddish = red[changed]
    assert np.mean(reddish[:, 0] > reddish[:, 1] + 40) > 0.5     # ... and red
    with pytest.raises(ValueError, match="a marker must be"):
        render_module.render_image(plant, markers=[("cube", x, 1, (1, 0, 0, 1))], **camera)
    with pytest.raises(ValueError, match="a path marker needs"):
        render_module.render_image(plant, markers=[("path", [x], 0.01, (1, 0, 0, 1))],
                                   **camera)


def test_render_scene_writes_the_picture_or_none_without_gl(pose, tmp_path, monkeypatch):
    plant, q0 = pose
    result = {"runs": {"point_low": _log(plant, q0, d=[0, 0, -20.0])}}
    try:
        render_module.render_image(plant, width=16, height=16)
    except render_module.RenderError:
        assert render_scene("point", result, tmp_path / "p.png") is None
        return
    assert render_scene("point", result, tmp_path / "p.png") == "p.png"
    assert (tmp_path / "p.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="no scene for experiment 'bogus'"):
        render_scene("bogus", result, tmp_path / "b.png")


def test_an_arrow_ends_at_its_tip(pose):
    plant, q0 = pose
    plant.reset(q0)
    tip = np.array([0.5, 0.5, 0.3])
    camera = dict(width=160, height=120, lookat=tip - [0, 0, 0.1], distance=0.8, azimuth=90.0,
                  elevation=0.0)
    try:
        point = render_module.render_image(plant, markers=[("point", tip, 0.01, (0, 1, 0, 1))],
                                           **camera).astype(int)
    except render_module.RenderError as error:
        pytest.skip(f"no OpenGL here: {error}")
    arrow = render_module.render_image(
        plant, markers=[("arrow", tip - [0, 0, 0.2], [0, 0, 0.2], (1, 0, 0, 1))],
        **camera).astype(int)
    green = np.nonzero((point[..., 1] > 150) & (point[..., 0] < 100))[0]
    red = np.nonzero((arrow[..., 0] > 150) & (arrow[..., 1] < 100))[0]
    # The tip (top red row) at the point's centre row, within the point's radius (~2 px).
    assert abs(red.min() - green.mean()) <= 3, (red.min(), green.mean())
    # 0.2 m at 0.8 m distance, 45 degrees vertical view: about 0.2 / (2 * 0.8 * tan 22.5 deg)
    # of the 120 rows, 36 rows long (the tail at the lookat point's row + 0.1 m).
    assert abs((red.max() - red.min()) - 0.2 / (2 * 0.8 * np.tan(np.radians(22.5))) * 120) < 4
