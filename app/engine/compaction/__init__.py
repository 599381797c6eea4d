"""Deciding and compacting: thresholds, cut point, summary calls, marker, fidelity."""
