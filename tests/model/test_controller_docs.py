"""docs/controller.md carries the register table, the program and the fault codes of
linkdyn.model.controller (generated from it)."""

from pathlib import Path

from linkdyn.model.controller import FAULTS, program_listing, register_table

DOC = Path(__file__).resolve().parents[2] / "docs" / "controller.md"


def test_controller_doc_has_the_register_table_and_program():
    text = DOC.read_text()
    assert register_table() in text, "docs/controller.md: regenerate the register table"
    assert program_listing() in text, "docs/controller.md: regenerate the program listing"
    for code, (name, _) in FAULTS.items():
        assert f"| {code} | `{name}` |" in text
