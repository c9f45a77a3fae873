"""Reports built from stored results only."""
