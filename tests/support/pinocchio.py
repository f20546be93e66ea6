"""Pinocchio's model of a URDF, as the independent reference of the float model's tests: its
joints matched to our nodes, configurations and tangents in its layout, rnea and regressor in
ours (rows in our joint order, column blocks in our link order)."""

import math

import numpy as np
import pinocchio as pin

__all__ = ["PinocchioReference"]


class PinocchioReference:
    """A Pinocchio model and the Pinocchio joint of each of our nodes.

    Parameters
    ----------
    model : pinocchio.Model
        Pinocchio's model (of the same URDF as ``robot``).
    joint_ids : sequence of int
        Per node of ``robot``, the Pinocchio joint id (a permutation of ``1 .. n``).
    robot : linkdyn.model.Robot
    """

    def __init__(self, model, joint_ids, robot):
        assert model.nv == robot.n, (model.nv, robot.n)
        self.model, self.data = model, model.createData()
        self.joint_ids = list(joint_ids)
        assert sorted(self.joint_ids) == list(range(1, robot.n + 1))
        self.idx_v = [model.joints[j].idx_v for j in self.joint_ids]
        self.robot = robot

    def configuration(self, q):
        """Pinocchio configuration of our joint values (continuous joints as (cos, sin))."""
        q_pin = np.zeros(self.model.nq)
        for value, j in zip(q, self.joint_ids):
            joint = self.model.joints[j]
            if joint.nq == 2:
                q_pin[joint.idx_q:joint.idx_q + 2] = math.cos(value), math.sin(value)
            else:
                assert joint.nq == 1
                q_pin[joint.idx_q] = value
        return q_pin

    def tangent(self, v):
        out = np.zeros(self.model.nv)
        out[self.idx_v] = v
        return out

    def rnea(self, q, qd, qdd, model=None):
        model = model or self.model
        tau = pin.rnea(model, model.createData(), self.configuration(q), self.tangent(qd),
                       self.tangent(qdd))
        return np.asarray(tau)[self.idx_v]

    def regressor(self, q, qd, qdd):
        """Pinocchio's regressor, rows in our joint order, column blocks in our link order."""
        y = pin.computeJointTorqueRegressor(self.model, self.data, self.configuration(q),
                                            self.tangent(qd), self.tangent(qdd))
        # eigenpy returns a single-row matrix (nv = 1) as a 1-D array.
        y = np.asarray(y).reshape(self.model.nv, -1)[self.idx_v]
        return np.concatenate([y[:, 10 * (j - 1):10 * j] for j in self.joint_ids], axis=1)

    def parameters(self):
        return np.concatenate([self.model.inertias[j].toDynamicParameters()
                               for j in self.joint_ids])

    def joint_in_dh(self, frames):
        """Per node: the pose (4x4) of its Pinocchio joint frame in our DH frame (q = 0), given
        our DH frame poses 0..n at q = 0 (``frames``)."""
        data = self.model.createData()
        pin.forwardKinematics(self.model, data, pin.neutral(self.model))
        return [np.linalg.inv(frames[i + 1]) @ data.oMi[j].homogeneous
                for i, j in enumerate(self.joint_ids)]
