"""loadcmp: a lab for web server performance under high concurrency."""

__version__ = "0.1.0"
