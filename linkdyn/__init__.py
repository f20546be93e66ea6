"""LinkDyn: distributed inverse dynamics for FPGA gateware."""
