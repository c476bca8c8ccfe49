"""Outward actions, each with the owner's approval, each exactly once (issue #41).

`registry.propose` is the one door: a tool that would act outside the assistant's own replies
writes a ledger row (storage/repos/actions.py), which runs at once when a standing `/allow`
covers it or waits for the owner's Approve on a card in their DM. The action worker runs
approved rows through the kind's executor with the row's idempotency key.
"""
