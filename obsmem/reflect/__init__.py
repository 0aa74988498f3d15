"""reflect stage."""
