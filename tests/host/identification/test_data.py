"""Measurement data: CSV layout, the panda-gaz2019 layout, resampling, filtering, derivatives."""

import os

import numpy as np
import pytest

from linkdyn.host.identification.data import (
    DataError, Measurements, dataset_path, decimate, differentiate, filtered, load_measurements,
    lowpass, read_csv, repository_root, resample_uniform, with_accelerations, write_csv)
from linkdyn.host.identification.fourier import FourierTrajectory
from linkdyn.host.identification.panda_gaz2019 import read_gaz2019_fit

from support.identification import panda_dataset


def _sine_measurements(rate=1000.0, duration=4.0, with_qdd=False):
    t = np.arange(0, duration, 1 / rate)
    trajectory = FourierTrajectory([0.1, -0.2], [[0.5, 0.1], [0.2, -0.3]],
                                   [[0.0, 0.2], [0.4, 0.1]], 2 * np.pi / 2.0)
    q, qd, qdd = trajectory.evaluate(t)
    tau = 3 * q + qd
    return Measurements(t, q, qd, tau, qdd if with_qdd else None, name="sine",
                        trajectory=trajectory), trajectory


@pytest.mark.parametrize("with_qdd", [False, True])
def test_csv_round_trip(tmp_path, with_qdd):
    measurements, _ = _sine_measurements(rate=100.0, with_qdd=with_qdd)
    path = write_csv(tmp_path / "run.csv", measurements.t, measurements.q, measurements.qd,
                     measurements.qdd, measurements.tau)
    header = path.read_text().splitlines()[0]
    assert header == ("t,q1,q2,qd1,qd2," + ("qdd1,qdd2," if with_qdd else "") + "tau1,tau2")
    loaded = read_csv(path)
    for name in ("t", "q", "qd", "tau"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(measurements, name))
    if with_qdd:
        np.testing.assert_array_equal(loaded.qdd, measurements.qdd)
        assert loaded.acceleration_source == "measured"
    else:
        assert loaded.qdd is None


@pytest.mark.parametrize("text, message", [
    ("a,b,c\n1,2,3\n", "header"),
    ("t,q1,qd1,tau1\n0,1,2\n", "3 values"),
    ("t,q1,qd1,tau1\n0,1,x,3\n", "not a number"),
    ("t,q1,qd1,tau1\n0,1,2,3\n0,1,2,3\n", "increasing"),
    ("", "empty"),
])
def test_read_csv_rejects_bad_files(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        read_csv(path)


def test_read_csv_checks_the_joint_count(tmp_path):
    measurements, _ = _sine_measurements(rate=50.0)
    path = write_csv(tmp_path / "run.csv", measurements.t, measurements.q, measurements.qd,
                     tau=measurements.tau)
    with pytest.raises(DataError, match="2 joints, the robot has 6"):
        read_csv(path, n=6)


def test_load_measurements_errors(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        load_measurements(tmp_path / "missing.csv")
    with pytest.raises(DataError, match="no known data layout"):
        load_measurements(tmp_path)
    (tmp_path / "file.txt").write_text("1 2 3")
    with pytest.raises(DataError, match="neither"):
        load_measurements(tmp_path / "file.txt")


def test_dataset_path_honours_the_environment_variable(tmp_path, monkeypatch):
    (tmp_path / "my-set").mkdir()
    monkeypatch.setenv("LINKDYN_DATASETS", os.fspath(tmp_path))
    assert dataset_path("my-set") == tmp_path / "my-set"
    with pytest.raises(DataError, match="LINKDYN_DATASETS"):
        dataset_path("other-set")


def test_dataset_path_defaults_to_the_shared_folder_beside_the_repository(monkeypatch):
    monkeypatch.delenv("LINKDYN_DATASETS", raising=False)
    root = repository_root()
    assert (root / "pyproject.toml").is_file()
    expected = root.parent / "shared" / "datasets" / "panda-gaz2019"
    if expected.is_dir():
        assert dataset_path("panda-gaz2019") == expected
    else:
        with pytest.raises(DataError, match=str(expected)):
            dataset_path("panda-gaz2019")


def test_resample_uniform_interpolates_jittered_times():
    rng = np.random.default_rng(0)
    t = np.cumsum(rng.uniform(0.0007, 0.0013, 3000))
    q = np.sin(t)[:, None]
    measurements = Measurements(t, q, np.cos(t)[:, None], q)
    assert not measurements.is_uniform
    uniform = resample_uniform(measurements)
    assert uniform.is_uniform
    assert uniform.sample_rate == pytest.approx(round(measurements.sample_rate))
    np.testing.assert_allclose(uniform.q[:, 0], np.sin(uniform.t), atol=1e-6)


def test_lowpass_is_zero_phase_and_removes_noise():
    rate = 1000.0
    t = np.arange(0, 5, 1 / rate)
    clean = np.sin(2 * np.pi * 0.5 * t)
    noisy = clean + 0.05 * np.random.default_rng(1).standard_normal(t.size)
    smooth = lowpass(noisy, rate, 10.0)
    interior = slice(500, -500)
    # No delay: the filtered signal lies on the clean one.
    assert np.sqrt(np.mean((smooth - clean)[interior] ** 2)) < 0.01
    with pytest.raises(ValueError, match="cutoff"):
        lowpass(noisy, rate, 600.0)


def test_differentiate_and_analytic_accelerations_agree():
    measurements, trajectory = _sine_measurements()
    analytic = with_accelerations(measurements, "trajectory")
    assert analytic.acceleration_source == "trajectory"
    np.testing.assert_allclose(analytic.qdd, trajectory.evaluate(measurements.t)[2])
    numeric = with_accelerations(measurements, "differentiate", cutoff=20.0)
    interior = slice(200, -200)
    np.testing.assert_allclose(numeric.qdd[interior], analytic.qdd[interior], atol=2e-3)
    np.testing.assert_allclose(differentiate(measurements.q, 1000.0)[interior],
                               measurements.qd[interior], atol=5e-5)
    with pytest.raises(DataError, match="no recorded accelerations"):
        with_accelerations(measurements, "measured")


def test_filtered_and_decimate_and_split():
    measurements, _ = _sine_measurements()
    smooth = filtered(measurements, 20.0)
    np.testing.assert_allclose(smooth.q[100:-100], measurements.q[100:-100], atol=1e-4)
    fewer = decimate(smooth, 4)
    assert fewer.count == -(-measurements.count // 4)
    train, validation = measurements.split(0.7)
    assert train.count == 2800 and validation.count == 1200
    assert train.t[-1] < validation.t[0]
    with pytest.raises(ValueError, match="fraction"):
        measurements.split(1.0)


def test_measurements_reject_inconsistent_arrays():
    t = np.arange(5.0)
    with pytest.raises(DataError, match="samples"):
        Measurements(t, np.zeros((4, 2)), np.zeros((5, 2)), np.zeros((5, 2)))
    with pytest.raises(DataError, match="finite"):
        Measurements(t, np.full((5, 2), np.nan), np.zeros((5, 2)), np.zeros((5, 2)))


def test_panda_gaz2019_layout_and_its_trajectory():
    folder = panda_dataset()
    measurements, velocity_rms = read_gaz2019_fit(folder)
    assert measurements.n == 7 and measurements.count == 20544
    trajectory = measurements.trajectory
    # The base frequency found from the data is the generator's 0.15 pi rad/s (period 13.3 s).
    assert trajectory.omega_f == pytest.approx(0.15 * np.pi, rel=1e-4)
    # The commanded trajectory explains the measured motion: velocities to 0.01 rad/s RMS
    # (of ~0.8 rad/s) and, integrated, positions to 5 mrad RMS.
    assert velocity_rms < 0.01
    q, _, _ = trajectory.evaluate(measurements.t)
    assert np.sqrt(np.mean((q - measurements.q) ** 2)) < 0.005
    # Analytic and differentiated accelerations agree on the resampled run.
    uniform = resample_uniform(measurements)
    analytic = with_accelerations(uniform, "trajectory").qdd
    numeric = with_accelerations(uniform, "differentiate", cutoff=10.0).qdd
    interior = slice(1000, -1000)
    rms = np.sqrt(np.mean((analytic - numeric)[interior] ** 2, axis=0))
    assert np.all(rms < 0.15 * np.sqrt(np.mean(analytic[interior] ** 2, axis=0)))
