"""Board.load_robot and `linkdyn load` say how far the board's fixed-point torques can be from the
exact ones for the robot's default box of states (linkdyn.model.certify), and warn before any
torque is trusted when a register may saturate there or no certificate can be made."""

from dataclasses import replace

import pytest

from linkdyn.host import Board, CertificateWarning
from linkdyn.model import JointLimits, load_robot
from linkdyn.model.certify import certify

from support.host import ReferenceSerial

UR5 = load_robot("ur5")


def _board():
    return Board(ReferenceSerial(), timeout=0.2, settle=0.0)


def test_loading_a_robot_keeps_its_certificate_for_the_default_box(recwarn):
    with _board() as board:
        assert board.certificate is None
        board.load_robot(UR5, verify=False)
        certificate = board.certificate
    assert not [w for w in recwarn if issubclass(w.category, CertificateWarning)]
    assert certificate.saturation_free
    assert certificate.bound_nm == certify(UR5).bound_nm
    assert len(certificate.bound_nm) == UR5.n and all(b > 0 for b in certificate.bound_nm)


def test_a_robot_that_may_saturate_in_its_box_is_loaded_with_a_warning_naming_the_register():
    # 30 rad/s allowed on every joint (within the qd word, Q5.26): omega overflows its Q6.25.
    fast = replace(UR5, links=tuple(
        replace(link, limits=replace(link.limits or JointLimits(), qd_max=30.0))
        for link in UR5.links))
    with _board() as board:
        with pytest.warns(CertificateWarning, match=r"may saturate in the default box of "
                                                    r"states, first node \d+ \w+"):
            board.load_robot(fast, verify=False)
        assert board.certificate is not None and not board.certificate.saturation_free
        assert board.robot is fast                 # loaded all the same: the flags guard it
