"""Dynamic parameter identification (paper Sect. 2.5, 4.1).

The procedure of the source paper's Fig. 3, one module per step:

* :mod:`.fourier` -- Fourier-series trajectories (eq. 23) with analytic derivatives, fade-in and
  fade-out (Fig. 9);
* :mod:`.kinematics` -- forward kinematics of the DH frames (Cartesian limits);
* :mod:`.excitation` -- excitation optimisation (eq. 24: d-optimality under joint and
  Cartesian limits);
* :mod:`.base_parameters` -- numerical reduction to the base parameters (QR with pivoting);
* :mod:`.estimation` -- ordinary / weighted least squares (eq. 25) and the physically
  consistent SDP, friction steepness search (eq. 20);
* :mod:`.data`, :mod:`.panda_gaz2019` -- measurements: CSV, the ``panda-gaz2019`` layout,
  resampling, zero-phase filtering, accelerations, decimation;
* :mod:`.validation`, :mod:`.plots` -- torque errors on held-out data, figures (Fig. 10);
* :mod:`.pipeline` -- the whole identification, outputs (robot file, ``summary.json``);
* :mod:`.cli` -- ``linkdyn identify`` and ``linkdyn excite``.
"""

from .base_parameters import BaseParameters, base_parameters
from .data import DataError, Measurements, load_measurements, read_csv, write_csv
from .estimation import (Estimate, is_physically_consistent, ordinary_least_squares,
                         physically_consistent_least_squares, pseudo_inertia,
                         select_steepness, weighted_least_squares)
from .excitation import (CartesianBox, ExcitationLimits, check_trajectory,
                         excitation_criterion, optimise_excitation)
from .fourier import FadedTrajectory, FourierTrajectory
from .pipeline import IdentificationOptions, IdentificationResult, identify, write_outputs
from .validation import TorqueErrors, torque_errors

__all__ = [
    "BaseParameters", "base_parameters", "DataError", "Measurements", "load_measurements",
    "read_csv", "write_csv", "Estimate", "is_physically_consistent", "ordinary_least_squares",
    "physically_consistent_least_squares", "pseudo_inertia", "select_steepness",
    "weighted_least_squares", "CartesianBox", "ExcitationLimits", "check_trajectory",
    "excitation_criterion", "optimise_excitation", "FadedTrajectory", "FourierTrajectory",
    "IdentificationOptions", "IdentificationResult", "identify", "write_outputs",
    "TorqueErrors", "torque_errors",
]
