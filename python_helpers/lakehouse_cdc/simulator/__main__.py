"""`python -m lakehouse_cdc.simulator`."""

from lakehouse_cdc.simulator.cli import main

raise SystemExit(main())
