"""The controlled chain's register-target model against independent compositions: the
experiments' golden controller (controllers + GoldenChain) and the float RNEA, driven through
the reference protocol engine's frames."""

import numpy as np
import pytest

from linkdyn.model import load_robot
from linkdyn.model import protocol as P
from linkdyn.model.controller import ControllerConfig, JointControllerModel
from linkdyn.model.fixedpoint import Q15_16
from linkdyn.model.golden import GoldenChain, encode_base_motion, encode_robot
from linkdyn.model.microprogram import rescale_word
from linkdyn.model.reference import load_reference_robot
from linkdyn.sim.controlled_chain_model import ControlledChainModel

_MASK = 0xFFFFFFFF


def _loaded(robot, configs):
    spec = P.ProtocolSpec(robot.n, controllers=True)
    model = ControlledChainModel(spec)
    rmap = spec.registers
    for i, words in enumerate(encode_robot(robot)):
        for name, word in words.items():
            assert model.write(i, rmap[name].address, word)
    for name, word in encode_base_motion(robot).items():
        assert model.write(0, rmap[name].address, word)
    for i, config in enumerate(configs):
        for name, word in config.encode().items():
            assert model.write(i, P.controller_word(name).address, word)
    return spec, model


def _words(values):
    return [int(w) for w in Q15_16.encode(np.asarray(values, dtype=float))]


@pytest.mark.parametrize("name", ["ur5", "panda"])
def test_control_step_equals_controllers_around_the_golden_chain(name):
    robot = load_robot("ur5") if name == "ur5" else load_reference_robot("panda")
    rng = np.random.default_rng(5)
    configs = [ControllerConfig.for_joint(link.limits, kp=rng.uniform(50, 900),
                                          kd=rng.uniform(5, 60), measured_state=bool(i % 2))
               for i, link in enumerate(robot.links)]
    spec, model = _loaded(robot, configs)
    joints = [JointControllerModel(c.encode()) for c in configs]
    chain = GoldenChain(robot)
    for step in range(6):
        q = rng.uniform(-1, 1, robot.n)
        qd = rng.uniform(-1, 1, robot.n)
        ref = rng.uniform(-1, 1, (3, robot.n))
        if step == 3:
            qd[0] = 50.0                    # beyond qd_hard_max: joint 0 faults and latches
        for i in range(robot.n):
            model.set_sensor(i, _words(q)[i], _words(qd)[i])
            for k, word in enumerate(P.REFERENCE_WORDS):
                assert model.write(i, word.address, _words(ref[k])[i])
        assert model.write(P.CONTROL_NODE, P.control_register("CONTROL").address,
                           P.CONTROL_STEP)
        # The independent composition: feedback, one golden-chain update, output.
        model_in = np.array([j.feedback(_words(q)[i], _words(qd)[i], _words(ref[0])[i],
                                        _words(ref[1])[i], _words(ref[2])[i])
                             for i, j in enumerate(joints)]).T
        result = chain.step(*Q15_16.decode(model_in))
        for i, j in enumerate(joints):
            j.strobe(reference=True, message=True)
            # The node's tau (its own format) to the controller's Q15.16, as the chain hands it.
            i_ref, _ = j.output(rescale_word(int(result.tau_words[i]),
                                             spec.registers["tau"].format.fraction_bits,
                                             Q15_16.fraction_bits))
            record = [model.read(i, w.address)[1] for w in P.RECORD_WORDS]
            assert record == [j.read("tau_cmd"), i_ref & _MASK, j.read("fault"),
                              _words(q)[i] & _MASK, _words(qd)[i] & _MASK]
        faults = model.read(P.CONTROL_NODE, P.control_register("FAULTS").address)[1]
        assert faults == sum(1 << i for i, j in enumerate(joints) if j.fault_code)
    assert faults & 1, "joint 0 went past its speed limit and must have latched a fault"
    assert model.read(0, P.controller_word("record_i_ref").address)[1] == 0
    # The fault stays until it is cleared; a clear through the joint's window clears it.
    assert model.write(0, P.controller_word("fault_clear").address, 1)
    assert model.read(0, P.controller_word("fault").address)[1] == 0


def test_control_command_through_the_reference_engine_gives_the_float_torque():
    """With references equal to the measured state and the reference as the model's input, a
    control step's torque is the inverse dynamics of the reference (feedback terms zero): the
    float RNEA within the Q15.16 accuracy (docs/accuracy.md: < 2e-3 N·m)."""
    from linkdyn.model import rnea

    robot = load_robot("ur5")
    configs = [ControllerConfig.for_joint(link.limits, measured_state=False)
               for link in robot.links]
    spec, model = _loaded(robot, configs)
    engine = P.ReferenceEngine(spec, model)
    rng = np.random.default_rng(2)
    q, qd, qdd = rng.uniform(-1, 1, (3, robot.n))
    for i in range(robot.n):
        model.set_sensor(i, _words(q)[i], _words(qd)[i])
    payload = P.words_to_bytes([w for i in range(robot.n)
                                for w in (_words(q)[i], _words(qd)[i], _words(qdd)[i])])
    reply = P.decode_reply(engine.receive(P.encode_request(P.Command.CONTROL, payload, seq=1)))
    assert reply.status == P.ErrorCode.OK
    words = P.bytes_to_words(reply.payload)
    assert len(words) == spec.control_reply_words
    tau_cmd = Q15_16.decode(np.array([words[5 * i] for i in range(robot.n)], dtype=np.uint32)
                            .astype(np.int64) - (np.array([words[5 * i] >> 31
                                                           for i in range(robot.n)]) << 32))
    tau = rnea(robot, q, qd, qdd)
    # The guard adds at most its small limit (4 % of the effort limit) towards the reference,
    # which the joint is at: the guard error is zero up to rounding.
    np.testing.assert_allclose(tau_cmd, np.clip(tau, -150, 150), atol=2e-3)


def test_controller_words_refused_without_controllers():
    spec = P.ProtocolSpec(2)
    assert not spec.access(0, P.controller_word("kp").address).exists
    assert not spec.access(P.CONTROL_NODE, P.control_register("FAULTS").address).exists
    assert P.Command.CONTROL not in spec.commands
    with pytest.raises(ValueError, match="controllers=True"):
        ControlledChainModel(spec)
    with pytest.raises(ValueError, match="sequential"):
        P.ProtocolSpec(2, banks=4, controllers=True)
