"""`python -m askvault` runs the command line."""

from askvault.cli.main import main

# Guarded: worker processes (spawned for parsing) import this module as `__mp_main__`.
if __name__ == "__main__":
    main()
