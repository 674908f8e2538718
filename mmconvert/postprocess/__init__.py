"""Post-processing of finished runs: resolution, scale, rotation and JPEG variants (sweeps)."""
