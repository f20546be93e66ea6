"""Bounds over a prismatic joint's travel for the certificate (:mod:`linkdyn.model.certify`).

A prismatic joint moves ``d`` (docs/trees.md, *Prismatic nodes*): the node computes the link
offset at ``q`` as ``r(q) = r_0 + q z_0`` with ``r_0 = (a, d sin alpha, d cos alpha)``
(:func:`linkdyn.model.rnea.link_offset_vector`, the offset at ``q = 0``) and ``z_0 = R^T z =
(0, sin alpha, cos alpha)``, the joint's axis in frame ``i`` (the microprogram's ``r_q_y``,
``r_q_z``). Where the revolute analysis takes the norm of the constant ``r``, the first moment
about origin ``i-1``, ``c' = m r + m c``, and the inertia about origin ``i-1``,

    ``I'(r) = I + m (|r|^2 1 - r r^T) + 2 (r . m c) 1 - r (m c)^T - (m c) r^T``

(:meth:`linkdyn.model.certify._Analysis.mechanics_norm`), a prismatic node needs their bounds
over every ``q`` of the box, here proven:

* ``|r(q)|`` and ``|m r(q) + m c|`` are norms of affine functions of ``q``, convex: their
  largest value over ``[q_min, q_max]`` is at an end (:func:`largest_affine_norm`);
* ``I'(r(q)) = I'(q_c) + t M_1(q_c) + t^2 M_2`` (``t = q - q_c``) is quadratic in ``q``, with
  ``M_1(q_c) = m (2 (r_c . z_0) 1 - r_c z_0^T - z_0 r_c^T) + 2 (z_0 . m c) 1 - z_0 (m c)^T -
  (m c) z_0^T`` and ``M_2 = m (|z_0|^2 1 - z_0 z_0^T)``; on a piece of the travel of centre
  ``q_c`` and half-width ``rho`` the perturbation has spectral norm at most ``E = rho
  ||M_1(q_c)|| + rho^2 ||M_2||``, which by Weyl's inequality moves every eigenvalue by at most
  ``E``; so ``max |lambda|`` and the half spread ``(lambda_max - lambda_min) / 2`` of
  ``I'(q)`` are at most their value at ``q_c`` plus ``E``, and the largest over the pieces
  bounds them over the whole travel (:func:`shifted_inertia_bounds`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["joint_axis", "largest_affine_norm", "shifted_inertia", "shifted_inertia_bounds",
           "PIECES"]

#: Pieces of the travel in :func:`shifted_inertia_bounds`.
PIECES = 1024

_SLACK = 1 + 1e-12


def joint_axis(alpha):
    """Return ``z_0 = (0, sin alpha, cos alpha)``: a prismatic joint's axis in frame ``i``.

    Parameters
    ----------
    alpha : float
        The link twist, rad.

    Returns
    -------
    numpy.ndarray, shape (3,)
    """
    return np.array([0.0, np.sin(alpha), np.cos(alpha)])


def largest_affine_norm(base, direction, q_min, q_max):
    """Return a bound on ``max |base + q direction|`` over ``q`` in ``[q_min, q_max]``.

    The norm of an affine function is convex, so the largest value is at an end of the
    interval (times ``1 + 1e-12`` for the float64 evaluation).

    Parameters
    ----------
    base, direction : array_like, shape (3,)
    q_min, q_max : float
        The interval (``q_min <= q_max``).

    Returns
    -------
    float
    """
    base, direction = np.asarray(base, float), np.asarray(direction, float)
    return max(float(np.linalg.norm(base + q_min * direction)),
               float(np.linalg.norm(base + q_max * direction))) * _SLACK


def shifted_inertia(inertia, mass, first_moment, r):
    """Return ``I'``: the inertia about origin ``i-1`` from the one about origin ``i``.

    Parameters
    ----------
    inertia : array_like, shape (3, 3)
        ``I`` about origin ``i``, frame ``i`` (kg m^2).
    mass : float
        ``m`` (kg).
    first_moment : array_like, shape (3,)
        ``m c`` (kg m), frame ``i``.
    r : array_like, shape (..., 3)
        The offset ``r`` from origin ``i-1`` to origin ``i`` (m), frame ``i``.

    Returns
    -------
    numpy.ndarray, shape (..., 3, 3)
        ``I + m (|r|^2 1 - r r^T) + 2 (r . m c) 1 - r (m c)^T - (m c) r^T``.
    """
    r = np.asarray(r, float)
    mc = np.asarray(first_moment, float)
    eye = np.eye(3)
    rr = np.einsum("...i,...j->...ij", r, r)
    rmc = np.einsum("...i,j->...ij", r, mc)
    dot_rr = np.einsum("...i,...i->...", r, r)[..., None, None]
    dot_rmc = (r @ mc)[..., None, None]
    return (np.asarray(inertia, float) + mass * (dot_rr * eye - rr) + 2 * dot_rmc * eye - rmc
            - np.swapaxes(rmc, -1, -2))


def shifted_inertia_bounds(inertia, mass, first_moment, r0, axis, q_min, q_max,
                           pieces=PIECES):
    """Return bounds on ``max |lambda|`` and ``(lambda_max - lambda_min) / 2`` of ``I'(r(q))``
    over ``q`` in ``[q_min, q_max]``, ``r(q) = r0 + q axis`` (module docstring).

    Parameters
    ----------
    inertia, mass, first_moment
        As for :func:`shifted_inertia`.
    r0, axis : array_like, shape (3,)
        ``r`` at ``q = 0`` and the joint's axis ``z_0`` (:func:`joint_axis`).
    q_min, q_max : float
        The travel (m, ``q_min <= q_max``).
    pieces : int
        Pieces of the travel.

    Returns
    -------
    (float, float)
        The bounds (spectral norm, half spread), kg m^2.
    """
    r0, z = np.asarray(r0, float), np.asarray(axis, float)
    mc = np.asarray(first_moment, float)
    count = 1 if q_max == q_min else int(pieces)
    edges = np.linspace(q_min, q_max, count + 1)
    centres = 0.5 * (edges[:-1] + edges[1:])
    radius = float(np.max(np.maximum(centres - edges[:-1], edges[1:] - centres)))
    r_c = r0 + centres[:, None] * z
    matrices = shifted_inertia(inertia, mass, mc, r_c)
    eig = np.linalg.eigvalsh(0.5 * (matrices + np.swapaxes(matrices, -1, -2)))
    eye = np.eye(3)
    m1 = (mass * (2 * (r_c @ z)[:, None, None] * eye - np.einsum("ki,j->kij", r_c, z)
                  - np.einsum("i,kj->kij", z, r_c))
          + 2 * float(z @ mc) * eye - np.outer(z, mc) - np.outer(mc, z))
    m2 = mass * (float(z @ z) * eye - np.outer(z, z))
    m1_norm = np.linalg.norm(m1, 2, axis=(1, 2))
    m2_norm = float(np.linalg.norm(m2, 2))
    perturbation = radius * m1_norm + radius * radius * m2_norm
    largest = np.max(np.abs(eig), axis=1) + perturbation
    spread = 0.5 * (eig[:, -1] - eig[:, 0]) + perturbation
    return float(np.max(largest)) * _SLACK, float(np.max(spread)) * _SLACK
