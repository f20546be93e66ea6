"""The local-loop gateware benchmark: its local updates equal the golden local loop, the cycles
it reports are the chain's, and the section it writes shows them with their rates."""

from linkdyn.bench.local_loop_gateware import CLOCK_HZ, measure_chain, section


def test_measured_local_updates_equal_the_golden_model_and_are_shorter():
    chain = measure_chain("random:3:5", updates=2)
    assert chain["matches_golden"]
    assert chain["n"] == 3 and len(chain["chain"]) == len(chain["local"]) == 2
    # The cycles do not depend on the data, and the local update waits for no neighbour.
    assert len(set(chain["chain"])) == len(set(chain["local"])) == 1
    assert chain["local"][0] < chain["chain"][0]
    controlled = {"chain_step": [900], "local_step": [600], "chain_update": [500],
                  "local_update": [200], "matches_model": True}
    text = section([{"chain": chain, "controlled": controlled}],
                   {"without": {"luts": 100, "ffs": 50, "dsps": 8, "brams": 4.5},
                    "with": {"luts": 121, "ffs": 114, "dsps": 8, "brams": 4.5}})
    full, local = chain["chain"][0], chain["local"][0]
    assert (f"| {chain['robot'].capitalize()} | 3 | {full} | {local} | {full / local:.2f} | "
            f"{CLOCK_HZ / full / 1e3:,.1f} | {CLOCK_HZ / local / 1e3:,.1f} | 900 | 600 | "
            "400 / 400 |") in text
    assert "| cost | +21 | +64 | +0 | +0 |" in text
