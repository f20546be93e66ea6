"""Dynamic parameter identification (paper Sect. 2.5, 4.1)."""
