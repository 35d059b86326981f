"""Hostile-input corpora and generators."""
