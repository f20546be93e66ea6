"""Validation of an identified model on data not used for the fit: torque error metrics.

The plots that go with the numbers (measured against predicted torque per joint, like the
source paper's Fig. 10) are in :mod:`linkdyn.host.identification.plots`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["TorqueErrors", "torque_errors"]


@dataclass(frozen=True)
class TorqueErrors:
    """Torque prediction errors per joint.

    Attributes
    ----------
    rms : numpy.ndarray, shape (n,)
        RMS of ``predicted - measured``, N·m.
    relative : numpy.ndarray, shape (n,)
        ``rms / RMS(measured)`` (dimensionless; inf for a joint whose measured torque is 0).
    max_abs : numpy.ndarray, shape (n,)
        Largest absolute error, N·m.
    mean : numpy.ndarray, shape (n,)
        Mean error (bias), N·m.
    """

    rms: np.ndarray
    relative: np.ndarray
    max_abs: np.ndarray
    mean: np.ndarray

    def as_dict(self):
        """Return the metrics as lists of floats (for JSON)."""
        return {key: [float(v) for v in getattr(self, key)]
                for key in ("rms", "relative", "max_abs", "mean")}


def torque_errors(measured, predicted):
    """Compare predicted with measured joint torques.

    Parameters
    ----------
    measured, predicted : array_like, shape (N, n)
        Torques, N·m.

    Returns
    -------
    TorqueErrors

    Raises
    ------
    ValueError
        If the shapes differ or there are no samples.
    """
    measured = np.asarray(measured, dtype=float)
    predicted = np.asarray(predicted, dtype=float)
    if measured.shape != predicted.shape or measured.ndim != 2 or measured.shape[0] == 0:
        raise ValueError(f"measured and predicted torques must have the same shape (N, n) with "
                         f"N > 0, not {measured.shape} and {predicted.shape}")
    error = predicted - measured
    rms = np.sqrt(np.mean(error ** 2, axis=0))
    scale = np.sqrt(np.mean(measured ** 2, axis=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(scale > 0, rms / np.where(scale > 0, scale, 1.0), np.inf)
    return TorqueErrors(rms, relative, np.max(np.abs(error), axis=0), np.mean(error, axis=0))
