"""integrations stage."""
