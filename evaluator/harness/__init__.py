"""The evaluation harness: stdlib + torch only, never Django or any project app (see protocol.py for the record)."""
