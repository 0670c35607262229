"""Deterministic simulator of a retail database replicated by AWS DMS to S3.

`simulate(SimulationConfig(out=...))` writes change files, ground truth and a
manifest; `truth` reads them back; `TABLES` describes the source tables.
"""

from lakehouse_cdc.simulator.generate import SimulationConfig, SimulationResult, simulate
from lakehouse_cdc.simulator.schema import SOURCE_SCHEMA, TABLES, Column, Table
from lakehouse_cdc.simulator.truth import (
    land_batch,
    read_files,
    read_final,
    read_manifest,
    read_rejects,
    read_state_after,
    read_versions,
)

__all__ = [
    "SOURCE_SCHEMA", "TABLES", "Column", "SimulationConfig", "SimulationResult", "Table",
    "land_batch", "read_files", "read_final", "read_manifest", "read_rejects",
    "read_state_after", "read_versions", "simulate",
]
