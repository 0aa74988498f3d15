"""The markdown memory store: data model, parsers that keep every byte, atomic locked writes."""

from obsmem.memory.model import Entry, Observation, ParseIssue, Provenance
from obsmem.memory.observations import ObservationsDoc, parse_observations
from obsmem.memory.sections import SectionsDoc, parse_sections
from obsmem.memory.store import MemoryStore, new_observation

__all__ = [
    "Entry",
    "MemoryStore",
    "Observation",
    "ObservationsDoc",
    "ParseIssue",
    "Provenance",
    "SectionsDoc",
    "new_observation",
    "parse_observations",
    "parse_sections",
]
