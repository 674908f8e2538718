"""Automatic quality checks."""
