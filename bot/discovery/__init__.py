"""Proactive discovery: a heartbeat the Host owns, a pre-check that costs nothing, and rounds
of Discovery (notes) then Judgement (findings for the owner's Bot inbox)."""
