"""Benchmarks: the figures of ``docs/performance.md``, printed and optionally written there.

=======================  ==================================================================
module                   what it measures
=======================  ==================================================================
:mod:`.dynamics`         the float model (``rnea``, ``regressor``) against Pinocchio, us/state
:mod:`.node`             one node's cycles per segment (Amaranth simulator) and its Yosys
                         utilisation on ECP5 and Spartan-6
:mod:`.chain`            chain latency and update interval per node count and policy
:mod:`.hostlink`         the serial link: round trip per control cycle, line budget, host CPU
:mod:`.controller`       the joint controller's cycles, utilisation and ECP5 Fmax
:mod:`.plant`            the MuJoCo plant's steps per second (real-time factor at 1 kHz)
:mod:`.trees`            the float model on kinematic trees against Pinocchio
:mod:`.link`             the neighbour link: per-hop latency, throughput, utilisation
:mod:`.golden`           the fixed-point golden model for one state, alone and in the closed
                         loop of the point experiment, ms per call and per cycle
=======================  ==================================================================

Each runs as ``python -m linkdyn.bench.<module> [--write-docs docs/performance.md]``;
``python -m linkdyn.bench`` runs them all (``make bench``). Benchmarks print figures; no test
asserts a time. :func:`.report.replace_section` is the one way a benchmark rewrites its section.
"""
