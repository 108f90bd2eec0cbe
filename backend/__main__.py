"""`python -m backend ...`: the command-line interface."""

from backend.cli import main

raise SystemExit(main())
