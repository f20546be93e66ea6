"""One cached microprogram per format, shared by the golden model and the gateware."""

from linkdyn.model import golden
from linkdyn.model.fixedpoint import Q15_16, QFormat
from linkdyn.model.microprogram import (NODE_FORMATS, NodeFormats, build_microprogram,
                                        microprogram)


def test_microprogram_is_built_once_per_format_and_golden_reexports_it():
    assert golden.microprogram is microprogram
    assert microprogram() is microprogram(NODE_FORMATS)
    assert microprogram(Q15_16) is microprogram(NodeFormats.uniform(Q15_16))
    assert microprogram(Q15_16) is not microprogram()
    other = QFormat(19, 12)
    assert microprogram(other) is microprogram(other)
    assert microprogram(other).fmt == NodeFormats.uniform(other)
    fresh = build_microprogram()
    assert fresh is not microprogram()
    assert fresh.shifts == microprogram().shifts and fresh.aligns == microprogram().aligns
