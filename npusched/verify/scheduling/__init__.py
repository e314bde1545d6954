"""verify.scheduling."""
