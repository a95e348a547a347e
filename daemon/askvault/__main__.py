"""`python -m askvault` runs the command line."""

from askvault.cli.main import main

main()
