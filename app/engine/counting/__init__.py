"""Token counting: per-message accounting, images, the estimate and its cache."""
