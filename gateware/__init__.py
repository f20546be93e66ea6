"""linkdyn.gateware"""
