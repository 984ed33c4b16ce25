"""Workflows: the top floor that ties the stages together, plan → execute → store → read → analyse → report.

========================= ============================================================
module                    owns
========================= ============================================================
``sweeping``              :func:`sweep`: a multi-seed sweep (or any run specs) into a store
``factor_studies``        :func:`run_factor_study`: a randomness-factor study into a store
``reporting``             :func:`build_report`: read → analyse → lay out → write
========================= ============================================================

Only workflows (and the command line above them) import executors, the store, readers and
the pure analysis together; nothing below imports a workflow.
"""
