"""`python -m loadcmp` = the `loadcmp` command."""

from .cli import main

main()
