"""Scoring a model's answers against a run's manifest."""
