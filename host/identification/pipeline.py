"""The identification procedure of the source paper (Sect. 2.5, Fig. 3, Sect. 4.1), end to end.

:func:`identify` takes a robot (its kinematics, and nominal inertial parameters for comparison)
and one measured run, and

1. splits the run in time into a training part and a validation part (first 70 % / last 30 %),
2. prepares each part on its own (resampling to equidistant times when the log jitters,
   zero-phase low-pass, accelerations from the known commanded trajectory or by filtered
   differentiation, optional decimation),
3. builds the regressor of the training part (eq. 8, 21) and reduces it to the base parameters,
4. chooses the friction steepness ``k`` of eq. (20) (given, or by a 1-D search),
5. estimates the base parameters by ordinary and weighted least squares (eq. 25) and the
   standard parameters by the physically consistent SDP,
6. validates on the held-out part: RMS torque error per joint of the identified robot (the
   physically consistent parameters, through :func:`linkdyn.model.rnea`) against the nominal one.

:func:`write_outputs` writes the identified robot file (:func:`linkdyn.model.save_robot`, loadable
by :func:`linkdyn.model.load_robot`), ``summary.json`` and the plots.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from linkdyn.model import Robot, RobotDescriptionError, regressor, rnea, save_robot

from .base_parameters import BaseParameters, base_parameters
from .data import (DataError, Measurements, decimate, filtered, resample_uniform,
                   with_accelerations)
from .estimation import (Estimate, SteepnessSearch, is_physically_consistent, noise_weights,
                         ordinary_least_squares, physically_consistent_least_squares,
                         pseudo_inertia_eigenvalues, select_steepness, weighted_least_squares)
from .validation import torque_errors

__all__ = ["IdentificationOptions", "IdentificationResult", "identify", "prepare",
           "write_outputs", "with_steepness"]


@dataclass(frozen=True)
class IdentificationOptions:
    """Options of :func:`identify`.

    Attributes
    ----------
    train_fraction : float
        Share of the run (from its start) used for the fit; the rest validates.
    steepness : float or None
        Friction ``atan`` steepness ``k``, s/rad; ``None`` chooses it by
        :func:`~.estimation.select_steepness` within ``steepness_bounds``.
    steepness_bounds : tuple of float
        Search interval of ``k``, s/rad.
    cutoff : float or None
        Zero-phase low-pass cut-off for ``q``, ``qd`` and ``tau``, Hz; ``None``: no filter.
    acceleration : {"auto", "trajectory", "differentiate", "measured"}
        Source of the accelerations (:func:`~.data.with_accelerations`).
    acceleration_cutoff : float
        Low-pass cut-off before differentiating velocities, Hz.
    decimate : int
        Keep every ``decimate``-th sample after filtering.
    regularisation, margin, friction_nonnegative
        Passed to :func:`~.estimation.physically_consistent_least_squares`.
    base_samples : int or None
        Random states for :func:`~.base_parameters.base_parameters`.
    seed : int
        Seed for the base-parameter states.
    """

    train_fraction: float = 0.7
    steepness: float | None = None
    steepness_bounds: tuple = (1.0, 1e4)
    cutoff: float | None = 10.0
    acceleration: str = "auto"
    acceleration_cutoff: float = 10.0
    decimate: int = 1
    regularisation: float = 1e-4
    margin: float = 1e-6
    friction_nonnegative: bool = True
    base_samples: int | None = None
    seed: int = 0

    def __post_init__(self):
        if not 0 < float(self.train_fraction) < 1:
            raise ValueError(f"train_fraction must be in (0, 1), not {self.train_fraction!r}")
        if self.steepness is not None and not (math.isfinite(self.steepness)
                                               and self.steepness > 0):
            raise ValueError(f"steepness must be a positive number of s/rad, not "
                             f"{self.steepness!r}")
        if self.cutoff is not None and not (math.isfinite(self.cutoff) and self.cutoff > 0):
            raise ValueError(f"cutoff must be a positive frequency in Hz, not {self.cutoff!r}")
        if self.acceleration not in ("auto", "trajectory", "differentiate", "measured"):
            raise ValueError(f"acceleration must be 'auto', 'trajectory', 'differentiate' or "
                             f"'measured', not {self.acceleration!r}")
        if isinstance(self.decimate, bool) or not isinstance(self.decimate, int) \
                or self.decimate < 1:
            raise ValueError(f"decimate must be a positive integer, not {self.decimate!r}")


@dataclass(frozen=True)
class IdentificationResult:
    """Everything :func:`identify` found. ``errors`` are on the validation part (against the
    measured torques after the same low-pass as the fit's), ``errors_unfiltered`` against the
    torques as measured, ``training_errors`` on the training part, keyed by model label
    (``"identified"``: the physically consistent robot; ``"nominal"``: the robot as given,
    with its own friction if it has any;
    ``"wls"``, ``"ols"``: the least-squares base parameters)."""

    nominal: Robot
    identified: Robot
    base: BaseParameters
    steepness: float
    steepness_search: SteepnessSearch | None
    ols: Estimate
    wls: Estimate
    sdp: Estimate
    train: Measurements
    validation: Measurements
    predictions: dict
    errors: dict
    errors_unfiltered: dict
    training_errors: dict
    physically_consistent: bool
    pseudo_inertia_min_eigenvalues: np.ndarray
    timings: dict
    seconds: float
    source: str = ""
    notes: tuple = field(default_factory=tuple)


def with_steepness(robot, steepness):
    """Return the robot with the friction steepness ``k`` of every joint set (s/rad)."""
    return replace(robot, links=tuple(
        replace(link, friction=replace(link.friction, steepness=float(steepness)))
        for link in robot.links))


def prepare(measurements, options):
    """Prepare one part of a run: resample (if the times jitter), low-pass, accelerations,
    decimate (:class:`IdentificationOptions`). Returns :class:`~.data.Measurements` with
    ``qdd``. Each part is filtered on its own, so nothing of the validation part leaks into
    the training part."""
    if not measurements.is_uniform:
        measurements = resample_uniform(measurements)
    if options.cutoff is not None:
        measurements = filtered(measurements, options.cutoff)
    measurements = with_accelerations(measurements, options.acceleration,
                                      options.acceleration_cutoff)
    return decimate(measurements, options.decimate)


def _say(progress, text):
    if progress is not None:
        progress(text)


def identify(robot, measurements, options=None, *, progress=None):
    """Identify the dynamic parameters of a robot from one measured run.

    Parameters
    ----------
    robot : Robot
        Kinematics (used) and nominal parameters (for comparison and for the regularisation of
        the undetermined directions).
    measurements : Measurements
        The run (:func:`~.data.load_measurements`); ``n`` must match the robot.
    options : IdentificationOptions, optional
    progress : callable, optional
        Called with one line of text per stage.

    Returns
    -------
    IdentificationResult

    Raises
    ------
    TypeError
        If ``robot`` or ``measurements`` have the wrong type.
    DataError
        If the data do not fit the robot or lack what the options need.
    numpy.linalg.LinAlgError
        If the training data do not excite every base parameter.
    RuntimeError
        If the SDP solver fails.
    """
    if not isinstance(robot, Robot):
        raise TypeError(f"robot must be a Robot, not {type(robot).__name__}")
    if not isinstance(measurements, Measurements):
        raise TypeError(f"measurements must be Measurements, not {type(measurements).__name__}")
    if measurements.n != robot.n:
        raise DataError(f"the data have {measurements.n} joints, robot {robot.name!r} has "
                        f"{robot.n}")
    options = IdentificationOptions() if options is None else options
    timings = {}
    clock = time.perf_counter()

    def lap(name, since):
        timings[name] = time.perf_counter() - since
        return time.perf_counter()

    start = time.perf_counter()
    if not measurements.is_uniform:
        # Before the split, so that both parts share one rate (interpolation is local).
        measurements = resample_uniform(measurements)
    train_raw, validation_raw = measurements.split(options.train_fraction)
    train = prepare(train_raw, options)
    validation = prepare(validation_raw, options)
    start = lap("prepare", start)
    _say(progress, f"data: {train.count} training and {validation.count} validation samples at "
                   f"{train.sample_rate:.0f} Hz, accelerations {train.acceleration_source}")

    base = base_parameters(robot, samples=options.base_samples, seed=options.seed)
    start = lap("base_parameters", start)
    _say(progress, f"base parameters: {base.count} of {13 * robot.n}")

    n = robot.n
    k0 = options.steepness if options.steepness is not None else float(robot.steepness[0])
    y = regressor(with_steepness(robot, k0), train.q, train.qd, train.qdd)
    start = lap("regressor", start)
    _say(progress, f"regressor: {train.count} x {n} x {13 * n} in {timings['regressor']:.2f} s")

    coulomb_standard = 10 * n + 3 * np.arange(n)
    position = {j: i for i, j in enumerate(base.independent)}
    if not all(j in position for j in coulomb_standard):  # pragma: no cover - structural
        raise RuntimeError("a Coulomb friction parameter is not a base parameter")
    coulomb = np.array([position[j] for j in coulomb_standard])
    y_base = base.base_regressor(y)
    search = None
    if options.steepness is None:
        fixed = np.setdiff1d(np.arange(base.count), coulomb)
        weights = noise_weights(y_base, train.tau)
        search = select_steepness(y_base[..., fixed], train.qd, train.tau,
                                  bounds=options.steepness_bounds, weights=weights)
        steepness = search.steepness
        _say(progress, f"friction steepness k = {steepness:.4g} s/rad (1-D search)")
    else:
        steepness = float(options.steepness)
    y_base[..., coulomb] = np.arctan(steepness * train.qd)[:, :, None] \
        * np.eye(n)[None, :, :]
    start = lap("steepness", start)

    ols = ordinary_least_squares(y_base, train.tau)
    wls = weighted_least_squares(y_base, train.tau)
    start = lap("least_squares", start)
    nominal = with_steepness(robot, steepness)
    nominal_parameters = nominal.parameters()
    sdp = physically_consistent_least_squares(
        y_base, train.tau, base.projection, n, weights=wls.weights, nominal=nominal_parameters,
        regularisation=options.regularisation, margin=options.margin,
        friction_nonnegative=options.friction_nonnegative)
    start = lap("sdp", start)
    _say(progress, f"estimates: OLS, WLS and physically consistent SDP ({sdp.status}) in "
                   f"{timings['least_squares'] + timings['sdp']:.2f} s")

    eigenvalues = pseudo_inertia_eigenvalues(sdp.parameters, n)
    notes = []
    try:
        identified = nominal.with_parameters(sdp.parameters)
        consistent = is_physically_consistent(sdp.parameters, n)
    except RobotDescriptionError as error:
        notes.append(f"the SDP parameters do not form a valid robot: {error}")
        identified, consistent = nominal, False
    identified = replace(identified, name=f"{robot.name} (identified)")

    def predict(part):
        y_part = regressor(with_steepness(robot, steepness), part.q, part.qd, part.qdd)
        y_part_base = base.base_regressor(y_part)
        return {
            "identified": rnea(identified, part.q, part.qd, part.qdd),
            "nominal": rnea(robot, part.q, part.qd, part.qdd),
            "wls": y_part_base @ wls.base,
            "ols": y_part_base @ ols.base,
        }

    predictions = predict(validation)
    errors = {label: torque_errors(validation.tau, value) for label, value in predictions.items()}
    # The same predictions against the torques as measured (not low-passed).
    raw_tau = decimate(validation_raw, options.decimate).tau
    errors_unfiltered = {label: torque_errors(raw_tau, predictions[label])
                         for label in ("identified", "nominal")}
    training = predict(train)
    training_errors = {label: torque_errors(train.tau, value)
                       for label, value in training.items()}
    lap("validation", start)
    seconds = time.perf_counter() - clock
    _say(progress, "validation RMS [N·m]: identified "
                   + " ".join(f"{v:.3g}" for v in errors["identified"].rms) + "; nominal "
                   + " ".join(f"{v:.3g}" for v in errors["nominal"].rms))
    return IdentificationResult(
        nominal=robot, identified=identified, base=base, steepness=float(steepness),
        steepness_search=search, ols=ols, wls=wls, sdp=sdp, train=train, validation=validation,
        predictions=predictions, errors=errors, errors_unfiltered=errors_unfiltered,
        training_errors=training_errors,
        physically_consistent=bool(consistent), pseudo_inertia_min_eigenvalues=eigenvalues,
        timings=timings, seconds=seconds, source=measurements.name, notes=tuple(notes))


def _floats(values):
    return [float(v) for v in values]


def summary(result, *, extra=None):
    """Return the ``summary.json`` content of a result as a dict (JSON-serialisable)."""
    robot = result.identified
    data = {
        "format": "linkdyn-identification-summary",
        "version": 1,
        "date": datetime.date.today().isoformat(),
        "robot": result.nominal.name,
        "data": result.source,
        "joints": [link.name for link in robot.links],
        "validation_rms_nm": _floats(result.errors["identified"].rms),
        "nominal_rms_nm": _floats(result.errors["nominal"].rms),
        "validation_relative_error": _floats(result.errors["identified"].relative),
        "nominal_relative_error": _floats(result.errors["nominal"].relative),
        "validation_rms_unfiltered_nm": _floats(result.errors_unfiltered["identified"].rms),
        "nominal_rms_unfiltered_nm": _floats(result.errors_unfiltered["nominal"].rms),
        "wls_validation_rms_nm": _floats(result.errors["wls"].rms),
        "ols_validation_rms_nm": _floats(result.errors["ols"].rms),
        "training_rms_nm": _floats(result.training_errors["identified"].rms),
        "measured_validation_rms_nm": _floats(np.sqrt(np.mean(result.validation.tau ** 2,
                                                               axis=0))),
        "base_parameter_count": int(result.base.count),
        "standard_parameter_count": len(result.base.standard_names),
        "physically_consistent": bool(result.physically_consistent),
        "pseudo_inertia_min_eigenvalues": _floats(result.pseudo_inertia_min_eigenvalues),
        "sdp_status": result.sdp.status,
        "friction_steepness": result.steepness,
        "friction_steepness_searched": result.steepness_search is not None,
        "samples": {"training": int(result.train.count),
                    "validation": int(result.validation.count),
                    "sample_rate_hz": result.train.sample_rate,
                    "acceleration_source": result.train.acceleration_source},
        "wls_weights": _floats(result.wls.weights),
        "base_parameters": [
            {"name": name, "ols": float(o), "wls": float(w), "wls_std": float(s),
             "physically_consistent": float(c)}
            for name, o, w, s, c in zip(result.base.names, result.ols.base, result.wls.base,
                                        result.wls.base_std, result.sdp.base)],
        "seconds": result.seconds,
        "timings_s": {key: float(value) for key, value in result.timings.items()},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "notes": list(result.notes),
    }
    if result.steepness_search is not None:
        data["steepness_search"] = {"k": _floats(result.steepness_search.grid),
                                    "cost": _floats(result.steepness_search.cost)}
    if extra:
        data.update(extra)
    return data


def write_outputs(result, folder, *, plots=True, robot_file="identified_robot.json",
                  extra=None):
    """Write the identified robot file, ``summary.json`` and the plots into ``folder``.

    Parameters
    ----------
    result : IdentificationResult
    folder : str or os.PathLike
        Created if missing.
    plots : bool
        Write ``validation_torques.png`` (measured against identified and nominal torques on
        the validation part, paper Fig. 10) and, after a search, ``steepness_search.png``.
    robot_file : str
        Name of the robot file.
    extra : dict, optional
        More entries for ``summary.json``.

    Returns
    -------
    dict of str to pathlib.Path
        The files written, by kind.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    clock = time.perf_counter()
    paths = {}
    source = [
        f"Identified by linkdyn identify on {datetime.date.today().isoformat()} from "
        f"{result.source} ({result.train.count} training samples).",
        f"Physically consistent least squares (SDP, pseudo-inertias PSD); friction eq. (20) "
        f"with k = {result.steepness:.6g} s/rad.",
        f"Kinematics and nominal parameters: robot {result.nominal.name!r}.",
    ]
    paths["robot"] = save_robot(result.identified, folder / robot_file, source=source)
    if plots:
        from .plots import plot_steepness_search, plot_torques
        names = [link.name for link in result.identified.links]
        chosen = {key: result.predictions[key] for key in ("identified", "nominal")}
        paths["validation_plot"] = plot_torques(
            folder / "validation_torques.png", result.validation.t, result.validation.tau,
            chosen, joint_names=names,
            title=f"{result.nominal.name}: validation (last "
                  f"{result.validation.count} samples)")
        if result.steepness_search is not None:
            paths["steepness_plot"] = plot_steepness_search(folder / "steepness_search.png",
                                                            result.steepness_search)
    timings = {"write_outputs": time.perf_counter() - clock}
    data = summary(result, extra=extra)
    data["timings_s"].update(timings)
    data["files"] = {key: path.name for key, path in paths.items()}
    paths["summary"] = folder / "summary.json"
    data["files"]["summary"] = "summary.json"
    paths["summary"].write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return paths
