"""docs/protocol.md is generated from model/protocol/ and the node register map."""

from linkdyn.model import protocol as P

from support import REPOSITORY

DOC = REPOSITORY / "docs" / "protocol.md"


def test_committed_protocol_doc_equals_the_generated_text():
    generated = P.generate_markdown()
    assert DOC.read_text() == generated, (
        "docs/protocol.md is stale: run `python -m linkdyn.model.protocol --markdown > "
        "docs/protocol.md`")


def test_protocol_doc_lists_every_command_error_and_register():
    text = P.generate_markdown()
    for command in P.Command:
        assert f"| {command.name} |" in text
    for code in P.ErrorCode:
        assert f"| {code.name} |" in text
    for reg in P.CONTROL_REGISTERS:
        assert f"| `{reg.address:#04x}` | {reg.name} |" in text
    spec = P.ProtocolSpec(6)
    for reg in spec.registers:
        if reg.address is not None:
            assert f"| {reg.address} | {reg.name} |" in text


def test_markdown_command_line_prints_the_doc(capsys):
    assert P.main(["--markdown"]) == 0
    assert capsys.readouterr().out == P.generate_markdown()
