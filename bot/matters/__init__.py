"""Durable work: task Sessions that continue, wait and complete under independent review."""
