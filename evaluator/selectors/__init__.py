"""Reads of the evaluator's tables: `eligibility` (the ranking rule), `review` (the audit queue), `audit` (flags)."""
